"""The store is never a new way to fail: RedisStore's degraded mode against a dead, killed, slow or erroring
server (real valkey-server, real sockets)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import perplexed
import pytest
import redis
from perplexed import Hit
from perplexed.store import Admission, CachedAnswer, Record, RedisStore
from perplexed.store._resilient import RETRY_S  # private: waits out the store's retry interval
from testkit import loopback as lb
from testkit.valkey_servers import TcpProxy, ValkeyServer, closed_port, free_port

P = "provider-identity"


def dead_url() -> str:
    return f"redis://user:pw-d3adb33f@127.0.0.1:{closed_port()}/0"  # nothing listens there


@pytest.fixture
def events(store_events: Any) -> Any:
    return store_events


async def test_dead_store_degrades_once_with_one_event_and_one_warning(events: Any, caplog: Any) -> None:
    store = RedisStore(dead_url(), timeout_ms=100)
    caplog.set_level(logging.INFO, logger="perplexed.store")
    for _ in range(20):
        decision = await store.admit(Admission(P, "free", cache_key="k"))
        assert decision.verdict == "call"
        await store.record(Record(P, "free", health="answer"))
    assert not store.available and store.outages == 1
    assert len(events) == 1
    event, _, meta = events[0]
    assert event == ("perplexed", "store", "unavailable")
    assert meta["store"] == "redis" and "Connect" in meta["error"]
    assert "pw-d3adb33f" not in meta["error"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "unavailable" in warnings[0].getMessage()
    # reads answer from in-process state; nothing raises
    assert await store.spend(86400) == {}
    assert (await store.state(P)).failures == 0
    assert await store.latency_p95(P) is None
    assert await store.wait_fill("k", 0.5, provider=P) is None
    await store.clear()
    await store.aclose()


async def test_degraded_limits_are_divided_by_the_fleet() -> None:
    store = RedisStore(dead_url(), timeout_ms=100, fleet_size=4)
    limit = Admission(P, "p", rate_limit=(2, 1.0))  # "2/s" over 4 workers: 2 calls per 4 s in this process
    assert [(await store.admit(limit)).verdict for _ in range(3)] == ["call", "call", "rate_limited"]
    denied = await store.admit(limit)
    assert 3.5 < denied.wait_s <= 4.0


async def test_degraded_spend_fails_closed_but_free_providers_and_the_cache_go_on() -> None:
    store = RedisStore(dead_url(), timeout_ms=100)
    limits = ((86400.0, 5.0),)
    paid = await store.admit(Admission(P, "exa", price=0.01, spend_limits=limits))
    assert paid.verdict == "over_budget"
    assert paid.detail is not None and "unavailable" in paid.detail
    assert (await store.admit(Admission("free", "searxng", price=0.0, spend_limits=limits))).verdict == "call"
    # a paid provider without spend limits is not limited by them
    assert (await store.admit(Admission(P, "exa", price=0.01))).verdict == "call"
    # the in-process cache still answers (before the budget check, as always)
    await store.record(Record(P, "exa", health="answer", cache_key="k", ttl_s=60,
                              answer=CachedAnswer([Hit(id=1, url="https://example.com/x")])))
    cached = await store.admit(Admission(P, "exa", cache_key="k", price=0.01, spend_limits=limits))
    assert cached.verdict == "cached"


async def test_tries_the_store_at_most_once_a_second() -> None:
    # a proxy in front of a dead port counts every connection attempt
    proxy = TcpProxy(free_port())
    try:
        store = RedisStore(proxy.url, timeout_ms=100)
        started = time.monotonic()
        calls = 0
        while time.monotonic() - started < 2.5:
            await store.admit(Admission(P, "p"))
            calls += 1
            await asyncio.sleep(0.01)
        assert calls > 50 and store.outages == 1
        # t=0 (the failure that started the outage), then at most one probe per second; redis-py may
        # reconnect once within one call
        assert proxy.accepted <= 2 * (1 + int(2.5 / RETRY_S) + 1)
    finally:
        proxy.close()


async def test_outage_ends_on_a_state_change_not_on_a_read(valkey_factory: Any, redis_prefix: str,
                                                           events: Any) -> None:
    server: ValkeyServer = valkey_factory()
    store = RedisStore(server.url, prefix=redis_prefix, timeout_ms=200)
    limit = Admission(P, "p", rate_limit=(1, 60.0))
    assert (await store.admit(limit)).verdict == "call"
    server.kill9()
    # in-process state, starting from what the process knew: its own call is still in the window
    assert (await store.admit(limit)).verdict == "rate_limited"
    other = Admission("never-called", "q", rate_limit=(1, 60.0))
    assert (await store.admit(other)).verdict == "rate_limited"  # never called: a cautious share, not a burst
    assert not store.available
    server.restart()
    back = time.monotonic()
    await asyncio.sleep(RETRY_S + 0.05)
    await store.spend(3600)  # a read reaches the server but does not end the outage
    assert not store.available
    await asyncio.sleep(RETRY_S + 0.05)
    assert (await store.admit(limit)).verdict == "call"  # the restarted server's (empty) window
    assert store.available and time.monotonic() - back < 5.0
    other = RedisStore(server.url, prefix=redis_prefix, timeout_ms=2000)  # shared again
    assert (await other.admit(limit)).verdict == "rate_limited"
    assert len(events) == 1  # one outage, one event
    await other.clear()
    await store.aclose()
    await other.aclose()


async def test_a_slow_store_costs_each_search_at_most_the_store_timeout(valkey_slow: TcpProxy,
                                                                       redis_prefix: str) -> None:
    calls: list[str] = []

    def provider(query: str, options: object) -> list[dict[str, str]]:
        calls.append(query)
        return [{"url": "https://example.com/a", "title": "a"}]

    store = RedisStore(valkey_slow.url, prefix=redis_prefix, timeout_ms=50)
    perplexed.configure(store=store, rate_limits={"provider": "100/s"})
    try:
        took = []
        for i in range(12):
            started = time.monotonic()
            result = await perplexed.asearch(f"q{i}", provider)
            took.append(time.monotonic() - started)
            assert result.provider == "provider"
            await asyncio.sleep(0.1)
    finally:
        perplexed.reset()
    assert len(calls) == 12
    # a search pays the store timeout at most once (admit, then every other call in-process until the next
    # probe a second later), never the proxy's 200 ms
    assert max(took) < 0.05 + lb.SLACK
    assert sum(t > 0.045 for t in took) <= 3  # about one search per second probes the store
    assert store.outages == 1


async def test_server_errors_degrade_too(valkey: ValkeyServer, redis_prefix: str) -> None:
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)
    assert (await store.admit(Admission(P, "p", cooldown=True))).verdict == "call"
    # break the server's answers for this provider: its cool-down key becomes a string (WRONGTYPE)
    client = redis.Redis.from_url(valkey.url)
    cool_keys = [k for k in client.scan_iter(match=redis_prefix + "*")]
    tag = store._remote._tag(P)  # type: ignore[attr-defined]
    client.set(f"{tag}:c", b"not a hash")
    decision = await store.admit(Admission(P, "p", cooldown=True))
    assert decision.verdict == "call" and not store.available
    assert "WRONGTYPE" in (store.last_error or "")
    client.delete(f"{tag}:c", *cool_keys)
    client.close()
    await store.aclose()


def test_nothing_from_the_store_reaches_a_search() -> None:
    store = RedisStore(dead_url(), timeout_ms=50)
    perplexed.configure(store=store, cooldown_after=2, spend_limits={"day": 1.0})

    def free(query: str, options: object) -> list[dict[str, str]]:
        return [{"url": "https://example.com/free", "title": "free"}]

    def paid(query: str, options: object) -> list[dict[str, str]]:
        raise AssertionError("a paid provider must be skipped while spend limits cannot be checked")

    try:
        result = perplexed.search("q", [perplexed.providers.FunctionProvider(paid, name="paid", cost=0.01), free],
                                  cache_ttl_s=30, cache_single_flight=True)
    finally:
        perplexed.reset()
    assert result.provider == "free"
    skipped = result.attempts[0]
    assert skipped.outcome == "skipped" and skipped.reason == "over_budget"
    assert "unavailable" in (skipped.detail or "")
