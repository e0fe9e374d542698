"""The MCP server's streamable HTTP transport, safe by default and hard to starve (``perplexed mcp --http``).

The guard (:class:`Guard`, ASGI) checks each request as soon as its request line and headers are in, before
any body is read: the ``Host`` (DNS rebinding), the ``Origin``, the bearer token, the declared body size.

The connections (:func:`hardened_protocol`, uvicorn's h11 protocol with three additions) are bounded so that
no client can exhaust the process's open files:

- a **header deadline**: a connection that has not sent a whole request head within ``header_timeout_s`` of
  connecting (or of its previous response) is closed, whatever it trickles in meanwhile; heads are capped at
  16 KiB;
- a **connection limit** (by default half the process's open-files limit, at most 512): a new connection past
  it closes the oldest connection that is waiting for a request head; when every connection is running a
  request, the new one gets 503 and is closed;
- ``EMFILE`` on ``accept()`` (the limit reached anyway, e.g. by other files) is one line in the log and the
  server pauses accepting for a second, as asyncio does; it never exits.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from perplexed._errors import ConfigError
from perplexed._logs import get_logger

__all__ = [
    "HEADER_TIMEOUT_S",
    "MAX_BODY_BYTES",
    "MAX_CONNECTIONS",
    "MAX_HEAD_BYTES",
    "Guard",
    "allowed_hosts",
    "authentication",
    "check_exposure",
    "check_token",
    "connection_limit",
    "hardened_protocol",
    "http_app",
    "is_loopback",
    "is_wildcard",
    "resolve_token",
    "serve_http",
]

#: Request bodies larger than this get 413 on streamable HTTP.
MAX_BODY_BYTES = 1024 * 1024
#: A connection must send a whole request head within this many seconds (of connecting or of its last response).
HEADER_TIMEOUT_S = 10.0
#: The largest request head (request line and headers) accepted.
MAX_HEAD_BYTES = 16 * 1024
#: The most connections held open at once (lowered to half the open-files limit when that is smaller).
MAX_CONNECTIONS = 512

log = get_logger("perplexed.mcp")


# --- which Host and Origin name this server ------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    if host.strip("[]") in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is a wildcard address (``0.0.0.0``, ``::``): the server listens on every address."""
    bare = host.strip().strip("[]")
    if not bare:
        return True
    try:
        return ipaddress.ip_address(bare).is_unspecified
    except ValueError:
        return False


def _host_forms(name: str, port: int) -> set[str]:
    """The ``Host`` header values that name ``name`` (a host name, an address, or ``name:port``) on ``port``."""
    name = name.strip().lower()
    if not name:
        return set()
    if name.startswith("["):  # [v6] or [v6]:port
        if "]:" in name:
            return {name}
        bare = name.strip("[]")
    elif name.count(":") == 1:  # name:port
        return {name}
    else:  # a name, an IPv4 address or a bare IPv6 address
        bare = name
    shown = f"[{bare}]" if ":" in bare else bare
    forms = {f"{shown}:{port}"}
    if port == 80:  # a client may leave the default port out of Host
        forms.add(shown)
    return forms


def allowed_hosts(host: str, port: int, extra: Sequence[str] = ()) -> set[str]:
    """The ``Host`` values accepted for a server bound to ``host``:``port`` (plus ``extra`` names)."""
    names = {host.strip("[]")}
    if is_loopback(host):
        names |= {"localhost", "127.0.0.1", "::1"}
    if is_wildcard(host):
        names = {_machine_name()} - {""}
    hosts: set[str] = set()
    for name in [*names, *extra]:
        hosts |= _host_forms(name, port)
    return hosts


def _machine_name() -> str:
    try:
        return socket.gethostname().lower()  # the local name: no lookup, nothing on the network
    except OSError:  # pragma: no cover
        return ""


def _local_hosts(scope: dict[str, Any], port: int) -> set[str]:
    """For a wildcard bind: the ``Host`` values naming the address this connection arrived on (an address of
    the machine), and the loopback names when it arrived on loopback."""
    server = scope.get("server")
    if not server or not server[0]:
        return set()
    address = str(server[0]).split("%", 1)[0]
    ipv4 = address.removeprefix("::ffff:")  # an IPv4 client of a dual-stack socket bound to ::
    names = {address, ipv4}
    if is_loopback(ipv4):
        names |= {"localhost", "127.0.0.1", "::1"}
    hosts: set[str] = set()
    for name in names:
        hosts |= _host_forms(name, port)
    return hosts


# --- the guard ----------------------------------------------------------------------------------------------


