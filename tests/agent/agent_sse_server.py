"""A loopback SSE server for the Agent API tests: a real socket on 127.0.0.1, served from a thread.

Each request is answered by ``handler(request) -> Reply``. A reply is an HTTP status, headers and a script
of body steps: bytes to send (as HTTP/1.1 chunks), a pause (float seconds), or ``DROP`` (close the socket
abruptly, mid-body: the client sees an incomplete chunked body). The server stops by itself when the
context manager exits; every accept/read is bounded by a timeout.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

DROP = object()


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
    def __init__(self, handler: Callable[[SeenRequest], Reply]) -> None:
        self.handler = handler
        self.requests: list[SeenRequest] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._accept_loop, name="sse-loopback", daemon=True)

    def __enter__(self) -> SSEServer:
        self._accept.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._accept.join(timeout=5)
        for t in self._threads:
            t.join(timeout=5)
        self._sock.close()

    def _accept_loop(self) -> None:
        deadline = time.monotonic() + 60  # bounded: a test never runs longer than this
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _read_request(self, conn: socket.socket) -> SeenRequest | None:
        conn.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            rest += chunk
        parts = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        return SeenRequest(method, parts.path, query, headers, rest[:length])

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.closing(conn):
            try:
                request = self._read_request(conn)
            except OSError:
                return
            if request is None:
                return
            self.requests.append(request)
            reply = self.handler(request)
            head = [f"HTTP/1.1 {reply.status} X", "Transfer-Encoding: chunked", "Connection: close"]
            head += [f"{k}: {v}" for k, v in reply.headers.items()]
            try:
                conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
                for step in reply.steps:
                    if step is DROP:
                        # abrupt close with RST, mid-body
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        return
                    if isinstance(step, float | int):
                        time.sleep(step)
                        continue
                    conn.sendall(b"%x\r\n%s\r\n" % (len(step), step))
                conn.sendall(b"0\r\n\r\n")
            except OSError:
                return


@contextlib.contextmanager
def serve(handler: Callable[[SeenRequest], Reply]) -> Iterator[SSEServer]:
    with SSEServer(handler) as server:
        yield server
