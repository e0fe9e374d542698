"""Mid-stream drops over a real loopback socket: background streams resume, others are never re-POSTed."""

from __future__ import annotations

import json

import pytest
from agent_helpers import FAKE_KEY, cassette_events
from agent_sse_server import DROP, Reply, json_reply, serve
from perplexed.agent import AgentClient, AsyncAgentClient, StreamError


def frames(events: list[dict]) -> list[bytes]:
    return [("data: " + json.dumps(e) + "\n\n").encode() for e in events]


def background_events() -> list[dict]:
    events = cassette_events("stream_reasoning")
    for e in events:
        if isinstance(e.get("response"), dict):
            e["response"]["background"] = True
    return events


def split_frame(frame: bytes) -> list[bytes]:
    """A frame cut in the middle, to drop the connection inside an event."""
    return [frame[: len(frame) // 2]]


def test_background_stream_drop_resumes_from_last_sequence_number():
    events = background_events()
    cut = 7  # events[:cut] arrive, then half of the next frame, then the socket is reset

    def handler(req):
        if req.method == "POST" and req.path == "/v1/agent":
            return Reply(steps=[*frames(events[:cut]), 0.05, *split_frame(frames([events[cut]])[0]), DROP])
        if req.method == "GET" and req.path == "/v1/agent/resp_s2" and req.query.get("stream") == "true":
            after = int(req.query["starting_after"])
            return Reply(
                steps=[b": resumed\n\n", *frames([e for e in events if e["sequence_number"] > after])]
            )
        return json_reply({"error": {"message": "unexpected", "code": 404}}, 404)

    with serve(handler) as server:
        client = AgentClient(api_key=FAKE_KEY, base_url=server.url)
        stream = client.stream(preset="high", input="Explain quantum computing", background=True)
        got = list(stream)
    assert [e.sequence_number for e in got] == [e["sequence_number"] for e in events]  # each once, in order
    assert got[-1].type == "response.completed"
    methods = [(r.method, r.path, r.query.get("starting_after")) for r in server.requests]
    assert methods == [
        ("POST", "/v1/agent", None),
        ("GET", "/v1/agent/resp_s2", str(events[cut - 1]["sequence_number"])),
    ]
    assert server.requests[0].json()["background"] is True and server.requests[0].json()["stream"] is True
    assert server.requests[1].headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert stream.resumed == 1
    assert stream.response.output_text.endswith("Ünïcödé ✓")


async def test_background_stream_drop_cursor_expired_polls_async():
    events = background_events()
    final = events[-1]["response"]

    polls = []

    def handler(req):
        if req.method == "POST":
            return Reply(steps=[*frames(events[:4]), DROP])
        if req.query.get("stream") == "true":
            return json_reply(
                {
                    "error": {
                        "message": "starting_after cursor expired",
                        "type": "invalid_request",
                        "code": 400,
                    }
                },
                400,
            )
        polls.append(req)
        status = "in_progress" if len(polls) < 2 else "completed"
        return json_reply(
            {**final, "status": status, "output": final["output"] if status == "completed" else []}
        )

    with serve(handler) as server:
        client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url)
        stream = client.stream(preset="high", input="Explain quantum computing", background=True)
        got = [e async for e in stream]
    assert got[-1].type == "response.completed"
    assert stream.polled and len(polls) == 2
    assert stream.response.status == "completed"
    assert stream.response.output_text.endswith("Ünïcödé ✓")


def test_non_background_stream_drop_raises_and_is_not_reposted():
    events = cassette_events("stream_normal")

    def handler(req):
        return Reply(steps=[*frames(events[:5]), DROP])

    with serve(handler) as server:
        client = AgentClient(api_key=FAKE_KEY, base_url=server.url)
        seen = []
        with pytest.raises(StreamError) as info:
            for event in client.stream(preset="fast", input="Explain quantum computing"):
                seen.append(event)
    assert len(seen) == 5
    assert len(server.requests) == 1
    assert "new, billed run" in str(info.value)


def test_stream_that_ends_cleanly_without_terminal_event_resumes_when_background():
    events = background_events()

    def handler(req):
        if req.method == "POST":
            return Reply(steps=frames(events[:3]))  # clean end of body, no terminal event
        after = int(req.query["starting_after"])
        return Reply(steps=frames([e for e in events if e["sequence_number"] > after]))

    with serve(handler) as server:
        got = list(
            AgentClient(api_key=FAKE_KEY, base_url=server.url).stream(
                preset="high", input="x", background=True
            )
        )
    assert [e.sequence_number for e in got] == [e["sequence_number"] for e in events]


def test_resume_by_id():
    events = background_events()

    def handler(req):
        after = int(req.query["starting_after"])
        return Reply(steps=frames([e for e in events if e["sequence_number"] > after]))

    with serve(handler) as server:
        stream = AgentClient(api_key=FAKE_KEY, base_url=server.url).resume("resp_s2", starting_after=5)
        got = list(stream)
    assert got[0].sequence_number == 6
    assert got[-1].type == "response.completed"
