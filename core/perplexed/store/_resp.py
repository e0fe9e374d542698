"""A lean, pipelined RESP2 client for the Redis store's hot path (standalone servers: TCP, TLS, unix socket).

redis-py's asyncio client spends a few hundred microseconds of CPU per command (pool checkout, command
objects, retries) and holds one connection per command in flight. The store's calls are a handful of
EVALSHA/EVAL/LRANGE/SCAN/UNLINK commands, so it speaks RESP itself over ONE connection per event loop:
commands are written as they come (pipelined) and replies matched in order. redis-py is still what parses
the URL and what speaks to a cluster.

Errors: a ``-ERR``-style reply raises :class:`RespError` (``-NOSCRIPT`` raises :class:`NoScript`); a lost
connection fails every command in flight with :class:`ConnectionError` and the next command reconnects. A
command whose caller gave up (cancelled) still has its reply read and dropped in order; the connection is
then closed, so that a hung server cannot pile up commands on it.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
from collections.abc import AsyncIterator
from typing import Any

from .._errors import StoreError, StoreScriptMissing

__all__ = ["NoScript", "RespClient", "RespError"]


# error replies: defined with every other exception class, in perplexed._errors
RespError = StoreError
NoScript = StoreScriptMissing


def _encode(args: tuple[Any, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, str):
            data = arg.encode()
        else:
            data = str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class _Incomplete(Exception):
    pass


def _parse(buf: bytes | bytearray, pos: int) -> tuple[Any, int]:
    """One reply from ``buf`` at ``pos``: ``(value, next position)``; raises _Incomplete when cut short."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise _Incomplete
    kind = buf[pos]
    line = bytes(buf[pos + 1:end])
    nxt = end + 2
    if kind == 0x24:  # $ bulk string
        size = int(line)
        if size < 0:
            return None, nxt
        if len(buf) < nxt + size + 2:
            raise _Incomplete
        return bytes(buf[nxt:nxt + size]), nxt + size + 2
    if kind == 0x2A:  # * array
        count = int(line)
        if count < 0:
            return None, nxt
        items = []
        for _ in range(count):
            item, nxt = _parse(buf, nxt)
            items.append(item)
        return items, nxt
    if kind == 0x3A:  # : integer
        return int(line), nxt
    if kind == 0x2B:  # + simple string
        return line, nxt
    if kind == 0x2D:  # - error
        text = line.decode(errors="replace")
        return (NoScript(text) if text.startswith("NOSCRIPT") else RespError(text)), nxt
    raise RespError(f"unexpected RESP reply type {chr(kind)!r}")


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.pending: collections.deque[asyncio.Future[Any]] = collections.deque()
        self.buf = bytearray()
        self.closed = False
        self.abandoned = False
        self.outbuf: list[bytes] = []
        self.flush_scheduled = False

    def write(self, data: bytes, *, now: bool) -> None:
        """Queue ``data``; write it (with everything queued before it, in one send) now, or at the loop's next
        turn: a record sent without waiting then leaves with the next command (one syscall, not two)."""
        self.outbuf.append(data)
        if now:
            self.flush()
        elif not self.flush_scheduled:
            self.flush_scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self.flush_scheduled = False
        if self.outbuf and self.transport is not None and not self.closed:
            data = self.outbuf[0] if len(self.outbuf) == 1 else b"".join(self.outbuf)
            self.outbuf.clear()
            self.transport.write(data)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos = 0
        pending = self.pending
        try:
            while pos < len(buf) and pending:
                try:
                    value, pos = _parse(buf, pos)
                except _Incomplete:
                    break
                future = pending.popleft()
                if future.done():  # its caller gave up: drop the reply, keep the order
                    continue
                if isinstance(value, RespError):
                    future.set_exception(value)
                else:
                    future.set_result(value)
        except (ValueError, IndexError, RespError) as exc:  # a protocol error: this connection is done
            self._fail(ConnectionError(f"bad reply from the store: {exc}"))
            if self.transport is not None:
                self.transport.close()
            return
        del buf[:pos]
        if self.abandoned and not pending and self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"connection to the store lost: {exc}" if exc else "connection closed"))

    def _fail(self, error: Exception) -> None:
        self.closed = True
        while self.pending:
            future = self.pending.popleft()
            if not future.done():
                future.set_exception(error)


