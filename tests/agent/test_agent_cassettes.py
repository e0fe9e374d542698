"""Replays of the synthesized cassettes (vcrpy, record_mode="none") through the default pooled client.

The cassettes were written from the API docs, not recorded: see cassettes/synthesized/agent/README.md.
"""

from __future__ import annotations

import pytest
from agent_helpers import FAKE_KEY, cassette_events, use_cassette
from perplexed.agent import (
    AgentClient,
    AsyncAgentClient,
    BadRequestError,
    InputMessage,
    RateLimitError,
    ResponseCancelledError,
    ResponseFailedError,
    ResponseIncompleteError,
    StreamError,
    UnknownEvent,
    UnknownOutputItem,
    WebSearch,
)

ISSUE_REQUEST = dict(
    preset="fast",
    input="What changed in the EU AI Act?",
    instructions="Cite sources.",
    tools=[WebSearch(search_domain_filter=["europa.eu"], search_recency_filter="month")],
)


def make() -> AgentClient:
    return AgentClient(api_key=FAKE_KEY)


def test_create_completed():
    with use_cassette("create_completed") as cas:
        resp = make().create(**ISSUE_REQUEST)
    assert cas.play_count == 1
    assert resp.status == "completed"
    assert resp.output_text.startswith("The EU AI Act's obligations")
    assert [r.id for r in resp.search_results] == [1, 2, 3]  # from all search_results items, one empty
    first = resp.search_results[0]
    assert first.url.startswith("https://digital-strategy.ec.europa.eu")
    assert first.date == "2026-02-10" and first.last_updated == "2026-03-01"
    assert resp.cost == 0.0111
    assert any(isinstance(i, UnknownOutputItem) and i.type == "sandbox_results" for i in resp.output)
    cites = resp.citations
    assert [c.number for c in cites] == [1, 2, 1, 3]
    assert [c.number for c in cites.unmatched] == [4]
    assert [s.id for s in cites.sources] == [1, 2, 3]
    text, sources = cites.renumber()
    assert "[4]" not in text and len(sources) == 3


async def test_create_completed_async():
    with use_cassette("create_completed"):
        resp = await AsyncAgentClient(api_key=FAKE_KEY).create(**ISSUE_REQUEST)
    assert resp.id == "resp_abc"


def test_create_incomplete_and_failed():
    with use_cassette("create_incomplete"), pytest.raises(ResponseIncompleteError) as info:
        make().create(preset="fast", input="Write a long essay", max_output_tokens=16)
    assert info.value.reason == "max_output_tokens"
    assert "max_output_tokens" in str(info.value)
    assert info.value.response.output_text == "The history of"
    with use_cassette("create_failed"), pytest.raises(ResponseFailedError) as failed:
        make().create(preset="fast", input="x")
    assert "upstream_structured_output_failed" in str(failed.value)
    assert failed.value.response.status == "failed"


def test_stream_normal_sync():
    with use_cassette("stream_normal"):
        stream = make().stream(preset="fast", input="Explain quantum computing")
        printed = []
        events = []
        for event in stream:
            events.append(event)
            if event.type == "response.output_text.delta":
                printed.append(event.delta)
    expected = cassette_events("stream_normal")
    assert [e.type for e in events] == [e["type"] for e in expected]
    assert events[-1].type == "response.completed"
    assert "".join(printed) == stream.response.output_text
    assert stream.response.cost == 0.0111


async def test_stream_reasoning_async():
    with use_cassette("stream_reasoning"):
        stream = AsyncAgentClient(api_key=FAKE_KEY).stream(preset="fast", input="Explain quantum computing")
        events = [e async for e in stream]
    # every reasoning event is parsed into its typed model (an unparsed one would be an UnknownEvent)
    reasoning = [e for e in events if e.type.startswith("response.reasoning.")]
    assert not [e for e in reasoning if isinstance(e, UnknownEvent)]
    assert [e.type.rsplit(".", 1)[-1] for e in reasoning] == [
        "started",
        "search_queries",
        "search_results",
        "fetch_url_queries",
        "fetch_url_results",
        "stopped",
    ]
    assert reasoning[2].search_results[0].id == 1
    assert stream.response.status == "completed"


