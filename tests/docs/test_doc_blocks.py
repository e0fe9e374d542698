"""The sample extractor's conventions (continuations, documented output), table-style."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_blocks import programs

CASES = [
    # (markdown, [(code, expected-or-None), ...])
    ("```python\nprint(1)\n```\n", [("print(1)\n", None)]),
    ("```python\na = 1\n```\ntext\n<!-- continue -->\n```python\nprint(a)\n```\n", [("a = 1\n\nprint(a)\n", None)]),
    ("```python\nprint(2)\n```\n<!-- output -->\n```text\n2\n```\n", [("print(2)\n", "2\n")]),
    ("```python\nprint(3)\n```\n\n```text\nnot output\n```\n", [("print(3)\n", None)]),
    ("```python\nx=1\n```\n```python\ny=2\n```\n", [("x=1\n", None), ("y=2\n", None)]),
    ("```bash\nls\n```\n", []),
    ("<!-- continue -->\n\n```bash\nls\n```\n", ValueError),
    ("<!-- output -->\n```text\nx\n```\n", ValueError),
    ("````python\nprint('```')\n````\n", [("print('```')\n", None)]),
    ("1. item\n\n   ```python\n   if True:\n       print(1)\n   ```\n", [("if True:\n    print(1)\n", None)]),
]


@pytest.mark.parametrize(("markdown", "want"), CASES)
def test_programs(tmp_path: Path, markdown: str, want: object) -> None:
    page = tmp_path / "page.md"
    page.write_text(markdown)
    if want is ValueError:
        with pytest.raises(ValueError):
            programs(page)
        return
    got = [(p.source, p.expected_output) for p in programs(page)]
    assert got == want
