"""The engine's per-attempt timer (issue 35: a plain ``with`` instead of ``async with asyncio.timeout``) behaves as
``asyncio.timeout`` does in the cases the engine meets: an expiry becomes ``TimeoutError`` and says so, a
cancellation from elsewhere stays a cancellation, and a block that ends in time leaves nothing scheduled."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from perplexed.engine._timer import LoopTimer  # private: the engine's own timer under test


@contextlib.asynccontextmanager
async def loop_timer(delay: float) -> AsyncIterator[Any]:
    with LoopTimer(delay) as timer:
        yield timer


@contextlib.asynccontextmanager
async def asyncio_timer(delay: float) -> AsyncIterator[Any]:
    async with asyncio.timeout(delay) as timer:
        yield timer


TIMERS = [pytest.param(loop_timer, id="LoopTimer"), pytest.param(asyncio_timer, id="asyncio.timeout")]
Timer = Callable[[float], contextlib.AbstractAsyncContextManager[Any]]


@pytest.mark.parametrize("timer", TIMERS)
async def test_an_expired_budget_is_a_timeout_error_and_says_it_expired(timer: Timer) -> None:
    seen: list[Any] = []
    with pytest.raises(TimeoutError):
        async with timer(0.01) as t:
            seen.append(t)
            await asyncio.sleep(5)
    assert seen[0].expired()
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the timer's own cancellation was taken back


@pytest.mark.parametrize("timer", TIMERS)
async def test_a_block_that_ends_in_time_is_not_expired_and_leaves_no_cancellation(timer: Timer) -> None:
    async with timer(5) as t:
        await asyncio.sleep(0)
    assert not t.expired()
    await asyncio.sleep(0.02)  # nothing fires later
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


@pytest.mark.parametrize("timer", TIMERS)
async def test_a_cancellation_from_elsewhere_stays_a_cancellation(timer: Timer) -> None:
    expired: list[bool] = []

    async def body() -> None:
        async with timer(5) as t:
            try:
                await asyncio.sleep(5)
            finally:
                expired.append(t.expired())

    task = asyncio.create_task(body())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled() and expired == [False]


@pytest.mark.parametrize("timer", TIMERS)
async def test_a_cancellation_from_elsewhere_after_the_expiry_stays_a_cancellation(timer: Timer) -> None:
    async def body() -> None:
        async with timer(0.01):
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                asyncio.current_task().cancel()  # type: ignore[union-attr]  # someone else cancels too
                raise

    task = asyncio.create_task(body())
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_the_timer_needs_a_task() -> None:
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[BaseException | None] = loop.create_future()

    def in_a_callback() -> None:  # no task runs here: there would be nothing to cancel
        try:
            LoopTimer(1).__enter__()
        except RuntimeError as exc:
            outcome.set_result(exc)
        else:
            outcome.set_result(None)

    loop.call_soon(in_a_callback)
    assert isinstance(await outcome, RuntimeError)
