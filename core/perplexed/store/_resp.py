"""A lean, pipelined RESP2 client for the Redis store's hot path (standalone servers: TCP, TLS, unix socket).

A declared component (see benchmarks/RESULTS.md, "Redis client"): redis-py's asyncio client, even with
hiredis, spends three to five times the CPU per command (pool checkout, command objects, retries) and holds
one connection per command in flight; the store's calls are a handful of EVALSHA/EVAL/LRANGE/SCAN/UNLINK
commands, so it speaks RESP itself over ONE connection per event loop: commands are written as they come
(pipelined) and replies matched in order. redis-py still speaks to a cluster.

Bounded by construction:

* one connection per client (per event loop); a command whose caller gave up keeps its place: its reply is
  read and dropped in order, and the connection stays (a hung server costs that one connection, not one per
  retry); TCP keep-alive finds a peer that is gone;
* the reader is incremental (a reply cut into many chunks is parsed once, never from its start again) and
  iterative (no recursion), and refuses, by closing the connection, a reply larger than ``max_reply_bytes``
  (a bulk string is refused from its header, before its bytes arrive), an array of more than
  :data:`MAX_ELEMENTS`, nesting deeper than :data:`MAX_DEPTH` or a line longer than :data:`MAX_LINE`;
* connecting (TCP/TLS, AUTH, SELECT) has its own timeout and closes the socket on any failure;
* ``-READONLY``, ``-LOADING`` and ``-MASTERDOWN`` (a demoted primary, a replica still loading, a replica cut
  from its primary) close the connection after failing that command: the next command connects again and
  so resolves the host name again (a DNS-based failover is followed);
* text arguments are encoded as UTF-8 with unencodable characters (a lone surrogate) replaced, never raised;
* the client is closed when its event loop shuts down (``asyncio.run``'s end) or, for a loop closed without
  that, by :meth:`RespClient.close_dead`.

Errors: a ``-ERR``-style reply raises :class:`RespError` (``-NOSCRIPT`` raises :class:`NoScript`); a lost
or refused connection fails every command in flight with :class:`ConnectionError`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from typing import Any, Final

from perplexed._errors import StoreError, StoreProtocolError, StoreScriptMissing

__all__ = [
    "CLOSE_ON",
    "LATE_REPLY",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_LINE",
    "MAX_REPLY_BYTES",
    "ClientClosed",
    "NoScript",
    "ProtocolError",
    "Reader",
    "RespClient",
    "RespError",
]


# error replies: defined with every other exception class, in perplexed._errors
RespError = StoreError
NoScript = StoreScriptMissing

MAX_REPLY_BYTES: Final = 4 * 1024 * 1024
"""The largest reply accepted (a cached answer is at most 1 MiB); a larger one closes the connection."""
MAX_ELEMENTS: Final = 1 << 18
"""The most array elements one reply may hold (all levels together)."""
MAX_DEPTH: Final = 8
"""The deepest nesting of arrays accepted (the store's replies nest two deep)."""
MAX_LINE: Final = 64 * 1024
"""The longest header / simple-string / error line accepted."""
MAX_PENDING: Final = 100_000
"""Commands waiting for replies on one connection before it is given up as stuck."""
LATE_REPLY: ContextVar[Callable[[asyncio.Future[Any]], None] | None] = ContextVar("perplexed_late_reply", default=None)
"""Set around a command whose caller wants its reply even after it stopped waiting (an admission: what it took
is given back): called with the reply's future when the reply comes."""
CLOSE_ON: Final = ("READONLY", "LOADING", "MASTERDOWN")
"""Error replies after which the connection is closed (the next command connects again)."""

_KEEPALIVE: Final = (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3))


class _ClientClosed(ConnectionError):
    """The client was closed (its event loop ended) with commands in flight: not the server's failure."""


ClientClosed = _ClientClosed
ProtocolError = StoreProtocolError
"""The server sent something that is not an acceptable RESP reply: the connection is closed."""


