"""Helpers for the LangChain adapter tests: offline providers and callback recorders (no fixtures here)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any
from uuid import UUID

import httpx
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from perplexed.providers import SearXNG
from testkit.hits import searxng_json

# A query the SearXNG corpus answers with three documents and the loopback upstream with two more.
QUERY = "zoning"
# A closed loopback port: connecting is refused at once.
DEAD_URL = "http://127.0.0.1:9"


def searxng_results(n: int, *, prefix: str = "https://site.example/page") -> dict[str, Any]:
    """A SearXNG JSON body with ``n`` results (for providers on an ``httpx.MockTransport``)."""
    return searxng_json(
        n, prefix=prefix, title="Title {i}", content="Snippet number {i}.", published="2025-03-0{d}",
        score=lambda i, n: 1.0 / i,
    )


def mock_searxng(
    handler: Callable[[httpx.Request], httpx.Response] | dict[str, Any] | int,
    *,
    name: str = "searxng",
    requests: list[httpx.Request] | None = None,
) -> SearXNG:
    """A SearXNG provider whose HTTP goes to an ``httpx.MockTransport`` (no socket at all).

    ``handler`` is a function, a JSON body (200), or a status code (with an error body).
    """

    def respond(request: httpx.Request) -> httpx.Response:
        if requests is not None:
            requests.append(request)
        if callable(handler):
            return handler(request)
        if isinstance(handler, int):
            return httpx.Response(handler, json={"error": f"status {handler}"})
        return httpx.Response(200, content=json.dumps(handler).encode(), headers={"content-type": "application/json"})

    return SearXNG(base_url="http://searxng.mock", name=name, transport=httpx.MockTransport(respond))


class EventRecorder(BaseCallbackHandler):
    """A sync callback handler that records custom events and retriever/tool runs."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, UUID]] = []
        self.run_ids: list[UUID] = []
        self.threads: list[str] = []
        self._lock = threading.Lock()

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self.events.append((name, data, run_id))
            self.threads.append(threading.current_thread().name)

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self.run_ids.append(run_id)

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self.run_ids.append(run_id)

    def named(self, name: str) -> list[Any]:
        return [data for event, data, _ in self.events if event == name]


class AsyncEventRecorder(AsyncCallbackHandler):
    """An async callback handler that records custom events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, UUID]] = []

    async def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append((name, data, run_id))

    def named(self, name: str) -> list[Any]:
        return [data for event, data, _ in self.events if event == name]


# --- a fake Perplexity Agent API on loopback ---------------------------------------------------------------

FAKE_KEY = "pplx-fake-key-for-loopback-0123456789"
AGENT_COST = 0.003


def fake_agent_response(body: dict[str, Any], *, response_id: str = "resp_fake1") -> dict[str, Any]:
    """A completed Agent API response answering from the numbered sources in the request's ``input``:
    it cites the first two sources (or says that none were found)."""
    text_in = body["input"] if isinstance(body["input"], str) else json.dumps(body["input"])
    numbers = re.findall(r"^\[(\d+)\] ", text_in, flags=re.M)
    question = text_in.rsplit("Question:", 1)[-1].strip()
    if numbers:
        text = f"Grounded answer about {question} " + "".join(f"[{n}]" for n in numbers[:2]) + "."
    else:
        text = f"No sources were found about {question}."
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1767225600,
        "model": "openai/gpt-5.1",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "error": None,
        "usage": {
            "input_tokens": 100,
            "output_tokens": 20,
            "total_tokens": 120,
            "cost": {"currency": "USD", "input_cost": 0.001, "output_cost": 0.002, "total_cost": AGENT_COST},
        },
    }


class FakeAgentAPI:
    """A loopback HTTP server speaking the Agent API's ``POST /v1/agent`` (see :func:`fake_agent_response`).

    ``fail_with(status)`` makes the next requests fail with that HTTP status (and an error envelope);
    ``ok()`` restores normal answers. ``bodies`` are the JSON bodies received.
    """

    def __init__(self) -> None:
        from testkit.loopback import Json, LoopbackServer

        self._json = Json
        self._status: int | None = None
        self.server = LoopbackServer()
        self.server.route("/v1/agent", self._reply)
        self.url = self.server.url

    def _reply(self, request: Any) -> Any:
        if self._status is not None:
            error = {"message": f"fake failure {self._status}", "type": "fake_error", "code": self._status}
            return self._json({"error": error}, status=self._status)
        return self._json(fake_agent_response(request.json()))

    def fail_with(self, status: int) -> None:
        self._status = status

    def ok(self) -> None:
        self._status = None

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.server.requests if r.path == "/v1/agent"]

    def close(self) -> None:
        self.server.close()