def test_stream_failed():
    seen = []
    with use_cassette("stream_failed"), pytest.raises(ResponseFailedError) as info:
        for e in make().stream(preset="fast", input="Explain quantum computing"):
            seen.append(e.type)
    assert seen[-1] == "response.failed"
    assert info.value.response.id == "resp_s3"


def test_stream_incomplete():
    with use_cassette("stream_incomplete"), pytest.raises(ResponseIncompleteError) as info:
        list(make().stream(preset="fast", input="Explain quantum computing"))
    assert info.value.reason == "max_output_tokens"
    assert info.value.response.output_text.startswith("The EU AI Act's")


def test_stream_error_event():
    with use_cassette("stream_error_event"), pytest.raises(StreamError, match="stream interrupted upstream"):
        list(make().stream(preset="fast", input="Explain quantum computing"))


def test_stream_unknown_event_kept():
    with use_cassette("stream_unknown_event"):
        events = list(make().stream(preset="fast", input="Explain quantum computing"))
    unknown = [e for e in events if isinstance(e, UnknownEvent)]
    assert [e.type for e in unknown] == ["response.future_feature"]
    assert unknown[0].raw["payload"] == {"x": 1}
    added = [
        e
        for e in events
        if e.type == "response.output_item.added"
        and not isinstance(e, UnknownEvent)
        and isinstance(e.item, UnknownOutputItem)
    ]
    assert added and added[0].item.type == "hologram_results"
    assert events[-1].type == "response.completed"


def test_stream_event_lines_present():
    with use_cassette("stream_event_lines"):
        events = list(make().stream(preset="fast", input="Explain quantum computing"))
    assert [e.type for e in events] == [e["type"] for e in cassette_events("stream_event_lines")]


def test_background_lifecycle():
    c = make()
    with use_cassette("background_lifecycle") as cas:
        run = c.create(preset="high", input="Deep dive on solid-state batteries", background=True)
        assert run.status == "queued" and run.id == "resp_bg"
        assert c.retrieve(run.id).status == "queued"
        final = c.wait(run.id, poll_interval=0.01)
    assert cas.all_played
    assert final.status == "completed"
    assert final.output_text and final.cost == 0.0111


async def test_background_cancel_async():
    c = AsyncAgentClient(api_key=FAKE_KEY)
    with use_cassette("background_cancel") as cas:
        run = await c.create(preset="high", input="Deep dive on solid-state batteries", background=True)
        cancel = await c.cancel(run.id)
        assert (cancel.response_id, cancel.status) == ("resp_bg2", "cancelling")
        with pytest.raises(ResponseCancelledError) as info:
            await c.wait(run.id, poll_interval=0.01)
        assert info.value.response.status == "cancelled"
        with pytest.raises(BadRequestError, match="already terminal"):
            await c.cancel(run.id)
    assert cas.all_played


def test_rate_limited_then_ok():
    with use_cassette("rate_limited_then_ok") as cas:
        resp = make().create(**ISSUE_REQUEST)
    assert cas.play_count == 2
    assert resp.id == "resp_after_429"


def test_rate_limited_without_retries():
    with use_cassette("rate_limited_then_ok"), pytest.raises(RateLimitError) as info:
        AgentClient(api_key=FAKE_KEY, max_retries=0).create(**ISSUE_REQUEST)
    assert info.value.retry_after == 0.02  # retry-after-ms preferred over Retry-After
    assert info.value.type == "request_rate_limit_exceeded"


def test_bad_request_unknown_field():
    with use_cassette("bad_request_unknown_field") as cas, pytest.raises(BadRequestError) as info:
        make().create(preset="fast", input="x", extra_body={"foo": 1})
    assert cas.play_count == 1
    err = info.value
    assert (err.status, err.type, err.code, err.param) == (400, "invalid_request", 400, "foo")
    # issue 16: the message says which option sent the unknown field
    assert str(err) == 'invalid request body: json: unknown field "foo" (sent by extra_body)'


def test_input_items_over_cassette():
    with use_cassette("create_completed"):
        resp = make().create(preset="fast", input=[InputMessage(role="user", content="What changed?")])
    assert resp.status == "completed"
