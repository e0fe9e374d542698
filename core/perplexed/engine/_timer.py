"""The engine's per-attempt budget on an event loop: :class:`LoopTimer` (the direct path's is ``net._direct.Timer``)."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

__all__ = ["LoopTimer"]


class LoopTimer:
    """``asyncio.timeout(delay)`` as the engine uses it (its ``expired()``), entered with a plain ``with``: the
    same timer handle cancels the running task when ``delay`` seconds have passed, and leaving the block turns
    that cancellation into ``TimeoutError`` (a cancellation from elsewhere stays one), as ``asyncio.Timeout``
    does, without its two coroutines and state machine on every attempt (issue 35: the attempt's hot path)."""

    __slots__ = ("_cancelling", "_expired", "_handle", "_task", "_when")

    def __init__(self, delay: float) -> None:
        self._when = asyncio.get_running_loop().time() + delay
        self._expired = False
        self._task: asyncio.Task[Any] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._cancelling = 0

    def expired(self) -> bool:
        """Whether the budget ran out (what ``asyncio.Timeout.expired`` says)."""
        return self._expired

    def __enter__(self) -> LoopTimer:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("the engine's timer must be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._handle = loop.call_at(self._when, self._expire)
        return self

    def _expire(self) -> None:
        assert self._task is not None
        self._task.cancel()
        self._expired = True
        self._handle = None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        handle = self._handle
        if handle is not None:
            handle.cancel()
            self._handle = None
        if self._expired:
            assert self._task is not None
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc
