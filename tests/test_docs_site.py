"""The docs site says what the code and pyproject.toml say (issue 26 §8): every page is in the home page's
table and the nav, the minimum framework versions are pyproject's, the provider count is the registry's,
chain.md lists every outcome, the reference covers the public surface, and no docstring's Sphinx role is
shown raw (mkdocs_hooks.py renders them as code). No site build here: CI runs ``mkdocs build --strict``."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from perplexed import Outcome, providers

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
NUMBERS = {7: "seven", 8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in _nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


def _mkdocs() -> dict[str, object]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=yaml.BaseLoader)


def test_every_page_is_in_the_home_table_and_the_nav() -> None:
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md")
    home = (DOCS / "index.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| \[[^]]+\]\(([\w-]+\.md)\) \|", home, re.M))
    assert [p for p in pages if p not in table] == []
    nav = set(_nav_pages(_mkdocs()["nav"]))
    assert [p for p in pages if p not in nav] == []


@pytest.mark.parametrize(("page", "extra", "package"), [("langchain.md", "langchain", "langchain-core"),
                                                       ("llamaindex.md", "llama-index", "llama-index-core")])
def test_minimum_versions_are_pyprojects(page: str, extra: str, package: str) -> None:
    (requirement,) = [r for r in PYPROJECT["project"]["optional-dependencies"][extra] if r.startswith(package)]
    minimum = requirement.split(">=")[1].split(",")[0]
    text = (DOCS / page).read_text(encoding="utf-8")
    stated = re.findall(rf"{package} ≥ ([\d.]+)", text)
    assert stated == [minimum]


def test_the_provider_count_is_the_registrys() -> None:
    count = NUMBERS[len(providers.available())]
    for page in (ROOT / "README.md", DOCS / "index.md", DOCS / "providers.md"):
        text = page.read_text(encoding="utf-8").lower()
        said = re.findall(r"\b(seven|eight|nine|ten|eleven|twelve) providers\b", text)
        assert said and set(said) == {count}, (page.name, said)


def test_chain_md_lists_every_outcome() -> None:
    text = (DOCS / "chain.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(\w+)` \|", text, re.M)
    assert listed == [o.value for o in Outcome]


@pytest.mark.parametrize("name", [
    "perplexed.configure", "perplexed.reset", "perplexed.spend", "perplexed.store.Store", "perplexed.doctor.diagnose",
    "perplexed.agent.AgentClient", "perplexed.agent.AsyncAgentClient", "langchain_perplexed.PerplexedRetriever",
    "langchain_perplexed.PerplexedAnswerRetriever", "langchain_perplexed.PerplexedSearchTool",
    "langchain_perplexed.PerplexedAnswerTool", "llama_index_perplexed.PerplexedRetriever",
    "llama_index_perplexed.PerplexedQueryEngine", "llama_index_perplexed.PerplexedToolSpec",
])
def test_the_reference_covers_the_public_surface(name: str) -> None:
    reference = (DOCS / "reference.md").read_text(encoding="utf-8")
    assert f"::: {name}\n" in reference


def _hook():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "mkdocs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sphinx_roles_are_rendered_as_code() -> None:
    assert "mkdocs_hooks.py" in _mkdocs()["hooks"]
    html = (
        '<h3 id="perplexed.InvalidRequest">InvalidRequest</h3>'
        "<p>raises :class:<code>~perplexed.InvalidRequest</code>, see :func:<code>perplexed.answer</code> and "
        ":meth:<code>wait()</code>; ``literal`` stays</p>"
    )
    out = _hook().on_page_content(html)
    assert ":class:" not in out and ":func:" not in out and ":meth:" not in out
    assert '<a href="#perplexed.InvalidRequest"><code>InvalidRequest</code></a>' in out
    assert "<code>perplexed.answer</code>" in out and "<code>wait()</code>" in out
