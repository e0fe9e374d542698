"""Cold start (issue 35): ``import perplexed`` loads only what a search uses. Fetch extraction (trafilatura, lxml),
verify's lexicon, the Agent API client, store back-ends (sqlite3 where no store is configured), rich, the MCP
SDK, click and pygments load on first use; the same for both framework adapters beyond their framework. Each
check runs in a fresh interpreter, so what an earlier test imported cannot hide a regression."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core"

#: top-level packages (and the core's own heavy parts) that ``import perplexed`` must not load
DENIED = (
    "trafilatura",
    "lxml",
    "rich",
    "mcp",
    "click",
    "pygments",
    "sqlite3",
    "perplexed.agent",
    "perplexed.grounding._verify",
    "perplexed.grounding._lexical",
    "perplexed.extract._extract",
    "perplexed.grounding._answer",
    "perplexed.cli",
    "perplexed.mcp_server",
    "perplexed.store.sqlite",
    "perplexed.store.redis",
    "redis",
    "httpx._main",
    # httpx and httpcore load with the first HTTP request (or an HTTP provider's module), not with the package
    # or a search of in-process providers (a function, the local index)
    "httpx",
    "httpcore",
)

#: what a search of the local index (library or CLI) must not load: the HTTP client, the fetching side and
#: index building (the local provider reads the index, it does not build it)
NOT_FOR_A_LOCAL_SEARCH = (
    "httpx",
    "httpcore",
    "h11",
    "perplexed.net._http",
    "perplexed.net._fetch_net",
    "perplexed.operations._fetch",
    "perplexed.fetchers",
    "perplexed.providers.http",
    "perplexed.index._build",
    "perplexed.index._manage",
    "trafilatura",
    "lxml",
)


def loaded_after(code: str, env: dict[str, str] | None = None, denied: tuple[str, ...] = DENIED) -> list[str]:
    """Run ``code`` in a fresh interpreter; return the denied modules it left in ``sys.modules``."""
    script = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        denied = {denied!r}
        print(json.dumps(sorted(d for d in denied if any(m == d or m.startswith(d + ".") for m in sys.modules))))
        """
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PERPLEXED_")}
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**clean, "PYTHONPATH": os.pathsep.join((str(CORE), str(ROOT))), **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return loaded


def test_the_denied_modules_are_installed_so_this_test_means_something() -> None:
    everything = loaded_after(
        "import perplexed.extract._extract, trafilatura, lxml, rich, mcp, click, pygments, sqlite3, redis, perplexed.agent, perplexed.grounding._answer,"
        " perplexed.cli, perplexed.mcp_server, perplexed.store.sqlite, perplexed.store.redis, httpx._main"
    )
    assert set(everything) >= {"perplexed.extract._extract", "trafilatura", "lxml", "rich", "mcp", "click", "pygments", "sqlite3", "perplexed.agent"}


def test_import_perplexed_loads_only_what_a_search_uses() -> None:
    assert loaded_after("import perplexed") == []


def test_import_perplexed_with_the_memory_store_configured_loads_no_sqlite() -> None:
    assert loaded_after("import perplexed", env={"PERPLEXED_STORE": "memory"}) == []


def test_a_search_after_the_lazy_import_still_works_and_loads_nothing_denied() -> None:
    loaded = loaded_after(
        """
        import asyncio, perplexed
        from perplexed.providers import FunctionProvider
        fn = FunctionProvider(lambda q, o: [{"url": "https://a.example/", "title": "A", "snippet": "s"}])
        result = perplexed.search("zoning setbacks", fn)
        assert result.provider == "<lambda>" and result.hits[0].url == "https://a.example/", result
        assert asyncio.run(perplexed.asearch("zoning setbacks", fn)).hits[0].id == 1
        """
    )
    assert loaded == []