class RespClient:
    """One pipelined connection (per event loop) to a standalone server; reconnects on the next command."""

    def __init__(self, options: dict[str, Any], timeout_s: float, preload: tuple[str, ...] = ()) -> None:
        self._options = options
        self._timeout_s = timeout_s
        self._preload = preload  # Lua sources loaded (SCRIPT LOAD) on every new connection, ahead of any command
        self._proto: _Protocol | None = None
        self._connecting: asyncio.Future[_Protocol] | None = None

    async def _connect(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        options = self._options
        path = options.get("path")
        if path:
            _, proto = await loop.create_unix_connection(_Protocol, path)
        else:
            host = options.get("host") or "127.0.0.1"
            context = _ssl_context(options) if options.get("ssl") else None
            _, proto = await loop.create_connection(
                _Protocol, host, int(options.get("port") or 6379), ssl=context,
                server_hostname=host if context is not None else None,
            )
        hello: list[tuple[Any, ...]] = []
        password = options.get("password")
        if password:
            user = options.get("username")
            hello.append(("AUTH", user, password) if user else ("AUTH", password))
        db = int(options.get("db") or 0)
        if db:
            hello.append(("SELECT", db))
        for command in hello:
            await self._send(proto, command)
        # queued, not waited for: they leave with the first command, so even the first EVALSHA on a new (or
        # restarted) server finds its script, in the same round trip
        loop = asyncio.get_running_loop()
        for source in self._preload:
            future: asyncio.Future[Any] = loop.create_future()
            future.add_done_callback(_ignore)
            proto.pending.append(future)
            proto.write(_encode(("SCRIPT", "LOAD", source)), now=False)
        return proto

    async def _connection(self) -> _Protocol:
        proto = self._proto
        if proto is not None and not proto.closed and not proto.abandoned:
            return proto
        connecting = self._connecting
        if connecting is None:  # one connect at a time; concurrent callers wait for it
            connecting = self._connecting = asyncio.ensure_future(self._connect())
            connecting.add_done_callback(self._connected)
        return await asyncio.shield(connecting)

    def _connected(self, future: asyncio.Future[_Protocol]) -> None:
        self._connecting = None
        if not future.cancelled() and future.exception() is None:
            self._proto = future.result()

    @staticmethod
    async def _send(proto: _Protocol, args: tuple[Any, ...]) -> Any:
        if proto.closed or proto.transport is None:
            raise ConnectionError("connection to the store closed")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        proto.pending.append(future)
        proto.write(_encode(args), now=True)
        try:
            return await future
        except asyncio.CancelledError:
            proto.abandoned = True  # read what is in flight, then close: a hung server must not pile up work
            raise

    def send_nowait(self, *args: Any) -> asyncio.Future[Any] | None:
        """Queue a command on the open connection (written with the next command, or at the loop's next turn)
        and return its reply's future without waiting (None when no connection is open: use
        :meth:`execute_command`)."""
        proto = self._proto
        if proto is None or proto.closed or proto.abandoned or proto.transport is None:
            return None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        proto.pending.append(future)
        proto.write(_encode(args), now=False)
        return future

    async def execute_command(self, *args: Any) -> Any:
        return await self._send(await self._connection(), args)

    async def scan_iter(self, match: str, count: int = 500) -> AsyncIterator[bytes]:
        cursor: Any = b"0"
        while True:
            cursor, keys = await self.execute_command("SCAN", cursor, "MATCH", match, "COUNT", count)
            for key in keys:
                yield key
            if cursor in (b"0", 0):
                return

    async def aclose(self) -> None:
        proto, self._proto = self._proto, None
        if proto is not None and proto.transport is not None:
            proto.transport.close()


def _ignore(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


_contexts: dict[tuple[Any, ...], ssl.SSLContext] = {}


def _ssl_context(options: dict[str, Any]) -> ssl.SSLContext:
    """An SSL context from redis-py's URL options (``ssl_ca_certs``, ``ssl_certfile``, ``ssl_keyfile``,
    ``ssl_cert_reqs``, ``ssl_check_hostname``), built once per set of options."""
    key = tuple(str(options.get(name)) for name in
                ("ssl_ca_certs", "ssl_ca_path", "ssl_certfile", "ssl_keyfile", "ssl_cert_reqs", "ssl_check_hostname"))
    context = _contexts.get(key)
    if context is None:
        context = ssl.create_default_context(cafile=options.get("ssl_ca_certs"), capath=options.get("ssl_ca_path"))
        if options.get("ssl_certfile"):
            context.load_cert_chain(options["ssl_certfile"], options.get("ssl_keyfile"))
        reqs = str(options.get("ssl_cert_reqs", "required")).lower()
        check = options.get("ssl_check_hostname")
        if isinstance(check, str):
            check = check.lower() in ("1", "true", "yes", "on")
        if reqs in ("none", "cert_none"):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif check is False:
            context.check_hostname = False
        _contexts[key] = context
    return context
