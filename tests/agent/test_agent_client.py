"""AgentClient / AsyncAgentClient over httpx.MockTransport: config, retries, timeouts, streams, errors."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from agent_helpers import (
    FAKE_KEY,
    RESPONSE_COMPLETED,
    Recorder,
    cassette_body,
    cassette_events,
    chunks_of,
    sse_body,
    sse_response,
)
from perplexed import ConfigError, InvalidRequest, PerplexedError
from perplexed.agent import (
    AgentClient,
    APIConnectionError,
    APITimeoutError,
    AsyncAgentClient,
    BadRequestError,
    RateLimitError,
    Response,
    ResponseCancelledError,
    ResponseFailedError,
    ResponseIncompleteError,
    ServerError,
    StreamError,
    WebSearch,
)


def ok(data=None):
    return httpx.Response(200, json=data if data is not None else RESPONSE_COMPLETED)


def client(rec: Recorder, **kwargs) -> AgentClient:
    kwargs.setdefault("api_key", FAKE_KEY)
    return AgentClient(transport=rec.transport, **kwargs)


def aclient(rec: Recorder, **kwargs) -> AsyncAgentClient:
    kwargs.setdefault("api_key", FAKE_KEY)
    return AsyncAgentClient(transport=rec.transport, **kwargs)


# --- configuration -------------------------------------------------------------------------------------


def test_missing_key_is_config_error_at_call_time():
    rec = Recorder(ok())
    c = AgentClient(transport=rec.transport)  # constructing without a key is fine
    with pytest.raises(ConfigError, match="PERPLEXITY_API_KEY"):
        c.create(preset="fast", input="x")
    assert rec.requests == []


def test_key_from_environment(monkeypatch):
    monkeypatch.setenv("PERPLEXITY_API_KEY", FAKE_KEY)
    rec = Recorder(ok())
    AgentClient(transport=rec.transport).create(preset="fast", input="x")
    assert rec.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_base_url_default_env_and_argument(monkeypatch):
    rec = Recorder(ok())
    client(rec).create(preset="fast", input="x")
    assert str(rec.requests[-1].url) == "https://api.perplexity.ai/v1/agent"
    monkeypatch.setenv("PERPLEXITY_BASE_URL", "https://proxy.example/pplx/")
    client(rec).create(preset="fast", input="x")
    assert str(rec.requests[-1].url) == "https://proxy.example/pplx/v1/agent"
    client(rec, base_url="https://api.perplexity.ai/v1").create(preset="fast", input="x")
    assert str(rec.requests[-1].url) == "https://api.perplexity.ai/v1/agent"
    client(rec, api_path="/v1/responses").create(preset="fast", input="x")
    assert str(rec.requests[-1].url) == "https://proxy.example/pplx/v1/responses"


def test_bad_config():
    with pytest.raises(ConfigError):
        AgentClient(base_url="ftp://x")
    with pytest.raises(ConfigError):
        AgentClient(max_retries=-1)
    with pytest.raises(ConfigError):
        AgentClient(timeout=0)


def test_key_never_in_repr_or_errors():
    key = "pplx-secret-key-never-shown-0123456789"
    rec = Recorder(
        httpx.Response(
            401, json={"error": {"message": f"invalid key {key}", "type": "forbidden", "code": 401}}
        )
    )
    c = AgentClient(api_key=key, transport=rec.transport)
    assert key not in repr(c) and key not in repr(c.async_client)
    with pytest.raises(PerplexedError) as info:
        c.create(preset="fast", input="x")
    assert key not in str(info.value) and key not in repr(info.value.args)


def test_validation_happens_before_sending():
    rec = Recorder(ok())
    c = client(rec)
    with pytest.raises(InvalidRequest):
        c.create(preset="fast", input="x", max_steps=101)
    with pytest.raises(InvalidRequest):
        c.stream(
            preset="fast",
            input="x",
            tools=[{"type": "web_search", "filters": {"search_domain_filter": ["https://a.b"]}}],
        )
    assert rec.requests == []


# --- create ----------------------------------------------------------------------------------------------


def test_create_sends_only_known_fields_and_parses():
    rec = Recorder(ok())
    resp = client(rec).create(
        preset="fast",
        input="What changed in the EU AI Act?",
        instructions="...",
        tools=[WebSearch(search_recency_filter="month", search_domain_filter=["europa.eu"])],
    )
    assert rec.bodies()[0] == {
        "input": "What changed in the EU AI Act?",
        "preset": "fast",
        "instructions": "...",
        "tools": [
            {
                "type": "web_search",
                "filters": {"search_recency_filter": "month", "search_domain_filter": ["europa.eu"]},
            }
        ],
    }
    req = rec.requests[0]
    assert req.headers["content-type"] == "application/json"
    assert req.headers["accept"] == "application/json"
    assert isinstance(resp, Response)
    assert resp.output_text == "Answer [1][2] and [9]."
    assert resp.cost == 0.0123


@pytest.mark.parametrize(
    ("status", "extra", "cls", "reason"),
    [
        (
            "failed",
            {"error": {"message": "boom", "code": "internal_error", "type": "server_error"}},
            ResponseFailedError,
            "internal_error",
        ),
        ("cancelled", {}, ResponseCancelledError, "cancelled"),
        (
            "incomplete",
            {"incomplete_details": {"reason": "max_output_tokens"}},
            ResponseIncompleteError,
            "max_output_tokens",
        ),
    ],
)
def test_http_200_with_failed_status_raises(status, extra, cls, reason):
    data = {**RESPONSE_COMPLETED, "status": status, **extra}
    rec = Recorder(ok(data))
    with pytest.raises(ResponseFailedError) as info:
        client(rec).create(preset="fast", input="x")
    err = info.value
    assert type(err) is cls
    assert err.reason == reason
    assert isinstance(err.response, Response) and err.response.status == status
    assert err.response.output_text == "Answer [1][2] and [9]."
    assert err.cost == 0.0123  # what the failed run cost is not lost
    if status == "incomplete":
        assert "max_output_tokens" in str(err)


def test_requires_action_is_returned():
    rec = Recorder(ok({**RESPONSE_COMPLETED, "status": "requires_action"}))
    assert client(rec).create(preset="fast", input="x").status == "requires_action"


def test_malformed_body():
    rec = Recorder(httpx.Response(200, content=b"not json"))
    with pytest.raises(PerplexedError, match="not JSON"):
        client(rec).create(preset="fast", input="x")


# --- retries --------------------------------------------------------------------------------------------


def test_retries_5xx_then_succeeds():
    rec = Recorder(
        httpx.Response(500, json={"error": {"message": "internal", "type": "internal_error", "code": 500}}),
        httpx.Response(503, headers={"retry-after-ms": "5"}),
        ok(),
    )
    c = client(rec)
    assert c.create(preset="fast", input="x").id == "resp_abc"
    assert len(rec.requests) == 3


def test_gives_up_after_max_retries():
    rec = Recorder(
        httpx.Response(
            502,
            headers={"retry-after-ms": "1"},
            json={"error": {"message": "bad gateway", "type": "bad_gateway"}},
        )
    )
    with pytest.raises(ServerError) as info:
        client(rec, max_retries=1).create(preset="fast", input="x")
    assert info.value.status == 502 and info.value.type == "bad_gateway"
    assert len(rec.requests) == 2


def test_no_retry_on_400():
    rec = Recorder(
        httpx.Response(
            400,
            json={
                "error": {
                    "message": 'invalid request body: json: unknown field "foo"',
                    "type": "invalid_request",
                    "code": 400,
                    "param": "foo",
                }
            },
        )
    )
    with pytest.raises(BadRequestError) as info:
        client(rec).create(preset="fast", input="x", extra_body={"foo": 1})
    assert info.value.param == "foo"
    assert isinstance(info.value, InvalidRequest)
    assert len(rec.requests) == 1


def test_connection_errors_retried():
    calls = []

    def flaky(request):
        calls.append(request)
        if len(calls) < 3:
            raise httpx.ConnectError("refused", request=request)
        return ok()

    rec = Recorder(flaky)
    assert client(rec).create(preset="fast", input="x").id == "resp_abc"
    assert len(calls) == 3

    always = Recorder(lambda r: (_ for _ in ()).throw(httpx.ConnectError("refused", request=r)))
    with pytest.raises(APIConnectionError):
        client(always, max_retries=0).create(preset="fast", input="x")


def test_retry_after_honoured():
    rec = Recorder(
        httpx.Response(
            429, headers={"retry-after-ms": "150"}, json={"error": {"message": "slow", "code": 429}}
        ),
        ok(),
    )
    start = time.monotonic()
    client(rec).create(preset="fast", input="x")
    assert time.monotonic() - start >= 0.14
    assert len(rec.requests) == 2


def test_long_retry_after_raises_rate_limit_with_retry_after():
    rec = Recorder(
        httpx.Response(
            429,
            headers={"Retry-After": "3600"},
            json={"error": {"message": "slow down", "type": "request_rate_limit_exceeded", "code": 429}},
        )
    )
    start = time.monotonic()
    with pytest.raises(RateLimitError) as info:
        client(rec).create(preset="fast", input="x")
    assert time.monotonic() - start < 1
    assert info.value.retry_after == 3600 and info.value.status == 429 and str(info.value) == "slow down"
    assert len(rec.requests) == 1


# --- timeouts -------------------------------------------------------------------------------------------


async def test_overall_timeout():
    async def slow(request):
        await asyncio.sleep(5)
        return ok()

    c = AsyncAgentClient(api_key=FAKE_KEY, transport=httpx.MockTransport(slow), max_retries=0)
    start = time.monotonic()
    with pytest.raises(APITimeoutError):
        await c.create(preset="fast", input="x", timeout=0.2)
    assert time.monotonic() - start < 2


async def test_wait_times_out():
    rec = Recorder(ok({**RESPONSE_COMPLETED, "status": "in_progress", "output": []}))
    with pytest.raises(APITimeoutError, match="in_progress"):
        await aclient(rec).wait("resp_abc", timeout=0.3, poll_interval=0.05)
    assert len(rec.requests) >= 2


def test_default_timeouts_sized_by_preset():
    from perplexed.agent import AgentRequest
    from perplexed.agent._policy import default_timeout  # private: no public reader of the preset timeouts

    assert default_timeout(AgentRequest(input="x", preset="fast")) < default_timeout(
        AgentRequest(input="x", preset="high")
    )
    assert default_timeout(AgentRequest(input="x", effort="xhigh@2026-10-16.0")) <= 900
    assert default_timeout(AgentRequest(input="x", preset="high", background=True)) <= 30


# --- async client, http_client, sync-from-async --------------------------------------------------------


async def test_async_client_and_custom_http_client():
    rec = Recorder(ok())
    async with httpx.AsyncClient(transport=rec.transport) as http:
        c = AsyncAgentClient(api_key=FAKE_KEY, http_client=http)
        resp = await c.create(preset="fast", input="x")
    assert resp.id == "resp_abc" and len(rec.requests) == 1


async def test_sync_client_works_inside_a_running_loop():
    rec = Recorder(ok())
    assert client(rec).create(preset="fast", input="x").id == "resp_abc"


def test_answer_needs():
    """What perplexed.answer() uses: input items, instructions, max_tool_calls, tools=[] and streaming."""
    events = cassette_events("stream_normal")
    rec = Recorder(sse_response([sse_body(events)]))
    c = client(rec)
    stream = c.stream(
        model="openai/gpt-5.1",
        input=[{"role": "user", "content": "Sources: [1] ... Question?"}],
        instructions="Answer only from the sources.",
        max_tool_calls=0,
        tools=[],
    )
    text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
    assert rec.bodies()[0] == {
        "input": [{"role": "user", "content": "Sources: [1] ... Question?"}],
        "model": "openai/gpt-5.1",
        "instructions": "Answer only from the sources.",
        "max_tool_calls": 0,
        "tools": [],
        "stream": True,
    }
    final = stream.response
    assert final is not None and text and final.output_text == text
    assert final.id == "resp_s1" and final.model == "openai/gpt-5.1"
    assert final.usage is not None and final.cost == 0.0111 and len(final.search_results) == 3


# --- streaming -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", [[1], [3, 5], [17], [100000]])
def test_stream_odd_chunks_sync(sizes):
    body = cassette_body("stream_reasoning")
    rec = Recorder(sse_response(chunks_of(body, sizes)))
    stream = client(rec).stream(preset="fast", input="Explain quantum computing")
    events = list(stream)
    expected = cassette_events("stream_reasoning")
    assert [e.type for e in events] == [e["type"] for e in expected]
    assert [e.sequence_number for e in events] == [e["sequence_number"] for e in expected]
    assert events[-1].type == "response.completed"
    assert stream.response is not None and stream.response.status == "completed"
    assert rec.requests[0].headers["accept"] == "text/event-stream"
    assert rec.bodies()[0]["stream"] is True


async def test_stream_async_event_lines_and_keepalives():
    rec = Recorder(sse_response(chunks_of(cassette_body("stream_event_lines"), [7, 2])))
    c = aclient(rec)
    stream = c.stream(preset="fast", input="Explain quantum computing")
    types = [e.type async for e in stream]
    assert types == [e["type"] for e in cassette_events("stream_event_lines")]
    final = await stream.get_final_response()
    assert final.output_text.endswith("Ünïcödé ✓")


async def test_stream_wait_for_the_first_event_counts_from_the_request():
    """``timeout`` bounds the wait for each event: for the first one, from when the caller asked, the
    slow response headers included (it used to start after them: 0.3 s + 0.35 s went through a 0.5 s
    timeout)."""
    body = cassette_body("stream_normal")

    class Late(httpx.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[override]
            await asyncio.sleep(0.35)
            yield body

    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.3)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Late())

    c = AsyncAgentClient(api_key=FAKE_KEY, transport=httpx.MockTransport(handler), max_retries=0)
    with pytest.raises(APITimeoutError, match=r"no event for more than 0\.5s"):
        async for _ in c.stream(preset="fast", input="x", timeout=0.5, stream_timeout=5):
            pass


def test_stream_failed_yields_terminal_then_raises():
    rec = Recorder(sse_response([cassette_body("stream_failed")]))
    seen = []
    with pytest.raises(ResponseFailedError) as info:
        for event in client(rec).stream(preset="fast", input="x"):
            seen.append(event.type)
    assert seen[-1] == "response.failed"
    assert "upstream model error" in str(info.value)
    assert info.value.response is not None and info.value.response.status == "failed"


def test_stream_error_event_raises_stream_error():
    rec = Recorder(sse_response([cassette_body("stream_error_event")]))
    with pytest.raises(StreamError) as info:
        list(client(rec).stream(preset="fast", input="x"))
    assert str(info.value) == "stream interrupted upstream"
    assert info.value.code == "stream_error"


def test_stream_stops_at_the_terminal_event():
    events = cassette_events("stream_normal")
    extra = [{"type": "response.completed", "sequence_number": 999, "response": {"id": "other"}}]
    rec = Recorder(sse_response([sse_body(events + extra)]))
    got = list(client(rec).stream(preset="fast", input="x"))
    assert sum(e.type == "response.completed" for e in got) == 1
    assert got[-1].sequence_number == events[-1]["sequence_number"]


def test_done_sentinel_without_terminal_is_an_error():
    body = sse_body(cassette_events("stream_normal")[:5]) + b"data: [DONE]\n\n"
    rec = Recorder(sse_response([body]))
    with pytest.raises(StreamError, match="without a terminal event"):
        list(client(rec).stream(preset="fast", input="x"))


def test_non_background_stream_drop_is_never_reposted():
    events = cassette_events("stream_normal")
    rec = Recorder(
        sse_response([sse_body(events[:6])], error=httpx.ReadError("connection reset")),
        sse_response([sse_body(events)]),
    )
    seen = []
    with pytest.raises(StreamError, match="re-sending") as info:
        for event in client(rec).stream(preset="fast", input="x"):
            seen.append(event)
    assert len(seen) == 6
    assert len(rec.requests) == 1  # never re-POSTed
    assert "pplx" not in str(info.value)


def test_stream_retried_before_it_starts():
    rec = Recorder(
        httpx.Response(503, headers={"retry-after-ms": "1"}), sse_response([cassette_body("stream_normal")])
    )
    events = list(client(rec).stream(preset="fast", input="x"))
    assert events[-1].type == "response.completed"
    assert len(rec.requests) == 2


def test_stream_http_error_raises_typed():
    rec = Recorder(
        httpx.Response(401, json={"error": {"message": "Invalid API key", "type": "forbidden", "code": 401}})
    )
    from perplexed.agent import AuthenticationError

    with pytest.raises(AuthenticationError):
        list(client(rec).stream(preset="fast", input="x"))


def test_background_stream_resumes_with_starting_after():
    events = cassette_events("stream_normal")
    for e in events:
        if e.get("response"):
            e["response"]["background"] = True
    cut = 6
    rec = Recorder(
        sse_response([sse_body(events[:cut])], error=httpx.RemoteProtocolError("peer closed connection")),
        # the server replays one event we already have: it is skipped
        sse_response(chunks_of(sse_body(events[cut - 1 :]), [9])),
    )
    stream = client(rec).stream(preset="fast", input="x", background=True)
    got = list(stream)
    assert [e.sequence_number for e in got] == [e["sequence_number"] for e in events]
    second = rec.requests[1]
    assert second.method == "GET"
    assert second.url.path == "/v1/agent/resp_s1"
    assert dict(second.url.params) == {
        "stream": "true",
        "starting_after": str(events[cut - 1]["sequence_number"]),
    }
    assert stream.resumed == 1
    assert stream.response is not None and stream.response.status == "completed"


def test_background_stream_cursor_expired_falls_back_to_polling():
    events = cassette_events("stream_normal")
    final = next(e for e in events if e["type"] == "response.completed")["response"]
    rec = Recorder(
        sse_response([sse_body(events[:4])], error=httpx.ReadError("reset")),
        httpx.Response(
            400, json={"error": {"message": "cursor expired", "type": "invalid_request", "code": 400}}
        ),
        ok({**final, "status": "in_progress", "output": []}),
        ok(final),
    )
    stream = client(rec).stream(preset="fast", input="x", background=True)
    got = list(stream)
    assert got[-1].type == "response.completed"
    assert stream.polled
    assert [r.method for r in rec.requests] == ["POST", "GET", "GET", "GET"]
    assert stream.response is not None and stream.response.output_text.startswith("The EU AI Act")


def test_create_with_stream_true_returns_assembled_response():
    rec = Recorder(sse_response([cassette_body("stream_normal")]))
    resp = client(rec).create(preset="fast", input="x", stream=True)
    assert resp.status == "completed" and resp.id == "resp_s1"


def test_stream_close_early_releases():
    rec = Recorder(sse_response(chunks_of(cassette_body("stream_normal"), [50])))
    with client(rec).stream(preset="fast", input="x") as stream:
        first = next(stream)
    assert first.type == "response.created"
    assert stream.response is None


def test_json_answer_to_a_stream_request():
    rec = Recorder(ok())
    events = list(client(rec).stream(preset="fast", input="x"))
    assert [e.type for e in events] == ["response.completed"]


def test_request_body_is_json_sorted_free_of_none():
    rec = Recorder(ok())
    client(rec).create(preset="fast", input="x", instructions=None)
    assert json.loads(rec.requests[0].content) == {"input": "x", "preset": "fast"}


async def test_awaiting_the_async_stream_gives_the_stream():
    rec = Recorder(sse_response([cassette_body("stream_normal")]))
    stream = await aclient(rec).stream(preset="fast", input="x")
    events = [e async for e in stream]
    assert events[-1].type == "response.completed"


async def test_async_stream_context_manager_and_final_response():
    rec = Recorder(sse_response([cassette_body("stream_normal")]))
    async with aclient(rec).stream(preset="fast", input="x") as stream:
        final = await stream.get_final_response()
    assert final.output_text.startswith("The EU AI Act's")


def test_background_reconnect_failures_are_retried_with_backoff():
    events = cassette_events("stream_normal")
    cut = 5
    rec = Recorder(
        sse_response([sse_body(events[:cut])], error=httpx.ReadError("reset")),
        httpx.Response(503, json={"error": {"message": "busy"}}),
        sse_response([sse_body(events[cut:])]),
    )
    stream = client(rec, max_retries=0).stream(preset="fast", input="x", background=True)
    got = list(stream)
    assert [e.sequence_number for e in got] == [e["sequence_number"] for e in events]
    assert [r.method for r in rec.requests] == ["POST", "GET", "GET"]
    assert stream.resumed == 1
