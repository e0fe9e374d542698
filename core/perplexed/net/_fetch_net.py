"""The I/O of fetching pages directly: resolving and checking hosts, connecting only to checked addresses,
following redirects hop by hop, robots.txt. The rules themselves are pure (:mod:`perplexed.net._ssrf`).

No DNS-rebinding window: the ``http`` provider's connections go through :class:`GuardedBackend`, which resolves the
host, keeps the allowed addresses and connects to one of those (the address checked is the address connected to;
nothing resolves the name a second time). Pooled connections are per allowed set, so a connection opened under
``allow_private`` is never reused by a fetch that does not allow it.
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import re
import socket
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from perplexed._errors import ConfigError, InvalidRequest
from perplexed.net._http import _pooled_transport, aiter_decoded, get_client
from perplexed.net._ssrf import (
    NOTHING,
    Allowed,
    IPAddress,
    check_literal,
    classify_address,
    host_address,
    is_allowed,
    refuse,
    split_url,
)

__all__ = [
    "GuardedBackend",
    "Resolver",
    "check_url",
    "guarded_client",
    "resolve",
    "robots_verdict",
    "split_url",  # lives in net._ssrf (it imports no HTTP client); kept here, the same function
]

Resolver = Callable[[str, int], Awaitable[Iterable[Any]] | Iterable[Any]]


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (the system resolver, off the event loop)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        try:
            out.append(ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]))
        except ValueError:
            continue
    return out


async def _resolve_with(resolver: Resolver | None, host: str, port: int) -> list[IPAddress]:
    if resolver is None:
        return await resolve(host, port)
    value = resolver(host, port)
    if inspect.isawaitable(value):
        value = await value
    return [ipaddress.ip_address(str(v)) for v in value]


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to addresses the trust boundary allows.

    ``connect_tcp`` resolves the host once, drops the addresses ``allowed`` does not cover, and connects to the
    first of the rest that answers; a host whose addresses are all refused raises the ``private_address``
    :class:`~perplexed.InvalidRequest`."""

    def __init__(self, allowed: Allowed, resolver: Resolver | None = None) -> None:
        self.allowed = allowed
        self.resolver = resolver
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        literal = host_address(host)
        if isinstance(literal, str):
            raise refuse(host, "a numeric host spelling that is not a valid address")
        if literal is not None:
            addresses = [literal]
        else:
            try:
                addresses = await _resolve_with(self.resolver, host, port)
            except (OSError, UnicodeError, ValueError) as exc:
                raise httpcore.ConnectError(f"cannot resolve {host!r}: {exc}") from None
            if not addresses:
                raise httpcore.ConnectError(f"cannot resolve {host!r}: no address")
        usable = [a for a in addresses if is_allowed(a, self.allowed)]
        if not usable:
            kinds = sorted({classify_address(a) or "public" for a in addresses})
            raise refuse(host, f"{host} resolves only to {' and '.join(kinds)} addresses ({addresses[0]})")
        last: Exception | None = None
        for address in usable:
            try:
                return await self._inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(self, path: str, timeout: float | None = None,  # noqa: ASYNC109
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not fetched")  # pragma: no cover

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)  # pragma: no cover


# loop -> {(allowed key, resolver id): transport}: the guarded transports of each event loop
_transports: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, int], httpx.AsyncBaseTransport]] = (
    weakref.WeakKeyDictionary()
)


