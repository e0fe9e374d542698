"""Several processes sharing one SQLite store: rate limits, cool-downs and spend limits hold across them.

Calls are counted at a loopback server in this process; the workers are separate Python processes
(tests/store/mp_worker.py) that only share the store file. They run at the same time: each gets its start
time before any is waited for.

A rate limit is kept where the store decides it: every admission is a row of the shared window, stamped in
its transaction, and no rolling window holds more than the limit, exactly. At the server, arrivals lag their
admissions by a scheduling delay that varies on a busy machine (a process stalled for a few hundred ms sends
late); the admission window is 5 % longer than the limit's to absorb ordinary jitter, and the arrival check
allows for half a second of it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from perplexed.policy._policy import parse_rate_limit  # private: the store's admission window, from the rule
from perplexed.store import SQLiteStore
from testkit.loopback import Json, Status, searxng_json, serve

WORKER = Path(__file__).with_name("mp_worker.py")
ROOT = Path(__file__).resolve().parents[2]


def run_workers(n: int, mode: str, url: str, store: Path, seconds: float = 0.0,
                timeout: float = 90, during: Callable[[float], None] | None = None) -> list[dict[str, Any]]:
    """Start ``n`` workers, wait until each has imported perplexed, start them together, collect their JSON.
    ``during(start_at)`` runs once they are started (while they work)."""
    env = dict(os.environ, PERPLEXED_STORE=f"sqlite:///{store}", PYTHONPATH=str(ROOT / "core"))
    procs = [
        subprocess.Popen([sys.executable, str(WORKER), mode, url, repr(seconds)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(n)
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    start_at = time.time() + 0.1
    for proc in procs:  # every worker gets its start time before any is waited for: they run together
        assert proc.stdin is not None
        proc.stdin.write(f"{start_at!r}\n")
        proc.stdin.flush()
    if during is not None:
        during(start_at)
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, stderr[-3000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def max_in_any_window(times: list[float], window: float) -> int:
    times = sorted(times)
    best = 0
    j = 0
    for i, t in enumerate(times):
        while times[j] <= t - window:
            j += 1
        best = max(best, i - j + 1)
    return best


def audit_admissions(store: Path) -> None:
    """Create the store and a trigger copying every admission of its shared rate window into ``audit`` (the
    store prunes window rows that every window has passed; the audit keeps them all)."""
    opened = SQLiteStore(store)
    asyncio.run(opened.clear())  # creates the file and its schema
    opened.close()
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE audit (ts REAL NOT NULL)")
        conn.execute("CREATE TRIGGER audit_admission AFTER INSERT ON rate_window BEGIN "
                     "INSERT INTO audit (ts) VALUES (new.ts); END")


def admissions(store: Path) -> list[float]:
    """The admission times every process wrote to the store's shared rate window (see audit_admissions)."""
    with sqlite3.connect(store) as conn:
        return [ts for (ts,) in conn.execute("SELECT ts FROM audit ORDER BY ts")]


ADMISSION_WINDOW_S = parse_rate_limit("5/s").window_s * 1.05  # the store's window: 5 % longer (the guard)


def check_five_per_second(store: Path, arrivals: list[float], results: list[dict[str, Any]]) -> None:
    admitted = admissions(store)
    assert max_in_any_window(admitted, ADMISSION_WINDOW_S) <= 5, [round(t - admitted[0], 3) for t in admitted]
    assert len(arrivals) == len(admitted), results  # every call was admitted, every admission called
    # at the server: arrivals lag admissions by a delay that varies with the machine's load
    assert max_in_any_window(arrivals, 0.5) <= 5, [round(b - arrivals[0], 3) for b in sorted(arrivals)]


@pytest.mark.timing
def test_four_processes_share_a_5_per_second_limit(tmp_path: Path) -> None:
    store = tmp_path / "state.db"
    audit_admissions(store)
    with serve({"/search": Json(searxng_json(2)), "/warm": Json({})}) as server:
        results = run_workers(4, "load", server.url, store, 3.0)
        arrivals = [r.received_at for r in server.requests if r.path == "/search"]
    # received_at is monotonic on the server side; only differences matter
    check_five_per_second(store, arrivals, results)
    assert len(arrivals) >= 10, results  # the load did use the allowance (3 s x 5/s, minus start-up)
    assert sum(sum(r["outcomes"].values()) for r in results) >= len(arrivals)
    assert sum(1 for r in results if r["outcomes"].get("ok")) >= 2  # the processes did share it


HOLD = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


@pytest.mark.timing
def test_a_locked_store_makes_no_burst_above_the_shared_limit(tmp_path: Path) -> None:
    """Another process holds the database's lock for 1.5 s in the middle of the load: every worker is in an
    outage (rate-limited providers skipped), then decides from the shared window again: no burst."""
    store = tmp_path / "state.db"
    audit_admissions(store)

    def lock_for_a_while(start_at: float) -> None:
        time.sleep(max(0.0, start_at + 1.0 - time.time()))
        holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store), "1.5"], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            holder.wait(30)
        finally:
            holder.kill()
            holder.wait()

    with serve({"/search": Json(searxng_json(2)), "/warm": Json({})}) as server:
        results = run_workers(4, "load", server.url, store, 4.0, during=lock_for_a_while)
        arrivals = [r.received_at for r in server.requests if r.path == "/search"]
    check_five_per_second(store, arrivals, results)
    assert any("skipped:rate_limited" in r["outcomes"] for r in results)
    assert len(arrivals) >= 10, results


def test_a_cooldown_tripped_in_one_process_is_seen_by_the_others(tmp_path: Path) -> None:
    store = tmp_path / "state.db"
    with serve({"/search": Status(500, "down")}) as server:
        run_workers(1, "trip", server.url, store)
        assert len(server.requests) == 2
        probes = run_workers(3, "probe", server.url, store)
        assert len(server.requests) == 2  # no other process called it
    assert all((p["outcome"], p["reason"], p["provider"]) == ("skipped", "cooling_down", "fallback") for p in probes)


def test_spend_limit_holds_across_processes(tmp_path: Path) -> None:
    with serve({"/search": Json(searxng_json(1), delay=0.02), "/warm": Json({})}) as server:
        results = run_workers(4, "spend", server.url, tmp_path / "state.db", 1.5)
        calls = sum(1 for r in server.requests if r.path == "/search")
    # 0.10 an hour at 0.01 a call: never more than one call's price over the limit (reservations: exactly 10)
    assert 10 <= calls <= 11
    assert any("skipped:over_budget" in r["outcomes"] for r in results)
    final = max(r["spend"].get("searxng", 0.0) for r in results)
    assert final == pytest.approx(0.01 * calls)
    assert final <= 0.10 + 0.01 + 1e-9
