"""Every ``perplexed`` command of a ```` ```bash ```` block in README.md and docs/ runs as written, the way a user
runs it after the README's main command: in bash, from the clone root, in a fresh HOME, with no variable set, in
an 80-column terminal.

A command exits 0, unless its line says what it needs in a comment: ``# needs SEARXNG_URL or TAVILY_API_KEY``
(run without them, it must fail with a message naming one of them) or ``# needs the network`` / ``# needs a
folder of your documents`` (something no offline test can give: not run). ``perplexed mcp`` (a server) is left
to tests/mcp; the other steps of a line (``pip install``, ``python -m pytest``, ``export``) are not run here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from doc_blocks import _blocks
from docs_env import ROOT, DocEnv

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_VAR = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class Step:
    command: str  # as written (bash expands ~ and $VAR, and VAR=value prefixes, as for the user)
    comment: str

    @property
    def needs(self) -> list[str] | None:
        """None: needs nothing; else the variables the comment names (empty: something not a variable)."""
        found = re.search(r"\bneeds\b(.*)$", self.comment, re.IGNORECASE)
        return None if found is None else _VAR.findall(found.group(1))


@dataclass
class Block:
    path: Path
    line: int
    steps: list[Step]


def _split_comment(line: str) -> tuple[str, str]:
    """(code, comment) of one shell line: the comment starts at a ``#`` outside quotes, after a blank."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def perplexed_steps(body: str) -> list[Step]:
    """The ``perplexed`` commands of a bash block (``&&`` chains split; other commands left out)."""
    steps: list[Step] = []
    for raw in body.splitlines():
        code, comment = _split_comment(raw)
        for part in code.split("&&"):
            words = shlex.split(part)
            while words and _ASSIGNMENT.match(words[0]):
                words.pop(0)
            if len(words) >= 2 and words[0] in ("perplexed", ".venv/bin/perplexed") and words[1] != "mcp":
                steps.append(Step(part.strip(), comment))
    return steps


def blocks() -> list[Block]:
    found: list[Block] = []
    for page in PAGES:
        for line, lang, _marker, body in _blocks(page.read_text(encoding="utf-8")):
            if lang in ("bash", "sh", "shell", "console") and (steps := perplexed_steps(body)):
                found.append(Block(page, line, steps))
    return found


BLOCKS = blocks()


def _id(block: Block) -> str:
    return f"{block.path.relative_to(ROOT)}:{block.line}"


def _shim(clone: Path) -> Path:
    """``.venv/bin/perplexed`` in the clone copy (the README's form; also on PATH as ``perplexed``), running
    the perplexed under test."""
    bin_dir = clone / ".venv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "perplexed"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m perplexed "$@"\n')
    shim.chmod(0o755)
    return bin_dir


@pytest.mark.integration
@pytest.mark.parametrize("block", BLOCKS, ids=[_id(b) for b in BLOCKS])
def test_commands_run_as_written(block: Block, doc_env: DocEnv) -> None:
    bin_dir = _shim(doc_env.cwd)
    env = {**doc_env.env, "PATH": f"{bin_dir}{os.pathsep}{doc_env.env.get('PATH', '')}", "COLUMNS": "80"}
    for step in block.steps:
        needs = step.needs
        if needs == []:  # the network, your own folder: nothing an offline test can give
            continue
        proc = subprocess.run(["bash", "-c", step.command], cwd=doc_env.cwd, env=env, capture_output=True, text=True,
                              timeout=180, stdin=subprocess.DEVNULL)
        where = f"{_id(block)}: {step.command}"
        said = proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr, f"{where} prints a traceback:\n{proc.stderr[-3000:]}"
        if needs is None:
            assert proc.returncode == 0, (
                f"{where} fails for a user with no variable set, and its comment does not say what it needs "
                f"(# needs VAR):\n{said[-3000:]}"
            )
        else:
            assert proc.returncode != 0, f"{where} says it needs {', '.join(needs)} but runs without:\n{said[-2000:]}"
            assert any(name in said for name in needs), (
                f"{where} fails without {' or '.join(needs)}, but does not say to set it:\n{said[-3000:]}"
            )


def test_every_page_with_commands_is_scanned() -> None:
    assert any(b.path.name == "README.md" for b in BLOCKS)
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize(
    ("body", "want"),
    [
        ("perplexed providers\n", [("perplexed providers", "")]),
        ('.venv/bin/pip install -e ".[cli]" && .venv/bin/perplexed index x  # y\n',
         [(".venv/bin/perplexed index x", "y")]),
        ("A=1 perplexed search 'a # b'   # needs SEARXNG_URL\n", [("A=1 perplexed search 'a # b'", "needs SEARXNG_URL")]),
        ("perplexed mcp --http\npip install x\nexport A=b\n", []),
    ],
)
def test_perplexed_steps(body: str, want: list[tuple[str, str]]) -> None:
    assert [(s.command, s.comment) for s in perplexed_steps(body)] == want


@pytest.mark.parametrize(
    ("comment", "want"),
    [("", None), ("what is configured", None), ("needs SEARXNG_URL or TAVILY_API_KEY", ["SEARXNG_URL", "TAVILY_API_KEY"]),
     ("needs the network", [])],
)
def test_needs(comment: str, want: list[str] | None) -> None:
    assert Step("perplexed x", comment).needs == want
