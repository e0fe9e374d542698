"""Fixtures for the store-conformance suite: a fake clock and a ``store`` parametrised over every store.

Another store joins the suite by adding a factory to :data:`STORES` (name -> ``factory(clock, tmp_path)``
returning the store, or raising ``pytest.skip`` when its server is unavailable); every test in
``test_conformance.py`` then runs against it too. The store must take its time from ``clock``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from perplexed.store import MemoryStore, SQLiteStore, Store
from testkit.valkey_servers import redis_conformance_stores


class FakeClock:
    """Seconds since the epoch, moved only by :meth:`advance` (starts at a fixed, realistic time)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


StoreFactory = Callable[[FakeClock, Path], Store]

STORES: dict[str, StoreFactory] = {
    "memory": lambda clock, tmp: MemoryStore(clock=clock),
    "sqlite": lambda clock, tmp: SQLiteStore(tmp / "state.db", clock=clock),
}
STORES.update(redis_conformance_stores())  # redis, redis-unix, redis-tls, redis-cluster (tests/testkit/valkey_servers.py)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=sorted(STORES))
async def store(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> AsyncIterator[Store]:
    instance = STORES[request.param](clock, tmp_path)
    try:
        yield instance
    finally:
        await instance.aclose()