def _encode(args: tuple[Any, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, str):
            data = arg.encode("utf-8", "replace")  # a lone surrogate becomes "?": one odd label, not an error
        else:
            data = str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def _literal(host: str, port: int) -> list[tuple[Any, ...]]:
    """An IP address needs no lookup (and no executor thread): its one address, or [] for a host name."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port))]
    return []


class _Incomplete(Exception):
    """More bytes are needed (only raised by :func:`_parse`, the one-shot helper)."""


class Reader:
    """An incremental, iterative RESP2 reader with bounds (see the module docstring).

    ``feed(data)`` then ``replies()``: the complete replies so far, in order (an error reply is a
    :class:`RespError` instance in the list). Raises :class:`ProtocolError` on anything unacceptable; the
    reader must not be used after that."""

    __slots__ = ("_buf", "_bulk", "_elements", "_max_bytes", "_pos", "_reply_bytes", "_stack")

    def __init__(self, max_reply_bytes: int = MAX_REPLY_BYTES) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._max_bytes = max_reply_bytes
        self._stack: list[list[Any]] = []  # open arrays: [items, remaining]
        self._bulk = -1  # size of the bulk string whose body is awaited (-1: none)
        self._reply_bytes = 0  # bytes of the reply being read, consumed so far
        self._elements = 0

    def feed(self, data: bytes) -> None:
        self._buf += data

    def _consume(self, count: int) -> None:
        self._pos += count
        self._reply_bytes += count
        if self._reply_bytes > self._max_bytes:
            raise ProtocolError(f"a reply larger than {self._max_bytes} bytes")

    def replies(self) -> list[Any]:
        out: list[Any] = []
        buf = self._buf
        try:
            while True:
                if self._bulk >= 0:  # the body of a bulk string (its size was checked from the header)
                    need = self._bulk + 2
                    if len(buf) - self._pos < need:
                        break
                    end = self._pos + self._bulk
                    if buf[end:end + 2] != b"\r\n":
                        raise ProtocolError("a bulk string without its CRLF")
                    value: Any = bytes(buf[self._pos:end])
                    self._consume(need)
                    self._bulk = -1
                else:
                    end = buf.find(b"\r\n", self._pos)
                    if end < 0:
                        if len(buf) - self._pos > MAX_LINE:
                            raise ProtocolError(f"a line longer than {MAX_LINE} bytes")
                        break
                    if end - self._pos > MAX_LINE:
                        raise ProtocolError(f"a line longer than {MAX_LINE} bytes")
                    kind = buf[self._pos]
                    line = bytes(buf[self._pos + 1:end])
                    self._consume(end + 2 - self._pos)
                    if kind == 0x24:  # $ bulk string
                        size = _int(line)
                        if size >= 0:
                            if size + 2 + self._reply_bytes > self._max_bytes:
                                raise ProtocolError(f"a reply larger than {self._max_bytes} bytes")
                            self._bulk = size
                            continue
                        value = None
                    elif kind == 0x2A:  # * array
                        count = _int(line)
                        if count > 0:
                            self._elements += count
                            if self._elements > MAX_ELEMENTS:
                                raise ProtocolError(f"a reply with more than {MAX_ELEMENTS} elements")
                            if len(self._stack) >= MAX_DEPTH:
                                raise ProtocolError(f"arrays nested deeper than {MAX_DEPTH}")
                            self._stack.append([[], count])
                            continue
                        value = None if count < 0 else []
                    elif kind == 0x3A:  # : integer
                        value = _int(line)
                    elif kind == 0x2B:  # + simple string
                        value = line
                    elif kind == 0x2D:  # - error
                        text = line.decode(errors="replace")
                        value = NoScript(text) if text.startswith("NOSCRIPT") else RespError(text)
                    else:
                        raise ProtocolError(f"unexpected RESP reply type {chr(kind)!r}")
                # a value is complete: put it in its array (closing the arrays it completes) or hand it out
                while self._stack:
                    top = self._stack[-1]
                    top[0].append(value)
                    top[1] -= 1
                    if top[1]:
                        break
                    value = self._stack.pop()[0]
                else:
                    out.append(value)
                    self._reply_bytes = 0
                    self._elements = 0
        finally:
            if self._pos:
                del buf[:self._pos]
                self._pos = 0
        return out


def _int(line: bytes) -> int:
    if not line or len(line) > 20:
        raise ProtocolError(f"not a RESP integer: {line[:24]!r}")
    try:
        return int(line)
    except ValueError:
        raise ProtocolError(f"not a RESP integer: {line[:24]!r}") from None


def _parse(data: bytes) -> Any:
    """One reply from ``data`` (tests): the value, or :class:`_Incomplete` when ``data`` is cut short."""
    reader = Reader()
    reader.feed(data)
    replies = reader.replies()
    if not replies:
        raise _Incomplete
    return replies[0]


class _Protocol(asyncio.Protocol):
    def __init__(self, max_reply_bytes: int) -> None:
        self.transport: asyncio.Transport | None = None
        self.pending: collections.deque[asyncio.Future[Any]] = collections.deque()
        self.reader = Reader(max_reply_bytes)
        self.closed = False
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
        if self.closed:
            return
        try:
            self.reader.feed(data)
            values = self.reader.replies()
        except ProtocolError as exc:  # this connection is done
            self.close(ProtocolError(f"bad reply from the store: {exc}"))
            return
        pending = self.pending
        close_after: RespError | None = None
        for value in values:
            if not pending:  # a reply nobody asked for
                self.close(ProtocolError("bad reply from the store: a reply to no command"))
                return
            future = pending.popleft()
            if isinstance(value, RespError) and str(value).startswith(CLOSE_ON):
                close_after = value
            if future.done():  # its caller gave up: drop the reply, keep the order
                continue
            if isinstance(value, RespError):
                future.set_exception(value)
            else:
                future.set_result(value)
            if close_after is not None:
                break
        if close_after is not None:  # a failover or a loading replica: connect again (DNS again) next time
            self.close(ConnectionError(f"the store answered {str(close_after)[:60]}: connection closed"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"connection to the store lost: {exc}" if exc else "connection closed"))

    def close(self, error: Exception) -> None:
        self._fail(error)
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, error: Exception) -> None:
        self.closed = True
        while self.pending:
            future = self.pending.popleft()
            if not future.done():
                future.set_exception(error)


class RespClient:
    """One pipelined connection (per event loop) to a standalone server; reconnects on the next command.

    ``options``: ``host``, ``port``, ``path`` (unix socket), ``username``, ``password``, ``db``, ``ssl`` and
    the ``ssl_*`` options of :func:`ssl_context`. ``timeout_s`` bounds connecting (AUTH and SELECT
    included), unless ``connect_timeout_s`` is given."""

    def __init__(self, options: dict[str, Any], timeout_s: float, preload: tuple[str, ...] = (), *,
                 connect_timeout_s: float | None = None, max_reply_bytes: int = MAX_REPLY_BYTES) -> None:
        self._options = options
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s if connect_timeout_s is not None else timeout_s
        self._max_reply_bytes = max_reply_bytes
        self._preload = preload  # Lua sources loaded (SCRIPT LOAD) on every new connection, ahead of any command
        self._proto: _Protocol | None = None
        self._sock: socket.socket | None = None
        self._connecting: asyncio.Future[_Protocol] | None = None
        self.connections = 0
        """How many connections this client has opened (tests, diagnostics)."""
        self.answered = False
        """Whether any command has been answered (a warm client)."""

    async def _open_socket(self) -> socket.socket:
        loop = asyncio.get_running_loop()
        path = self._options.get("path")
        if path:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                await loop.sock_connect(sock, path)
            except BaseException:
                sock.close()
                raise
            return sock
        host = self._options.get("host") or "127.0.0.1"
        port = int(self._options.get("port") or 6379)
        infos = _literal(host, port) or await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        error: Exception = ConnectionError(f"{host!r} resolves to no address")
        for family, kind, proto, _, address in infos:
            sock = socket.socket(family, kind, proto)
            sock.setblocking(False)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                for name, value in _KEEPALIVE:
                    if hasattr(socket, name):
                        sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
                await loop.sock_connect(sock, address)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            except BaseException:
                sock.close()
                raise
            return sock
        raise error

    async def _connect(self) -> _Protocol:
        LATE_REPLY.set(None)  # (this task's own context: AUTH and SELECT are not the caller's command)
        async with asyncio.timeout(self._connect_timeout_s):
            return await self._connect_now()

    async def _connect_now(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        options = self._options
        sock = await self._open_socket()
        proto: _Protocol | None = None
        try:
            if options.get("path"):
                _, proto = await loop.create_unix_connection(lambda: _Protocol(self._max_reply_bytes), sock=sock)
            else:
                context = ssl_context(options) if options.get("ssl") else None
                host = options.get("host") or "127.0.0.1"
                _, proto = await loop.create_connection(
                    lambda: _Protocol(self._max_reply_bytes), sock=sock, ssl=context,
                    server_hostname=host if context is not None else None,
                )
            self.connections += 1
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
        except BaseException:  # a refused AUTH/SELECT, a TLS failure, a timeout: never leave the socket open
            if proto is not None and proto.transport is not None:
                proto.transport.abort()
            sock.close()
            raise
        # queued, not waited for: they leave with the first command, so even the first EVALSHA on a new (or
        # restarted) server finds its script, in the same round trip
        for source in self._preload:
            future: asyncio.Future[Any] = loop.create_future()
            future.add_done_callback(_ignore)
            proto.pending.append(future)
            proto.write(_encode(("SCRIPT", "LOAD", source)), now=False)
        self._sock = sock
        return proto

    async def _connection(self) -> _Protocol:
        proto = self._proto
        if proto is not None and not proto.closed:
            if len(proto.pending) < MAX_PENDING:
                return proto
            proto.close(ConnectionError("the store stopped answering"))  # stuck: give it up
        connecting = self._connecting
        if connecting is None:  # one connect at a time; concurrent callers wait for it
            connecting = self._connecting = asyncio.ensure_future(self._connect())
            connecting.add_done_callback(self._connected)
        return await asyncio.shield(connecting)

    def _connected(self, future: asyncio.Future[_Protocol]) -> None:
        self._connecting = None
        if not future.cancelled() and future.exception() is None:
            old, self._proto = self._proto, future.result()
            if old is not None and old.transport is not None:
                old.transport.abort()

    async def _send(self, proto: _Protocol, args: tuple[Any, ...]) -> Any:
        if proto.closed or proto.transport is None:
            raise ConnectionError("connection to the store closed")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        proto.pending.append(future)
        proto.write(_encode(args), now=True)
        late = LATE_REPLY.get()
        if late is None:
            value = await future  # a caller giving up leaves the future in place: its reply is dropped in order
        else:  # the caller wants a reply it stopped waiting for (LATE_REPLY)
            try:
                value = await asyncio.shield(future)
            except asyncio.CancelledError:
                future.add_done_callback(late)
                raise
        self.answered = True
        return value

    def send_nowait(self, *args: Any) -> asyncio.Future[Any] | None:
        """Queue a command on the open connection (written with the next command, or at the loop's next turn)
        and return its reply's future without waiting (None when no connection is open: use
        :meth:`execute_command`)."""
        proto = self._proto
        if proto is None or proto.closed or proto.transport is None or len(proto.pending) >= MAX_PENDING:
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

    def close_now(self) -> None:
        """Close the connection from the loop's own thread (or any thread once the loop is closed)."""
        proto, self._proto = self._proto, None
        sock, self._sock = self._sock, None
        connecting = self._connecting
        if connecting is not None and not connecting.done():
            connecting.cancel()
        if proto is not None:
            proto._fail(ClientClosed("the store client was closed"))
            if proto.transport is not None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: the socket is closed below
                    proto.transport.abort()
        if sock is not None:
            sock.close()

    def close_dead(self) -> None:
        """Release the socket of a client whose event loop is closed (nothing else can run there any more)."""
        self.close_now()

    async def aclose(self, drain_s: float = 0.0) -> None:
        """Close; with ``drain_s``, first send what is queued and wait (at most that long) for the replies in
        flight (records sent without waiting, when the loop ends)."""
        proto = self._proto
        if drain_s > 0 and proto is not None and not proto.closed:
            proto.flush()
            if proto.pending:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(proto.pending[-1]), drain_s)
        self.close_now()