def guarded_client(allowed: Allowed, resolver: Resolver | None = None,
                   transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """The pooled client of the running loop whose connections go to allowed addresses only.

    With a custom ``transport`` (tests), that transport's client: it has no network of its own to guard."""
    if transport is not None:
        return get_client(transport)
    loop = asyncio.get_running_loop()
    per_loop = _transports.get(loop)
    if per_loop is None:
        per_loop = _transports[loop] = {}
    key = (allowed.key(), id(resolver) if resolver is not None else 0)
    guarded = per_loop.get(key)
    if guarded is None:
        guarded = _pooled_transport()
        pool = getattr(guarded, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):  # pragma: no cover - httpcore layout changed
            raise RuntimeError("httpcore's connection pool has no network backend to guard")
        pool._network_backend = GuardedBackend(allowed, resolver)
        if len(per_loop) > 64:  # many distinct allow lists: drop the oldest (its client closes with the loop)
            per_loop.pop(next(iter(per_loop)))
        per_loop[key] = guarded
    client = get_client(guarded)
    hooks = client.event_hooks["response"]
    if not any(getattr(h, "_perplexed_location_check", False) for h in hooks):
        hooks.append(_location_check(allowed))
    return client


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: characters no host name has (WHATWG's forbidden host code points, brackets aside)
_FORBIDDEN_HOST = frozenset(" #%/<>?@\\^|\"{}`")


def _location_check(allowed: Allowed) -> Callable[[httpx.Response], Awaitable[None]]:
    """A response hook: a redirect's ``Location`` is judged here, before httpx reads it. A target in refused
    address space is ``private_address``; one that is malformed (``http://[::1``), not http(s) (``data:``,
    ``javascript:``), ambiguous (``http:127.0.0.1:80/``: a scheme without ``//``, read as a path by some parsers
    and as a host by others) or without a host is the ``redirect`` :class:`~perplexed.InvalidRequest`.
    ``http://0251.0376.0251.0376/`` is an address to the C resolver, not to httpx: it is judged here too."""

    async def check(response: httpx.Response) -> None:
        location = response.headers.get("location")
        if location is None or not 300 <= response.status_code < 400:
            return
        why = _bad_location(str(response.request.url), location.strip(), allowed)
        if why is not None:
            raise InvalidRequest(f"redirect to {why}: {location[:200]!r}", param="url", reason="redirect")

    check._perplexed_location_check = True  # type: ignore[attr-defined]
    return check


def _bad_location(base: str, location: str, allowed: Allowed) -> str | None:
    """Why a redirect target is not followed (None: httpx may read it; each hop is checked again later).
    Raises the ``private_address`` refusal for a target in refused address space."""
    scheme = _SCHEME.match(location)
    if scheme is not None:
        name = scheme.group(0)[:-1].lower()
        if name not in ("http", "https"):
            return f"a {name}: URL (only http and https are fetched)"
        if location[len(name) + 1 : len(name) + 3] not in ("//", "\\\\", "/\\", "\\/"):
            return "an ambiguous URL (a scheme without //)"
    rest = location[scheme.end():] if scheme is not None else location
    if rest[:2] in ("//", "\\\\", "/\\", "\\/"):  # an authority: it names the host itself
        if "\\" in re.split(r"[/?#]", rest[2:], maxsplit=1)[0]:
            return "an ambiguous URL (a backslash in its host part)"
        authority = re.split(r"[/?#\\\\]", rest[2:], maxsplit=1)[0].rpartition("@")[2]
        host_part = authority if authority.startswith("[") else authority.split(":", 1)[0]
        if not host_part:
            return "a URL without a host"
        if any(c in _FORBIDDEN_HOST or c <= " " or c == "\x7f" for c in host_part):
            return "a URL whose host is not a host name"
    try:
        target = urljoin(base, location)
        parts = urlsplit(target)
        host = parts.hostname or ""
        _ = parts.port
    except ValueError:
        return "an invalid URL"
    check_literal(target, host, allowed)  # raises the private_address refusal
    try:
        url = httpx.URL(base).join(location)
    except (httpx.InvalidURL, ValueError, UnicodeError):
        return "an invalid URL"
    if url.scheme not in ("http", "https"):
        return f"a {url.scheme}: URL (only http and https are fetched)"
    if not url.host or not host:
        return "a URL without a host"
    return None


async def check_url(url: str, allowed: Allowed = NOTHING, resolver: Resolver | None = None) -> None:
    """The check before any provider is called: only ``http(s)``, a host that is no refused literal, and a name
    that does not resolve only to refused addresses. A name that does not resolve passes (the ``http`` attempt then
    fails with ``connection``). Raises :class:`~perplexed.InvalidRequest` (``reason="private_address"`` for a
    refused address)."""
    parts = split_url(url)
    host = parts.hostname or ""
    address = check_literal(url, host, allowed)
    if address is not None or allowed.everything:
        return
    try:
        addresses = await _resolve_with(resolver, host.rstrip("."), parts.port or (443 if parts.scheme == "https" else 80))
    except (OSError, UnicodeError, ValueError):
        return
    if addresses and not any(is_allowed(a, allowed) for a in addresses):
        kinds = sorted({classify_address(a) or "public" for a in addresses})
        raise refuse(url, f"{host} resolves only to {' and '.join(kinds)} addresses ({addresses[0]})")


# --- robots.txt -------------------------------------------------------------------------------------------

#: robots.txt bodies past this many (decoded) bytes are cut here (Google reads the first 500 KiB)
ROBOTS_MAX_BYTES = 512 * 1024
ROBOTS_TTL_S = 3600.0
ROBOTS_ERROR_TTL_S = 60.0
_ROBOTS_ENTRIES = 1024

# origin -> (expires at, verdict): verdict is a protego parser, or True (no rules: everything allowed)
_robots: OrderedDict[str, tuple[float, Any]] = OrderedDict()


class _SharedLoad:
    """One robots.txt load in its own task, shared by every fetch of the origin that waits for it."""

    __slots__ = ("task", "waiters")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.waiters = 0


_robots_pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _SharedLoad]] = (
    weakref.WeakKeyDictionary()
)


def forget_robots() -> None:
    """Forget every cached robots.txt (tests, :func:`perplexed.reset`)."""
    _robots.clear()


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{port}"


