"""The chain example (docs/chain.md) runs and prints what its comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def chain_section() -> str:
    text = (ROOT / "docs" / "chain.md").read_text()
    match = re.search(r"<!-- section:chain -->(.*?)<!-- /section:chain -->", text, re.S)
    assert match, "docs/chain.md has no chain section"
    return match.group(1)


def test_the_chain_example_prints_what_it_promises() -> None:
    block = re.search(r"```python\n(.*?)```", chain_section(), re.S)
    assert block is not None
    code = block.group(1)
    expected = [line.removeprefix("# ") for line in code.splitlines() if line.startswith("# ")]

    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(ROOT / "core")}, cwd=ROOT,
    )

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == expected
    assert len(expected) == 3
