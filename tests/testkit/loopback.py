"""Loopback HTTP servers for tests: real sockets on 127.0.0.1 that misbehave on demand.

A :class:`LoopbackServer` is a small threaded HTTP/1.1 server written on raw sockets (stdlib only), so a
test controls every byte and every pause: answer JSON, hang after accept, send headers then drip the body,
reset the connection mid-body, send a huge body, and so on. It runs in its own threads, so it serves the
sync API (which blocks the caller's thread) and the async API alike.

Use the ``loopback`` fixture (registered for every test through ``pytest_plugins`` in ``tests/conftest.py``)
or the :func:`serve` context manager::

    from testkit.loopback import Hang, Json

    def test_something(loopback):
        loopback.route("/search", Json({"results": []}))
        loopback.route("/slow", Hang())
        url = loopback.url + "/search"          # or loopback.url_for("/search")
        ...
        assert loopback.requests[-1].query["q"] == ["zoning"]
        assert loopback.wait_disconnect(timeout=1.0)   # the client closed the hung connection

A route's reply is one of the reply objects below, or any callable ``handler(request) -> reply`` (a
:class:`Request` gives method, path, query, headers, body). :func:`sequence` answers successive requests
with successive replies. Route ``"*"`` catches every path without its own route; other paths answer 404.

Replies:

==========================  ===============================================================================
``Json(data, status=200)``  JSON body with Content-Length (``headers=`` adds headers, ``delay=`` waits first)
``Status(code, body)``      any status with any body and headers (e.g. 429 with ``Retry-After``)
``Html(text)``              an HTML page (200 by default): a captive portal / login wall
``Raw(data)``               exact bytes as the body (malformed JSON: ``Raw(b'{"results": [')``)
``Hang()``                  read the request, never answer; hold the connection until the client disconnects.
                            ``route("*", Hang(read_request=False))``: hang right after accept, unread
``Drip(body, interval)``    headers (with Content-Length) at once, then the body in chunks, one per interval
``ResetMidBody(body)``      headers announcing the full body, half of it, then a TCP reset (RST)
``Huge(size)``              a body of ``size`` bytes (``content_length=False``: chunked, no declared size)
``Close()``                 close the connection without answering (the client sees a protocol error)
``Script(steps)``           a chunked body played step by step: ``bytes`` (one chunk), a pause (``float``
                            seconds) or ``DROP`` (a TCP reset mid-body); an SSE stream by default
==========================  ===============================================================================

Helpers: :func:`searxng_json` builds a SearXNG-shaped answer with ``n`` results. The ``api`` fixture runs a
test twice, once through ``perplexed.search`` and once through ``perplexed.asearch``::

    async def test_rule(api, loopback):
        result = await api("zoning", provider, provider_timeout_ms=300)   # api.mode is "sync" or "async"

:data:`SLACK` is the allowance for timing bounds (``PERPLEXED_TEST_SLACK`` seconds, default 0.4) on a
loaded CI machine: "returns within the budget" is asserted as ``elapsed < budget + SLACK``. :data:`HEALTHY_MS`
is a budget a healthy loopback answer always fits in (use it when a hung provider and one that must answer
share ``provider_timeout_ms``).

What the server saw: ``server.requests`` (every parsed request, in order), ``server.connections`` (each
with ``opened_at``, ``closed_at``, ``closed_by`` = ``"client"`` / ``"server"``), ``server.wait_requests(n)``
and ``server.wait_disconnect()`` (a client closed a connection while the server was still holding it).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import pytest

from testkit.hits import searxng_json

__all__ = [
    "DROP",
    "HEALTHY_MS",
    "SLACK",
    "Close",
    "Connection",
    "Drip",
    "Hang",
    "Html",
    "Huge",
    "Json",
    "LoopbackServer",
    "Raw",
    "Reply",
    "Request",
    "ResetMidBody",
    "Script",
    "SearchAPI",
    "Status",
    "api",
    "loopback",
    "searxng_json",
    "sequence",
    "serve",
]

_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    301: "Moved Permanently",
    302: "Found",
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
#: seconds of allowance on timing bounds (a busy CI box); override with PERPLEXED_TEST_SLACK
SLACK = float(os.environ.get("PERPLEXED_TEST_SLACK", "0.4"))
#: a provider_timeout_ms that a healthy loopback answer always fits in, even on a loaded machine: use it when
#: a hung provider and one that must answer share the same per-provider budget
HEALTHY_MS = int(max(500, SLACK * 1500))


@dataclass
class Request:
    """One request as the server parsed it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: bytes
    connection: Connection
    received_at: float  # time.monotonic()

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