async def robots_verdict(
    client: httpx.AsyncClient, url: str, user_agent: str, allowed: Allowed, headers: dict[str, str]
) -> tuple[bool, str]:
    """Whether robots.txt lets ``user_agent`` fetch ``url`` (and why not), from the per-origin cache or one fetch
    of ``/robots.txt`` shared by concurrent callers."""
    origin = _origin_of(url)
    entry = _robots.get(origin)
    if entry is None or entry[0] <= time.monotonic():
        verdict = await _shared_robots(client, origin, allowed, headers)
    else:
        verdict = entry[1]
    if verdict is True:
        return True, ""
    if verdict.can_fetch(url, user_agent):
        return True, ""
    return False, f"{origin}/robots.txt disallows {user_agent} from fetching {urlsplit(url).path or '/'}"


async def _shared_robots(client: httpx.AsyncClient, origin: str, allowed: Allowed, headers: dict[str, str]) -> Any:
    """The verdict of one robots.txt load per origin, run in its own task and awaited through
    ``asyncio.shield``: a waiter's timeout or cancellation ends that waiter only, never the load the others
    wait for (each keeps its own deadline). The load is cancelled when its last waiter has gone."""
    loop = asyncio.get_running_loop()
    pending = _robots_pending.setdefault(loop, {})
    while True:
        shared = pending.get(origin)
        if shared is None:
            shared = pending[origin] = _SharedLoad(loop.create_task(_load_and_keep(client, origin, allowed, headers)))
            shared.task.add_done_callback(_settled(pending, origin, shared))
        shared.waiters += 1
        try:
            return await asyncio.shield(shared.task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if shared.task.cancelled() and (current is None or not current.cancelling()):
                continue  # the load was abandoned by the waiters before this one: start another
            raise
        finally:
            shared.waiters -= 1
            if shared.waiters == 0 and not shared.task.done():  # nobody waits any more: no work goes on
                if pending.get(origin) is shared:
                    del pending[origin]
                shared.task.cancel()


def _settled(pending: dict[str, _SharedLoad], origin: str, shared: _SharedLoad) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        if pending.get(origin) is shared:
            del pending[origin]
        if not task.cancelled():
            task.exception()  # retrieved: the waiters get it; no "never retrieved" warning

    return done


async def _load_and_keep(client: httpx.AsyncClient, origin: str, allowed: Allowed, headers: dict[str, str]) -> Any:
    verdict, ttl = await _load_robots(client, origin, allowed, headers)
    if ttl > 0:
        _robots[origin] = (time.monotonic() + ttl, verdict)
        _robots.move_to_end(origin)
    while len(_robots) > _ROBOTS_ENTRIES:
        _robots.popitem(last=False)
    return verdict


async def _load_robots(
    client: httpx.AsyncClient, origin: str, allowed: Allowed, headers: dict[str, str]
) -> tuple[Any, float]:
    """Fetch and parse ``origin/robots.txt``: (protego parser | True, how long to keep it; 0: not at all)."""
    try:
        from protego import Protego  # the fetch extra
    except ImportError as exc:  # a clear "install the fetch extra", not an unexpected ModuleNotFoundError
        from perplexed.extract._extract import FETCH_HINT

        raise ConfigError(f"{FETCH_HINT} ({exc})") from None

    url = origin + "/robots.txt"
    for _hop in range(6):
        request = httpx.Request("GET", url, headers=headers)
        try:
            response = await client.send(request, stream=True)
        except InvalidRequest:
            return True, ROBOTS_ERROR_TTL_S  # robots.txt redirected into refused space: no rules to read
        except httpx.HTTPError:
            return True, 0.0  # not reached: the page's own request says why (connection), nothing is cached
        try:
            if response.has_redirect_location and response.next_request is not None:
                target = str(response.next_request.url)
                try:
                    parts = split_url(target)
                    check_literal(target, parts.hostname or "", allowed)
                except InvalidRequest:
                    return True, ROBOTS_TTL_S
                url = target
                continue
            status = response.status_code
            if 400 <= status < 500:
                return True, ROBOTS_TTL_S  # no robots.txt: everything allowed (RFC 9309 2.3.1.3)
            if status >= 500:
                # unreachable: RFC 9309 2.3.1.4 lets a crawler assume complete disallow; a fetch is one page a user
                # asked for, so the page's own answer decides (a 5xx page is ``upstream``), remembered a minute only
                return True, ROBOTS_ERROR_TTL_S
            if not 200 <= status < 300:
                return True, ROBOTS_TTL_S
            chunks: list[bytes] = []
            size = 0
            try:
                async for chunk in aiter_decoded(response, ROBOTS_MAX_BYTES * 4):
                    chunks.append(chunk)
                    size += len(chunk)
                    if size >= ROBOTS_MAX_BYTES:
                        break
            except Exception:  # a broken or oversized body: read what came (RFC 9309: at least 500 KiB parsed)
                pass
            text = b"".join(chunks)[:ROBOTS_MAX_BYTES].decode("utf-8", "replace")
            return Protego.parse(text), ROBOTS_TTL_S
        finally:
            await response.aclose()
    return True, ROBOTS_TTL_S  # a redirect loop: treated as no robots.txt (RFC 9309: after 5 hops, 4xx)
