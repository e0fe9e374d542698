"""Hedged losers and merged calls under load leak nothing: every cancelled request's connection is closed by
the client, the pooled client ends with no busy connection and no queued request, no response object stays
alive, and the sync API leaves no task behind on the portal loop (the leak checks of test_rel_leaks_load)."""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

import httpx
import perplexed
import perplexed.net._http  # private: inspects the shared connection pool directly
import pytest
from perplexed import Outcome, Result
from perplexed.net import _portal  # private: no task is left on the portal loop
from perplexed.providers import SearXNG
from testkit.loopback import Hang, Json, searxng_json, serve

pytestmark = pytest.mark.timing  # the merge variant's hung member costs its 1.5 s budget, the good one must fit

ROUNDS, IN_FLIGHT = 4, 50  # 50 runs in flight hold at most 100 of the pool's 200 connections


def _live(kind: type) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


async def _settle(predicate: Any, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return bool(predicate())


def _pool_is_clean() -> bool:
    pool = perplexed.net._http.get_client()._transport._pool  # type: ignore[attr-defined]
    return not [c for c in pool.connections if not c.is_idle()] and len(pool._requests) == 0


@pytest.mark.parametrize("strategy", ["hedged", "merge"])
async def test_many_hedged_or_merged_runs_with_a_hung_provider_leak_nothing(strategy: str) -> None:
    responses_before = _live(httpx.Response)
    with serve({"/hang/search": Hang(), "/ok/search": Json(searxng_json(3, prefix="https://ok.example/"))},
               backlog=1024) as server:
        hung = SearXNG(base_url=f"{server.url}/hang", name="hang")
        good = SearXNG(base_url=f"{server.url}/ok", name="ok")
        options: dict[str, Any] = (
            {"strategy": "hedged", "hedge_after_ms": 5, "provider_timeout_ms": 60_000}
            if strategy == "hedged"
            # merge waits for every member: the hung one is bounded by its budget (generous for a loaded box)
            else {"strategy": "merge", "provider_timeout_ms": 1_500}
        )
        results: list[Result] = []
        for _ in range(ROUNDS):
            results += await asyncio.gather(*(perplexed.asearch("q", [hung, good], **options) for _ in range(IN_FLIGHT)))

        assert all(isinstance(r, Result) for r in results)
        expected = Outcome.CANCELLED if strategy == "hedged" else Outcome.TIMEOUT
        for r in results:
            assert [a.outcome for a in r.attempts] == [expected, Outcome.OK]
            assert len(r.hits) == 3
        assert await _settle(lambda: _open_hangs(server) == 0), f"{_open_hangs(server)} hung connections open"
        assert all(r.connection.closed_by == "client" for r in server.requests if r.path == "/hang/search")
        assert await _settle(_pool_is_clean), "the pooled client holds a busy connection or a queued request"
        assert _live(httpx.Response) <= responses_before + 5


def _open_hangs(server: Any) -> int:
    """Connections to the hung endpoint still open."""
    return sum(1 for r in server.requests if r.path == "/hang/search" and r.connection.closed_at is None)


def test_sync_hedged_runs_leave_no_task_on_the_portal_loop() -> None:
    with serve({"/hang/search": Hang(), "/ok/search": Json(searxng_json(2))}) as server:
        providers = [SearXNG(base_url=f"{server.url}/hang", name="hang"),
                     SearXNG(base_url=f"{server.url}/ok", name="ok")]
        for _ in range(20):
            r = perplexed.search("q", providers, strategy="hedged", hedge_after_ms=5, provider_timeout_ms=60_000)
            assert [a.outcome for a in r.attempts] == [Outcome.CANCELLED, Outcome.OK]

        async def pending() -> int:
            return len(asyncio.all_tasks() - {asyncio.current_task()})

        left = asyncio.run_coroutine_threadsafe(pending(), _portal.loop()).result(5)
        assert left == 0, f"{left} tasks pending on the portal loop"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
            r.connection.closed_at is None for r in server.requests if r.path == "/hang/search"
        ):
            time.sleep(0.05)
        assert all(r.connection.closed_at is not None for r in server.requests if r.path == "/hang/search")
        assert all(r.connection.closed_by == "client" for r in server.requests if r.path == "/hang/search")