def _ignore(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


SSL_OPTIONS: Final = (
    "ssl_ca_certs", "ssl_ca_path", "ssl_ca_data", "ssl_certfile", "ssl_keyfile", "ssl_password", "ssl_cert_reqs",
    "ssl_check_hostname", "ssl_min_version", "ssl_ciphers",
)
"""The TLS options of a ``rediss://`` URL the store honours (redis-py's names); any other is refused."""

_VERSIONS: Final = {
    "tlsv1": ssl.TLSVersion.TLSv1, "tlsv1_1": ssl.TLSVersion.TLSv1_1, "tlsv1_2": ssl.TLSVersion.TLSv1_2,
    "tlsv1_3": ssl.TLSVersion.TLSv1_3, "1.0": ssl.TLSVersion.TLSv1, "1.1": ssl.TLSVersion.TLSv1_1,
    "1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3,
}


def tls_version(value: object) -> ssl.TLSVersion:
    """``ssl_min_version``: ``TLSv1_2`` / ``1.2`` / a :class:`ssl.TLSVersion` (or its number); ValueError else."""
    if isinstance(value, ssl.TLSVersion):
        return value
    text = str(value).strip().lower().replace("tlsversion.", "")
    if text in _VERSIONS:
        return _VERSIONS[text]
    try:
        return ssl.TLSVersion(int(text))
    except ValueError:
        raise ValueError(f"ssl_min_version must be TLSv1_2 or TLSv1_3 (or 1.2, 1.3), got {value!r}") from None


_contexts: dict[tuple[Any, ...], ssl.SSLContext] = {}


def ssl_context(options: dict[str, Any]) -> ssl.SSLContext:
    """An SSL context from redis-py's URL options (:data:`SSL_OPTIONS`), built once per set of options."""
    key = tuple(str(options.get(name)) for name in SSL_OPTIONS)
    context = _contexts.get(key)
    if context is None:
        context = ssl.create_default_context(cafile=options.get("ssl_ca_certs"), capath=options.get("ssl_ca_path"),
                                             cadata=options.get("ssl_ca_data"))
        if options.get("ssl_certfile"):
            context.load_cert_chain(options["ssl_certfile"], options.get("ssl_keyfile"),
                                    password=options.get("ssl_password"))
        reqs = str(options.get("ssl_cert_reqs") or "required").lower()
        check = options.get("ssl_check_hostname")
        if isinstance(check, str):
            check = check.lower() in ("1", "true", "yes", "on")
        if reqs in ("none", "cert_none"):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif reqs in ("optional", "cert_optional"):
            context.check_hostname = False if check is None else bool(check)
            context.verify_mode = ssl.CERT_OPTIONAL
        elif check is False:
            context.check_hostname = False
        if options.get("ssl_min_version") not in (None, ""):
            context.minimum_version = tls_version(options["ssl_min_version"])
        if options.get("ssl_ciphers"):
            context.set_ciphers(str(options["ssl_ciphers"]))
        _contexts[key] = context
    return context
