"""Issue 38: every call of a perplexed LlamaIndex component dispatches one ``PerplexedUsageEvent`` (the call's
``Result.usage``: calls, billable calls, cost, cache hits and what they saved) through the LlamaIndex
dispatcher, to any registered event handler; a failed call's event still counts what its attempts used."""

from __future__ import annotations

from typing import Any

import perplexed
import pytest
from llama_agent import AGENT_COST, LoopbackAgentAPI
from llama_fakes import aweb, broken, nothing, web
from llama_index_perplexed import (
    PerplexedQueryEngine,
    PerplexedReader,
    PerplexedRetriever,
    PerplexedToolSpec,
    PerplexedUsageEvent,
)
from perplexed.providers import FunctionProvider
from testkit.loopback import Html, LoopbackServer


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    perplexed.reset()
    yield
    perplexed.reset()


def paid(cost: float, fn: Any = web, name: str = "paid") -> FunctionProvider:
    return FunctionProvider(fn, name=name, cost=cost)


def only(recorder: Any) -> PerplexedUsageEvent:
    (event,) = recorder.of(PerplexedUsageEvent)
    assert isinstance(event, PerplexedUsageEvent)
    return event


def test_a_retrieval_reports_its_usage_and_what_the_cache_saved(recorder, spans) -> None:
    retriever = PerplexedRetriever([paid(0.01, nothing, "empty_paid"), paid(0.02)], cache_ttl_s=60)
    retriever.retrieve("zoning")
    first = only(recorder)
    assert (first.operation, first.calls, first.billable_calls, first.cache_hits, first.failed) == (
        "search", 2, 2, 0, False)
    assert first.cost_usd == pytest.approx(0.03) and first.saved_usd == 0.0
    assert first.span_id is not None and first.span_id.startswith("PerplexedRetriever.")
    recorder.events.clear()
    retriever.retrieve("zoning")  # again: the empty answer was not cached (billed again), the other one was
    second = only(recorder)
    assert (second.calls, second.cache_hits, second.billable_calls) == (2, 1, 1)
    assert second.cost_usd == pytest.approx(0.01) and second.saved_usd == pytest.approx(0.02)
    assert second.model_dump()["class_name"] == "PerplexedUsageEvent"


async def test_an_async_retrieval_reports_its_usage(recorder) -> None:
    await PerplexedRetriever([nothing, FunctionProvider(aweb, name="aweb", cost=0.004)]).aretrieve("q")
    event = only(recorder)
    assert (event.calls, event.billable_calls, event.cost_usd) == (2, 1, pytest.approx(0.004))


def test_a_failed_search_still_reports_what_it_used(recorder) -> None:
    with pytest.raises(perplexed.UpstreamError):
        PerplexedRetriever([paid(0.005, broken, "down"), broken]).retrieve("q")
    event = only(recorder)
    assert event.failed is True and event.calls == 2
    assert event.cost_usd == 0.0  # the failed attempts billed nothing here


def test_a_query_includes_the_agent_api_call(agent_api: LoopbackAgentAPI, recorder) -> None:
    PerplexedQueryEngine([paid(0.01)], client=agent_api.client()).query("q")
    event = only(recorder)
    assert event.operation == "answer"
    assert (event.calls, event.billable_calls) == (2, 2)  # the search's provider call and the Agent API call
    assert event.cost_usd == pytest.approx(0.01 + AGENT_COST)


async def test_a_streamed_query_reports_once_at_its_end(agent_api: LoopbackAgentAPI, recorder) -> None:
    engine = PerplexedQueryEngine([paid(0.01)], async_client=agent_api.async_client(), streaming=True)
    response = await engine.aquery("q")
    assert recorder.of(PerplexedUsageEvent) == []  # the answer is not whole yet
    await response.get_response()
    assert only(recorder).cost_usd == pytest.approx(0.01 + AGENT_COST)


def test_the_tools_report_per_call(agent_api: LoopbackAgentAPI, recorder) -> None:
    spec = PerplexedToolSpec([paid(0.01)], client=agent_api.client())
    spec.perplexed_search("q")
    spec.perplexed_answer("q")
    search, answer = recorder.of(PerplexedUsageEvent)
    assert (search.operation, search.cost_usd) == ("search", pytest.approx(0.01))
    assert (answer.operation, answer.calls, answer.cost_usd) == ("answer", 2, pytest.approx(0.01 + AGENT_COST))


def test_a_reader_load_sums_its_pages(recorder, loopback: LoopbackServer) -> None:
    body = "<html><head><title>T</title></head><body><article><p>" + "text " * 80 + "</p></article></body></html>"
    loopback.route("/a", Html(body))
    loopback.route("/b", Html(body))
    PerplexedReader("http", allow_private=True).load_data([loopback.url + "/a", loopback.url + "/b"])
    event = only(recorder)
    assert (event.operation, event.calls, event.failed) == ("fetch", 2, False)
