"""The SQLite store is bounded (issue 23): a database locked by another process is an outage bounded by the
store timeout (the search goes on within its deadline, money fails closed), the WAL stays bounded under
sustained writes, and threads that ended leave no connections behind."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import Hit
from perplexed.providers import FunctionProvider
from perplexed.store import Admission, CachedAnswer, Record, SQLiteStore
from perplexed.store import sqlite as sqlite_store
from perplexed.store.sqlite import WAL_LIMIT_BYTES

HOLD = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def hold_lock(path: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@pytest.fixture
def events(store_events: Any) -> Any:
    return store_events


async def test_a_locked_database_is_a_bounded_outage_and_money_fails_closed(tmp_path: Path, events: Any) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    await store.admit(Admission("warm", "warm", rate_limit=(10, 1.0)))  # the file and schema exist
    calls: list[str] = []

    def paid(query: str, options: Any) -> list[Hit]:
        calls.append("paid")
        return [Hit(id=1, url="https://paid.example/1")]

    def free(query: str, options: Any) -> list[Hit]:
        calls.append("free")
        return [Hit(id=1, url="https://free.example/1")]

    chain = [FunctionProvider(paid, name="paid", cost=0.05),
             FunctionProvider(free, name="free", cooldown_after=3)]
    perplexed.configure(store=store, spend_limits={"day": 10.0})
    holder = hold_lock(path, 15)
    try:
        started = time.monotonic()
        result = await perplexed.asearch("locked store", chain, deadline_ms=3000)
        took = time.monotonic() - started
        assert result.provider == "free" and calls == ["free"]  # the paid provider was not called
        assert result.attempts[0].reason == "over_budget"
        assert took < 3.0  # within its deadline (the store timeout is 1 s), not the 10 s it used to wait
        for i in range(3):  # later searches during the same outage: no wait, no new event
            await perplexed.asearch(f"locked store {i}", chain, deadline_ms=3000)
        assert store.outages == 1 and len(events) == 1
        assert events[0][2]["store"] == "sqlite"
        holder.kill()
        holder.wait()
        await asyncio.sleep(1.1)
        assert (await store.admit(Admission("p", "p", rate_limit=(10, 1.0)))).verdict == "call"  # free again
        assert store._outage is None  # type: ignore[attr-defined]
    finally:
        holder.kill()
        holder.wait()
        perplexed.reset()


@pytest.mark.parametrize("writes", ["records", "searches"])
async def test_the_wal_stays_bounded_under_sustained_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writes: str
) -> None:
    # the same mechanism at a tenth of the scale (the defaults: a 16 MiB limit, a checkpoint every 200 commits)
    limit = WAL_LIMIT_BYTES // 16
    monkeypatch.setattr(sqlite_store, "WAL_LIMIT_BYTES", limit)
    monkeypatch.setattr(sqlite_store, "_CHECKPOINT_EVERY", 10)  # private: checkpoints more often, at a tenth of the scale
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    big = CachedAnswer([Hit(id=1, url="https://example.com/a", snippet="x" * 200_000)])
    reader = SQLiteStore(path)  # another connection reading now and then
    largest = 0
    for i in range(60):
        record = Record("p", "p", cache_key=f"k{i}", answer=big, ttl_s=1)
        if writes == "records":  # awaited: on the worker thread
            await store.record(record)
        else:  # queued, then folded into the next decision on this thread (or applied by the worker)
            await store.admit(Admission("p", "p", rate_limit=(10_000, 1.0)))
            assert store.record_soon(record)
        if i % 5 == 0:
            await reader.admit(Admission("p", "p", cache_key=f"k{i}"))
        await asyncio.sleep(0)
        largest = max(largest, os.stat(f"{path}-wal").st_size)
    # 60 x 200 KB written: 12 MB without checkpoints; with them, the limit and what ten commits add at most
    assert largest <= limit + 10 * 250_000
    await store.aclose()
    await reader.aclose()


async def test_the_wal_stays_bounded_when_large_answers_are_cached(tmp_path: Path) -> None:
    # issue 40 #15: the WAL reached 59.8 MB (the limit: 16 MiB) when cached answers were large: a checkpoint
    # came only every 200 commits, whatever they wrote. At the real scale: 120 answers of 400 KB (48 MB).
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    reader = SQLiteStore(path)  # another connection reading now and then
    largest = 0
    try:
        for i in range(120):
            big = CachedAnswer([Hit(id=1, url=f"https://example.com/{i}", snippet=f"{i:04d}" * 100_000)])
            record = Record("p", "p", cache_key=f"k{i}", answer=big, ttl_s=60)
            # queued, then folded into the next decision on this thread (or applied by the worker): the inline
            # connections never checkpoint (the worker's own would, every 1000 pages, but it writes nothing here)
            await store.admit(Admission("p", "p", rate_limit=(10_000, 1.0)))
            assert store.record_soon(record)
            if i % 10 == 0:
                await reader.admit(Admission("p", "p", cache_key=f"k{i}"))
            await asyncio.sleep(0)
            largest = max(largest, os.stat(f"{path}-wal").st_size)
        # the limit, and what one checkpoint period adds at most (a quarter of it, and one answer)
        assert largest <= WAL_LIMIT_BYTES + WAL_LIMIT_BYTES // 4 + 500_000, largest
    finally:
        await store.aclose()
        await reader.aclose()


def test_threads_that_ended_leave_no_inline_connections(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "state.db")
    asyncio.run(store.admit(Admission("p", "p", rate_limit=(100000, 1.0))))

    def one() -> None:
        asyncio.run(store.admit(Admission("p", "p", rate_limit=(100000, 1.0))))

    for _ in range(80):
        thread = threading.Thread(target=one)
        thread.start()
        thread.join()
    assert len(store._inline_conns) <= 2  # type: ignore[attr-defined]
    store.close()


@pytest.mark.timing
async def test_a_decision_given_up_in_an_outage_takes_nothing(tmp_path: Path) -> None:
    """The caller stops waiting for the worker (busy past the store timeout): the decision the worker makes
    later is rolled back, so the slot and the reservation it would take stay free for a call that happens."""
    path = tmp_path / "state.db"
    store = SQLiteStore(path, busy_timeout_ms=500)  # the caller waits 0.75 s for the worker
    request = Admission("p", "p", rate_limit=(1, 60.0), price=0.5, spend_limits=((3600.0, 1.0),))
    await store.admit(Admission("warm", "warm", rate_limit=(10, 1.0)))  # the file and schema exist
    # the inline attempt finds the lock taken, so the decision goes to the worker; the worker is busy for 0.6 s,
    # then waits for the lock, which is free at 0.85 s: after the caller gave up, before the worker would
    holder = hold_lock(path, 0.85)
    store._executor.submit(time.sleep, 0.6)  # type: ignore[attr-defined]
    try:
        assert (await store.admit(request)).verdict == "rate_limited"  # the outage: shared limits fail closed
    finally:
        holder.wait()
    await asyncio.sleep(2.0)  # the worker has run the given-up decision; the outage's second is over
    decision = await store.admit(request)
    assert decision.verdict == "call"  # the one slot of the minute was not taken by the given-up decision
    assert await store.spend(3600.0) == {"p": 0.5}  # one reservation, not two
    await store.aclose()


def _write_answers(path: str, me: int, count: int) -> None:
    """One process of the test below: searches whose large answers are cached (folded into its decisions)."""
    async def run() -> None:
        store = SQLiteStore(path)
        for i in range(count):
            big = CachedAnswer([Hit(id=1, url=f"https://example.com/{me}/{i}", snippet=f"{i:04d}" * 100_000)])
            await store.admit(Admission("p", "p", rate_limit=(100_000, 1.0)))
            store.record_soon(Record("p", "p", cache_key=f"k{me}-{i}", answer=big, ttl_s=60))
            await asyncio.sleep(0)
        await store.aclose()

    asyncio.run(run())
    os._exit(0)


def test_the_wal_stays_bounded_with_several_processes_writing_large_answers(tmp_path: Path) -> None:
    # issue 40 #15: with several processes, one's checkpoint is refused at once while another's runs, and the
    # WAL kept growing (4 processes: ~55 MB, 8: ~170 MB). Now a commit that finds the WAL past the limit
    # checkpoints, and a checkpoint past the limit waits (up to the store timeout) to truncate it.
    import multiprocessing

    path = tmp_path / "state.db"
    asyncio.run(SQLiteStore(path).admit(Admission("p", "p")))  # the schema exists
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_answers, args=(str(path), me, 50), daemon=True) for me in range(4)]
    for proc in procs:
        proc.start()
    largest = 0
    end = time.monotonic() + 60
    try:
        while any(proc.is_alive() for proc in procs):
            assert time.monotonic() < end, "the writers did not finish in time"
            try:
                largest = max(largest, os.stat(f"{path}-wal").st_size)
            except OSError:
                pass
            time.sleep(0.002)
    finally:
        for proc in procs:
            proc.kill()
    assert [proc.exitcode for proc in procs] == [0] * 4
    # 80 MB written; the limit and a few answers in flight at most
    assert largest <= WAL_LIMIT_BYTES + 8 * 400_000, largest
