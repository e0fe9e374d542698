"""Instrumentation: retrievals run in LlamaIndex spans; each chain attempt reaches any event handler."""

from __future__ import annotations

import perplexed
import pytest
from llama_fakes import aweb, broken, nothing, web
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
from llama_index_perplexed import PerplexedAttemptEvent, PerplexedRetriever, as_provider


def test_event_class() -> None:
    event = PerplexedAttemptEvent(provider="p", outcome="ok", cost=0.01, duration_ms=5, billable=True)
    assert PerplexedAttemptEvent.class_name() == "PerplexedAttemptEvent"
    dumped = event.model_dump()
    assert dumped["class_name"] == "PerplexedAttemptEvent"
    assert {k: dumped[k] for k in ("provider", "outcome", "cost", "duration_ms", "billable")} == {
        "provider": "p", "outcome": "ok", "cost": 0.01, "duration_ms": 5, "billable": True,
    }


def test_sync_retrieve_dispatches_every_attempt(recorder, spans) -> None:
    retriever = PerplexedRetriever([broken, nothing, web])
    retriever.retrieve("alpha")

    attempts = recorder.of(PerplexedAttemptEvent)
    assert [(e.provider, e.outcome) for e in attempts] == [("broken", "error"), ("nothing", "empty"), ("web", "ok")]
    assert all(isinstance(e.outcome, str) for e in attempts)
    assert "HTTP 503" in (attempts[0].error or "")
    assert all(e.duration_ms >= 0 and e.cost == 0.0 and e.billable is False for e in attempts)
    assert all(e.query == "alpha" for e in attempts)
    # between LlamaIndex's own retrieval events
    kinds = [type(e) for e in recorder.events if isinstance(e, RetrievalStartEvent | RetrievalEndEvent | PerplexedAttemptEvent)]
    assert kinds[0] is RetrievalStartEvent and kinds[-1] is RetrievalEndEvent
    # inside the retriever's span
    span_ids = {s.id_ for s in spans.completed_spans}
    assert all(e.span_id in span_ids for e in attempts)
    assert all(e.span_id.startswith("PerplexedRetriever.") for e in attempts)


async def test_async_retrieve_dispatches_every_attempt_inside_aretrieve_spans(recorder, spans) -> None:
    retriever = PerplexedRetriever([nothing, aweb])
    await retriever.aretrieve("alpha")

    attempts = recorder.of(PerplexedAttemptEvent)
    assert [(e.provider, e.outcome) for e in attempts] == [("nothing", "empty"), ("aweb", "ok")]
    names = {s.id_.split("-")[0] for s in spans.completed_spans}
    assert {"PerplexedRetriever.aretrieve", "PerplexedRetriever._aretrieve"} <= names
    inner = next(s for s in spans.completed_spans if s.id_.startswith("PerplexedRetriever._aretrieve"))
    outer = next(s for s in spans.completed_spans if s.id_.startswith("PerplexedRetriever.aretrieve"))
    assert inner.parent_id == outer.id_
    assert {e.span_id for e in attempts} == {inner.id_}


def test_paid_attempts_carry_their_cost(recorder) -> None:
    paid = perplexed.providers.FunctionProvider(nothing, name="paid", cost=0.005)
    PerplexedRetriever([paid, web]).retrieve("q")
    first = recorder.of(PerplexedAttemptEvent)[0]
    assert (first.provider, first.outcome, first.cost, first.billable) == ("paid", "empty", 0.005, True)


def test_failed_retrieval_still_dispatches_the_attempts(recorder, spans) -> None:
    with pytest.raises(perplexed.UpstreamError):
        PerplexedRetriever([broken, broken]).retrieve("q")
    assert [e.outcome for e in recorder.of(PerplexedAttemptEvent)] == ["error", "error"]
    assert any(s.id_.startswith("PerplexedRetriever.retrieve") for s in spans.dropped_spans)


def test_plain_perplexed_searches_do_not_dispatch(recorder) -> None:
    perplexed.search("q", provider=web)
    assert recorder.of(PerplexedAttemptEvent) == []


def test_nested_perplexed_retriever_dispatches_each_attempt_once(recorder) -> None:
    inner = PerplexedRetriever([nothing, web])
    outer = PerplexedRetriever([as_provider(inner, name="inner"), aweb])
    nodes = outer.retrieve("q")
    assert nodes[0].node.metadata["answered_by"] == "inner"
    seen = [(e.provider, e.outcome) for e in recorder.of(PerplexedAttemptEvent)]
    assert sorted(seen) == sorted([("nothing", "empty"), ("web", "ok"), ("inner", "ok")])
