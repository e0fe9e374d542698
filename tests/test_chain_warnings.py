"""Issue 39, #6: quiet by default. A chain whose first member runs (``["local", "searxng"]`` without
``SEARXNG_URL``) warns nobody: the unconfigured fallback is logged at INFO. A chain that would start every call
with a member that cannot run still warns once, and the warning names the user's line, not the library's."""

from __future__ import annotations

import logging
import warnings

import pytest
from langchain_perplexed import PerplexedRetriever, PerplexedSearchTool
from llama_index_perplexed import PerplexedQueryEngine, PerplexedToolSpec
from llama_index_perplexed import PerplexedRetriever as LIRetriever

BUILDERS = {
    "langchain-retriever": lambda chain: PerplexedRetriever(provider=chain),
    "langchain-tool": lambda chain: PerplexedSearchTool(provider=chain),
    "llamaindex-retriever": lambda chain: LIRetriever(chain),
    "llamaindex-query-engine": lambda chain: PerplexedQueryEngine(chain),
    "llamaindex-tool-spec": lambda chain: PerplexedToolSpec(chain),
}


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SEARXNG_URL", "TAVILY_API_KEY", "EXA_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("component", sorted(BUILDERS))
def test_an_unconfigured_fallback_behind_a_running_member_is_only_logged(
    component: str, caplog: pytest.LogCaptureFixture
) -> None:
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, "perplexed"):
        warnings.simplefilter("always")
        BUILDERS[component](["local", "searxng"])
    assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)] == []
    assert any("SEARXNG_URL" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("component", sorted(BUILDERS))
def test_a_member_that_cannot_run_in_front_warns_at_the_users_line(component: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        BUILDERS[component](["tavily", "local"])
    user = [w for w in caught if issubclass(w.category, UserWarning)]
    assert len(user) == 1, [str(w.message) for w in caught]
    assert "TAVILY_API_KEY" in str(user[0].message)
    assert user[0].filename == __file__, user[0].filename  # the lambda above, the caller's own line