class Guard:
    """ASGI middleware: Host and Origin checks (DNS rebinding), the bearer token, the request-body cap, all
    decided from the request line and headers, before the body is read."""

    def __init__(self, app: Any, *, hosts: set[str], origins: set[str], token: str | None, max_body: int,
                 wildcard_port: int | None = None) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins
        self.token = token.encode() if token else None
        self.max_body = max_body
        self.wildcard_port = wildcard_port

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "").strip().lower()
        hosts = self.hosts
        if self.wildcard_port is not None:
            hosts = hosts | _local_hosts(scope, self.wildcard_port)
        if host not in hosts:
            hint = " (or start the server with --allow-host NAME)" if self.wildcard_port is not None else ""
            await plain(send, 403, f"Forbidden: the Host header does not name this server{hint}")
            return
        origin = headers.get("origin")
        if origin is not None:
            origins = self.origins | {f"{s}://{h}" for h in hosts for s in ("http", "https")}
            if origin.strip().lower().rstrip("/") not in origins:
                await plain(send, 403, "Forbidden: Origin not allowed (start the server with --allow-origin ORIGIN)")
                return
        if self.token is not None:
            auth = headers.get("authorization", "")
            scheme, _, value = auth.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token):
                await plain(send, 401, "Unauthorized: send Authorization: Bearer <token>",
                            extra=[(b"www-authenticate", b'Bearer realm="perplexed"')])
                return
        declared = headers.get("content-length")
        if declared is not None:
            try:
                if int(declared) > self.max_body:
                    await plain(send, 413, "Request body too large")
                    return
            except ValueError:
                await plain(send, 400, "Bad Content-Length")
                return
        # a body without Content-Length (chunked) is capped by the SDK's own limit, set to the same size
        await self.app(scope, receive, send)


async def plain(send: Any, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


def check_token(token: str | None, source: str = "token") -> str | None:
    """The token to require (None: none); a blank or whitespace-only token is a :class:`ConfigError` naming
    ``source`` (``--token``, ``PERPLEXED_MCP_TOKEN``)."""
    if token is None:
        return None
    if not isinstance(token, str):
        raise ConfigError(f"{source} must be a string, got {type(token).__name__}")
    if not token.strip():
        raise ConfigError(
            f"{source} is empty{' (only spaces)' if token else ''}: refusing to start. Set PERPLEXED_MCP_TOKEN "
            "to a long random value (e.g. `python -c \"import secrets; print(secrets.token_urlsafe(32))\"`), "
            "or leave the token out to serve loopback only"
        )
    return token.strip()


def resolve_token(flag: str | None) -> str | None:
    """The token of ``perplexed mcp --http``: ``--token`` when given, else ``$PERPLEXED_MCP_TOKEN``; either one
    set but blank refuses to start."""
    if flag is not None:
        return check_token(flag, "--token")
    return check_token(os.environ.get("PERPLEXED_MCP_TOKEN"), "PERPLEXED_MCP_TOKEN")


def authentication(host: str, token: str | None, from_flag: bool) -> str:
    """The start-up line's words for how requests are authenticated."""
    if token:
        return f"bearer token (from {'--token' if from_flag else 'PERPLEXED_MCP_TOKEN'})"
    return "none (no token: loopback only)" if is_loopback(host) else "none"


def check_exposure(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to serve on {host}, a non-loopback address, without a token: set PERPLEXED_MCP_TOKEN "
            "(or pass --token), or bind to 127.0.0.1"
        )


def http_app(server: Any, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
             allow_origins: Sequence[str] = (), allow_hosts: Sequence[str] = ()) -> Any:
    """The ASGI app serving ``server`` over streamable HTTP (stateless) at ``/mcp``, guarded.

    ``Host`` must name the bound host and port (also ``localhost``/``127.0.0.1`` when bound to loopback; when
    bound to a wildcard address, the machine's name and the address each connection arrived on), or one of
    ``allow_hosts``; an ``Origin``, when sent, must be one of those or in ``allow_origins``; with ``token``
    every request needs ``Authorization: Bearer <token>``; bodies over 1 MiB get 413. A non-loopback ``host``
    needs a token; a blank token is a :class:`ConfigError`.
    """
    token = check_token(token)
    check_exposure(host, token)
    from mcp.server.transport_security import TransportSecuritySettings

    app = server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, max_request_body_size=MAX_BODY_BYTES,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False), host=host,
    )
    hosts = allowed_hosts(host, port, allow_hosts)
    origins = {f"http://{h}" for h in hosts} | {f"https://{h}" for h in hosts}
    origins |= {o.strip().lower().rstrip("/") for o in allow_origins if o.strip()}
    return Guard(app, hosts=hosts, origins=origins, token=token, max_body=MAX_BODY_BYTES,
                 wildcard_port=port if is_wildcard(host) else None)


# --- the connections ----------------------------------------------------------------------------------------


def connection_limit(requested: int | None = None) -> int:
    """How many connections the server holds at once: ``requested``, else :data:`MAX_CONNECTIONS`, never more
    than half the process's soft open-files limit (the other half is for provider calls, the store, logs)."""
    if requested is not None:
        if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
            raise ConfigError(f"max_connections must be a whole number >= 1, got {requested!r}")
    limit = requested or MAX_CONNECTIONS
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # pragma: no cover - Windows: no such limit
        return limit
    if soft != resource.RLIM_INFINITY and soft > 0:
        limit = min(limit, max(4, soft // 2))
    return limit


def hardened_protocol(max_connections: int, header_timeout_s: float) -> type[Any]:
    """uvicorn's h11 protocol with a header deadline and a connection limit (see the module's docs)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HardenedH11(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _armed: Any = None
        _since = 0.0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()
            if len(self.connections) > max_connections:
                # a burst of connections is made in one turn of the loop, before the ones closed in it are gone
                live = [c for c in self.connections if c is not self and not c.transport.is_closing()]
                if len(live) < max_connections:
                    return
                waiting = [c for c in live if isinstance(c, HardenedH11) and c.waiting()]
                if waiting:
                    min(waiting, key=lambda c: c._since).drop()
                else:
                    self.refuse()

        def waiting(self) -> bool:
            """No request in flight: the connection waits for a request head."""
            return (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing()

        def _arm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._since = time.monotonic()
            self._armed = self.cycle
            self._timer = self.loop.call_later(header_timeout_s, self._expire)

        def _expire(self) -> None:
            self._timer = None
            if self.cycle is self._armed and not self.transport.is_closing():
                self.drop()  # no whole request head since the deadline was set

        def drop(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.transport.close()

        def refuse(self) -> None:
            body = b"Service Unavailable: too many connections\n"
            self.transport.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
                                 b"connection: close\r\ncontent-length: " + str(len(body)).encode()
                                 + b"\r\n\r\n" + body)
            self.drop()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request head has the same deadline

        def connection_lost(self, exc: Exception | None) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            super().connection_lost(exc)

    return HardenedH11


_OUT_OF_FILES = {24, 23, 105, 12}  # EMFILE, ENFILE, ENOBUFS, ENOMEM: what asyncio's accept() pauses on


def _exception_handler(default: Callable[[dict[str, Any]], None]) -> Callable[[Any, dict[str, Any]], None]:
    """A loop exception handler that never raises and never logs a traceback for running out of files (the
    default handler's logging can itself need a file, and its failure ended the server)."""
    last = [0.0]

    def handle(loop: Any, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _OUT_OF_FILES:
            now = time.monotonic()
            if now - last[0] >= 10:
                last[0] = now
                try:
                    sys.stderr.write(f"perplexed mcp: out of open files ({exc.strerror}); new connections wait\n")
                except Exception:  # pragma: no cover - stderr itself unavailable
                    pass
            return
        try:
            default(context)
        except Exception:  # pragma: no cover - the log itself failed: keep serving
            pass

    return handle


def serve_http(server: Any, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
               allow_origins: Sequence[str] = (), allow_hosts: Sequence[str] = (),
               ready: Callable[[int], None] | None = None, max_connections: int | None = None,
               header_timeout_s: float = HEADER_TIMEOUT_S) -> None:
    """Serve ``server`` over streamable HTTP until interrupted (uvicorn). ``port=0`` picks a free port.

    Connections are bounded (``max_connections``, default half the open-files limit, at most 512) and each
    must send its request head within ``header_timeout_s``; see this module's docs.
    """
    import uvicorn

    token = check_token(token)
    check_exposure(host, token)
    if isinstance(header_timeout_s, bool) or not isinstance(header_timeout_s, int | float) or header_timeout_s <= 0:
        raise ConfigError(f"header_timeout_s must be a number of seconds > 0, got {header_timeout_s!r}")
    limit = connection_limit(max_connections)
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    # the listen backlog is also how many connections asyncio accepts in one go, before any is counted: kept
    # to a quarter of the limit so that a burst cannot take the process past its open-files limit
    backlog = max(8, min(128, limit // 4))
    sock.listen(backlog)
    bound = sock.getsockname()[1]
    app = http_app(server, host=host, port=bound, token=token, allow_origins=allow_origins, allow_hosts=allow_hosts)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False,
                            http=hardened_protocol(limit, float(header_timeout_s)), timeout_keep_alive=5,
                            backlog=backlog, h11_max_incomplete_event_size=MAX_HEAD_BYTES)
    runner = uvicorn.Server(config)
    if ready is not None:
        ready(bound)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_exception_handler(loop.default_exception_handler))
        await runner.serve(sockets=[sock])

    asyncio.run(main())
