"""Run perplexed's async core from synchronous code.

perplexed has one implementation of every I/O path, written async. The sync API (``search``, ``answer``,
``AgentClient``) submits the same coroutine to one long-lived event loop running in a daemon thread, so the
sync path honours budgets, cancellation and events exactly like the async one (a hung server costs the
budget, never the OS socket timeout), and works even when the caller's thread already runs an event loop.
The caller's ``contextvars`` (OpenTelemetry context, LangChain run context) are carried into the coroutine.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

__all__ = ["iterate", "loop", "run"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_cleanups: list[Callable[[], Awaitable[None]]] = []


def loop() -> asyncio.AbstractEventLoop:
    """The portal's event loop, started on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed() or _thread is None or not _thread.is_alive():
            new_loop = asyncio.new_event_loop()
            ready = threading.Event()

            def _serve() -> None:
                asyncio.set_event_loop(new_loop)
                new_loop.call_soon(ready.set)
                new_loop.run_forever()

            _thread = threading.Thread(target=_serve, name="perplexed-portal", daemon=True)
            _thread.start()
            ready.wait()
            _loop = new_loop
        return _loop


def current_loop() -> asyncio.AbstractEventLoop | None:
    """The portal's loop if it has been started, else None."""
    return _loop


def on_portal_thread() -> bool:
    """Whether the caller is the portal's own thread (where the sync API must not be called)."""
    return _thread is not None and threading.current_thread() is _thread


def on_close(cleanup: Callable[[], Awaitable[None]]) -> None:
    """Register a coroutine function run on the portal loop at interpreter exit (closing pooled clients)."""
    _cleanups.append(cleanup)


def _submit(coro: Awaitable[T], ctx: contextvars.Context) -> concurrent.futures.Future[T]:
    target = loop()
    if threading.current_thread() is _thread:
        raise RuntimeError("perplexed's sync API cannot be called from its own portal thread; use the async API")
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def _start() -> None:
        task: asyncio.Task[T] = target.create_task(coro, context=ctx)  # type: ignore[arg-type]

        def _done(t: asyncio.Task[T]) -> None:
            if future.cancelled():
                return
            if t.cancelled():
                future.cancel()
            elif (exc := t.exception()) is not None:
                future.set_exception(exc)
            else:
                future.set_result(t.result())

        task.add_done_callback(_done)

        def _cancel_task(f: concurrent.futures.Future[T]) -> None:
            if f.cancelled():
                target.call_soon_threadsafe(task.cancel)

        future.add_done_callback(_cancel_task)

    target.call_soon_threadsafe(_start)
    return future


def run(fn: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` on the portal loop and wait for its result (exceptions propagate)."""
    ctx = contextvars.copy_context()
    future = _submit(fn(*args, **kwargs), ctx)
    try:
        return future.result()
    except BaseException:
        if not future.done():  # KeyboardInterrupt in the caller: cancel the coroutine too
            future.cancel()
        raise


def iterate(agen: AsyncIterator[T]) -> Iterator[T]:
    """Drive an async iterator on the portal loop, yielding its items to synchronous code.

    Closing the returned generator early closes the async iterator (its connection is released).
    """
    ctx = contextvars.copy_context()
    sentinel = object()
    aclose = getattr(agen, "aclose", None)
    ended = False  # the iterator ended on the loop (exhausted or raised) and was closed there

    async def _next() -> Any:
        # When the iterator ends, it is closed in the same hop: the caller gets its result or error
        # without a second round trip to the loop.
        try:
            return await agen.__anext__()
        except StopAsyncIteration:
            await _close()
            return sentinel
        except Exception:
            await _close()
            raise

    async def _close() -> None:
        nonlocal ended
        ended = True
        if aclose is not None:
            with contextlib.suppress(Exception):  # best effort: the iterator's own outcome wins
                await aclose()

    try:
        while True:
            future = _submit(_next(), ctx)
            try:
                item = future.result()
            except BaseException:
                if not future.done():
                    future.cancel()
                raise
            if item is sentinel:
                return
            yield item
    finally:
        if not ended and aclose is not None and _loop is not None and not _loop.is_closed():
            try:
                _submit(aclose(), ctx).result(timeout=5)
            except Exception:  # pragma: no cover - best effort on close
                pass


@atexit.register
def _shutdown() -> None:  # pragma: no cover - exercised at interpreter exit
    if _loop is None or _loop.is_closed() or _thread is None or not _thread.is_alive():
        return

    async def _close_all() -> None:
        for cleanup in _cleanups:
            try:
                await cleanup()
            except Exception:
                pass

    try:
        asyncio.run_coroutine_threadsafe(_close_all(), _loop).result(timeout=5)
    except Exception:
        pass
    _loop.call_soon_threadsafe(_loop.stop)