def test_every_public_name_still_resolves_and_the_lazy_ones_load_on_first_use() -> None:
    loaded = loaded_after(
        """
        import sys, warnings, perplexed
        assert "perplexed.grounding._verify" not in sys.modules
        missing = [name for name in perplexed.__all__ if not hasattr(perplexed, name)]
        assert missing == [], missing
        assert set(perplexed.__all__) <= set(dir(perplexed))
        from perplexed import Verification, verify, averify, Evidence, SentenceCheck, answer, Answer
        import perplexed.grounding._verify as v
        assert perplexed.verify is v.verify and perplexed.Verification is v.Verification
        assert "perplexed.grounding._lexical" not in sys.modules  # the lexicon: with the first check
        hit = perplexed.Hit(id=1, url="https://a.example/", title="A", snippet="The setback is 20 feet.")
        assert perplexed.verify("The setback is 20 feet [1].", [hit]).count("supported") == 1
        with warnings.catch_warnings(record=True) as caught:  # a deprecated name still warns
            warnings.simplefilter("always")
            assert perplexed.RateLimitError is perplexed.agent.RateLimitError
        assert any(issubclass(w.category, DeprecationWarning) for w in caught)
        """
    )
    assert {"perplexed.grounding._verify", "perplexed.grounding._lexical", "perplexed.agent"} <= set(loaded)


def test_httpx_command_line_client_still_resolves() -> None:
    loaded = loaded_after(
        """
        import perplexed, httpx
        assert callable(httpx.main)
        import httpx._main
        assert httpx._main.main is not None
        from httpx import main  # noqa: F401
        """
    )
    assert "httpx._main" in loaded and "click" in loaded


def test_httpx_imported_first_is_left_as_it_is() -> None:
    loaded_after(
        """
        import httpx, httpx._main
        cli = httpx.main
        import perplexed
        assert httpx.main is cli
        """
    )


@pytest.mark.parametrize(
    ("adapter", "frameworks", "allowed"),
    [
        ("langchain_perplexed", "import langchain_core.retrievers, langchain_core.tools", set()),
        ("llama_index_perplexed", "import llama_index.core", set()),
    ],
)
def test_importing_an_adapter_loads_nothing_denied_beyond_its_framework(
    adapter: str, frameworks: str, allowed: set[str]
) -> None:
    # what the framework itself imports (e.g. sqlite3 by llama_index) is not the adapter's doing
    framework_only = set(loaded_after(frameworks))
    with_adapter = set(loaded_after(f"{frameworks}\nimport {adapter}"))
    assert with_adapter - framework_only - allowed == set()
    assert "perplexed.agent" not in with_adapter


def test_the_lazy_adapter_names_still_resolve() -> None:
    loaded = loaded_after(
        """
        import sys, langchain_perplexed, llama_index_perplexed
        assert "langchain_perplexed.verify" not in sys.modules and "langchain_perplexed.fetch" not in sys.modules
        for module in (langchain_perplexed, llama_index_perplexed):
            missing = [name for name in module.__all__ if not hasattr(module, name)]
            assert missing == [], (module.__name__, missing)
        from langchain_perplexed import PerplexedLoader, VerifyCitations
        from langchain_perplexed.verify import VerifyCitations as same
        assert VerifyCitations is same and PerplexedLoader.__module__ == "langchain_perplexed.fetch"
        """
    )
    assert "perplexed.grounding._verify" in loaded  # VerifyCitations needs the Verification model, now


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> str:
    from perplexed.providers.local import build_index

    docs = tmp_path_factory.mktemp("docs")
    (docs / "setbacks.md").write_text("# Zoning setbacks\n\nA setback is the distance from the lot line.\n")
    (docs / "variances.md").write_text("# Variances\n\nA variance departs from a setback rule.\n")
    index = str(tmp_path_factory.mktemp("index") / "index.db")
    build_index([str(docs)], index=index)
    return index


