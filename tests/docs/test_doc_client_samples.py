"""Python blocks marked ``<!-- client-environment -->`` run in an MCP client's own environment (its packages
cannot be installed beside perplexed's), so they are not run here: each is valid Python, starts the server with
the ``perplexed mcp`` command, and the page says why it is not run."""

from __future__ import annotations

import ast

import pytest
from doc_blocks import Program, client_programs
from docs_env import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CLIENT_PROGRAMS: list[Program] = [p for page in PAGES for p in client_programs(page)]


def test_the_mcp_page_has_its_two_client_samples() -> None:
    pages = {p.path.name for p in CLIENT_PROGRAMS}
    assert pages == {"mcp.md"}
    assert len(CLIENT_PROGRAMS) == 2


@pytest.mark.parametrize("program", CLIENT_PROGRAMS, ids=lambda p: f"{p.path.relative_to(ROOT)}:{p.line}")
def test_client_sample_is_valid_python_that_starts_perplexed_mcp(program: Program) -> None:
    tree = ast.parse(program.source)
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert any(s.endswith("/perplexed") for s in strings) and "mcp" in strings
    page = program.path.read_text(encoding="utf-8")
    assert "not run by the test suite" in page
