"""One pooled :class:`httpx.AsyncClient` per event loop, and body reading with a hard size cap.

The sync API runs on the portal's loop (see ``_portal``), so "the sync client" is the portal loop's client.
Clients are created lazily, keyed by loop (and by custom transport, for tests), and closed at exit.

The shared clients are built for talking to servers that may be hostile:

- they never follow a redirect (``follow_redirects=False``): a 3xx comes back as a response, and the caller
  decides (the search chain and the Agent client refuse any redirect from an API that gets a credential; see
  :func:`redirect_origin`), so no key ever reaches another origin;
- they keep no cookies (a cookie one server set would be sent to every other server on the same host);
- they send an explicit ``Accept-Encoding`` naming only the encodings :mod:`perplexed.net._decode` decodes within
  bounds, and bodies are read undecoded from the wire and decoded here, the size cap applied to the decoded
  bytes while decoding (:func:`read_capped`, :func:`aiter_decoded`);
- a URL with a port outside 1-65535 fails as a connection error (anyio raised a bare ExceptionGroup).
"""

from __future__ import annotations

import asyncio
import atexit
import http.cookiejar
import ssl
import threading
import warnings
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, cast

import httpcore
import httpx

from perplexed._errors import BodyTooLargeError, ContentDecodingError, ResponseBodyError
from perplexed._logs import redact_loggers
from perplexed.net import _direct, _portal
from perplexed.net._decode import DEFAULT_MAX_BODY_BYTES, Decoder, accept_encoding, decoder_for

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "accept_encoding",
    "aclose_clients",
    "aiter_decoded",
    "close",
    "get_client",
    "origin",
    "pooled",
    "read_capped",
    "redirect_origin",
    "send",
    "ssl_context",
    "sync_client",
    "warm_up",
]

DEFAULT_LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=30)

redact_loggers()  # filters on httpx's and httpcore's loggers (see _logs); nothing global is replaced

_ssl_lock = threading.Lock()
_ssl_context: ssl.SSLContext | None = None


def ssl_context() -> ssl.SSLContext:
    """The process-wide TLS context of the pooled clients, built once.

    Building one loads the CA bundle (tens of ms, hundreds on a busy machine); httpx would do it for every
    new client, i.e. on the first call in every event loop, inside that call's budget.
    """
    global _ssl_context
    if _ssl_context is None:
        with _ssl_lock:
            if _ssl_context is None:
                _ssl_context = httpx.create_ssl_context()
    return _ssl_context


_backend_loaded = False


def _load_async_backend() -> None:
    """Import httpcore's async I/O backend now, outside any call's budget.

    anyio imports its asyncio backend lazily, on the first request of the process: 50-300 ms of imports that
    would otherwise be charged to the first provider's budget (a spurious ``timeout`` with a short budget).
    """
    global _backend_loaded
    if _backend_loaded:
        return
    _backend_loaded = True
    try:
        import anyio

        anyio.get_cancelled_exc_class()  # resolves (imports) the running loop's backend
    except Exception:  # pragma: no cover - anyio missing or unusable: httpcore will say so on the request
        pass


def warm_up() -> None:
    """Do the once-per-process set-up now (the TLS context, httpcore's async backend), outside any call's
    budget: a client that creates its HTTP client inside a call (the Agent client) calls this when built."""
    ssl_context()
    _load_async_backend()