class Reply(Protocol):
    """Anything that can answer a request on a connection."""

    def write(self, conn: Connection, request: Request) -> bool:
        """Answer ``request``; return True to keep the connection open for the next request."""
        ...


Handler = Callable[[Request], "Reply"]


class Connection:
    """One accepted TCP connection, as seen by the server (what replies write to)."""

    def __init__(self, sock: socket.socket, server: LoopbackServer) -> None:
        self.sock = sock
        self.server = server
        self.opened_at = time.monotonic()
        self.closed_at: float | None = None
        self.closed_by: str | None = None  # "client" or "server"
        self.requests: list[Request] = []
        self.closed = threading.Event()
        self._buffer = b""

    # -- reading ----------------------------------------------------------------------------------------

    def _recv(self, timeout: float | None = None) -> bytes | None:
        """Some bytes; b"" when the client closed; None on timeout or when the server stops.

        Blocks in poll() on the socket and the server's wake-up socket (no periodic polling): an idle
        keep-alive connection costs no CPU, however many of them a load test holds open.
        """
        end = None if timeout is None else time.monotonic() + timeout
        while not self.server.stopping.is_set():
            wait = None if end is None else max(0.0, end - time.monotonic())
            try:
                ready = _readable(self.sock, wait, self.server._wake_r)
            except (OSError, ValueError):
                return b""
            if ready:
                try:
                    return self.sock.recv(65536)
                except OSError:
                    return b""
            if end is not None and time.monotonic() >= end:
                return None
        return None

    def read_request(self) -> Request | None:
        """The next request on this connection, or None when the client closed it (or the server stops)."""
        while b"\r\n\r\n" not in self._buffer:
            data = self._recv()
            if not data:
                if data == b"":
                    self.mark_closed("client")
                return None
            self._buffer += data
        head, _, rest = self._buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = [*lines[0].split(" ", 2), "", ""][:3]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        while len(rest) < length:
            data = self._recv()
            if not data:
                if data == b"":
                    self.mark_closed("client")
                return None
            rest += data
        body, self._buffer = rest[:length], rest[length:]
        parts = urlsplit(target)
        request = Request(
            method=method,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers=headers,
            body=body,
            connection=self,
            received_at=time.monotonic(),
        )
        self.requests.append(request)
        return request

    def wait_client_close(self, timeout: float | None = None) -> bool:
        """Hold the connection until the client closes it (True), ``timeout`` passes or the server stops."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            data = self._recv(left)
            if data == b"":
                self.mark_closed("client")
                return True
            if data is None and (self.server.stopping.is_set() or (end and time.monotonic() >= end)):
                return False

    # -- writing ----------------------------------------------------------------------------------------

    def send(self, data: bytes) -> bool:
        """Send bytes; False when the client has gone away."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.mark_closed("client")
            return False
        return True

    def pause(self, seconds: float) -> bool:
        """Wait ``seconds`` while watching the socket; False when the client closed it meanwhile."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            data = self._recv(left)
            if data == b"":
                self.mark_closed("client")
                return False
            if data is None and self.server.stopping.is_set():
                return False
            if data:
                self._buffer += data
        return True

    def mark_closed(self, by: str) -> None:
        if self.closed_at is None:
            self.closed_at = time.monotonic()
            self.closed_by = by
            self.closed.set()
            if by == "client":
                self.server._disconnected.set()

    def reset(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0, then close)."""
        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close()

    def close(self) -> None:
        self.mark_closed("server")
        with contextlib.suppress(OSError):
            self.sock.close()


def _head(
    status: int, headers: Mapping[str, str] | Sequence[tuple[str, str]] | None, **defaults: str
) -> bytes:
    items = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
    names = {k.lower() for k, _ in items}
    for name, value in defaults.items():
        header = name.replace("_", "-")
        if header.lower() not in names:
            items.append((header, value))
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    lines += [f"{k}: {v}" for k, v in items]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@dataclass
class Status:
    """Any status with any body and headers. ``delay`` seconds pass before the answer is sent."""

    status: int = 200
    body: bytes | str = b""
    headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None
    content_type: str = "text/plain"
    delay: float = 0.0

    def write(self, conn: Connection, request: Request) -> bool:
        if self.delay and not conn.pause(self.delay):
            return False
        body = self.body.encode() if isinstance(self.body, str) else self.body
        head = _head(self.status, self.headers, Content_Type=self.content_type, Content_Length=str(len(body)))
        return conn.send(head + body)


class Json(Status):
    """A JSON answer (``data`` is serialised); status 200 unless told."""

    def __init__(
        self,
        data: Any,
        status: int = 200,
        headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
        delay: float = 0.0,
    ) -> None:
        super().__init__(status, json.dumps(data).encode(), headers, "application/json", delay)


class Html(Status):
    """An HTML page: what a captive portal, a login wall or a misrouted proxy answers."""

    def __init__(
        self,
        text: str = "<!doctype html><html><head><title>Sign in</title></head><body>Please log in</body></html>",
        status: int = 200,
        headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(status, text.encode(), headers, "text/html; charset=utf-8")


class Raw(Status):
    """Exact bytes as the body, declared as JSON by default (malformed JSON, truncated JSON, binary...)."""

    def __init__(self, data: bytes, status: int = 200, content_type: str = "application/json") -> None:
        super().__init__(status, data, None, content_type)


@dataclass
class Hang:
    """Accept the connection and never answer. The server holds it until the client disconnects.

    ``read_request=False`` does not even read the request (a server stuck right after accept).
    """

    read_request: bool = True

    def write(self, conn: Connection, request: Request) -> bool:
        conn.wait_client_close()
        return False


@dataclass
class Drip:
    """Send the status line and headers (with the full Content-Length) at once, then the body in
    ``chunks`` pieces, ``interval`` seconds apart: a server that answers, slowly."""

    body: bytes | str | Any = b'{"results": []}'
    interval: float = 0.2
    chunks: int = 10
    status: int = 200
    content_type: str = "application/json"

    def write(self, conn: Connection, request: Request) -> bool:
        body = self.body
        if not isinstance(body, bytes | str):
            body = json.dumps(body)
        data = body.encode() if isinstance(body, str) else body
        if not conn.send(
            _head(self.status, None, Content_Type=self.content_type, Content_Length=str(len(data)))
        ):
            return False
        size = max(1, -(-len(data) // self.chunks))
        for start in range(0, len(data), size):
            if not conn.pause(self.interval):
                return False
            if not conn.send(data[start : start + size]):
                return False
        return True


@dataclass
class ResetMidBody:
    """Announce the full body's length, send half of it, then reset the connection (TCP RST)."""

    body: bytes = b'{"results": [{"url": "https://example.com/a", "title": "A"}]}' + b" " * 4096

    def write(self, conn: Connection, request: Request) -> bool:
        half = self.body[: len(self.body) // 2]
        conn.send(
            _head(200, None, Content_Type="application/json", Content_Length=str(len(self.body))) + half
        )
        time.sleep(0.05)  # let the half body reach the client before the reset
        conn.reset()
        return False


@dataclass
class Huge:
    """A body of ``size`` bytes (a JSON string padded with spaces). ``content_length=False`` streams it
    chunked with no declared size, so only a cap that counts while reading can stop it."""

    size: int = 32 * 1024 * 1024
    content_length: bool = True

    def write(self, conn: Connection, request: Request) -> bool:
        block = b" " * 65536
        if self.content_length:
            if not conn.send(
                _head(200, None, Content_Type="application/json", Content_Length=str(self.size))
            ):
                return False
            sent = 0
            while sent < self.size:
                piece = block[: self.size - sent]
                if not conn.send(piece):
                    return False
                sent += len(piece)
            return True
        if not conn.send(_head(200, None, Content_Type="application/json", Transfer_Encoding="chunked")):
            return False
        sent = 0
        while sent < self.size:
            piece = block[: self.size - sent]
            if not conn.send(b"%x\r\n" % len(piece) + piece + b"\r\n"):
                return False
            sent += len(piece)
        return conn.send(b"0\r\n\r\n")


@dataclass
class Close:
    """Close the connection without answering (``Server disconnected without sending a response``)."""

    def write(self, conn: Connection, request: Request) -> bool:
        conn.close()
        return False


#: a :class:`Script` step: abort the connection with a TCP reset, mid-body
DROP = object()


@dataclass
class Script:
    """A chunked body played step by step (``Connection: close``): ``bytes`` are sent as one HTTP/1.1 chunk, a
    number is a pause in seconds (watching the socket: a client that goes away ends the script), ``DROP``
    resets the connection mid-body. The terminating chunk follows the last step. ``text/event-stream`` by
    default: an SSE stream that can stall, drip or break where a test wants."""

    steps: Sequence[Any] = ()
    status: int = 200
    headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None
    content_type: str = "text/event-stream"

    def write(self, conn: Connection, request: Request) -> bool:
        head = _head(
            self.status, self.headers, Content_Type=self.content_type, Transfer_Encoding="chunked",
            Connection="close",
        )
        if not conn.send(head):
            return False
        for step in self.steps:
            if step is DROP:
                conn.reset()
                return False
            if isinstance(step, int | float):
                if not conn.pause(float(step)):
                    return False
                continue
            if not conn.send(b"%x\r\n%s\r\n" % (len(step), step)):
                return False
        conn.send(b"0\r\n\r\n")
        return False


def sequence(*replies: Reply | Handler, then: Reply | Handler | None = None) -> Handler:
    """A handler answering the 1st request with the 1st reply, the 2nd with the 2nd... then ``then``
    (default: the last reply again)."""
    items = list(replies)
    lock = threading.Lock()
    count = 0

    def handler(request: Request) -> Reply:
        nonlocal count
        with lock:
            n = count
            count += 1
        if n < len(items):
            chosen = items[n]
        else:
            chosen = then if then is not None else items[-1]
        return _resolve(chosen, request)

    return handler


def _resolve(reply: Reply | Handler, request: Request) -> Reply:
    # a callable that is not itself a reply is a handler: call it (handlers may return handlers)
    for _ in range(10):
        if hasattr(reply, "write"):
            return reply  # type: ignore[return-value]
        reply = reply(request)  # type: ignore[operator]
    raise TypeError("handler did not return a reply")


@dataclass
class LoopbackServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 with a reply per path (see the module docstring)."""

    host: str = "127.0.0.1"
    routes: dict[str, Reply | Handler] = field(default_factory=dict)
    default: Reply | Handler = field(default_factory=lambda: Json({"error": "no route"}, status=404))
    #: listen() backlog: raise it for load tests that open hundreds of connections at once
    backlog: int = 128

    def __post_init__(self) -> None:
        self.stopping = threading.Event()
        self.connections: list[Connection] = []
        self._lock = threading.Lock()
        self._request_seen = threading.Condition(self._lock)
        self._disconnected = threading.Event()
        self._threads: set[threading.Thread] = set()
        # close() writes one byte here and never reads it: every poll() that watches it wakes up for good
        self._wake_r, self._wake_w = socket.socketpair()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((self.host, 0))
        self._listener.listen(self.backlog)
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        self._acceptor = threading.Thread(target=self._accept_loop, name=f"loopback:{self.port}", daemon=True)
        self._acceptor.start()

    # -- configuration ------------------------------------------------------------------------------------

    def route(self, path: str, reply: Reply | Handler) -> LoopbackServer:
        """Answer requests for ``path`` with ``reply`` (a reply object or ``handler(request) -> reply``)."""
        self.routes[path] = reply
        return self

    def url_for(self, path: str) -> str:
        """The absolute URL of ``path`` on this server."""
        return self.url + path

    # -- what the server saw ------------------------------------------------------------------------------

    @property
    def requests(self) -> list[Request]:
        """Every request received, in arrival order."""
        with self._lock:
            return sorted((r for c in self.connections for r in c.requests), key=lambda r: r.received_at)

    def wait_requests(self, n: int, timeout: float = 5.0) -> bool:
        """Wait until at least ``n`` requests arrived."""
        end = time.monotonic() + timeout
        with self._request_seen:
            while sum(len(c.requests) for c in self.connections) < n:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._request_seen.wait(left)
        return True

    def wait_disconnect(self, timeout: float = 5.0) -> bool:
        """Wait until a client closed a connection the server was holding (hang, drip, keep-alive)."""
        return self._disconnected.wait(timeout)

    def clear(self) -> None:
        """Forget the connections and requests seen so far (and the disconnect flag)."""
        with self._lock:
            self.connections = [c for c in self.connections if c.closed_at is None]
            for c in self.connections:
                c.requests.clear()
            self._disconnected.clear()

    # -- lifecycle ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop accepting, release every held connection and join the threads."""
        self.stopping.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._acceptor.join(2)
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        for thread in list(self._threads):
            thread.join(2)
        for conn in conns:
            if conn.closed_at is None:
                conn.close()
        for sock in (self._wake_r, self._wake_w):
            sock.close()

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                if not _readable(self._listener, None, self._wake_r):
                    continue
                sock, _addr = self._listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(sock, self)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            with self._lock:
                self.connections.append(conn)
                self._threads.add(thread)
            thread.start()

    def _pick(self, path: str) -> Reply | Handler:
        return self.routes.get(path) or self.routes.get("*") or self.default

    def _serve(self, conn: Connection) -> None:
        try:
            while not self.stopping.is_set():
                # the path is unknown before the request is read: only a catch-all ("*")
                # Hang(read_request=False) can hang a connection right after accept
                route = self.routes.get("*")
                if isinstance(route, Hang) and not route.read_request:
                    conn.wait_client_close()
                    return
                request = conn.read_request()
                if request is None:
                    return
                with self._request_seen:
                    self._request_seen.notify_all()
                reply = _resolve(self._pick(request.path), request)
                if not reply.write(conn, request):
                    return
                if request.headers.get("connection", "").lower() == "close":
                    return
        except Exception:  # a broken reply must not kill the test process; the client sees a closed socket
            import traceback

            traceback.print_exc()
        finally:
            # always release the socket: a connection the client closed first is still open on this side
            # (close() keeps ``closed_by`` as first recorded)
            conn.close()
            with self._lock:
                self._threads.discard(threading.current_thread())


def _readable(sock: socket.socket, timeout: float | None, wake: socket.socket | None = None) -> bool:
    """Whether ``sock`` has data (or EOF) within ``timeout`` seconds (None: wait until it does or ``wake``
    becomes readable). poll() rather than select(): select cannot watch a descriptor numbered 1024 or more,
    which a long load test reaches."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLERR | select.POLLHUP)
        if wake is not None:
            poller.register(wake, select.POLLIN)
        events = poller.poll(None if timeout is None else timeout * 1000)
        return any(fd == sock.fileno() for fd, _ in events)
    watched = [sock] if wake is None else [sock, wake]
    ready, _, _ = select.select(watched, [], [], timeout)
    return sock in ready


@contextlib.contextmanager
def serve(
    routes: Mapping[str, Reply | Handler] | None = None, *, backlog: int = 128
) -> Iterator[LoopbackServer]:
    """A running :class:`LoopbackServer` for the duration of the block. Route ``"*"`` with
    ``Hang(read_request=False)`` to hang every connection right after accept."""
    server = LoopbackServer(routes=dict(routes or {}), backlog=backlog)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """A fresh loopback server per test (closed afterwards); set replies with ``loopback.route(...)``."""
    with serve() as server:
        yield server


@dataclass
class SearchAPI:
    """``await api(query, provider, **options)``: ``perplexed.search`` (mode ``"sync"``, called from the test's
    thread, blocking it like a sync caller) or ``perplexed.asearch`` (mode ``"async"``)."""

    mode: str

    async def __call__(self, query: Any, provider: Any = None, **options: Any) -> Any:
        import perplexed

        if self.mode == "sync":
            return perplexed.search(query, provider, **options)
        return await perplexed.asearch(query, provider, **options)

    @property
    def is_sync(self) -> bool:
        return self.mode == "sync"


@pytest.fixture(params=["sync", "async"])
def api(request: pytest.FixtureRequest) -> SearchAPI:
    """Run the test through the sync API and through the async API (same rules, same budgets)."""
    return SearchAPI(request.param)
