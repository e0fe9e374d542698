"""Every provider attempt reaches LangChain callbacks as the custom event ``perplexed_attempt``."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from langchain_perplexed import ATTEMPT_EVENT, PerplexedRetriever, PerplexedSearchTool
from lc_support import DEAD_URL, AsyncEventRecorder, EventRecorder, mock_searxng, searxng_results
from perplexed import UpstreamError
from perplexed.providers import SearXNG

DATA_KEYS = {"provider", "outcome", "cost", "duration_ms", "billable", "error"}


def chain() -> list[Any]:
    return [SearXNG(base_url=DEAD_URL, name="dead"), mock_searxng(searxng_results(2), name="backup")]


def check_two_attempts(events: list[dict[str, Any]]) -> None:
    assert [(e["provider"], e["outcome"]) for e in events] == [("dead", "error"), ("backup", "ok")]
    for event in events:
        assert set(event) == DATA_KEYS
        assert isinstance(event["duration_ms"], int) and event["cost"] == 0.0 and event["billable"] is False
    assert "connection" in events[0]["error"]
    assert events[1]["error"] is None


def test_event_name() -> None:
    assert ATTEMPT_EVENT == "perplexed_attempt"


def test_retriever_sync_events_reach_a_handler(recorder: EventRecorder) -> None:
    docs = PerplexedRetriever(provider=chain()).invoke("q", config={"callbacks": [recorder]})

    assert len(docs) == 2
    check_two_attempts(recorder.named(ATTEMPT_EVENT))
    # the events belong to the retriever's own run
    assert {run_id for _, _, run_id in recorder.events} == {recorder.run_ids[0]}


async def test_retriever_async_events_reach_an_async_handler() -> None:
    handler = AsyncEventRecorder()

    await PerplexedRetriever(provider=chain()).ainvoke("q", config={"callbacks": [handler]})

    # all delivered by the time ainvoke returns
    check_two_attempts(handler.named(ATTEMPT_EVENT))


async def test_retriever_async_events_reach_a_sync_handler(recorder: EventRecorder) -> None:
    await PerplexedRetriever(provider=chain()).ainvoke("q", config={"callbacks": [recorder]})
    check_two_attempts(recorder.named(ATTEMPT_EVENT))


def test_events_are_dispatched_also_when_every_provider_fails(recorder: EventRecorder) -> None:
    retriever = PerplexedRetriever(provider=[SearXNG(base_url=DEAD_URL, name="a"), mock_searxng(500, name="b")])

    with pytest.raises(UpstreamError):
        retriever.invoke("q", config={"callbacks": [recorder]})

    assert [(e["provider"], e["outcome"]) for e in recorder.named(ATTEMPT_EVENT)] == [("a", "error"), ("b", "error")]


async def test_events_are_dispatched_also_when_every_provider_fails_async() -> None:
    handler = AsyncEventRecorder()
    retriever = PerplexedRetriever(provider=[SearXNG(base_url=DEAD_URL, name="a"), mock_searxng(500, name="b")])

    with pytest.raises(UpstreamError):
        await retriever.ainvoke("q", config={"callbacks": [handler]})

    assert [e["provider"] for e in handler.named(ATTEMPT_EVENT)] == ["a", "b"]
    assert "500" in handler.named(ATTEMPT_EVENT)[1]["error"]


def test_tool_events_reach_a_handler(recorder: EventRecorder) -> None:
    tool = PerplexedSearchTool(provider=chain())

    tool.invoke({"query": "q"}, config={"callbacks": [recorder]})

    check_two_attempts(recorder.named(ATTEMPT_EVENT))
    assert {run_id for _, _, run_id in recorder.events} == {recorder.run_ids[0]}


async def test_tool_async_events_reach_a_handler() -> None:
    handler = AsyncEventRecorder()
    tool = PerplexedSearchTool(provider=chain())

    await tool.ainvoke({"query": "q"}, config={"callbacks": [handler]})

    check_two_attempts(handler.named(ATTEMPT_EVENT))


async def test_events_show_up_in_astream_events_inside_a_chain() -> None:
    retriever = PerplexedRetriever(provider=chain())
    pipeline = RunnableLambda(lambda q: q.strip()) | retriever

    events = [e async for e in pipeline.astream_events("  q  ", version="v2")]

    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [e["name"] for e in custom] == [ATTEMPT_EVENT, ATTEMPT_EVENT]
    assert [e["data"]["provider"] for e in custom] == ["dead", "backup"]
    retriever_start = next(e for e in events if e["event"] == "on_retriever_start")
    assert {e["run_id"] for e in custom} == {retriever_start["run_id"]}


def test_no_handlers_no_events_no_error() -> None:
    assert len(PerplexedRetriever(provider=chain()).invoke("q")) == 2


def test_a_failing_handler_does_not_break_the_search() -> None:
    class Broken(EventRecorder):
        raise_error = True

        def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            raise RuntimeError("handler bug")

    docs = PerplexedRetriever(provider=chain()).invoke("q", config={"callbacks": [Broken()]})
    assert len(docs) == 2