class _ReclaimingPool(httpcore.AsyncConnectionPool):
    """httpcore's connection pool, plus reclaiming the connections a cancelled request orphaned.

    httpcore 1.0.x leaks a pool slot when a request is cancelled after the pool assigned it a new connection
    but before the request used it (encode/httpcore#1093): that connection is never connected (or is
    connected with no request sent), so it is neither closed, idle, expired nor available, and the pool keeps
    it forever. perplexed cancels a request on every budget overrun, so under load these piled up until all
    ``max_connections`` slots were dead and every later call, to any server, timed out waiting for a slot
    (found by tests/reliability/test_rel_leaks_load.py). Here a connection that no queued or active request
    holds and that is still unconnected (or connected but never used) is dropped and closed whenever the
    pool re-plans, which it does on every new request and on every request's end.
    """

    #: set when a request left the pool while its connection was still unused (see :class:`_Requests`):
    #: only then can an orphan exist, so only then is the (linear) scan paid
    _orphans_possible = False

    def _assign_requests_to_connections(self) -> list[httpcore.AsyncConnectionInterface]:
        if not self._orphans_possible:
            return super()._assign_requests_to_connections()
        self._orphans_possible = False
        held = {id(r.connection) for r in self._requests if r.connection is not None}
        orphans = [c for c in self._connections if id(c) not in held and _orphaned(c)]
        for connection in orphans:
            self._connections.remove(connection)
        return orphans + super()._assign_requests_to_connections()


class _Requests(list[Any]):
    """The pool's request queue; flags the pool when a request leaves it before using its connection."""

    __slots__ = ("_pool",)

    def __init__(self, pool: _ReclaimingPool, items: list[Any]) -> None:
        super().__init__(items)
        self._pool = pool

    def remove(self, item: Any) -> None:
        super().remove(item)
        connection = item.connection
        if connection is not None and _orphaned(connection):
            self._pool._orphans_possible = True


def _orphaned(connection: object) -> bool:
    """Whether a pooled connection was created for a request that is gone, before it carried any request."""
    inner = getattr(connection, "_connection", _MISSING)
    if inner is _MISSING:  # not an AsyncHTTPConnection (a proxy connection...): leave it to httpcore
        return False
    if inner is None:  # never connected; a failed connect is already reaped by httpcore
        return getattr(connection, "_connect_failed", True) is False
    state = getattr(inner, "_state", None)
    return getattr(state, "name", None) == "NEW"  # HTTP/1.1 connected, request never started


_MISSING = object()


class _Transport(httpx.AsyncHTTPTransport):
    """httpx's default transport, with two fixes for requests cancelled by a budget:

    - its pool reclaims the connections a cancelled request orphaned (:class:`_ReclaimingPool`);
    - a response close that is interrupted half-way is finished. httpcore marks the response stream closed,
      then releases the connection and forgets the request; a cancellation landing in between (a budget
      expiring just as a body was read) left the request registered and its connection ``ACTIVE`` for ever,
      one pool slot lost per occurrence (5-12 per 600 loaded runs in tests/reliability). Such a close now
      hands the rest of the release to a background task (:func:`_finish_release`); the normal path costs
      nothing extra.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        pool = getattr(self, "_pool", None)
        if _pool_layout_ok(pool):  # same layout: only the re-planning method differs
            pool.__class__ = _ReclaimingPool
            reclaiming = cast(_ReclaimingPool, pool)
            reclaiming._requests = _Requests(reclaiming, reclaiming._requests)
        else:
            _patch_missing(f"its connection pool is a {type(pool).__name__} of another layout")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        _prepare(request)  # what the request hook of a client on another transport does (no hook coroutine)
        response = await super().handle_async_request(request)
        stream = response.stream
        if isinstance(stream, httpx.AsyncByteStream):
            if not _stream_checked:
                _check_stream(stream)
            response.stream = _ShieldedClose(stream)
        return response


#: the httpcore versions the two fixes above were tested on (pyproject.toml pins the same range); the
#: guard is tests/reliability/test_rel_leaks_load.py::test_a_cancellation_at_any_step_of_a_request_leaks_nothing
HTTPCORE_TESTED = ">=1.0.3,<1.1"  # run on 1.0.3, 1.0.5 and 1.0.9
_POOL_METHODS = ("_assign_requests_to_connections", "_close_connections")
_warned = False
_stream_checked = False


def _pool_layout_ok(pool: object) -> bool:
    """Whether ``pool`` is httpcore's own pool with the private parts the fixes rely on."""
    return (
        type(pool) is httpcore.AsyncConnectionPool
        and all(callable(getattr(pool, name, None)) for name in _POOL_METHODS)
        and isinstance(getattr(pool, "_requests", None), list)
        and isinstance(getattr(pool, "_connections", None), list)
    )


