"""A loopback server's routes and request log, served in-process by ``httpx.MockTransport`` (no sockets).

For chain-rule tests that are about *what* the chain does, not about sockets or wall-clock bounds: the same
reply objects as :mod:`loopback` (``Json``, ``Status``, ``Html``, ``Raw``, ``Hang``) and the same
``route``/``requests``/``url`` surface, so a test switches by swapping its fixture. A provider uses it through
``transport=upstream.transport``. ``Hang`` never answers (the chain's budget cancels it); a reply's ``delay``
is an ``asyncio.sleep``. Socket-level faults (``Drip``, ``ResetMidBody``, ``Close``, ...) need a real
:class:`loopback.LoopbackServer`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import httpx

from testkit.loopback import Hang, Status

__all__ = ["MockRequest", "MockUpstream"]


@dataclass
class MockRequest:
    """One request as the mock upstream saw it (the fields of :class:`loopback.Request` tests read)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Reply = Status | Hang
Handler = Callable[[MockRequest], Reply]


class MockUpstream:
    """Routes by path (``"*"`` catches the rest; others answer 404) and records every request in order."""

    url = "http://upstream.test"

    def __init__(self) -> None:
        self.routes: dict[str, Reply | Handler] = {}
        self.requests: list[MockRequest] = []
        self.transport = httpx.MockTransport(self._handle)

    def route(self, path: str, reply: Reply | Handler) -> None:
        self.routes[path] = reply

    def clear(self) -> None:
        """Forget the requests seen so far."""
        self.requests.clear()

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        seen = MockRequest(
            method=request.method,
            path=request.url.path,
            query=parse_qs(request.url.query.decode("latin-1"), keep_blank_values=True),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=await request.aread(),
        )
        self.requests.append(seen)
        reply = self.routes.get(seen.path, self.routes.get("*"))
        if reply is None:
            return httpx.Response(404, text="no route")
        if not isinstance(reply, Status | Hang):
            reply = reply(seen)
        if isinstance(reply, Hang):
            await asyncio.Event().wait()  # never set: the caller's budget cancels this
        if not isinstance(reply, Status):
            raise TypeError(f"MockUpstream cannot play {type(reply).__name__}: use a loopback.LoopbackServer")
        if reply.delay:
            await asyncio.sleep(reply.delay)
        body = reply.body.encode() if isinstance(reply.body, str) else reply.body
        headers = dict(reply.headers.items()) if isinstance(reply.headers, Mapping) else dict(reply.headers or [])
        headers.setdefault("Content-Type", reply.content_type)
        return httpx.Response(reply.status, headers=headers, content=body)
