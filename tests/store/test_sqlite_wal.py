"""The SQLite store's WAL checkpoints run beside the searches (issue 35) and the WAL stays bounded: thousands of
governed searches, back to back or with pauses, keep the -wal file under the store's limit and what one
checkpoint period adds; a checkpoint under way does not make this process's decisions wait for it."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import Hit
from perplexed.providers import FunctionProvider
from perplexed.store import Admission, Record, SQLiteStore
from perplexed.store._sqlite_wal import Checkpointer  # private: holds a checkpoint under way for the test
from perplexed.store.sqlite import WAL_LIMIT_BYTES

# what one checkpoint period (200 commits: 100 governed searches) writes to the WAL at most here, with room
PERIOD_BYTES = 200 * 16 * 4096


def _governed(calls: list[int]) -> FunctionProvider:
    def search(query: str, options: Any) -> list[Hit]:
        calls.append(1)
        return [Hit(id=i, url=f"https://example.com/{query.replace(' ', '-')}/{i}", snippet="s" * 200)
                for i in range(5)]

    return FunctionProvider(search, name="governed", cost=0.0001, rate_limit="100000/s", cooldown_after=3)


@pytest.mark.parametrize("pause_s", [0.0, 0.001])
async def test_the_wal_stays_bounded_over_thousands_of_governed_searches(tmp_path: Path, pause_s: float) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    calls: list[int] = []
    provider = _governed(calls)
    perplexed.configure(store=store, spend_limits={"day": 1e9, "hour": 1e9})
    largest = 0
    searches = 2000 if pause_s == 0 else 1000
    try:
        for i in range(searches):
            result = await perplexed.asearch(f"bounded wal {i}", provider, cache_ttl_s=3600,
                                             cache_single_flight=True, budget_usd=1.0)
            assert result.provider == "governed" and not result.attempts[0].cached
            if pause_s:
                await asyncio.sleep(pause_s)
            try:
                largest = max(largest, os.stat(f"{path}-wal").st_size)
            except FileNotFoundError:  # pragma: no cover - between a truncation and the next write
                pass
        assert len(calls) == searches
        # without checkpoints: over 50 KB per search (100 MB here); with them, the limit and one period at most
        assert largest <= WAL_LIMIT_BYTES + PERIOD_BYTES, largest
        # every search was recorded: the spend of the day is what the searches reserved and settled
        spent = await store.spend(86400.0)
        assert spent.get("governed") == pytest.approx(searches * 0.0001)
    finally:
        perplexed.reset()
        await store.aclose()


async def test_decisions_do_not_wait_for_a_checkpoint_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint is due every 200 commits; while it runs (held here until the test lets it go), this
    process's decisions and records go on inline on the search's thread beside it. Before, they were queued on
    the worker thread behind the whole checkpoint."""
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    request = Admission("p", "p", rate_limit=(1_000_000, 1.0), price=0.001, spend_limits=((3600.0, 1e9),))
    await store.admit(Admission("warm", "warm", rate_limit=(10, 1.0)))  # the first opens the file on the worker
    worker_decisions: list[str] = []
    real = store._admit  # private: counts the decisions made on the worker thread

    def on_worker(*args: Any) -> Any:
        worker_decisions.append(threading.current_thread().name)
        return real(*args)

    store._admit = on_worker  # type: ignore[method-assign]
    started, release = threading.Event(), threading.Event()
    real_run = Checkpointer._run
    threads: list[str] = []

    def held_run(self: Checkpointer) -> None:
        threads.append(threading.current_thread().name)
        started.set()
        release.wait(10)
        real_run(self)

    monkeypatch.setattr(Checkpointer, "_run", held_run)
    decisions = 0
    try:
        while not started.is_set():  # the 200th commit starts a checkpoint
            decision = await store.admit(request)
            assert store.record_soon(Record("p", "p", cost=0.001, ticket=decision.ticket))
            decisions += 1
            assert decisions <= 200
        for _ in range(300):  # under way all along: 600 more commits, three more due (absorbed by it)
            decision = await store.admit(request)
            assert decision.verdict == "call"
            assert store.record_soon(Record("p", "p", cost=0.001, ticket=decision.ticket))
            decisions += 1
        assert worker_decisions == []  # none went to the worker thread: none waited for the checkpoint
        assert threads == ["perplexed-sqlite-wal_0"]  # one checkpoint, on a thread of its own
        release.set()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if not store._checkpointer.running:  # private: the held checkpoint has finished its passes
                break
        assert not store._checkpointer.running  # private: the held checkpoint has finished its passes
        assert await store.spend(3600.0) == {"p": pytest.approx(decisions * 0.001)}
    finally:
        release.set()
        await store.aclose()
