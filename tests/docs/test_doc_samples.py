"""Every Python sample in README.md and docs/ runs as written and prints what the page shows.

Each program (a block, plus the blocks marked ``<!-- continue -->`` after it) runs in a fresh interpreter in
the environment of ``tests/docs/conftest.py``: a user's, right after the README's main command (the clone's
``.perplexed/index.db`` built, a fresh HOME, no variable set). A sample that needs a key or a server says so
in a comment inside the block (``# needs PERPLEXITY_API_KEY``); it runs with it, and without it must fail
with a message naming it. The conventions are in ``tests/docs/doc_blocks.py`` and docs/contributing.md.
"""

from __future__ import annotations

import doctest
import subprocess
import sys

import pytest
from doc_blocks import Program, programs
from docs_env import PROVIDED, ROOT, STAND_IN_KEY, DocEnv, needs

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PROGRAMS: list[Program] = [p for page in PAGES if page.exists() for p in programs(page)]
NEEDING = [(p, name) for p in PROGRAMS for name in needs(p.source)]


def _id(program: Program) -> str:
    return f"{program.path.relative_to(ROOT)}:{program.line}"


def _run(program: Program, env: dict[str, str], doc_env: DocEnv) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", program.source], capture_output=True, text=True, timeout=180, env=env,
        cwd=doc_env.cwd,
    )


@pytest.mark.integration
@pytest.mark.parametrize("program", PROGRAMS, ids=[_id(p) for p in PROGRAMS])
def test_sample_runs_as_written(program: Program, doc_env: DocEnv) -> None:
    beyond = [name for name in needs(program.source) if name not in PROVIDED]
    if beyond:  # a real vendor's key: the test below checks that, without it, the sample says to set it
        pytest.skip(f"needs {', '.join(beyond)}, which the offline tests cannot stand in for")
    proc = _run(program, doc_env.with_needs(needs(program.source)), doc_env)
    where = _id(program)
    assert proc.returncode == 0, f"{where} failed:\n{proc.stderr[-4000:]}"
    assert STAND_IN_KEY not in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, f"{where} succeeds but prints a traceback:\n{proc.stderr[-4000:]}"
    warned = [line for line in proc.stderr.splitlines() if "Warning: " in line]
    assert not warned, f"{where} prints warnings a user would see (issue 39: quiet by default):\n{proc.stderr[-4000:]}"
    expected = program.expected_output
    if expected is not None:
        checker = doctest.OutputChecker()
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        assert checker.check_output(expected, proc.stdout, flags), (
            f"{where} printed something else than the page shows:\n--- page\n{expected}\n--- printed\n{proc.stdout}"
        )


@pytest.mark.integration
@pytest.mark.parametrize(("program", "name"), NEEDING, ids=[f"{_id(p)}-without-{n}" for p, n in NEEDING])
def test_a_sample_without_what_it_needs_says_what_to_set(program: Program, name: str, doc_env: DocEnv) -> None:
    """Run as a user without the variable would run it: it fails, and its error names the variable."""
    proc = _run(program, doc_env.with_needs(needs(program.source), leave_out=name), doc_env)
    where = _id(program)
    assert proc.returncode != 0, f"{where} says it needs {name} but runs without it:\n{proc.stdout[-2000:]}"
    assert name in proc.stderr, f"{where} fails without {name}, but its error does not say to set it:\n{proc.stderr[-3000:]}"


def test_what_samples_need_is_a_variable_perplexed_reads() -> None:
    """``# needs NAME`` names a variable a user can set (a provider's key or URL), not a typo."""
    from perplexed import providers

    known = set(PROVIDED)
    for name in providers.available():
        cls = providers.get(name)
        known.update(v for v in (cls.env_key, cls.env_base_url) if v)
    for program in PROGRAMS:
        for name in needs(program.source):
            assert name in known, f"{_id(program)} needs {name}, which no provider reads"


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


@pytest.mark.parametrize(
    ("source", "want"),
    [
        ("print(1)\n", []),
        ("# needs PERPLEXITY_API_KEY\nprint(1)\n", ["PERPLEXITY_API_KEY"]),
        ("x = 1  # needs SEARXNG_URL and PERPLEXITY_API_KEY\n", ["SEARXNG_URL", "PERPLEXITY_API_KEY"]),
        ("# needs PERPLEXITY_API_KEY (the Agent API writes it)\n", ["PERPLEXITY_API_KEY"]),
        ('"""Needs ``PERPLEXITY_API_KEY``."""\n', []),
        ('"""The answer tool needs ``PERPLEXITY_API_KEY``."""\n', ["PERPLEXITY_API_KEY"]),
    ],
)
def test_needs_convention(source: str, want: list[str]) -> None:
    assert needs(source) == want
