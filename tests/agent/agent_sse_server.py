"""The Agent API tests' SSE server: a :mod:`testkit.loopback` server whose replies are scripted chunked bodies.

Each request is answered by ``handler(request) -> Reply``. A reply is an HTTP status, headers and a script of
body steps (:class:`testkit.loopback.Script`): bytes to send (as HTTP/1.1 chunks), a pause (float seconds), or
``DROP`` (close the socket abruptly, mid-body: the client sees an incomplete chunked body). Requests are seen
with single-valued query parameters (``request.query["starting_after"]`` is a string).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from testkit.loopback import DROP, LoopbackServer, Request, Script
from testkit.loopback import serve as _serve

__all__ = ["DROP", "Reply", "SSEServer", "SeenRequest", "json_reply", "serve"]


@dataclass
class SeenRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    steps: list[Any] = field(default_factory=list)


def json_reply(data: Any, status: int = 200) -> Reply:
    return Reply(status, {"Content-Type": "application/json"}, [json.dumps(data).encode()])


class SSEServer:
    """The loopback server, its URL, and the requests it answered (as :class:`SeenRequest`)."""

    def __init__(self, server: LoopbackServer, handler: Callable[[SeenRequest], Reply]) -> None:
        self.server = server
        self.url = server.url
        self.port = server.port
        self.requests: list[SeenRequest] = []
        self._handler = handler
        server.route("*", self._answer)

    def _answer(self, request: Request) -> Script:
        seen = SeenRequest(
            request.method, request.path, {k: v[0] for k, v in request.query.items()}, request.headers, request.body
        )
        self.requests.append(seen)
        reply = self._handler(seen)
        return Script(reply.steps, reply.status, reply.headers)


@contextlib.contextmanager
def serve(handler: Callable[[SeenRequest], Reply]) -> Iterator[SSEServer]:
    with _serve() as server:
        yield SSEServer(server, handler)
