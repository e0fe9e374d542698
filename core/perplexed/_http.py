"""One pooled :class:`httpx.AsyncClient` per event loop, and body reading with a hard size cap.

The sync API runs on the portal's loop (see ``_portal``), so "the sync client" is the portal loop's client.
Clients are created lazily, keyed by loop (and by custom transport, for tests), and closed at exit.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpx

from . import _portal
from ._errors import ProviderError, redact

__all__ = ["DEFAULT_MAX_BODY_BYTES", "aclose_clients", "get_client", "read_capped", "ssl_context"]

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=30)

class _RedactingFilter(logging.Filter):
    """Scrub credentials from httpx's own log lines (``HTTP Request: GET https://...?key=...``): a provider
    that sends its key in the query string must not leak it when the application logs at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is not ours to fix
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


logging.getLogger("httpx").addFilter(_RedactingFilter())

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


# loop -> {transport id or None -> client}
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int | None, httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def get_client(transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """The pooled client of the running event loop (one per custom ``transport``).

    Timeouts are not set here: every call passes its own budget.
    """
    loop = asyncio.get_running_loop()
    per_loop = _clients.get(loop)
    if per_loop is None:
        per_loop = _clients[loop] = {}
    key = None if transport is None else id(transport)
    client = per_loop.get(key)
    if client is None or client.is_closed:
        kwargs: dict[str, Any] = {
            "limits": DEFAULT_LIMITS,
            "timeout": None,
            "follow_redirects": True,
            "verify": ssl_context(),
        }
        if transport is not None:
            kwargs["transport"] = transport
        client = per_loop[key] = httpx.AsyncClient(**kwargs)
        _load_async_backend()
        if loop is not _portal.current_loop():
            # Close the client when the caller's loop shuts down: asyncio.run() finalises live async
            # generators before closing the loop, which runs this generator's ``finally``.
            keeper = _close_on_shutdown(client)
            _keepers.setdefault(loop, []).extend((keeper, loop.create_task(_start(keeper))))
    return client


# loop -> its keeper generators (the loop tracks async generators weakly; this keeps them alive with the loop)
_keepers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Any]] = weakref.WeakKeyDictionary()


async def _close_on_shutdown(client: httpx.AsyncClient) -> AsyncIterator[None]:
    try:
        yield
    finally:
        # forget the loop too: its entries hold tasks and clients that reference the loop, so the weak keys
        # would never die and every asyncio.run() would leak a loop and a client
        loop = asyncio.get_running_loop()
        _clients.pop(loop, None)
        _keepers.pop(loop, None)
        await client.aclose()


async def _start(keeper: AsyncIterator[None]) -> None:
    await keeper.__anext__()


async def aclose_clients() -> None:
    """Close the pooled clients of the running event loop (call before closing a loop you own)."""
    loop = asyncio.get_running_loop()
    per_loop = _clients.pop(loop, {})
    for client in per_loop.values():
        await client.aclose()


_portal.on_close(aclose_clients)


async def read_capped(response: httpx.Response, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> bytes:
    """Read a streamed response body, refusing more than ``max_bytes`` while reading.

    A declared ``Content-Length`` over the cap fails before reading; a body without one fails as soon as the
    cap is crossed, so a huge or endless body costs at most ``max_bytes`` of memory.
    """
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ProviderError(
            "body_too_large",
            f"response body of {declared} bytes exceeds the {max_bytes}-byte cap",
            status=response.status_code,
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ProviderError(
                "body_too_large",
                f"response body exceeds the {max_bytes}-byte cap",
                status=response.status_code,
            )
        chunks.append(chunk)
    body = b"".join(chunks)
    response._content = body  # let response.json()/.text work on the capped body
    return body
