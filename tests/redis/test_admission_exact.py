"""An admission is never lost between the store's reservation and the call (issue 40 #17): under
``rate_limit="5/s"`` with ``rate_limit_wait_ms=0``, 12 concurrent searches make exactly 5 calls on the Redis
store, as on the memory and SQLite stores, and a reservation whose caller stopped waiting for it (the store
timeout, a cancelled search) is given back: no slot, lease or spend is held for a call that is not made."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import perplexed
import redis
from perplexed import Hit
from perplexed.providers import FunctionProvider
from perplexed.store import Admission, RedisStore
from testkit.valkey_servers import TcpProxy, ValkeyServer


def window_sizes(server: ValkeyServer, prefix: str) -> list[int]:
    """Every provider's shared rolling window under ``prefix``: how many slots it holds."""
    client = redis.Redis.from_url(server.url)
    try:
        return sorted(int(client.zcard(key)) for key in client.scan_iter(match=f"{prefix}*:w"))
    finally:
        client.close()


async def test_twelve_concurrent_searches_make_exactly_the_limit_while_the_loop_is_busy(
    valkey: ValkeyServer, redis_prefix: str
) -> None:
    # The event loop is held up (CPU-bound work of another search: parsing, an import, a first TLS context)
    # right after the 12 admissions were sent: their replies arrive while it is busy, and the store timeout's
    # timers fire in the same turn as the replies are read. Before: the replies were dropped as timeouts, the
    # process went to in-process state (a cautious window) and made 0 of the 5 calls the store had reserved.
    calls: list[str] = []

    def provider(query: str, options: Any) -> list[Hit]:
        calls.append(query)
        return [Hit(id=1, url=f"https://example.com/{query}")]

    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=50)
    perplexed.configure(store=store)
    limited = FunctionProvider(provider, name="limited", rate_limit="5/s", rate_limit_wait_ms=0)
    await store.admit(Admission("warm", "warm", rate_limit=(100, 1.0)))  # this process has reached the store

    async def busy_loop() -> None:
        await asyncio.sleep(0)  # the searches send their admissions
        time.sleep(0.15)  # noqa: ASYNC251 - the point: the loop is blocked while the replies arrive

    try:
        outcomes = await asyncio.gather(
            busy_loop(), *[perplexed.asearch(f"q{i}", [limited], deadline_ms=5000) for i in range(12)],
            return_exceptions=True)
        await asyncio.sleep(0.3)  # anything given back has been
        assert len(calls) == 5, [getattr(o, "attempts", o) for o in outcomes]
        assert store.outages == 0 and store.available
        assert window_sizes(valkey, redis_prefix) == [1, 5]  # the warm-up's slot and the 5 calls: no other
        skipped = [e for e in outcomes[1:] if isinstance(e, perplexed.PerplexedError)]
        assert len(skipped) == 7
        assert all(a.reason == "rate_limited" for e in skipped for a in e.attempts)
    finally:
        await store.aclose()


async def test_an_admission_answered_after_the_store_timeout_gives_back_what_it_took(
    valkey: ValkeyServer, valkey_slow: TcpProxy, redis_prefix: str
) -> None:
    # every reply is 200 ms late (the proxy), the store timeout is 50 ms: each admission reaches the server and
    # takes a slot (and a spend reservation), but the search has moved on in-process when the reply comes
    limits = ((86400.0, 5.0),)
    slow = [RedisStore(valkey_slow.url, prefix=redis_prefix, timeout_ms=50) for _ in range(2)]
    try:
        first = await slow[0].admit(Admission("p", "p", rate_limit=(5, 60.0)))
        assert first.verdict == "call" and not slow[0].available  # in-process (a fresh process: empty window)
        paid = await slow[1].admit(Admission("paid", "paid", price=0.25, spend_limits=limits,
                                             rate_limit=(5, 60.0)))
        assert paid.verdict == "over_budget" and not slow[1].available  # fail closed in-process
        await asyncio.sleep(1.0)  # the late replies came: what they took has been given back
        assert window_sizes(valkey, redis_prefix) == []  # before: [1, 1]
        direct = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)
        try:
            assert await direct.spend(86400) in ({}, {"paid": 0.0})  # before: {"paid": 0.25}
        finally:
            await direct.aclose()
    finally:
        for store in slow:
            await store.aclose()


async def test_a_search_cancelled_during_its_admission_holds_no_slot(
    valkey: ValkeyServer, valkey_slow: TcpProxy, redis_prefix: str
) -> None:
    store = RedisStore(valkey_slow.url, prefix=redis_prefix, timeout_ms=1000)
    try:
        task = asyncio.ensure_future(store.admit(Admission("p", "p", rate_limit=(5, 60.0))))
        await asyncio.sleep(0.05)  # sent; its reply is 200 ms away
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        await asyncio.sleep(0.8)
        assert window_sizes(valkey, redis_prefix) == []  # before: [1]
        assert store.available
    finally:
        await store.aclose()
