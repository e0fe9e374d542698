"""Issue 17 for the LangChain adapter: unknown call-time keywords are errors naming the closest valid one,
``k`` is accepted where it maps (``search_kwargs={"k": 1}``), keys like the peers (``api_key=`` beside
``provider=``, a missing key fails at construction), and a model's bad tool arguments are ToolExceptions
saying what is allowed. Providers run on ``httpx.MockTransport`` (no socket)."""

from __future__ import annotations

import warnings
from typing import Any

import httpx
import pytest
from langchain_core.tools import ToolException
from langchain_perplexed import PerplexedAnswerTool, PerplexedRetriever, PerplexedSearchTool
from lc_support import mock_searxng, searxng_results
from perplexed import ConfigError, InvalidRequest


@pytest.mark.parametrize(("typo", "closest"), [("max_result", "max_results"), ("top_k", "max_results"),
                                               ("include_domain", "include_domains"), ("engine", "engines")])
def test_invoke_rejects_unknown_keywords(typo: str, closest: str) -> None:
    requests: list[httpx.Request] = []
    retriever = PerplexedRetriever(provider=mock_searxng(searxng_results(5), requests=requests))
    with pytest.raises(InvalidRequest, match=f"did you mean '{closest}'") as info:
        retriever.invoke("q", **{typo: 2})
    assert info.value.param == typo
    assert requests == []  # nothing was sent: the call failed before any provider


async def test_ainvoke_rejects_unknown_keywords() -> None:
    retriever = PerplexedRetriever(provider=mock_searxng(searxng_results(5)))
    with pytest.raises(InvalidRequest, match="did you mean 'max_results'"):
        await retriever.ainvoke("q", max_result=2)


def test_k_per_call_and_in_search_kwargs() -> None:
    provider = mock_searxng(searxng_results(8))
    assert len(PerplexedRetriever(provider=provider).invoke("q", k=2)) == 2
    assert len(PerplexedRetriever(provider=provider, search_kwargs={"k": 1}).invoke("q")) == 1
    assert len(PerplexedRetriever(provider=provider, search_kwargs={"max_results": 3}).invoke("q")) == 3
    assert PerplexedSearchTool(provider=provider, search_kwargs={"k": 4}).max_results == 4
    with pytest.raises(ValueError, match="given twice"):
        PerplexedRetriever(provider=provider, k=2, search_kwargs={"k": 3})


def test_unknown_search_kwargs_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="did you mean 'engines'"):
        PerplexedRetriever(provider=mock_searxng(searxng_results(1)), search_kwargs={"engine": ["x"]})


def _tavily(seen: list[httpx.Request]) -> dict[str, Any]:
    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = {"results": [{"url": "https://example.org/a", "title": "A", "content": "a"}]}
        return httpx.Response(200, json=body)

    return {"name": "tavily", "transport": httpx.MockTransport(reply)}


def test_api_key_beside_a_single_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    seen: list[httpx.Request] = []
    retriever = PerplexedRetriever(provider=_tavily(seen), api_key="tvly-test-key-123456",
                                   base_url="https://tavily.mock")
    docs = retriever.invoke("q")
    assert docs and docs[0].metadata["url"] == "https://example.org/a"
    assert seen[0].headers["authorization"] == "Bearer tvly-test-key-123456"
    assert seen[0].url.host == "tavily.mock"
    assert "tvly-test-key-123456" not in repr(retriever)
    tool = PerplexedSearchTool(provider="tavily", api_key="tvly-test-key-123456")
    assert tool.provider["name"] == "tavily"


def test_a_single_provider_without_a_key_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    for component in (PerplexedRetriever, PerplexedSearchTool):
        with pytest.raises(ConfigError, match="TAVILY_API_KEY"):
            component(provider="tavily")


def test_api_key_needs_one_provider() -> None:
    with pytest.raises(ConfigError, match="naming one provider"):
        PerplexedRetriever(provider=["searxng", "tavily"], api_key="tvly-test-key-123456")


