"""Helpers shared by the Agent API tests (a uniquely named module: tests/ has no packages)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import httpx
import vcr
import yaml

FAKE_KEY = "pplx-test-not-a-real-key"
CASSETTES = Path(__file__).resolve().parents[2] / "cassettes" / "synthesized" / "agent"

agent_vcr = vcr.VCR(
    cassette_library_dir=str(CASSETTES),
    record_mode="none",
    filter_headers=["authorization"],
    match_on=["method", "scheme", "host", "port", "path", "query"],
)


def use_cassette(name: str) -> Any:
    """Replay ``cassettes/synthesized/agent/<name>.yaml`` (``record_mode="none"``)."""
    return agent_vcr.use_cassette(f"{name}.yaml")


def cassette_interactions(name: str) -> list[dict[str, Any]]:
    """The raw interactions of a cassette."""
    data = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text())
    return list(data["interactions"])


def cassette_body(name: str, index: int = 0) -> bytes:
    """The response body of interaction ``index`` of a cassette, as bytes."""
    body = cassette_interactions(name)[index]["response"]["body"]["string"]
    return body.encode() if isinstance(body, str) else bytes(body)


def cassette_events(name: str, index: int = 0) -> list[dict[str, Any]]:
    """The JSON payloads of an SSE cassette body, in order."""
    out = []
    for line in cassette_body(name, index).decode().splitlines():
        if line.startswith("data:"):
            out.append(json.loads(line[5:].strip()))
    return out


def sse_body(events: Iterable[dict[str, Any]], *, event_lines: bool = False) -> bytes:
    """An SSE body with one ``data:`` frame per event."""
    out = []
    for e in events:
        frame = f"event: {e.get('type')}\n" if event_lines else ""
        out.append(frame + "data: " + json.dumps(e) + "\n\n")
    return "".join(out).encode()


def chunks_of(data: bytes, sizes: Sequence[int]) -> list[bytes]:
    """``data`` cut into pieces of the given sizes, cycling through ``sizes``."""
    out, pos, i = [], 0, 0
    while pos < len(data):
        n = sizes[i % len(sizes)]
        out.append(data[pos : pos + n])
        pos += n
        i += 1
    return out


class ChunkedStream(httpx.AsyncByteStream):
    """An async response body delivered in the given chunks; ``error`` is raised after the last one."""

    def __init__(self, chunks: Sequence[bytes], error: Exception | None = None) -> None:
        self.chunks = list(chunks)
        self.error = error

    async def __aiter__(self):  # type: ignore[override]
        for chunk in self.chunks:
            yield chunk
        if self.error is not None:
            raise self.error


Handler = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A MockTransport handler that answers with successive replies and records the requests."""

    def __init__(self, *replies: httpx.Response | Handler) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if callable(reply) and not isinstance(reply, httpx.Response):
            return reply(request)
        return reply

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def bodies(self) -> list[Any]:
        return [json.loads(r.content) if r.content else None for r in self.requests]


def sse_response(chunks: Sequence[bytes], error: Exception | None = None) -> httpx.Response:
    """A 200 text/event-stream response delivering ``chunks``."""
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, stream=ChunkedStream(chunks, error)
    )


RESPONSE_COMPLETED: dict[str, Any] = {
    "id": "resp_abc",
    "object": "response",
    "created_at": 1767225600,
    "model": "openai/gpt-5.1",
    "status": "completed",
    "output": [
        {"type": "search_results", "queries": ["q"], "results": []},
        {
            "type": "search_results",
            "queries": ["q2"],
            "results": [
                {"id": 1, "url": "https://a.example/1", "title": "A", "snippet": "a", "date": "2026-03-01"},
                {
                    "id": 2,
                    "url": "https://b.example/2",
                    "title": "B",
                    "snippet": "b",
                    "last_updated": "2026-03-02",
                },
            ],
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Answer [1][2] and [9].", "annotations": []}],
        },
    ],
    "usage": {
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
        "cost": {"currency": "USD", "total_cost": 0.0123},
    },
}
