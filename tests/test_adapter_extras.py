"""Issue 39, #7: importing an adapter without its extra raises ImportError naming the exact pip command (not a
bare ModuleNotFoundError from deep inside the package). Run as a user's interpreter would, in a subprocess in
which the framework cannot be imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = [
    ("langchain_perplexed", ("langchain_core",), "pip install 'perplexed-search[langchain]'"),
    ("llama_index_perplexed", ("llama_index", "llama_index.core"), "pip install 'perplexed-search[llama-index]'"),
]


@pytest.mark.parametrize(("package", "blocked", "command"), CASES, ids=[c[0] for c in CASES])
def test_an_adapter_without_its_extra_names_the_pip_command(package: str, blocked: tuple[str, ...], command: str) -> None:
    program = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None  # as if the extra were not installed\n"
        "try:\n"
        f"    import {package}\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ImportError "), proc.stdout
    assert command in proc.stdout
