"""Issue 9, property-based tests on SSE byte streams and Agent API bodies: whatever bytes a server sends,
the decoder, the event parser and the whole ``stream`` / ``create`` paths raise only documented exceptions
(:class:`perplexed.PerplexedError` subclasses). No network: ``httpx.MockTransport``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st
from perplexed import PerplexedError
from perplexed.agent import AsyncAgentClient, StreamError
from perplexed.agent.sse import SSEDecoder  # private: the SSE decoder is fuzzed on raw bytes

SETTINGS = settings(max_examples=150, deadline=None, database=None)

EVENT_TYPES = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.output_item.done",
    "response.reasoning.search_results",
    "response.completed",
    "response.failed",
    "response.incomplete",
    "response.cancelled",
    "error",
    "response.unknown",
    "",
    "x",
]
any_text = st.text(max_size=30)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), any_text)
json_values = st.recursive(
    json_leaf,
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(any_text, c, max_size=4)),
    max_leaves=20,
)


@st.composite
def event_payloads(draw: st.DrawFn) -> dict[str, Any]:
    """Event-shaped JSON with odd values where the parser expects structure."""
    payload: dict[str, Any] = {"type": draw(st.sampled_from(EVENT_TYPES))}
    for key in ("sequence_number", "delta", "response", "item", "error", "output_index", "results", "text"):
        if draw(st.booleans()):
            payload[key] = draw(json_values)
    if draw(st.booleans()):
        payload["response"] = {
            "id": draw(st.one_of(st.none(), any_text)),
            "status": draw(
                st.sampled_from(["completed", "failed", "in_progress", "incomplete", "weird", None])
            ),
            "output": draw(st.one_of(st.just([]), st.lists(json_values, max_size=3))),
            "usage": draw(json_values),
        }
    return payload


def _frame(payload: Any, event: str | None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(payload).encode() + b"\n\n"


sse_streams = st.one_of(
    st.binary(max_size=300),
    st.lists(
        st.builds(_frame, event_payloads(), st.one_of(st.none(), st.sampled_from(EVENT_TYPES))), max_size=6
    ).map(b"".join),
    st.lists(
        st.sampled_from(
            [
                b": keep-alive\n\n",
                b"data: [DONE]\n\n",
                b"data: {\n\n",
                b"retry: x\n",
                b"id: \x00\n",
                b"\r\n",
                b"\xef\xbb\xbf",
                b"data: \xff\xfe\n\n",
                b"event: error\ndata: {}\n\n",
            ]
        ),
        max_size=8,
    ).map(b"".join),
)
chunkings = st.lists(st.integers(1, 64), max_size=20)


def _chunks(data: bytes, sizes: list[int]) -> list[bytes]:
    out, i = [], 0
    for size in sizes:
        out.append(data[i : i + size])
        i += size
    out.append(data[i:])
    return [c for c in out if c]


@SETTINGS
@given(data=sse_streams, sizes=chunkings)
def test_the_decoder_raises_only_stream_error(data: bytes, sizes: list[int]) -> None:
    decoder = SSEDecoder(max_event_bytes=256)
    try:
        for chunk in _chunks(data, sizes):
            decoder.feed(chunk)
        decoder.close()
    except StreamError:
        pass


def _client(content: bytes, content_type: str, status: int = 200) -> AsyncAgentClient:
    transport = httpx.MockTransport(
        lambda request: httpx.Response(status, content=content, headers={"content-type": content_type})
    )
    return AsyncAgentClient(
        api_key="k-test-not-a-real-key", base_url="http://agent.test", transport=transport, max_retries=0
    )


@SETTINGS
@given(
    data=sse_streams, content_type=st.sampled_from(["text/event-stream", "text/event-stream; charset=utf-8"])
)
def test_streams_of_any_bytes_raise_only_documented_errors(data: bytes, content_type: str) -> None:
    async def go() -> None:
        client = _client(data, content_type)
        try:
            async with client.stream(preset="fast", input="hi", timeout=5) as stream:
                async for _ in stream:
                    pass
        except PerplexedError:
            pass

    asyncio.run(go())


@SETTINGS
@given(
    body=st.one_of(
        json_values.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=100),
        event_payloads().map(lambda p: json.dumps(p.get("response", p)).encode()),
    ),
    status=st.sampled_from([200, 200, 400, 401, 404, 409, 422, 429, 500, 503]),
    content_type=st.sampled_from(["application/json", "text/html", "text/plain"]),
)
def test_create_and_stream_with_any_body_raise_only_documented_errors(
    body: bytes, status: int, content_type: str
) -> None:
    async def go() -> None:
        client = _client(body, content_type, status)
        for call in ("create", "stream", "wait", "retrieve"):
            try:
                if call == "create":
                    await client.create(preset="fast", input="hi", timeout=5)
                elif call == "stream":
                    async with client.stream(preset="fast", input="hi", timeout=5) as stream:
                        async for _ in stream:
                            pass
                elif call == "wait":
                    await client.wait("resp_1", timeout=0.2, poll_interval=0.01)
                else:
                    await client.retrieve("resp_1", timeout=5)
            except PerplexedError:
                pass

    asyncio.run(go())
