"""Find the runnable Python samples in Markdown files (README.md and docs/).

Conventions (docs/contributing.md):

- Every ```` ```python ```` block is a program that runs as written, offline.
- A block preceded by ``<!-- continue -->`` continues the block above it in the same file: they run as one
  program, in order.
- A ```` ```text ```` block preceded by ``<!-- output -->`` is what the program above it prints. It is compared
  with the program's standard output as doctest does, with ``...`` matching anything and whitespace
  normalised, so durations and costs can be elided.

- A Python block preceded by ``<!-- client-environment -->`` runs in another environment than perplexed's (an MCP
  client whose packages cannot be installed beside perplexed's, e.g. ``langchain-mcp-adapters``, which needs
  ``mcp`` 1.x): it is not run here, only compiled (:func:`client_programs`), and the page says why.

A marker is the last non-blank line before the fence it applies to. A fenced block indented inside a list
item is read with its indentation removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Program", "client_programs", "programs"]

_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
_MARKER = re.compile(r"^<!--\s*(continue|output|client-environment)\s*-->\s*$")


@dataclass
class Program:
    """One runnable sample: one or more Python blocks, and what they are documented to print."""

    path: Path
    line: int  # 1-based line of the first block's opening fence
    code: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    client_environment: bool = False

    @property
    def source(self) -> str:
        return "\n".join(self.code)

    @property
    def expected_output(self) -> str | None:
        return "".join(self.expected) if self.expected else None


def _blocks(text: str) -> list[tuple[int, str, str | None, str]]:
    """(line, language, marker, body) for every fenced block, in order."""
    out: list[tuple[int, str, str | None, str]] = []
    lines = text.splitlines()
    i = 0
    last_marker: str | None = None
    while i < len(lines):
        line = lines[i]
        indent = len(line) - len(line.lstrip(" "))
        m = _FENCE.match(line.strip()) if line.lstrip(" ").startswith(("```", "~~~")) else None
        if m is None:
            stripped = line.strip()
            if stripped:
                mm = _MARKER.match(stripped)
                last_marker = mm.group(1) if mm else None
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        body: list[str] = []
        start = i + 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            raw = lines[i]
            body.append(raw[indent:] if not indent or raw[:indent].isspace() else raw.lstrip(" "))
            i += 1
        i += 1  # the closing fence
        out.append((start, lang, last_marker, "\n".join(body) + "\n"))
        last_marker = None
    return out


def programs(path: Path) -> list[Program]:
    """The runnable programs of one Markdown file (not the client-environment ones)."""
    return [p for p in _all_programs(path) if not p.client_environment]


def client_programs(path: Path) -> list[Program]:
    """The Python blocks of one Markdown file marked ``<!-- client-environment -->``."""
    return [p for p in _all_programs(path) if p.client_environment]


def _all_programs(path: Path) -> list[Program]:
    result: list[Program] = []
    current: Program | None = None
    for line, lang, marker, body in _blocks(path.read_text(encoding="utf-8")):
        if lang in ("python", "py"):
            if marker == "continue":
                if current is None:
                    raise ValueError(f"{path}:{line}: '<!-- continue -->' with no Python block above it")
                current.code.append(body)
            else:
                current = Program(path=path, line=line, code=[body], client_environment=marker == "client-environment")
                result.append(current)
        elif marker == "output":
            if current is None:
                raise ValueError(f"{path}:{line}: '<!-- output -->' with no Python block above it")
            current.expected.append(body)
        elif marker == "continue":
            raise ValueError(f"{path}:{line}: '<!-- continue -->' applies to Python blocks only")
    return result
