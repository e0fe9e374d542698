"""The sync API's direct path (issue 35): the engine's coroutine driven in the caller's thread, with no event loop.

perplexed has one implementation of every I/O path, written async (see ``_portal``). For a plain synchronous
search (HTTP providers, nothing that needs an event loop: see ``chain._runs_direct`` for the rule) every await
on the way completes at once: the HTTP I/O is httpx's sync client (``_http.send`` and the body reads see a sync
client and a sync response and never suspend), the usage ledger is in-process. Such a coroutine is driven
here with ``coro.send(None)`` until it returns, in the caller's thread: no hop to the portal's thread and
back, and no asyncio/anyio I/O under the provider's request (httpcore does the same: one core, a sync and an
async driver).

The budget holds as on the portal: :class:`Timer` stands for ``asyncio.timeout`` (which needs a running
loop). It publishes the attempt's deadline (:func:`deadline`); the sync I/O gives each step of a request
(the pool wait, the connect, each write and read) what is left as its timeout, checks the deadline again
before each read of the body, and raises
:class:`Expired` when it has passed. The timer then raises ``TimeoutError`` and says it expired, exactly as
``asyncio.timeout`` does, so the attempt is recorded the same (``timeout``, "no answer within ... ms").

A coroutine that suspends (awaits something that is not complete) is a bug of the rule that let it here: it is
closed (its ``finally`` blocks run, its connection is closed) and :func:`run` raises ``RuntimeError``.

Clock: :func:`clock` is ``time.monotonic``, the clock asyncio's loops use (``loop.time()``), so deadlines
computed on either path compare.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

from perplexed._errors import BudgetExpired as Expired

__all__ = ["Expired", "Timer", "clock", "deadline", "driving", "run"]

T = TypeVar("T")

clock = time.monotonic

_driving: contextvars.ContextVar[bool] = contextvars.ContextVar("perplexed_direct", default=False)
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("perplexed_direct_deadline", default=None)


def driving() -> bool:
    """Whether the code running now is a coroutine driven by :func:`run` (the sync I/O applies)."""
    return _driving.get()


def deadline() -> float | None:
    """When the current attempt's budget ends (:func:`clock`; ``None`` outside a :class:`Timer`)."""
    return _deadline.get()


class Timer:
    """``asyncio.timeout(delay)`` for a coroutine driven by :func:`run`: the part the engine uses
    (``with``, :meth:`expired`). The sync I/O enforces it (see the module docstring)."""

    __slots__ = ("_ends", "_expired", "_token")

    def __init__(self, delay: float) -> None:
        self._ends = clock() + delay
        self._expired = False
        self._token: contextvars.Token[float | None] | None = None

    def expired(self) -> bool:
        """Whether the budget ran out (what ``asyncio.Timeout.expired`` says)."""
        return self._expired

    def __enter__(self) -> Timer:
        self._token = _deadline.set(self._ends)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._token is not None:
            _deadline.reset(self._token)
            self._token = None
        if isinstance(exc, Expired):
            self._expired = True
            raise TimeoutError from exc  # what asyncio.timeout raises when it expired


def run(fn: Callable[..., Coroutine[Any, Any, T]], /, *args: Any) -> T:
    """Run ``fn(*args)`` to its end in this thread, without an event loop, in a copy of the caller's context
    (as a task would). Raises what it raises; ``RuntimeError`` if it suspends (see the module docstring)."""
    ctx = contextvars.copy_context()
    ctx.run(_driving.set, True)
    coro = fn(*args)
    try:
        try:
            waited = ctx.run(coro.send, None)
        except StopIteration as stop:
            value: T = stop.value
            return value
        raise RuntimeError(
            f"perplexed: a synchronous search suspended on {waited!r} outside an event loop (a bug of the "
            "direct path's rule); please report it"
        )
    finally:
        coro.close()  # a no-op once it returned or raised; else its finally blocks run (connections closed)
