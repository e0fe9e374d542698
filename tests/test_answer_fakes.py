"""Shared fakes for the grounded-answer tests (this module holds no tests).

:class:`FakeAgentAPI` is an in-process Perplexity Agent API behind ``httpx.MockTransport``: it records every
request body and answers with a response shaped as in the reference (§3.4) — JSON for ``stream: false``,
an SSE event stream (§4.2/§4.3) for ``stream: true`` — or with an HTTP error envelope (§8.1). Providers are
plain functions wrapped in :class:`perplexed.providers.FunctionProvider`, so no test here needs SearXNG.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from perplexed import Hit
from perplexed.agent import AgentClient, AsyncAgentClient
from perplexed.providers import FunctionProvider
from testkit.hits import ZONING_HITS

FAKE_KEY = "pplx-test-not-a-real-key"
BASE_URL = "https://api.perplexity.ai"
MODEL = "xai/grok-4-1-fast-non-reasoning"


ANSWER_TEXT = (
    "A setback is the minimum distance between a building and the property line [1]. "
    "Typical residential front setbacks are 20 to 25 feet, with side setbacks of 5 to 10 feet [2]."
)


def provider(
    hits: list[Hit] | None = None, *, cost: float | None = None, name: str = "web", calls: list[str] | None = None
) -> FunctionProvider:
    """A chain member answering ``hits`` (default: the zoning hits); ``calls`` collects the queries."""
    chosen = ZONING_HITS if hits is None else hits

    def search(query: str, options: Any) -> list[Hit]:
        if calls is not None:
            calls.append(query)
        return [h.model_copy() for h in chosen]

    return FunctionProvider(search, name=name, cost=cost)


def failing_provider(name: str = "down") -> FunctionProvider:
    """A chain member that always errors."""

    def search(query: str, options: Any) -> list[Hit]:
        raise ConnectionError("upstream is down")

    return FunctionProvider(search, name=name)


def response_json(
    text: str = ANSWER_TEXT,
    *,
    rid: str = "resp_test_1",
    model: str = MODEL,
    status: str = "completed",
    cost: float | None = 0.0042,
    search_results: list[list[dict[str, Any]]] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A response object; ``search_results`` is a list of ``search_results`` items (each a list of results)."""
    output: list[dict[str, Any]] = [
        {"type": "search_results", "queries": ["q"], "results": results} for results in search_results or []
    ]
    if status == "completed" or text:
        output.append(
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    usage: dict[str, Any] = {"input_tokens": 812, "output_tokens": 64, "total_tokens": 876}
    if cost is not None:
        usage["cost"] = {
            "currency": "USD",
            "input_cost": round(cost * 0.6, 6),
            "output_cost": round(cost * 0.4, 6),
            "total_cost": cost,
        }
    return {
        "id": rid,
        "object": "response",
        "created_at": 1767225600,
        "model": model,
        "status": status,
        "output": output,
        "usage": usage,
        "error": error,
    }


def split_text(text: str, size: int = 7) -> list[str]:
    """Cut ``text`` into deltas of ``size`` characters (a marker may be split across deltas)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_events(resp: dict[str, Any], deltas: list[str] | None = None) -> list[dict[str, Any]]:
    """The event sequence of a streamed run ending in ``resp`` (reference §4.2 order)."""
    text = "".join(
        part["text"] for item in resp["output"] if item["type"] == "message" for part in item["content"]
    )
    deltas = split_text(text) if deltas is None else deltas
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**resp, "status": "in_progress", "output": [], "usage": None}},
        {"type": "response.in_progress", "response": {**resp, "status": "in_progress", "output": [], "usage": None}},
    ]
    index = 0
    for item in resp["output"]:
        if item["type"] == "search_results":
            events.append({"type": "response.reasoning.search_results", "results": item["results"]})
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
            index += 1
    if text:
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []},
            }
        )
        for delta in deltas:
            events.append(
                {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": index, "content_index": 0, "delta": delta}
            )
        events.append(
            {"type": "response.output_text.done", "item_id": "msg_1", "output_index": index, "content_index": 0, "text": text}
        )
    if resp["status"] == "failed":
        events.append({"type": "response.failed", "response": resp, "error": resp.get("error")})
    else:
        events.append({"type": f"response.{resp['status']}", "response": resp})
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return events


def sse_bytes(events: list[dict[str, Any]]) -> bytes:
    """The events as an SSE body: ``data: <json>\\n\\n`` frames, no ``event:`` lines, no ``[DONE]``."""
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


class _Chunked(httpx.AsyncByteStream):
    """A body delivered in odd-sized chunks, as a network would."""

    def __init__(self, data: bytes, size: int = 37) -> None:
        self._data = data
        self._size = size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i in range(0, len(self._data), self._size):
            yield self._data[i : i + self._size]


Reply = Callable[[dict[str, Any]], httpx.Response]


def ok(resp: dict[str, Any] | None = None, *, deltas: list[str] | None = None) -> Reply:
    """Answer ``resp`` as JSON, or as an SSE stream when the request asks for ``stream: true``."""
    data = response_json() if resp is None else resp

    def reply(body: dict[str, Any]) -> httpx.Response:
        if body.get("stream"):
            return httpx.Response(
                200,
                headers={"content-type": "text/event-stream"},
                stream=_Chunked(sse_bytes(sse_events(data, deltas))),
            )
        return httpx.Response(200, json=data)

    return reply


def status(code: int, etype: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    """Answer an HTTP error with the API's envelope ``{"error": {message, type, code}}``."""

    def reply(body: dict[str, Any]) -> httpx.Response:
        envelope = {"error": {"message": message, "type": etype, "code": code}}
        return httpx.Response(code, json=envelope, headers=headers or {})

    return reply


@dataclass
class FakeAgentAPI:
    """The Agent API behind a MockTransport: ``reply`` answers every request; ``requests`` records bodies."""

    reply: Reply = field(default_factory=ok)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[httpx.Headers] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        self.headers.append(request.headers)
        self.paths.append(request.url.path)
        return self.reply(body)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    def async_client(self) -> AsyncAgentClient:
        return AsyncAgentClient(api_key=FAKE_KEY, base_url=BASE_URL, transport=self.transport, max_retries=0)

    def client(self) -> AgentClient:
        return AgentClient(api_key=FAKE_KEY, base_url=BASE_URL, transport=self.transport, max_retries=0)

    @property
    def body(self) -> dict[str, Any]:
        """The one request body received (fails when there were none or several)."""
        assert len(self.requests) == 1, f"expected one Agent API request, got {len(self.requests)}"
        return self.requests[0]