def _check_stream(stream: httpx.AsyncByteStream) -> None:
    """On the first response: does httpx's stream still wrap httpcore's pool stream as the release fix expects?

    Only httpx's own response stream is checked: a recorder or test double (vcrpy) answers with another."""
    global _stream_checked
    expected = getattr(httpx._transports.default, "AsyncResponseStream", None)
    if expected is not None and type(stream) is not expected:
        return
    _stream_checked = True
    inner = getattr(stream, "_httpcore_stream", None)
    if inner is None or not hasattr(inner, "_pool") or not hasattr(inner, "_pool_request"):
        _patch_missing("its response stream no longer exposes the pool request")


def _patch_missing(why: str) -> None:
    """Say once that the pool fixes are off (the client still works, as plain httpx does)."""
    global _warned
    if _warned:
        return
    _warned = True
    warnings.warn(
        f"perplexed: httpcore {httpcore.__version__} is not a version its connection-pool fixes were tested "
        f"on ({why}; tested: httpcore{HTTPCORE_TESTED}); requests cancelled by a budget may leak pool "
        "connections under load",
        RuntimeWarning,
        stacklevel=3,
    )


class _ShieldedClose(httpx.AsyncByteStream):
    """A response stream whose ``aclose`` runs to completion even if the awaiting task is cancelled."""

    __slots__ = ("_inner",)

    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self._inner = inner

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._inner.__aiter__()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        except BaseException:  # interrupted half-way (a budget expired): finish the release in the background
            _finish_release(self._inner)
            raise


def _finish_release(stream: httpx.AsyncByteStream) -> None:
    """Do what an interrupted httpcore ``PoolByteStream.aclose()`` skipped: close the connection it was
    releasing (unless another request holds it by now) and forget the request, in a task of its own."""
    pool_stream = getattr(stream, "_httpcore_stream", None)
    pool = getattr(pool_stream, "_pool", None)
    request = getattr(pool_stream, "_pool_request", None)
    if not isinstance(pool, httpcore.AsyncConnectionPool) or request is None:
        return
    connection = getattr(request, "connection", None)

    async def finish() -> None:
        others = [r for r in pool._requests if r is not request and r.connection is connection]
        if connection is not None and not others:
            await connection.aclose()
        if request in pool._requests:
            pool._requests.remove(request)
        await pool._close_connections(pool._assign_requests_to_connections())

    task = asyncio.ensure_future(finish())
    _releasing.add(task)
    task.add_done_callback(_releasing.discard)


# release tasks still running after their caller was cancelled (kept referenced until they finish)
_releasing: set[asyncio.Future[None]] = set()


def _pooled_transport() -> httpx.AsyncHTTPTransport:
    """The pooled clients' transport (see :class:`_Transport`)."""
    return _Transport(limits=DEFAULT_LIMITS, verify=ssl_context())


# loop -> {transport id or None -> client}
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int | None, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def get_client(transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """The pooled client of the running event loop (one per custom ``transport``).

    Timeouts are not set here: every call passes its own budget.
    """
    loop = asyncio.get_running_loop()
    if transport is None:
        # fast path: the default client of the loop that asked last (a WeakKeyDictionary lookup makes a
        # weak reference each time); both held weakly, and forgotten whenever that loop's clients are
        last_loop, last_client = _last
        if last_loop() is loop:
            client = last_client()
            if client is not None and not client.is_closed:
                return client
    per_loop = _clients.get(loop)
    if per_loop is None:
        per_loop = _clients[loop] = {}
    key = None if transport is None else id(transport)
    client = per_loop.get(key)
    if client is None or client.is_closed:
        chosen = _pooled_transport() if transport is None else transport
        # a _Transport prepares every request itself (_prepare): the client then needs no request hook
        kwargs = _client_settings(None if isinstance(chosen, _Transport) else _prepare_request)
        kwargs["transport"] = chosen
        client = per_loop[key] = httpx.AsyncClient(**kwargs)
        _load_async_backend()
        if loop is not _portal.current_loop():
            # Close the client when the caller's loop shuts down: asyncio.run() finalises live async
            # generators before closing the loop, which runs this generator's ``finally``.
            keeper = _close_on_shutdown(client)
            _keepers.setdefault(loop, []).extend((keeper, loop.create_task(_start(keeper))))
    if key is None:
        _remember(loop, client)
    return client


def _nothing() -> None:
    return None


# (weak reference to a loop, weak reference to its default client): get_client's fast path
_last: tuple[Callable[[], asyncio.AbstractEventLoop | None], Callable[[], httpx.AsyncClient | None]] = (
    _nothing,
    _nothing,
)


def _remember(loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient) -> None:
    global _last
    _last = (weakref.ref(loop), weakref.ref(client))


def _forget(loop: asyncio.AbstractEventLoop) -> None:
    global _last
    if _last[0]() is loop:
        _last = (_nothing, _nothing)


# loop -> its keeper generators (the loop tracks async generators weakly; this keeps them alive with the loop)
_keepers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Any]] = weakref.WeakKeyDictionary()


