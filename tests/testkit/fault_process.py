"""Fault servers in a child process, on asyncio, for load tests and benchmarks.

:mod:`testkit.loopback` serves each connection from a thread of the test process: right for unit tests, wrong
for 200 concurrent runs, where those threads compete with the event loop under test for the GIL and a
thread per connection makes the server, not perplexed, the bottleneck (and the memory measured would be the
server's too). :func:`fault_servers` starts one single-threaded asyncio server per fault in a separate Python
process instead: the same faults as loopback's replies, at load.

As a script: ``python fault_process.py NAME...`` starts one server per name, prints
``{"name": "http://127.0.0.1:PORT", ...}`` as one JSON line and serves until its standard input closes.
Names: ``good`` (SearXNG JSON, 3 hits), ``refused`` (a closed port, no server), ``accept_hang``, ``drip``
(1 byte / 200 ms), ``reset_mid_body``, ``close``, ``429_retry_after``, ``500``, ``502``, ``503``,
``malformed_json``, ``html_not_json``, ``soft_failure_200``, ``body_100mb``, ``body_100mb_chunked``, and
``sse_cut`` / ``sse_endless`` (an SSE stream cut before its terminal event / one that never sends it), and
Agent API answers: ``agent_ok`` (completed, cost reported), ``agent_failed`` (HTTP 200, status failed, billed),
``agent_in_progress`` (a background run that never ends), ``agent_sse_ok`` (a complete event stream),
``sse_10mb`` (a complete stream of a 10 MB answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

__all__ = ["NAMES", "fault_servers"]

_HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def fault_servers(names: list[str], *, timeout: float = 15.0) -> Iterator[dict[str, str]]:
    """Start one server per name in a child process; yields name -> base URL."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__)), *names],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(_HERE)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"fault server process exited with {proc.wait(timeout)}")
        yield json.loads(line)
    finally:
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


# --- the servers (run in the child) ------------------------------------------------------------------------

Reader = asyncio.StreamReader
Writer = asyncio.StreamWriter

_GOOD = json.dumps(
    {
        "query": "q",
        "results": [
            {"url": f"https://example.com/page{i}", "title": f"Result {i}", "content": f"Snippet {i}"}
            for i in range(1, 4)
        ],
        "unresponsive_engines": [],
    }
).encode()
_SOFT = json.dumps({"query": "q", "results": [], "unresponsive_engines": [["google", "CAPTCHA"]]}).encode()
_DRIP = b'{"results": [{"url": "https://example.com/drip", "title": "D"}]}'
_RESET = b'{"results": [{"url": "https://example.com/a", "title": "A"}]}' + b" " * 4096


def _agent_response(status: str, cost: float, **extra: object) -> dict[str, object]:
    output = (
        []
        if status != "completed"
        else [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Setbacks are typically 5 m [1]."}],
            }
        ]
    )
    return {
        "id": f"resp_{status}",
        "object": "response",
        "created_at": 1767225600,
        "model": "openai/gpt-5.1",
        "status": status,
        "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "cost": {"total_cost": cost}},
        **extra,
    }


AGENT_OK_COST = 0.002
AGENT_FAILED_COST = 0.003
_AGENT_OK = json.dumps(_agent_response("completed", AGENT_OK_COST)).encode()
_AGENT_FAILED = json.dumps(
    _agent_response(
        "failed",
        AGENT_FAILED_COST,
        error={"message": "upstream_structured_output_failed", "type": "server_error"},
    )
).encode()
_AGENT_RUNNING = json.dumps(_agent_response("in_progress", 0.0, background=True)).encode()
_HTML = b"<!doctype html><html><head><title>Sign in</title></head><body>Please log in</body></html>"
_BLOCK = b" " * 65536
_HUNDRED_MB = 100 * 1024 * 1024


def _head(status: int, ctype: str, length: int | None, extra: str = "") -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else "Transfer-Encoding: chunked\r\n"
    return f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\n{size}{extra}\r\n".encode()


