"""Every Python sample in README.md and docs/ runs as written and prints what the page shows.

Each program (a block, plus the blocks marked ``<!-- continue -->`` after it) runs in a fresh interpreter in
the environment of ``tests/docs/conftest.py`` (offline, as after the quickstart). The conventions are in
``tests/docs/doc_blocks.py`` and docs/contributing.md.
"""

from __future__ import annotations

import doctest
import subprocess
import sys

import pytest
from doc_blocks import Program, programs
from docs_env import ROOT, STAND_IN_KEY, DocEnv

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PROGRAMS: list[Program] = [p for page in PAGES if page.exists() for p in programs(page)]


def _id(program: Program) -> str:
    return f"{program.path.relative_to(ROOT)}:{program.line}"


@pytest.mark.integration
@pytest.mark.parametrize("program", PROGRAMS, ids=[_id(p) for p in PROGRAMS])
def test_sample_runs_as_written(program: Program, doc_env: DocEnv) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", program.source], capture_output=True, text=True, timeout=180,
        env=doc_env.env, cwd=doc_env.cwd,
    )
    where = _id(program)
    assert proc.returncode == 0, f"{where} failed:\n{proc.stderr[-4000:]}"
    assert STAND_IN_KEY not in proc.stdout + proc.stderr
    expected = program.expected_output
    if expected is not None:
        checker = doctest.OutputChecker()
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        assert checker.check_output(expected, proc.stdout, flags), (
            f"{where} printed something else than the page shows:\n--- page\n{expected}\n--- printed\n{proc.stdout}"
        )


def test_every_page_is_scanned() -> None:
    """The scan sees the README and the docs pages (a moved folder must not silently skip every sample)."""
    assert (ROOT / "README.md") in PAGES
    assert any(p.is_relative_to(ROOT / "docs") for p in PAGES)
    assert len(PROGRAMS) >= 10


def test_the_readme_stays_a_guide() -> None:
    """The README is a guide (at most about 20 KB); the reference lives in docs/."""
    assert len((ROOT / "README.md").read_bytes()) <= 20 * 1024


def test_every_docs_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f" {page.name}" in nav, f"docs/{page.name} is not in mkdocs.yml's nav"
