"""Several processes sharing one SQLite store: rate limits, cool-downs and spend limits hold across them.

Calls are counted at a loopback server in this process; the workers are separate Python processes
(tests/store/mp_worker.py) that only share the store file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from testkit.loopback import Json, Status, searxng_json, serve

WORKER = Path(__file__).with_name("mp_worker.py")
ROOT = Path(__file__).resolve().parents[2]


def run_workers(n: int, mode: str, url: str, store: Path, seconds: float = 0.0,
                timeout: float = 90) -> list[dict[str, Any]]:
    """Start ``n`` workers, wait until each has imported perplexed, start them together, collect their JSON."""
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
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(f"{start_at!r}\n", timeout=timeout)
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


def test_four_processes_share_a_5_per_second_limit(tmp_path: Path) -> None:
    with serve({"/search": Json(searxng_json(2)), "/warm": Json({})}) as server:
        results = run_workers(4, "load", server.url, tmp_path / "state.db", 3.0)
        arrivals = [r.received_at for r in server.requests if r.path == "/search"]
    # received_at is monotonic on the server side; only differences matter
    assert max_in_any_window(arrivals, 1.0) <= 5, [round(b - arrivals[0], 3) for b in sorted(arrivals)]
    assert len(arrivals) >= 10, results  # the load did use the allowance (3 s x 5/s, minus start-up)
    assert sum(sum(r["outcomes"].values()) for r in results) >= len(arrivals)


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