async def _close_on_shutdown(client: httpx.AsyncClient) -> AsyncIterator[None]:
    try:
        yield
    finally:
        # forget the loop too: its entries hold tasks and clients that reference the loop, so the weak keys
        # would never die and every asyncio.run() would leak a loop and a client
        loop = asyncio.get_running_loop()
        _forget(loop)
        _clients.pop(loop, None)
        _keepers.pop(loop, None)
        await client.aclose()


async def _start(keeper: AsyncIterator[None]) -> None:
    await keeper.__anext__()


async def aclose_clients() -> None:
    """Close the pooled clients of the running event loop (call before closing a loop you own)."""
    loop = asyncio.get_running_loop()
    _forget(loop)
    per_loop = _clients.pop(loop, {})
    for client in per_loop.values():
        await client.aclose()


_portal.on_close(aclose_clients)


# -- the sync I/O of the direct path (see ``_direct``): one pooled, thread-safe httpx.Client for every thread

_sync_lock = threading.Lock()
_sync: httpx.Client | None = None


def sync_client() -> httpx.Client:
    """The process's pooled sync client (the sync API's direct path), built as the loops' clients are
    (:func:`_client_settings`). httpx's sync pool is thread-safe: every caller thread shares it."""
    global _sync
    client = _sync
    if client is None or client.is_closed:
        with _sync_lock:
            client = _sync
            if client is None or client.is_closed:
                kwargs = _client_settings(_prepare)
                kwargs["transport"] = transport = httpx.HTTPTransport(limits=DEFAULT_LIMITS, verify=ssl_context())
                pool = getattr(transport, "_pool", None)
                backend = getattr(pool, "_network_backend", None)
                if isinstance(backend, httpcore.NetworkBackend):  # else each read waits what was left at its start
                    pool._network_backend = _BudgetBackend(backend)  # type: ignore[union-attr]
                client = _sync = httpx.Client(**kwargs)
    return client


@atexit.register
def _close_sync() -> None:  # pragma: no cover - exercised at interpreter exit
    if _sync is not None:
        _sync.close()