def test_a_chain_warns_once_about_members_that_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    monkeypatch.delenv("EXA_API_KEY", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        retriever = PerplexedRetriever(provider=["tavily", "exa", mock_searxng(searxng_results(2))])
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1
    assert "TAVILY_API_KEY" in messages[0] and "EXA_API_KEY" in messages[0]
    docs = retriever.invoke("q")  # the rest runs
    assert len(docs) == 2
    attempts = docs[0].metadata["attempts"]
    assert [a["outcome"] for a in attempts] == ["error", "error", "ok"]


def test_answer_tool_api_key_stays_the_agent_apis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    tool = PerplexedAnswerTool(provider=mock_searxng(searxng_results(2)), api_key="pplx-test-key-123456")
    assert tool.api_key is not None and tool.api_key.get_secret_value() == "pplx-test-key-123456"


@pytest.mark.parametrize(
    ("args", "allowed"),
    [
        ({"max_results": 50}, "a whole number from 1 to 20"),
        ({"recency": "fortnight"}, "one of 'day', 'week', 'month', 'year'"),
        ({"include_domains": ["not a domain"]}, "a list of domain names"),
        ({"max_results": "many"}, "a whole number from 1 to 20"),
    ],
)
def test_bad_tool_arguments_are_tool_exceptions_saying_what_is_allowed(args: dict[str, Any], allowed: str) -> None:
    tool = PerplexedSearchTool(provider=mock_searxng(searxng_results(2)))
    with pytest.raises(ToolException, match="allowed") as info:
        tool.invoke({"query": "q", **args})
    assert allowed in str(info.value)
    handled = PerplexedSearchTool(provider=mock_searxng(searxng_results(2)), handle_tool_error=True)
    out = handled.invoke({"type": "tool_call", "id": "c1", "name": handled.name, "args": {"query": "q", **args}})
    assert allowed in out.content and out.status == "error"


@pytest.mark.parametrize(("typo", "closest"), [("max_result", "max_results"), ("top_k", "max_results"),
                                               ("include_domain", "include_domains"), ("Query", "query")])
def test_a_misspelt_tool_argument_is_not_dropped(typo: str, closest: str) -> None:
    """A model's misspelt argument used to be dropped without a word (the search ran without it): it is a
    ToolException naming the closest argument, which the model reads with ``handle_tool_error=True``."""
    requests: list[httpx.Request] = []
    handled = PerplexedSearchTool(provider=mock_searxng(searxng_results(2), requests=requests), handle_tool_error=True)
    args = {"query": "q", typo: 2} if typo != "Query" else {"Query": "q"}
    out = handled.invoke({"type": "tool_call", "id": "c1", "name": handled.name, "args": args})
    assert out.status == "error" and f"did you mean '{closest}'" in out.content, out.content
    assert requests == []
    answer = PerplexedAnswerTool(provider=mock_searxng(searxng_results(2)), api_key="pplx-test-key-123456")
    with pytest.raises(ToolException, match=f"did you mean '{closest}'"):
        answer.invoke(args)


def test_answer_tool_bad_arguments_too() -> None:
    tool = PerplexedAnswerTool(provider=mock_searxng(searxng_results(2)), api_key="pplx-test-key-123456")
    with pytest.raises(ToolException, match="a whole number from 1 to 20"):
        tool.invoke({"query": "q", "max_results": 0})
    with pytest.raises(ToolException, match="a list of domain names"):
        tool.invoke({"query": "q", "exclude_domains": ["bad domain"]})


def test_every_core_chain_and_search_option_is_a_field() -> None:
    from langchain_perplexed import (
        PerplexedAnswerRetriever,
        PerplexedAnswerTool,
        PerplexedRetriever,
        PerplexedSearchTool,
    )
    from perplexed import ChainOptions, SearchOptions

    for cls in (PerplexedRetriever, PerplexedAnswerRetriever, PerplexedSearchTool, PerplexedAnswerTool):
        missing = [n for n in (*ChainOptions.model_fields, *SearchOptions.model_fields)
                   if n not in cls.model_fields and n not in ("max_results", "extra")]
        assert missing == [], cls.__name__