async def _read_request(reader: Reader) -> bool:
    """Read one request (head and body); False when the client closed the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return False
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            await reader.readexactly(int(line.split(b":", 1)[1]))
    return True


def _answer(status: int, body: bytes, ctype: str = "application/json", extra: str = "") -> Handler:
    data = _head(status, ctype, len(body), extra) + body

    async def handle(reader: Reader, writer: Writer) -> None:
        while await _read_request(reader):
            writer.write(data)
            await writer.drain()

    return handle


async def _accept_hang(reader: Reader, writer: Writer) -> None:
    while await reader.read(65536):  # never answer; return when the client closes
        pass


async def _drip(reader: Reader, writer: Writer) -> None:
    if not await _read_request(reader):
        return
    writer.write(_head(200, "application/json", len(_DRIP)))
    for i in range(len(_DRIP)):
        await asyncio.sleep(0.2)
        writer.write(_DRIP[i : i + 1])
        await writer.drain()


async def _reset(reader: Reader, writer: Writer) -> None:
    if not await _read_request(reader):
        return
    writer.write(_head(200, "application/json", len(_RESET)) + _RESET[: len(_RESET) // 2])
    await writer.drain()
    await asyncio.sleep(0.05)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _close(reader: Reader, writer: Writer) -> None:
    await _read_request(reader)


async def _huge(reader: Reader, writer: Writer, *, chunked: bool) -> None:
    if not await _read_request(reader):
        return
    writer.write(_head(200, "application/json", None if chunked else _HUNDRED_MB))
    sent = 0
    while sent < _HUNDRED_MB:
        writer.write(b"%x\r\n%s\r\n" % (len(_BLOCK), _BLOCK) if chunked else _BLOCK)
        sent += len(_BLOCK)
        await writer.drain()
    if chunked:
        writer.write(b"0\r\n\r\n")
        await writer.drain()


def _sse(endless: bool) -> Handler:
    async def handle(reader: Reader, writer: Writer) -> None:
        if not await _read_request(reader):
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        seq = 0

        def frame(payload: dict[str, object]) -> bytes:
            data = b"data: " + json.dumps(payload).encode() + b"\n\n"
            return b"%x\r\n%s\r\n" % (len(data), data)

        writer.write(
            frame(
                {
                    "type": "response.created",
                    "sequence_number": 0,
                    "response": {"id": "resp_1", "status": "in_progress", "output": []},
                }
            )
        )
        for seq in range(1, 4):
            writer.write(
                frame(
                    {
                        "type": "response.output_text.delta",
                        "sequence_number": seq,
                        "item_id": "m",
                        "output_index": 0,
                        "content_index": 0,
                        "delta": "hi ",
                    }
                )
            )
            await writer.drain()
        while endless:
            await asyncio.sleep(0.05)
            writer.write(b"3\r\n: \n\r\n")  # keep-alive comment: alive, but no terminal event, ever
            await writer.drain()
        # cut: the connection closes here, mid-stream, without the terminal event
        writer.transport.abort()

    return handle


def _sse_ok() -> Handler:
    async def handle(reader: Reader, writer: Writer) -> None:
        while await _read_request(reader):
            events = [
                {
                    "type": "response.created",
                    "sequence_number": 0,
                    "response": {"id": "resp_s", "status": "in_progress", "output": []},
                },
                {
                    "type": "response.output_text.delta",
                    "sequence_number": 1,
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": "Setbacks are typically 5 m [1].",
                },
                {
                    "type": "response.completed",
                    "sequence_number": 2,
                    "response": _agent_response("completed", AGENT_OK_COST),
                },
            ]
            body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
            writer.write(_head(200, "text/event-stream", len(body)) + body)
            await writer.drain()

    return handle


def _sse_big(total: int) -> Handler:
    """A complete event stream whose answer text is ``total`` bytes (1 KB deltas), then the terminal event
    carrying the whole response (as the Agent API's ``response.completed`` does)."""

    async def handle(reader: Reader, writer: Writer) -> None:
        if not await _read_request(reader):
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        piece = ("lorem ipsum dolor sit amet " * 40)[:1000]
        sent, seq = 0, 1
        batch: list[bytes] = []
        while sent < total:
            event = {
                "type": "response.output_text.delta",
                "sequence_number": seq,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
            }
            batch.append(b"data: " + json.dumps(event).encode() + b"\n\n")
            sent += len(piece)
            seq += 1
            if len(batch) == 64:
                data = b"".join(batch)
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                await writer.drain()
                batch.clear()
        final = _agent_response("completed", AGENT_OK_COST)
        final["output"][0]["content"][0]["text"] = piece * (sent // len(piece))  # type: ignore[index]
        batch.append(
            b"data: "
            + json.dumps({"type": "response.completed", "sequence_number": seq, "response": final}).encode()
            + b"\n\n"
        )
        data = b"".join(batch)
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        await writer.drain()

    return handle


Handler = Callable[[Reader, Writer], Awaitable[None]]

_HANDLERS: dict[str, Handler] = {
    "good": _answer(200, _GOOD),
    "accept_hang": _accept_hang,
    "drip": _drip,
    "reset_mid_body": _reset,
    "close": _close,
    "429_retry_after": _answer(429, b'{"error": "slow down"}', extra="Retry-After: 7\r\n"),
    "500": _answer(500, b"boom", "text/plain"),
    "502": _answer(502, b"<html>bad gateway</html>", "text/html"),
    "503": _answer(503, b'{"error": "maintenance"}'),
    "malformed_json": _answer(200, b'{"results": [{"url": "https://exa'),
    "html_not_json": _answer(200, _HTML, "text/html; charset=utf-8"),
    "soft_failure_200": _answer(200, _SOFT),
    "body_100mb": lambda r, w: _huge(r, w, chunked=False),
    "body_100mb_chunked": lambda r, w: _huge(r, w, chunked=True),
    "agent_ok": _answer(200, _AGENT_OK),
    "agent_failed": _answer(200, _AGENT_FAILED),
    "agent_in_progress": _answer(200, _AGENT_RUNNING),
    "agent_sse_ok": _sse_ok(),
    "sse_10mb": _sse_big(10 * 1024 * 1024),
    "sse_cut": _sse(endless=False),
    "sse_endless": _sse(endless=True),
}
NAMES = ("refused", *_HANDLERS)


def _guarded(handler: Handler) -> Handler:
    async def run(reader: Reader, writer: Writer) -> None:
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, OSError, asyncio.CancelledError):
            pass  # the client went away (expected for every fault), or the server is shutting down
        finally:
            writer.transport.abort()

    return run


def _refused() -> socket.socket:
    """A loopback port that refuses connections: bound, never listening, and held (a port that was only bound
    and released went to the next server started here, which then answered on the "refused" URL)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


async def _serve(names: list[str]) -> None:
    urls: dict[str, str] = {}
    servers = []
    held = []
    for name in names:
        if name == "refused":
            held.append(_refused())
            urls[name] = f"http://127.0.0.1:{held[-1].getsockname()[1]}"
            continue
        server = await asyncio.start_server(_guarded(_HANDLERS[name]), "127.0.0.1", 0, backlog=2048)
        servers.append(server)
        urls[name] = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    print(json.dumps(urls), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    for server in servers:
        server.close()
    for sock in held:
        sock.close()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1:]))