def test_a_first_search_of_the_local_index_loads_no_http_client_nor_fetching(small_index: str) -> None:
    loaded = loaded_after(
        f"""
        import perplexed
        result = perplexed.search("zoning setbacks", {{"name": "local", "index": {small_index!r}}})
        assert result.provider == "local" and result.hits, result
        """,
        env={"PERPLEXED_STORE": "memory"},
        denied=NOT_FOR_A_LOCAL_SEARCH,
    )
    assert loaded == []


def test_the_cli_search_of_the_local_index_loads_no_http_client_nor_fetching(small_index: str) -> None:
    loaded = loaded_after(
        f"""
        import contextlib, io
        from perplexed.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["search", "zoning", "setbacks", "--provider", "local", "--index", {small_index!r},
                         "--no-cache"])
        assert code == 0 and "setbacks.md" in out.getvalue(), out.getvalue()
        """,
        env={"PERPLEXED_STORE": "memory"},
        denied=NOT_FOR_A_LOCAL_SEARCH,
    )
    assert loaded == []


def test_httpx_imported_after_perplexed_comes_without_its_command_line_client() -> None:
    loaded = loaded_after(
        """
        import sys, perplexed
        import perplexed.providers.brave  # an HTTP provider: imports httpx itself
        import httpx
        assert "httpx._main" not in sys.modules and callable(httpx.main)
        assert isinstance(httpx.Client, type) and perplexed.providers.Brave is perplexed.providers.brave.Brave
        """
    )
    assert "httpx" in loaded and "httpx._main" not in loaded and "click" not in loaded and "rich" not in loaded


#: what ``import langchain_perplexed`` (or ``llama_index_perplexed``) leaves for the first component built or called: the search engine, the
#: answer plan (it imports the engine), the search and fetch operations and the provider registry
NOT_FOR_AN_ADAPTER_IMPORT = (
    "perplexed.engine",
    "perplexed.grounding._answer_plan",
    "perplexed.operations",
    "perplexed.providers",
    "perplexed.agent",
)


@pytest.mark.parametrize("adapter", ["langchain_perplexed", "llama_index_perplexed"])
def test_importing_an_adapter_leaves_the_engine_for_the_first_component(adapter: str) -> None:
    assert loaded_after(f"import {adapter}", denied=NOT_FOR_AN_ADAPTER_IMPORT) == []


def test_the_langchain_adapter_loads_the_engine_when_a_component_is_built() -> None:
    loaded = loaded_after(
        """
        import langchain_perplexed, perplexed.integration
        from perplexed.integration import AnswerPlan, check_fetch_content, prepare_answer
        assert {"AnswerPlan", "prepare_answer", "check_fetch_content", "FetchPlan"} <= set(dir(perplexed.integration))
        from langchain_perplexed import PerplexedRetriever, RetrieverProvider, as_provider, document_to_hit
        assert RetrieverProvider.__module__ == "langchain_perplexed.provider" and callable(document_to_hit)
        from perplexed.providers import FunctionProvider
        fn = FunctionProvider(lambda q, o: [{"url": "https://a.example/", "title": "A", "snippet": "s"}])
        docs = PerplexedRetriever(provider=fn, k=1).invoke("zoning setbacks")
        assert docs[0].metadata["url"] == "https://a.example/", docs
        assert prepare_answer.__module__ == AnswerPlan.__module__ == "perplexed.grounding._answer_plan"
        """,
        denied=NOT_FOR_AN_ADAPTER_IMPORT,
    )
    assert {"perplexed.engine", "perplexed.providers"} <= set(loaded)  # loaded when the retriever was built


