"""A sample runs after the quickstart only if the page has told the user to install what it imports.

The quickstart installs the ``cli`` extra alone. A sample importing an adapter (``langchain_perplexed``,
``llama_index_perplexed``) or another extra's package fails with ``ModuleNotFoundError`` in the user's
``.venv`` unless the page, before the sample, shows how to install that extra from a clone
(``pip install -e ".[langchain]"``, or ``".[all]"``): the docs tests run in an environment that has every
extra, so only this check sees what a user who follows the page has. A page that shows
``pip install "perplexed-search[X]"`` (the package is not on PyPI yet) also shows the from-a-clone form.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
from doc_blocks import Program, programs
from docs_env import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PROGRAMS: list[Program] = [p for page in PAGES if page.exists() for p in programs(page)]

#: The top-level module a sample imports -> the extra that installs it.
MODULE_EXTRA = {
    "langchain_core": "langchain", "langchain_perplexed": "langchain",
    "llama_index": "llama-index", "llama_index_perplexed": "llama-index",
    "mcp": "mcp", "redis": "redis", "pypdf": "pdf", "trafilatura": "fetch", "protego": "fetch",
    "opentelemetry": "otel",
}
_CLONE_INSTALL = re.compile(r"""pip install -e ["']?\.\[([\w,-]+)\]""")
_PYPI_INSTALL = re.compile(r"""pip install ["']perplexed-search\[([\w,-]+)\]""")


def _extras(names: str) -> set[str]:
    return {name.strip() for name in names.split(",") if name.strip()}


def imported_extras(source: str) -> set[str]:
    """The extras the modules ``source`` imports come from."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [node.module]
        else:
            continue
        found.update(MODULE_EXTRA[m.split(".")[0]] for m in modules if m.split(".")[0] in MODULE_EXTRA)
    return found


def installed_before(text: str, line: int) -> set[str]:
    """The extras the page has shown how to install from a clone, above ``line`` (1-based)."""
    above = "\n".join(text.splitlines()[: line - 1])
    return {extra for names in _CLONE_INSTALL.findall(above) for extra in _extras(names)}


def _id(program: Program) -> str:
    return f"{program.path.relative_to(ROOT)}:{program.line}"


def test_the_extras_named_here_exist() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(MODULE_EXTRA.values()) <= set(declared)


@pytest.mark.parametrize("program", PROGRAMS, ids=[_id(p) for p in PROGRAMS])
def test_a_sample_comes_after_the_install_of_what_it_imports(program: Program) -> None:
    needed = imported_extras(program.source)
    shown = installed_before(program.path.read_text(encoding="utf-8"), program.line)
    missing = set() if "all" in shown else needed - shown
    assert not missing, (
        f"{_id(program)} imports what the {', '.join(sorted(missing))} extra installs, but the page does not say "
        f"before it how to install it from a clone (pip install -e \".[{','.join(sorted(missing))}]\")"
    )


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_a_pypi_install_comes_with_the_clone_install(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    clone = {extra for names in _CLONE_INSTALL.findall(text) for extra in _extras(names)}
    for names in _PYPI_INSTALL.findall(text):
        missing = _extras(names) - clone
        assert "all" in clone or not missing, (
            f"{page.relative_to(ROOT)} shows pip install \"perplexed-search[{names}]\" (not on PyPI yet) without "
            f"the from-a-clone form pip install -e \".[{names}]\""
        )


@pytest.mark.parametrize(
    ("source", "want"),
    [
        ("import perplexed\n", set()),
        ("from langchain_perplexed import PerplexedRetriever\n", {"langchain"}),
        ("from langchain_core.runnables import RunnableLambda\nimport llama_index.core\n", {"langchain", "llama-index"}),
        ("from .x import y\n", set()),
    ],
)
def test_imported_extras(source: str, want: set[str]) -> None:
    assert imported_extras(source) == want


def test_installed_before() -> None:
    text = 'a\n`pip install -e ".[cli,mcp]"`\nb\n```python\n'
    assert installed_before(text, 4) == {"cli", "mcp"}
    assert installed_before(text, 2) == set()
