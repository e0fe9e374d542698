"""Streamed grounded answers: text deltas, then the final Answer; the same errors as the non-stream path."""

from __future__ import annotations

from typing import Any

import httpx
import perplexed
import pytest
from perplexed import Answer, NoSourcesError, UpstreamError, telemetry
from perplexed.agent import RateLimitError, ResponseFailedError, StreamError
from test_answer_fakes import (
    ANSWER_TEXT,
    FakeAgentAPI,
    failing_provider,
    ok,
    provider,
    response_json,
    split_text,
    status,
)

QUERY = "What are typical zoning setbacks?"


async def _collect(stream: Any) -> tuple[list[str], Answer]:
    items = [item async for item in stream]
    *deltas, final = items
    assert all(isinstance(d, str) for d in deltas)
    assert isinstance(final, Answer)
    return deltas, final


async def test_async_stream_deltas_then_the_answer() -> None:
    api = FakeAgentAPI()
    deltas, ans = await _collect(perplexed.astream_answer(QUERY, provider=provider(cost=0.001), client=api.async_client()))
    assert deltas == split_text(ANSWER_TEXT)
    assert "".join(deltas) == ans.text == ANSWER_TEXT
    assert [c.n for c in ans.citations] == [1, 2]
    assert ans.cost == pytest.approx(0.0052)
    body = api.body
    assert body["stream"] is True and body["max_tool_calls"] == 0 and "[1] Zoning setbacks explained" in body["input"]


async def test_stream_text_equals_the_non_stream_text() -> None:
    text = "Setbacks [1] differ; sides [2][3] and rear [3]."
    api = FakeAgentAPI(reply=ok(response_json(text), deltas=["Setbacks [", "1] differ; sides [2]", "[3] and rear [3", "]."]))
    streamed = [x async for x in perplexed.astream_answer(QUERY, provider=provider(), client=api.async_client())]
    plain = await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client())
    final = streamed[-1]
    assert isinstance(final, Answer)
    assert "".join(x for x in streamed[:-1] if isinstance(x, str)) == final.text == plain.text
    assert [(c.n, c.span) for c in final.citations] == [(c.n, c.span) for c in plain.citations]
    assert "stream" not in api.requests[1]  # the non-stream call does not ask for a stream


def test_sync_stream_with_an_agent_client() -> None:
    api = FakeAgentAPI()
    items = list(perplexed.stream_answer(QUERY, provider=provider(), client=api.client(), preset="fast"))
    final = items[-1]
    assert isinstance(final, Answer)
    assert "".join(x for x in items[:-1] if isinstance(x, str)) == final.text == ANSWER_TEXT
    assert final.search is not None and final.search.provider == "web"


def test_sync_stream_stops_early_without_error() -> None:
    api = FakeAgentAPI()
    stream = perplexed.stream_answer(QUERY, provider=provider(), client=api.client())
    first = next(iter(stream))
    assert isinstance(first, str)
    stream.close()  # type: ignore[attr-defined]


async def test_stream_arguments_are_checked_at_call_time() -> None:
    calls: list[str] = []
    with pytest.raises(perplexed.InvalidRequest):
        perplexed.astream_answer(QUERY, provider=provider(calls=calls), client=FakeAgentAPI().async_client(), max_source_chars=-5)
    assert calls == []


async def test_stream_all_failed_never_calls_the_model() -> None:
    api = FakeAgentAPI()
    with pytest.raises(UpstreamError) as info:
        await _collect(perplexed.astream_answer(QUERY, provider=[failing_provider()], client=api.async_client()))
    assert info.value.reason == "all_providers_failed" and api.requests == []


async def test_stream_no_sources() -> None:
    api = FakeAgentAPI()
    with pytest.raises(NoSourcesError) as info:
        await _collect(perplexed.astream_answer(QUERY, provider=provider([], cost=0.001), client=api.async_client()))
    assert info.value.cost == pytest.approx(0.001) and api.requests == []


async def test_stream_429_keeps_the_search_attempts() -> None:
    api = FakeAgentAPI(reply=status(429, "request_rate_limit_exceeded", "slow down"))
    with pytest.raises(RateLimitError) as info:
        await _collect(perplexed.astream_answer(QUERY, provider=provider(cost=0.003, name="paid"), client=api.async_client()))
    assert [a.provider for a in info.value.attempts] == ["paid"]
    assert info.value.cost == pytest.approx(0.003)


async def test_stream_failed_event_keeps_the_search_attempts_after_partial_text() -> None:
    failed = response_json(
        "Partial answer [1]", status="failed", cost=0.0005, error={"message": "model crashed", "code": "internal_error"}
    )
    api = FakeAgentAPI(reply=ok(failed))
    received: list[Any] = []
    events: list[tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]] = []
    with telemetry.scoped(lambda e, m, md: events.append((e, m, md))), pytest.raises(ResponseFailedError) as info:
        async for item in perplexed.astream_answer(QUERY, provider=provider(cost=0.003, name="paid"), client=api.async_client()):
            received.append(item)
    assert "".join(received) == "Partial answer [1]"  # deltas arrived before the failure
    err = info.value
    assert err.attempts[0].provider == "paid"
    assert err.cost == pytest.approx(0.0035)
    assert events[-1][0] == ("perplexed", "answer", "agent")
    assert events[-1][2]["response_id"] == "resp_test_1"


async def test_stream_cut_before_the_terminal_event_is_a_stream_error() -> None:
    def cut(body: dict[str, Any]) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=b'data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_cut","status":"in_progress","output":[]}}\n\n'
            b'data: {"type":"response.output_text.delta","sequence_number":1,"output_index":0,"content_index":0,"delta":"Set"}\n\n',
        )

    api = FakeAgentAPI(reply=cut)
    with pytest.raises(StreamError) as info:
        await _collect(perplexed.astream_answer(QUERY, provider=provider(cost=0.002), client=api.async_client()))
    assert info.value.cost == pytest.approx(0.002)
