"""A loopback Perplexity Agent API for the LlamaIndex adapter tests (a real HTTP server on 127.0.0.1).

It answers ``POST /v1/agent`` the way the synthesized cassettes do (cassettes/synthesized/agent): a
``response`` object as JSON for ``stream: false``, an SSE transcript (created → deltas → completed) for
``stream: true``, dripped over the wire so a client sees the deltas arrive over time. It records every
request body, so a test can check what the model was given. Bodies follow shared/reference/agent-api.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from perplexed.agent import AgentClient, AsyncAgentClient
from testkit.loopback import Drip, Json, LoopbackServer, Request, serve

FAKE_KEY = "pplx-test-not-a-real-key"
MODEL = "openai/gpt-5.1"
AGENT_COST = 0.0042
#: What the fake model answers: it cites the first two numbered sources it was given.
ANSWER_TEXT = "{t1} is the first source [1]. {t2} comes second [2]."


class LoopbackAgentAPI:
    """The fake API. ``status`` (default 200) makes it answer an error envelope instead; ``chunks`` and
    ``interval`` shape the streamed transcript's delivery."""

    def __init__(self, server: LoopbackServer) -> None:
        self.server = server
        self.bodies: list[dict[str, Any]] = []
        self.status = 200
        self.interval = 0.02
        self.text: str | None = None  # overrides the answer text
        server.route("/v1/agent", self._handle)

    @property
    def base_url(self) -> str:
        return self.server.url

    def client(self) -> AgentClient:
        return AgentClient(api_key=FAKE_KEY, base_url=self.base_url, max_retries=0, timeout=10)

    def async_client(self) -> AsyncAgentClient:
        return AsyncAgentClient(api_key=FAKE_KEY, base_url=self.base_url, max_retries=0, timeout=10)

    # -- answering ----------------------------------------------------------------------------------------

    def answer_text(self, body: dict[str, Any]) -> str:
        if self.text is not None:
            return self.text
        titles = re.findall(r"^\[(\d+)\] (.+)$", str(body.get("input", "")), flags=re.M)
        named = dict(titles)
        return ANSWER_TEXT.format(t1=named.get("1", "Nothing"), t2=named.get("2", "Nothing"))

    def _handle(self, request: Request) -> Any:
        body = request.json()
        self.bodies.append(body)
        if self.status != 200:
            return Json(
                {"error": {"message": f"fake error {self.status}", "type": "error", "code": self.status}},
                status=self.status,
                headers={"retry-after": "0"},
            )
        text = self.answer_text(body)
        response = _response(text, "resp_li_1")
        if not body.get("stream"):
            return Json(response)
        events = list(_transcript(text, response))
        sse = "".join("data: " + json.dumps(e) + "\n\n" for e in events).encode()
        return Drip(sse, interval=self.interval, chunks=len(events), content_type="text/event-stream")


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _response(text: str, rid: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": 1767225600,
        "model": MODEL,
        "status": status,
        "background": False,
        "store": True,
        "output": [_message(text)] if status == "completed" else [],
        "error": None,
        "usage": {
            "input_tokens": 900,
            "output_tokens": 40,
            "total_tokens": 940,
            "cost": {"currency": "USD", "input_cost": 0.0036, "output_cost": 0.0006, "total_cost": AGENT_COST},
        },
    }


def deltas_of(text: str) -> list[str]:
    """How the fake model streams ``text``: word by word (spaces kept)."""
    return re.findall(r"\S+\s*|\s+", text)


def _transcript(text: str, final: dict[str, Any]) -> Iterator[dict[str, Any]]:
    started = {**final, "status": "in_progress", "output": [], "usage": None}
    seq = 0
    yield {"type": "response.created", "sequence_number": seq, "response": started}
    seq += 1
    yield {
        "type": "response.output_item.added",
        "sequence_number": seq,
        "output_index": 0,
        "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []},
    }
    for delta in deltas_of(text):
        seq += 1
        yield {
            "type": "response.output_text.delta",
            "sequence_number": seq,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": delta,
        }
    seq += 1
    yield {
        "type": "response.output_text.done",
        "sequence_number": seq,
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "text": text,
    }
    seq += 1
    yield {"type": "response.completed", "sequence_number": seq, "response": final}


@pytest.fixture
def agent_api() -> Iterator[LoopbackAgentAPI]:
    """A loopback Agent API (closed after the test)."""
    with serve() as server:
        yield LoopbackAgentAPI(server)
