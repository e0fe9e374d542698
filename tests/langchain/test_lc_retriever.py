"""PerplexedRetriever: Documents and metadata, per-call options, sync/async parity, batch, errors, secrets."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import date
from typing import Any

import httpx
import perplexed
import pytest
from langchain_core.documents import Document
from langchain_perplexed import PerplexedRetriever
from lc_support import DEAD_URL, QUERY, mock_searxng, searxng_results
from perplexed import ConfigError, Hit, InvalidRequest, UpstreamError
from perplexed.providers import FunctionProvider, SearXNG
from pydantic import SecretStr, ValidationError

METADATA_KEYS = {"id", "title", "url", "source", "published", "score", "provider", "answered_by", "cost", "attempts"}


def comparable(docs: list[Document]) -> list[tuple[str, str]]:
    """Documents without what may differ between two runs: durations, and the order (SearXNG merges its
    engines' answers in arrival order), so the numbering too."""
    out = []
    for doc in docs:
        metadata = dict(doc.metadata)
        metadata.pop("id")
        metadata["attempts"] = [{k: v for k, v in a.items() if k != "duration_ms"} for a in metadata["attempts"]]
        out.append((doc.page_content, json.dumps(metadata, sort_keys=True)))
    return sorted(out)


# --- Documents -------------------------------------------------------------------------------------------


def test_documents_and_metadata_from_a_provider() -> None:
    body = searxng_results(3)
    body["results"][1].pop("publishedDate")  # one hit with no known date
    retriever = PerplexedRetriever(provider=mock_searxng(body), k=5)

    docs = retriever.invoke("anything")

    assert [d.metadata["id"] for d in docs] == [1, 2, 3]
    first = docs[0]
    assert first.page_content == "Snippet number 1."
    assert set(first.metadata) == METADATA_KEYS
    assert first.metadata["title"] == "Title 1"
    assert first.metadata["url"] == first.metadata["source"] == "https://site.example/page1"
    assert first.metadata["published"] == "2025-03-02"
    assert first.metadata["score"] == 1.0
    assert first.metadata["provider"] == first.metadata["answered_by"] == "searxng"
    assert first.metadata["cost"] == 0.0
    assert first.metadata["attempts"] == [
        {"provider": "searxng", "outcome": "ok", "cost": 0.0, "duration_ms": first.metadata["attempts"][0]["duration_ms"]}
    ]
    assert "published" not in docs[1].metadata  # unknown date: the key is left out
    for doc in docs:
        json.dumps(doc.metadata)  # JSON-serialisable


def test_page_content_is_content_else_snippet() -> None:
    def provider(query: str, options: Any) -> list[Hit]:
        return [
            Hit(url="https://a.example/1", title="A", snippet="short a", content="the full text of a"),
            Hit(url="https://a.example/2", title="B", snippet="short b"),
        ]

    docs = PerplexedRetriever(provider=FunctionProvider(provider, name="fn")).invoke("q")

    assert [d.page_content for d in docs] == ["the full text of a", "short b"]
    assert docs[0].metadata["provider"] == "fn"
    assert docs[0].metadata["score"] is None


def test_flat_metadata_keeps_scalars_only() -> None:
    body = searxng_results(2)
    body["results"][0].pop("score")
    retriever = PerplexedRetriever(provider=mock_searxng(body), flat_metadata=True)

    docs = retriever.invoke("q")

    for doc in docs:
        assert all(isinstance(v, str | int | float | bool) for v in doc.metadata.values()), doc.metadata
    assert "score" not in docs[0].metadata  # None values are dropped
    attempts = docs[0].metadata["attempts"]
    assert isinstance(attempts, str) and " " not in attempts  # one compact string
    assert json.loads(attempts)[0]["provider"] == "searxng"
    assert docs[1].metadata["score"] == 0.5


def test_fallback_metadata_names_every_attempt(searxng_env: Any) -> None:
    retriever = PerplexedRetriever(
        provider=[SearXNG(base_url=DEAD_URL, name="dead"), "searxng"], k=2, provider_timeout_ms=5000
    )

    docs = retriever.invoke(QUERY)

    assert len(docs) == 2
    meta = docs[0].metadata
    assert meta["answered_by"] == "searxng"
    assert [(a["provider"], a["outcome"]) for a in meta["attempts"]] == [("dead", "error"), ("searxng", "ok")]


def test_empty_answer_is_an_empty_list() -> None:
    retriever = PerplexedRetriever(provider=mock_searxng({"results": []}))
    assert retriever.invoke("nothing matches") == []


# --- options: constructor and per call -------------------------------------------------------------------


def test_k_and_max_results_per_call() -> None:
    retriever = PerplexedRetriever(provider=mock_searxng(searxng_results(8)), k=5)

    assert len(retriever.invoke("q")) == 5
    assert len(retriever.invoke("q", k=2)) == 2
    assert len(retriever.invoke("q", max_results=3)) == 3


async def test_per_call_overrides_reach_the_provider() -> None:
    requests: list[httpx.Request] = []
    retriever = PerplexedRetriever(
        provider=mock_searxng(searxng_results(4), requests=requests), recency="month", language="en"
    )

    docs = await retriever.ainvoke("q", recency="week", include_domains=["site.example/page2"], engines=["a", "b"])

    params = requests[-1].url.params
    assert params["time_range"] == "week"  # per-call beats the constructor
    assert params["language"] == "en"  # the constructor's still applies
    assert params["engines"] == "a,b"  # a provider-specific option passes through
    assert [d.metadata["url"] for d in docs] == ["https://site.example/page2"]


def test_constructor_search_options_reach_the_provider() -> None:
    requests: list[httpx.Request] = []
    retriever = PerplexedRetriever(
        provider=mock_searxng(searxng_results(3), requests=requests),
        recency="year",
        safe_search="strict",
        exclude_domains=["site.example/page1"],
        search_kwargs={"categories": "news"},
        published_after=date(2020, 1, 1),
    )

    docs = retriever.invoke("q")

    params = requests[-1].url.params
    assert params["time_range"] == "year" and params["safesearch"] == "2" and params["categories"] == "news"
    assert [d.metadata["id"] for d in docs] == [1, 2]
    assert "https://site.example/page1" not in {d.metadata["url"] for d in docs}


def test_provider_override_per_call() -> None:
    retriever = PerplexedRetriever(provider=mock_searxng(searxng_results(1), name="first"))
    other = mock_searxng(searxng_results(2, prefix="https://other.example/"), name="second")

    docs = retriever.invoke("q", provider=other)

    assert {d.metadata["answered_by"] for d in docs} == {"second"}
    assert len(docs) == 2


def test_bad_options_fail_at_construction() -> None:
    with pytest.raises(ValidationError, match="invalid domain"):
        PerplexedRetriever(include_domains=["not a domain"])
    with pytest.raises(ValidationError, match="unknown provider"):
        PerplexedRetriever(provider="no-such-provider")
    with pytest.raises(ValidationError):
        PerplexedRetriever(recency="fortnight")
    with pytest.raises(ValidationError):
        PerplexedRetriever(provider_timeout_ms=-5)
    with pytest.raises(ValidationError):
        PerplexedRetriever(k=0)


def test_unknown_constructor_keywords_are_rejected_not_dropped() -> None:
    with pytest.raises(ValidationError, match="recncy"):
        PerplexedRetriever(recncy="day")
    with pytest.raises(ConfigError, match="naming one provider"):  # a key for the default chain: which member?
        PerplexedRetriever(api_key="tvly-abcdefghijklmnop")


def test_max_results_is_an_alias_of_k() -> None:
    retriever = PerplexedRetriever(provider=mock_searxng(searxng_results(8)), max_results=3)
    assert retriever.k == 3
    assert len(retriever.invoke("q")) == 3


def test_bad_per_call_options_raise_invalid_request() -> None:
    retriever = PerplexedRetriever(provider=mock_searxng(searxng_results(2)))
    with pytest.raises(InvalidRequest) as info:
        retriever.invoke("q", include_domains=["not a domain"])
    assert info.value.param == "include_domains"
    with pytest.raises(InvalidRequest):
        retriever.invoke("   ")


# --- sync / async, batch ---------------------------------------------------------------------------------


async def test_sync_and_async_give_the_same_documents() -> None:
    # a deterministic upstream: a real SearXNG merges its engines in arrival order and, on a loaded machine,
    # may drop a slow engine from one of the two searches (the real server is covered by the tests above)
    retriever = PerplexedRetriever(provider=mock_searxng(searxng_results(6)), k=4)

    sync_docs = await asyncio.to_thread(retriever.invoke, QUERY)
    async_docs = await retriever.ainvoke(QUERY)

    assert len(sync_docs) == len(async_docs) == 4
    assert [d.metadata["id"] for d in sync_docs] == [d.metadata["id"] for d in async_docs] == [1, 2, 3, 4]
    assert comparable(sync_docs) == comparable(async_docs)
    assert [d.metadata["url"] for d in sync_docs] == [d.metadata["url"] for d in async_docs]


async def test_async_runs_on_the_callers_loop_not_in_a_thread() -> None:
    seen: list[tuple[Any, str]] = []

    async def provider(query: str, options: Any) -> list[Hit]:
        seen.append((asyncio.get_running_loop(), threading.current_thread().name))
        return [Hit(url="https://a.example/", title="A", snippet="a")]

    docs = await PerplexedRetriever(provider=FunctionProvider(provider)).ainvoke("q")

    assert len(docs) == 1
    assert seen == [(asyncio.get_running_loop(), threading.current_thread().name)]


BATCH = {
    "variance": "https://docs.example.org/zoning-variance",
    "httpx client": "https://docs.example.org/httpx",
    "rust ownership": "https://docs.example.org/rust-ownership",
}


def check_batch(results: list[list[Document]]) -> None:
    assert len(results) == len(BATCH)
    for (query, corpus_url), docs in zip(BATCH.items(), results, strict=True):
        urls = {d.metadata["url"] for d in docs}
        slug = query.replace(" ", "-")
        assert {corpus_url, f"https://upstream.example/{slug}"} <= urls, (query, urls)


def test_batch_over_several_queries(searxng_env: Any) -> None:
    retriever = PerplexedRetriever(provider="searxng", k=5)
    check_batch(retriever.batch(list(BATCH)))


async def test_abatch_over_several_queries(searxng_env: Any) -> None:
    retriever = PerplexedRetriever(provider="searxng", k=5)
    check_batch(await retriever.abatch(list(BATCH)))


# --- errors ----------------------------------------------------------------------------------------------


def failing_chain(searxng_no_json: Any) -> list[SearXNG]:
    return [SearXNG(base_url=DEAD_URL, name="dead"), SearXNG(base_url=searxng_no_json.base_url, name="nojson")]


def test_all_providers_failed_raises_a_typed_error(searxng_no_json: Any) -> None:
    retriever = PerplexedRetriever(provider=failing_chain(searxng_no_json))

    with pytest.raises(UpstreamError) as info:
        retriever.invoke(QUERY)

    assert info.value.reason == "all_providers_failed"
    assert [(a.provider, a.outcome.value) for a in info.value.attempts] == [("dead", "error"), ("nojson", "error")]
    assert "dead" in str(info.value) and "nojson" in str(info.value) and "403" in str(info.value)


async def test_all_providers_failed_raises_async(searxng_no_json: Any) -> None:
    retriever = PerplexedRetriever(provider=failing_chain(searxng_no_json))

    with pytest.raises(UpstreamError) as info:
        await retriever.ainvoke(QUERY)

    assert [a.provider for a in info.value.attempts] == ["dead", "nojson"]


def test_quiet_upstream_failure_moves_the_chain_on(searxng_env: Any) -> None:
    # SearXNG answers 200 with no results when its only matching engine fails (HTTP 500 upstream):
    # an "empty" attempt, and the chain moves on to the next provider.
    searxng_env.upstream.set_mode("500")
    backup = mock_searxng(searxng_results(2), name="backup")

    assert PerplexedRetriever(provider="searxng").invoke("quokka") == []
    docs = PerplexedRetriever(provider=["searxng", backup]).invoke("quokka")

    assert [(a["provider"], a["outcome"]) for a in docs[0].metadata["attempts"]] == [
        ("searxng", "empty"),
        ("backup", "ok"),
    ]


# --- secrets ---------------------------------------------------------------------------------------------


SECRET = "tvly-abcdefghijklmnop123"


def test_repr_and_str_never_show_a_key() -> None:
    retriever = PerplexedRetriever(
        provider=[
            "searxng",
            {"name": "tavily", "api_key": SECRET},
            {"name": "tavily", "api_key": SecretStr(SECRET + "x")},
            perplexed.providers.get("tavily")(api_key=SECRET + "y"),
        ]
    )

    for text in (repr(retriever), str(retriever), retriever.model_dump_json(), repr(retriever.model_dump())):
        assert SECRET not in text
    assert "tavily" in repr(retriever)
    spec = retriever.provider[1]
    assert isinstance(spec["api_key"], SecretStr)  # passed through to the core as a SecretStr
    assert spec["api_key"].get_secret_value() == SECRET


def test_key_reaches_the_provider_as_a_secret() -> None:
    seen: list[str | None] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"results": [{"url": "https://k.example/", "title": "K", "content": "k"}]})

    tavily = perplexed.providers.get("tavily")
    provider = tavily(api_key=SECRET, transport=httpx.MockTransport(respond))
    retriever = PerplexedRetriever(provider=provider)

    retriever.invoke("q")

    assert seen and SECRET in (seen[0] or "")
    assert SECRET not in repr(retriever)


async def test_direct_calls_with_noop_or_mock_run_managers() -> None:
    from unittest.mock import MagicMock

    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun

    retriever = PerplexedRetriever(provider=mock_searxng(searxng_results(3)), k=2)

    for manager in (CallbackManagerForRetrieverRun.get_noop_manager(), MagicMock(spec=CallbackManagerForRetrieverRun)):
        assert len(await asyncio.to_thread(retriever._get_relevant_documents, "q", run_manager=manager)) == 2
    for amanager in (
        AsyncCallbackManagerForRetrieverRun.get_noop_manager(),
        MagicMock(spec=AsyncCallbackManagerForRetrieverRun),
    ):
        assert len(await retriever._aget_relevant_documents("q", run_manager=amanager)) == 2