def test_the_stdio_mcp_server_starts_without_the_agent_api_client_when_no_key_is_set(small_index: str) -> None:
    loaded = loaded_after(
        f"""
        import os, sys
        os.environ.pop("PERPLEXITY_API_KEY", None)
        from perplexed.mcp_server import stdio_server
        spec = {{"name": "local", "index": {small_index!r}}}
        server = stdio_server(spec)
        assert "perplexed.agent" not in sys.modules, "the key check imported the Agent API client"
        said = server.perplexed_summary.split("; ")[-1]
        assert said == "answer not offered: no Perplexity Agent API key is configured (set PERPLEXITY_API_KEY "\\
            "where the server runs)", said
        # with answer options the whole prepare_answer() runs (it imports the client): the same sentence
        checked = stdio_server(spec, answer_options={{"preset": "fast"}}).perplexed_summary.split("; ")[-1]
        assert checked == said, (checked, said)
        from perplexed.agent._client import ENV_API_KEY  # the variable both paths read
        assert ENV_API_KEY == "PERPLEXITY_API_KEY"
        """,
        env={"PERPLEXED_STORE": "memory"},
        denied=("perplexed.agent",),
    )
    assert loaded == ["perplexed.agent"]  # by the second server (answer options) and the check, not the first


def test_the_cli_builds_only_the_command_it_runs_and_every_help_is_unchanged() -> None:
    from perplexed import _cli_options, cli  # private: the parser builder, whole and per command

    full = cli._build_parser()
    assert set(full.commands) == _cli_options.COMMAND_NAMES
    for name in full.commands:
        one = cli._build_parser(name)
        assert one.format_help() == full.format_help()  # the command list, with every command's help
        assert one.commands[name].format_help() == full.commands[name].format_help(), name
        others = [other for other in one.commands if other != name]
        assert all(not one.commands[other]._actions[1:] for other in others)  # only -h: not built
    assert cli._command_of(["--no-cache", "search", "q"]) == "search"
    assert cli._command_of(["serch", "q"]) is None and cli._command_of(["--version"]) is None
    assert cli._command_of(["--", "search"]) is None


#: what ``perplexed mcp`` on stdio must not load before its first call: the HTTP client (its web_fetch settings
#: are checked without it), the fetching side, extraction and the Agent API client (when no key is set)
NOT_FOR_THE_MCP_START = (
    "httpx",
    "httpcore",
    "h11",
    "perplexed.net._http",
    "perplexed.net._fetch_net",
    "perplexed.operations._fetch",
    "perplexed.extract._extract",
    "perplexed.agent",
    "trafilatura",
    "lxml",
    "mcp",
    "platformdirs",  # the index is given: where a default one would be is worked out only for a problem
)


def test_the_stdio_mcp_server_starts_without_the_http_client(small_index: str) -> None:
    loaded = loaded_after(
        f"""
        import os
        import perplexed
        os.environ.pop("PERPLEXITY_API_KEY", None)
        from perplexed.mcp_server import stdio_server
        server = stdio_server({{"name": "local", "index": {small_index!r}}}, fetch_options={{"respect_robots": False}})
        assert "web_fetch: http;" in server.perplexed_summary, server.perplexed_summary
        assert [tool.name for tool in server.tools.values()] == ["web_search", "web_fetch"], server.tools
        from perplexed.operations._fetch_plan import prepare_fetch  # private: the check the server ran
        try:
            prepare_fetch("https://example.com/", None, allow_privat=True)
        except perplexed.InvalidRequest as exc:
            assert "allow_private" in str(exc), exc
        else:
            raise AssertionError("a misspelt fetch option passed")
        """,
        env={"PERPLEXED_STORE": "memory"},
        denied=NOT_FOR_THE_MCP_START,
    )
    assert loaded == []


def test_perplexed_mcp_on_stdio_starts_and_ends_without_the_http_client(small_index: str) -> None:
    loaded = loaded_after(
        f"""
        import os
        os.environ.pop("PERPLEXITY_API_KEY", None)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # EOF at once: the server starts, then ends
        from perplexed.cli import main
        assert main(["mcp", "--provider", "local", "--index", {small_index!r}, "--no-cache"]) == 0
        """,
        env={"PERPLEXED_STORE": "memory"},
        denied=NOT_FOR_THE_MCP_START,
    )
    assert loaded == []
