"""``_portal.iterate``: a sync view of an async iterator, closed exactly once on every way out, and closed
on the loop in the same hop that ends it (an error reaches the caller without a second round trip)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

import pytest
from perplexed.net import _portal  # private: the sync-over-async portal is the unit under test


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every coroutine the caller's thread submits to the portal loop (one round trip each)."""
    seen: list[object] = []
    submit = _portal._submit

    def counting(coro, ctx):  # type: ignore[no-untyped-def]
        seen.append(coro)
        return submit(coro, ctx)

    monkeypatch.setattr(_portal, "_submit", counting)
    return seen


class Source(AsyncIterator[int]):
    """Yields ``items``, then raises ``error`` (or ends); records its closes and the thread of each."""

    def __init__(self, items: list[int], error: Exception | None = None) -> None:
        self.items = list(items)
        self.error = error
        self.closes: list[str] = []

    async def __anext__(self) -> int:
        if self.items:
            return self.items.pop(0)
        if self.error is not None:
            raise self.error
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self.closes.append(threading.current_thread().name)


def test_exhausted_iterator_is_closed_on_the_loop_once(hops: list[object]) -> None:
    src = Source([1, 2, 3])
    assert list(_portal.iterate(src)) == [1, 2, 3]
    assert src.closes == ["perplexed-portal"]
    assert len(hops) == 4  # three items and the end: closing took no round trip of its own


def test_error_reaches_the_caller_after_one_close_in_the_same_hop(hops: list[object]) -> None:
    src = Source([1], error=TimeoutError("no event"))
    got: list[int] = []
    with pytest.raises(TimeoutError, match="no event"):
        for item in _portal.iterate(src):
            got.append(item)
    assert got == [1] and src.closes == ["perplexed-portal"] and len(hops) == 2


def test_a_failing_close_does_not_hide_the_iterators_error() -> None:
    class BadClose(Source):
        async def aclose(self) -> None:
            raise RuntimeError("close failed")

    with pytest.raises(ValueError, match="boom"):
        list(_portal.iterate(BadClose([], error=ValueError("boom"))))


def test_early_stop_closes_the_iterator_once(hops: list[object]) -> None:
    src = Source([1, 2, 3])
    it = _portal.iterate(src)
    assert next(it) == 1
    it.close()  # type: ignore[attr-defined]  # a generator, typed as an Iterator
    assert src.closes == ["perplexed-portal"] and src.items == [2, 3]
    assert len(hops) == 2  # the first item, then the close the caller asked for