def pooled(transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient | httpx.Client:
    """The pooled client a provider request goes through: the sync one on the direct path (which takes no
    custom transport), else the running loop's (:func:`get_client`)."""
    if transport is None and _direct.driving():
        return sync_client()
    return get_client(transport)


def send(client: httpx.AsyncClient | httpx.Client, request: httpx.Request) -> Awaitable[httpx.Response]:
    """Send ``request`` through ``client``, streamed (await what this returns: the async client's own ``send``,
    no coroutine layer of ours around it). A sync client (the direct path) completes at once
    (:func:`_send_now`)."""
    if isinstance(client, httpx.Client):
        return _ready(_send_now(client, request))
    loop_client: httpx.AsyncClient = client
    return loop_client.send(request, stream=True)


async def _ready(response: httpx.Response) -> httpx.Response:
    return response


def _send_now(client: httpx.Client, request: httpx.Request) -> httpx.Response:
    """:func:`send` through the sync client: its timeouts are what is left of the attempt's budget
    (:class:`_Budget`), and running out of it raises ``_direct.Expired``."""
    ends = _direct.deadline()
    if ends is None:  # pragma: no cover - the engine always sets a budget
        return client.send(request, stream=True)
    if ends <= _direct.clock():
        raise _direct.Expired
    request.extensions = {**request.extensions, "timeout": _Budget(ends)}
    try:
        return client.send(request, stream=True)
    except httpx.TimeoutException as exc:  # the only timeouts set are the budget's
        raise _direct.Expired from exc


def _left(timeout: float | None) -> float | None:
    """The timeout of one socket operation of a sync request: what is left of the attempt's budget (at least
    0.1 ms: a zero timeout would make the socket non-blocking, not time out), else ``timeout``."""
    ends = _direct.deadline()
    return timeout if ends is None else max(1e-4, ends - _direct.clock())


class _BudgetBackend(httpcore.NetworkBackend):
    """The sync pool's network backend, whose every connect, TLS handshake, read and write waits at most what is
    left of the attempt's budget (:func:`_left`): httpcore computes a body's read timeout once, when the body
    starts, so a server dripping bytes would otherwise get that much again for every read."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _BudgetStream(self._inner.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:  # pragma: no cover - no uds
        return _BudgetStream(self._inner.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:  # pragma: no cover - httpcore's retries (none configured)
        self._inner.sleep(seconds)


class _BudgetStream(httpcore.NetworkStream):
    """A connection of the sync pool (see :class:`_BudgetBackend`)."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _BudgetStream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Budget(dict[str, float]):
    """A sync request's timeouts (``request.extensions["timeout"]``, which httpcore reads at each step: the
    pool wait, the connect, each write, each read): whatever step asks, what is left of the attempt's budget
    at that moment (at least 0.1 ms: a zero timeout would make the socket non-blocking, not time out)."""

    __slots__ = ("_ends",)

    def __init__(self, ends: float) -> None:
        super().__init__()
        self._ends = ends

    def get(self, key: str, default: Any = None) -> float:
        return max(1e-4, self._ends - _direct.clock())


async def close(response: httpx.Response) -> None:
    """Close a streamed response (its connection goes back to the pool), a sync or an async one."""
    if isinstance(response.stream, httpx.AsyncByteStream):
        await response.aclose()
    else:
        response.close()


def _raw(response: httpx.Response, suspends: bool) -> AsyncIterator[bytes]:
    """The response's raw body chunks: ``suspends``, an async response's; else (the direct path) a sync
    response's, read within the attempt's budget (:func:`_sync_raw`). Iterate it where it is made (``async for
    x in _raw(...)``): an iterator left in a local would outlive a failed read in its traceback."""
    return response.aiter_raw() if suspends else _sync_raw(response)


async def _sync_raw(response: httpx.Response) -> AsyncIterator[bytes]:
    """A sync response's raw chunks, read within the attempt's budget: each read waits at most what is left
    of it (:class:`_Budget`), and a budget spent between two reads (a server trickling bytes) raises
    ``_direct.Expired``."""
    ends = _direct.deadline()
    chunks = response.iter_raw()
    while True:
        if ends is not None and ends <= _direct.clock():
            raise _direct.Expired
        try:
            chunk = next(chunks)
        except StopIteration:
            return
        except httpx.TimeoutException as exc:
            raise _direct.Expired from exc
        yield chunk


def _no_cookies() -> http.cookiejar.CookieJar:
    """A cookie jar that stores nothing: the shared client talks to many unrelated servers."""
    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


def _client_settings(hook: Callable[[httpx.Request], Any] | None) -> dict[str, Any]:
    """What every pooled client is built with (the loops' async ones and the sync one): the pool limits, no
    timeout (every call passes its own budget), no redirects, the shared TLS context, no cookies, ``hook`` on
    every request (:func:`_prepare`; None: the transport prepares each request, see :class:`_Transport`)."""
    return {
        "limits": DEFAULT_LIMITS,
        "timeout": None,
        "follow_redirects": False,
        "verify": ssl_context(),
        "cookies": httpx.Cookies(_no_cookies()),
        "event_hooks": {"request": [hook] if hook is not None else []},
    }


async def _prepare_request(request: httpx.Request) -> None:
    """:func:`_prepare` as an async client's request hook."""
    _prepare(request)


def _prepare(request: httpx.Request) -> None:
    """Every request through a shared client: an explicit ``Accept-Encoding``, and a port that exists."""
    request.headers["Accept-Encoding"] = accept_encoding()
    port = request.url.port
    if port is not None and not 0 < port < 65536:
        raise httpx.ConnectError(f"invalid port {port} in the request URL (1-65535)", request=request)


def origin(url: httpx.URL) -> str:
    """``scheme://host:port`` of ``url``, the port always explicit (no user info, path or query)."""
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    host = url.host
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return f"{url.scheme}://{host}:{port}" if port else f"{url.scheme}://{host}"


def redirect_origin(response: httpx.Response) -> str | None:
    """The origin (``scheme://host:port``) a 3xx response redirects to, or None when it is no redirect.

    Never the Location's path or query (they may carry a key); a Location that cannot be parsed is
    ``"(invalid Location)"``.
    """
    if not response.has_redirect_location:
        return None
    target = response.next_request.url if response.next_request is not None else None
    if target is None:
        try:
            target = response.request.url.join(response.headers["location"])
        except (httpx.InvalidURL, RuntimeError, ValueError):
            return "(invalid Location)"
    return origin(target)


def _content_encoding(response: httpx.Response) -> str:
    """The response's ``Content-Encoding`` as ``headers.get`` gives it ("" when absent), without the ``KeyError``
    that ``Headers.get`` raises and catches for a missing header (the usual case, read on every response)."""
    values = response.headers.get_list("content-encoding")
    return ", ".join(values) if values else ""


def _decoders(response: httpx.Response, max_bytes: int) -> list[Decoder]:
    """The decoders of the response's ``Content-Encoding`` (innermost last), in the order to apply them."""
    header = _content_encoding(response)
    if not header:
        return []
    tokens = [t.strip() for t in header.split(",") if t.strip() and t.strip().lower() != "identity"]
    if len(tokens) > 3:
        raise ContentDecodingError(
            f"response body has {len(tokens)} content encodings stacked; at most 3 are decoded",
            encoding=header[:40],
        )
    return [decoder_for(token, max_bytes) for token in reversed(tokens)]


def _pipe(decoders: list[Decoder], data: bytes, index: int = 0) -> Iterator[bytes]:
    if index == len(decoders):
        if data:
            yield data
        return
    for out in decoders[index].feed(data):
        yield from _pipe(decoders, out, index + 1)


def _drain(decoders: list[Decoder], index: int = 0) -> Iterator[bytes]:
    if index == len(decoders):
        return
    for out in decoders[index].finish():
        yield from _pipe(decoders, out, index + 1)
    yield from _drain(decoders, index + 1)


def _too_large(max_bytes: int, status: int, declared: str | None = None) -> BodyTooLargeError:
    size = f"of {declared} bytes " if declared else ""
    return BodyTooLargeError(
        f"response body {size}exceeds the {max_bytes}-byte cap", limit=max_bytes, status=status
    )


async def aiter_decoded(
    response: httpx.Response, max_bytes: int = DEFAULT_MAX_BODY_BYTES
) -> AsyncIterator[bytes]:
    """The body of a streamed response, decoded, in chunks; at most ``max_bytes`` decoded bytes in all.

    The body is read undecoded (``aiter_raw``) and decoded here in steps of bounded output
    (:mod:`perplexed.net._decode`), yielding to the event loop between steps, so neither a decompression bomb
    nor a slow decode can take more than about the cap in memory or hold up a caller's deadline. Raises
    :class:`~perplexed._errors.BodyTooLargeError` past the cap (a declared ``Content-Length`` over it fails
    before reading) and :class:`~perplexed._errors.ContentDecodingError` for a corrupt body or an encoding
    not decoded here; never ``httpx.DecodingError``.
    """
    status = response.status_code
    if "_content" in response.__dict__:  # built in memory (MockTransport, cassettes): httpx decoded it already
        body = response.content
        if len(body) > max_bytes:
            raise _too_large(max_bytes, status)
        if body:
            yield body
        return
    try:
        decoders = _decoders(response, max_bytes)
        declared = response.headers.get("content-length")
        # the wire size is capped too: a compressed body larger than the decoded cap is not a real answer
        raw_cap = max_bytes if not decoders else max_bytes + 64 * 1024
        if declared is not None and declared.isdigit() and int(declared) > raw_cap:
            raise _too_large(max_bytes, status, declared)
        raw_size = 0
        size = 0
        suspends = isinstance(response.stream, httpx.AsyncByteStream)
        async for raw in _raw(response, suspends):
            raw_size += len(raw)
            if raw_size > raw_cap:
                raise _too_large(max_bytes, status)
            if not decoders:
                size = raw_size
                yield raw
                continue
            for chunk in _pipe(decoders, raw):
                size += len(chunk)
                if size > max_bytes:
                    raise _too_large(max_bytes, status)
                yield chunk
                if suspends:  # one bounded decoding step done: let deadlines and others run
                    await asyncio.sleep(0)
        for chunk in _drain(decoders):
            size += len(chunk)
            if size > max_bytes:
                raise _too_large(max_bytes, status)
            yield chunk
    except ResponseBodyError as exc:
        exc.status = status
        raise
    except httpx.DecodingError as exc:  # pragma: no cover - raw bytes are never decoded by httpx; belt and braces
        raise ContentDecodingError(f"response body could not be decoded ({exc})", encoding="?", status=status) from None


async def read_capped(response: httpx.Response, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> bytes:
    """Read a streamed response body, decoded, refusing more than ``max_bytes`` decoded bytes while reading.

    See :func:`aiter_decoded` (the errors are the same). The body is also stored on the response, so
    ``response.content`` / ``.json()`` work on it afterwards.
    """
    if _content_encoding(response).strip().lower() == "zstd" and "_content" not in response.__dict__:
        body = await _read_zstd(response, max_bytes)
    else:
        chunks = [chunk async for chunk in aiter_decoded(response, max_bytes)]
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    response._content = body  # let response.json()/.text work on the capped body
    return body



async def _read_zstd(response: httpx.Response, max_bytes: int) -> bytes:
    """A zstd body in two passes: decoded once while it arrives, only counting, then once more, kept.

    zstd's streaming decoder keeps its window (up to 8 MB) besides the output, so keeping the output of a
    bomb until it crosses an 8 MB cap held twice the cap. Counting first, a bomb costs the window alone;
    only a body known to fit is decoded again and kept (from its wire bytes, capped like the decoded ones).
    """
    status = response.status_code
    raw_cap = max_bytes + 64 * 1024
    try:
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > raw_cap:
            raise _too_large(max_bytes, status, declared)
        counter = decoder_for("zstd", max_bytes)
        raw: list[bytes] = []
        size = 0
        suspends = isinstance(response.stream, httpx.AsyncByteStream)
        async for chunk in _raw(response, suspends):
            size += len(chunk)
            if size > raw_cap:
                raise _too_large(max_bytes, status)
            raw.append(chunk)
            for _ in counter.feed(chunk):  # the decoder raises BodyTooLargeError past the cap
                if suspends:
                    await asyncio.sleep(0)
        del counter  # its window is freed before the second pass allocates one
        keeper = decoder_for("zstd", max_bytes)
        kept: list[bytes] = []
        for piece in raw:
            for out in keeper.feed(piece):
                kept.append(out)
                if suspends:
                    await asyncio.sleep(0)
        return kept[0] if len(kept) == 1 else b"".join(kept)
    except ResponseBodyError as exc:
        exc.status = status
        raise
