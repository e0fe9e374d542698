"""RedisStore specifics on a real valkey-server: URLs and arguments, key layout and hash tags, secrets, the
1 MiB cache cap, NOSCRIPT, event loops and the sync API, and the Lua rules against the pure policy."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from typing import Any

import perplexed
import pytest
import redis
from perplexed import ConfigError, Hit
from perplexed._errors import redact, register_secret  # private: secrets registered, then checked redacted
from perplexed.store import Admission, CachedAnswer, MemoryStore, Record, RedisStore, open_store
from perplexed.store.redis import MAX_CACHE_BYTES
from redis.cluster import RedisCluster
from testkit.valkey_servers import ValkeyCluster, ValkeyServer

P = "provider-identity-hash"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def hits(n: int = 2, raw: dict[str, object] | None = None) -> list[Hit]:
    return [Hit(id=i + 1, url=f"https://example.com/{i}", title=f"t{i}", raw=raw or {}) for i in range(n)]


def keys_of(url: str, prefix: str) -> list[bytes]:
    client = redis.Redis.from_url(url)
    try:
        return sorted(client.scan_iter(match=prefix + "*"))
    finally:
        client.close()


# -- arguments and URLs --------------------------------------------------------------------------------------


def test_defaults_and_url_options(valkey: ValkeyServer) -> None:
    store = RedisStore(valkey.url)
    assert (store.prefix, store.cluster, store.timeout_ms, store.fleet_size) == ("perplexed:", False, 50, 1)
    assert store.shared is True
    store = RedisStore(valkey.url + "?prefix=app1:&timeout_ms=75&fleet_size=8&cluster=false")
    assert (store.prefix, store.cluster, store.timeout_ms, store.fleet_size) == ("app1:", False, 75, 8)
    # the constructor's arguments win over the URL
    store = RedisStore(valkey.url + "?prefix=app1:&fleet_size=8", prefix="app2:", fleet_size=2, timeout_ms=20)
    assert (store.prefix, store.fleet_size, store.timeout_ms) == ("app2:", 2, 20)
    assert isinstance(open_store(valkey.url + "?prefix=via-url:"), RedisStore)
    assert open_store(valkey.url + "?prefix=via-url:").prefix == "via-url:"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"url": "http://127.0.0.1:6379"}, "url"),
        ({"url": 6379}, "url"),
        ({"url": "redis://127.0.0.1:6379", "prefix": ""}, "prefix"),
        ({"url": "redis://127.0.0.1:6379", "timeout_ms": 0}, "timeout_ms"),
        ({"url": "redis://127.0.0.1:6379", "timeout_ms": True}, "timeout_ms"),
        ({"url": "redis://127.0.0.1:6379?timeout_ms=soon"}, "timeout_ms"),
        ({"url": "redis://127.0.0.1:6379", "fleet_size": 0}, "fleet_size"),
        ({"url": "redis://127.0.0.1:6379", "fleet_size": 2.5}, "fleet_size"),
        ({"url": "redis://127.0.0.1:6379?cluster=maybe"}, "cluster"),
        ({"url": "unix:///tmp/valkey.sock", "cluster": True}, "cluster"),
    ],
)
def test_bad_arguments_are_config_errors_naming_them(kwargs: dict[str, object], named: str) -> None:
    url = kwargs.pop("url")
    with pytest.raises(ConfigError, match=named):
        RedisStore(url, **kwargs)  # type: ignore[arg-type]


def test_password_never_shown(valkey: ValkeyServer) -> None:
    store = RedisStore(f"redis://user:pw-9f8e7d6c5b@127.0.0.1:{valkey.port}/0")
    assert "pw-9f8e7d6c5b" not in repr(store) and "pw-9f8e7d6c5b" not in store.url
    assert "pw-9f8e7d6c5b" not in redact("auth failed for pw-9f8e7d6c5b")


# -- what is written, and where --------------------------------------------------------------------------------


async def test_keys_are_prefixed_hashed_and_free_of_secrets(valkey: ValkeyServer, redis_prefix: str) -> None:
    secret = "sk-test-0123456789abcdefSECRET"
    register_secret(secret)
    identity = "searxng|https://search.example|" + secret  # an identity that (wrongly) carried a key
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)
    decision = await store.admit(Admission(identity, "exa", cache_key="ck", rate_limit=(5, 1.0), cooldown=True,
                                           price=0.01, spend_limits=((86400.0, 5.0),)))
    await store.record(Record(identity, "exa", health="answer", cooldown_after=3, ticket=decision.ticket,
                              cost=0.01, cache_key="ck", ttl_s=60, latency_ms=12.0,
                              answer=CachedAnswer(hits(raw={"echo": f"api_key={secret}"}), "d")))
    client = redis.Redis.from_url(valkey.url)
    names = keys_of(valkey.url, redis_prefix)
    assert names and all(name.startswith(redis_prefix.encode()) for name in names)
    dump = b"".join(names)
    for name in names:
        kind = client.type(name)
        if kind == b"string":
            dump += client.get(name) or b""
        elif kind == b"hash":
            dump += b"".join(k + v for k, v in client.hgetall(name).items())
        elif kind == b"zset":
            dump += b"".join(m for m, _ in client.zrange(name, 0, -1, withscores=True))
        elif kind == b"list":
            dump += b"".join(client.lrange(name, 0, -1))
    client.close()
    assert secret.encode() not in dump
    assert identity.encode() not in dump  # provider identities are hashed again before they become names
    cached = await store.admit(Admission(identity, "exa", cache_key="ck"))
    assert cached.verdict == "cached" and cached.answer is not None
    assert cached.answer.hits[0].raw == {"echo": "api_key=[REDACTED]"}
    await store.clear()
    assert keys_of(valkey.url, redis_prefix) == []
    await store.aclose()


async def test_answers_over_1_mib_are_not_cached(valkey: ValkeyServer, redis_prefix: str) -> None:
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)
    big = [Hit(id=1, url="https://example.com/big", content="x" * (MAX_CACHE_BYTES + 10))]
    small = [Hit(id=1, url="https://example.com/small", content="x" * (MAX_CACHE_BYTES - 2000))]
    await store.record(Record(P, "p", health="answer", cache_key="big", answer=CachedAnswer(big), ttl_s=60))
    await store.record(Record(P, "p", health="answer", cache_key="small", answer=CachedAnswer(small), ttl_s=60))
    assert (await store.admit(Admission(P, "p", cache_key="big"))).verdict == "call"
    assert (await store.admit(Admission(P, "p", cache_key="small"))).verdict == "cached"
    await store.clear()
    await store.aclose()


async def test_prefixes_isolate_and_instances_share(valkey: ValkeyServer, redis_prefix: str) -> None:
    one = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)
    two = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)  # another worker, same fleet
    other = RedisStore(valkey.url, prefix=redis_prefix + "other:", timeout_ms=2000)
    limit = Admission(P, "p", rate_limit=(1, 60.0))
    assert (await one.admit(limit)).verdict == "call"
    assert (await two.admit(limit)).verdict == "rate_limited"
    assert (await other.admit(limit)).verdict == "call"
    for store in (one, two, other):
        await store.clear()
        await store.aclose()


async def test_scripts_are_reloaded_after_script_flush(valkey: ValkeyServer, redis_prefix: str) -> None:
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)
    assert (await store.admit(Admission(P, "p", rate_limit=(2, 60.0)))).verdict == "call"
    client = redis.Redis.from_url(valkey.url)
    client.script_flush()  # e.g. a restarted or failed-over server: EVALSHA answers NOSCRIPT
    client.close()
    assert (await store.admit(Admission(P, "p", rate_limit=(2, 60.0)))).verdict == "call"
    assert (await store.admit(Admission(P, "p", rate_limit=(2, 60.0)))).verdict == "rate_limited"
    assert store.outages == 0
    await store.clear()
    await store.aclose()


async def test_cluster_keys_of_a_provider_share_one_slot(valkey_cluster: ValkeyCluster, redis_prefix: str) -> None:
    store = RedisStore(valkey_cluster.url, prefix=redis_prefix, timeout_ms=5000)
    for provider in ("a", "b", "c", "d"):
        decision = await store.admit(Admission(provider, provider, cache_key="k", claim_fill=True, cooldown=True,
                                               rate_limit=(5, 1.0), price=0.01, spend_limits=((3600.0, 1.0),)))
        assert decision.verdict == "call" and decision.ticket
        await store.record(Record(provider, provider, health="failure", cooldown_after=5, ticket=decision.ticket,
                                  cost=0.01, cache_key="k", release_fill=True, latency_ms=5.0,
                                  answer=CachedAnswer(hits()), ttl_s=60))
    assert store.outages == 0
    client = RedisCluster(host="127.0.0.1", port=valkey_cluster.nodes[0].port)
    names = [k.decode() for k in client.scan_iter(match=redis_prefix + "*")]
    by_tag: dict[str, set[int]] = {}
    for name in names:
        tag = name[name.index("{") + 1:name.index("}")]
        by_tag.setdefault(tag, set()).add(int(client.cluster_keyslot(name)))
    client.close()
    assert "spend" in by_tag and len(by_tag) == 5  # four providers + the spend keys
    assert all(len(slots) == 1 for slots in by_tag.values())
    assert len({next(iter(s)) for s in by_tag.values()}) > 1  # providers spread over the cluster
    assert (await store.spend(3600)) == pytest.approx({"a": 0.01, "b": 0.01, "c": 0.01, "d": 0.01})
    await store.clear()
    await store.aclose()


# -- event loops and the sync API --------------------------------------------------------------------------------


def test_one_store_from_many_event_loops_and_threads(valkey: ValkeyServer, redis_prefix: str) -> None:
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)
    limit = Admission(P, "p", rate_limit=(6, 60.0))

    async def admit_twice() -> list[str]:
        return [(await store.admit(limit)).verdict for _ in range(2)]

    verdicts = asyncio.run(admit_twice()) + asyncio.run(admit_twice())  # two loops, one after the other
    results: list[list[str]] = []
    threads = [threading.Thread(target=lambda: results.append(asyncio.run(admit_twice()))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    verdicts += [v for r in results for v in r]
    assert sorted(verdicts) == ["call"] * 6 + ["rate_limited"] * 4
    assert store.outages == 0
    asyncio.run(store.clear())
    store.close()


def test_sync_search_through_a_redis_store(valkey: ValkeyServer, redis_prefix: str) -> None:
    calls: list[str] = []

    def provider(query: str, options: object) -> list[dict[str, str]]:
        calls.append(query)
        return [{"url": "https://example.com/a", "title": "a"}]

    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)
    perplexed.configure(store=store)
    try:
        first = perplexed.search("same", provider, cache_ttl_s=60)
        second = perplexed.search("same", provider, cache_ttl_s=60)
        third = asyncio.run(perplexed.asearch("same", provider, cache_ttl_s=60))
    finally:
        perplexed.reset()
    assert calls == ["same"]
    assert not first.attempts[0].cached and second.attempts[0].cached and third.attempts[0].cached
    assert store.outages == 0
    asyncio.run(store.clear())
    store.close()


# -- the Lua rules are the pure policy's ----------------------------------------------------------------------------

COOL = Admission(P, "p", cooldown=True, trial_lease_s=5.0)
EARLY = Admission(P, "p", cooldown=True, trial_lease_s=5.0, early_trial=True)


def rec(health: str, *, trial: bool = False, after: int = 2, retry_after: float | None = None) -> Record:
    return Record(P, "p", health=health, trial=trial, cooldown_after=after, cooldown_s=10.0,  # type: ignore[arg-type]
                  retry_after_s=retry_after)


# each step: ("admit", Admission) | ("record", Record-maker taking the last decision's trial flag) | ("tick", s)
SEQUENCES = {
    "count to a cool-down, trial fails, doubles": [
        ("record", "failure"), ("admit", COOL), ("record", "failure"), ("admit", COOL), ("tick", 10.0),
        ("admit", COOL), ("admit", COOL), ("record", "failure"), ("admit", COOL), ("tick", 19.9), ("admit", COOL),
        ("tick", 0.2), ("admit", COOL), ("record", "answer"), ("admit", COOL),
    ],
    "neutral keeps the count and releases a trial": [
        ("record", "failure"), ("record", "neutral"), ("record", "failure"), ("admit", COOL), ("tick", 10.0),
        ("admit", COOL), ("record", "neutral"), ("admit", COOL), ("admit", COOL),
    ],
    "retry-after wins and is capped": [
        ("record", "retry:3.5"), ("admit", COOL), ("tick", 3.5), ("admit", COOL), ("record", "retry:5000"),
        ("admit", COOL), ("tick", 600.0), ("admit", COOL),
    ],
    "early trial, lease expiry": [
        ("record", "failure"), ("record", "failure"), ("admit", EARLY), ("admit", EARLY), ("tick", 5.1),
        ("admit", EARLY), ("record", "failure"), ("admit", COOL), ("tick", 20.0), ("admit", COOL),
    ],
    "failures while cooling down only count": [
        ("record", "failure"), ("record", "failure"), ("record", "failure"), ("record", "failure"),
        ("admit", COOL), ("tick", 10.0), ("admit", COOL), ("record", "answer"), ("record", "failure"),
        ("admit", COOL),
    ],
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
async def test_lua_cooldowns_match_the_policy(name: str, valkey: ValkeyServer, redis_prefix: str) -> None:
    clock = Clock()
    memory = MemoryStore(clock=clock)
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000, clock=clock)
    trial = {"memory": False, "redis": False}
    for step, arg in SEQUENCES[name]:
        if step == "tick":
            clock.now += arg  # type: ignore[operator]
            continue
        for label, target in (("memory", memory), ("redis", store)):
            if step == "admit":
                decision = await target.admit(arg)  # type: ignore[arg-type]
                trial[label] = decision.trial
                seen = (decision.verdict, decision.trial, round(decision.wait_s, 6))
            else:
                health, _, retry = str(arg).partition(":")
                await target.record(rec(health, trial=trial[label], retry_after=float(retry) if retry else None))
                seen = None
            state = await target.state(P)
            snapshot = (seen, state.failures, state.cooling_down, state.trial_in_flight,
                        None if state.cooldown_ends_in_s is None else round(state.cooldown_ends_in_s, 6))
            if label == "memory":
                expected = snapshot
            else:
                assert snapshot == expected, (name, step, arg)
    assert store.outages == 0
    await store.clear()
    await store.aclose()


async def test_lua_window_and_spend_match_the_policy(valkey: ValkeyServer, redis_prefix: str) -> None:
    clock = Clock()
    memory = MemoryStore(clock=clock)
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000, clock=clock)
    paid = Admission(P, "exa", rate_limit=(3, 2.0), price=0.3, spend_limits=((5.0, 1.0), (60.0, 1.5)))
    steps = [0.0, 0.1, 0.5, 0.3, 1.2, 0.01, 0.7, 2.5, 0.4, 3.0, 0.2, 10.0, 0.0, 50.0, 0.1]
    for i, tick in enumerate(steps):
        clock.now += tick
        got = []
        for target in (memory, store):
            decision = await target.admit(paid)
            if decision.verdict == "call" and i % 3 == 0:  # settle some at a lower actual cost
                await target.record(Record(P, "exa", ticket=decision.ticket, cost=0.1))
            got.append((decision.verdict, round(decision.wait_s, 6), (await target.spend(5.0)),
                        (await target.spend(60.0)), (await target.state(P, 2.0)).window_calls))
        mem, red = got
        assert red[:2] == mem[:2] and red[4] == mem[4], (i, got)
        assert red[2] == pytest.approx(mem[2]) and red[3] == pytest.approx(mem[3]), (i, got)
    assert store.outages == 0
    await store.clear()
    await store.aclose()


def test_lua_sources_hash_to_their_sha() -> None:
    from perplexed.store._redis_lua import SCRIPTS  # private: each Lua script hashes to its SHA

    assert all(hashlib.sha1(s.source.encode()).hexdigest() == s.sha for s in SCRIPTS)
    assert len({s.sha for s in SCRIPTS}) == len(SCRIPTS)


def test_perplexed_store_environment_variable(valkey: ValkeyServer, redis_prefix: str, monkeypatch: Any) -> None:
    from perplexed.engine import _governance  # private: the store opened from PERPLEXED_STORE

    perplexed.reset()
    monkeypatch.setenv("PERPLEXED_STORE", f"{valkey.url}?prefix={redis_prefix}&fleet_size=4&timeout_ms=500")
    store = _governance.current_store()
    assert isinstance(store, RedisStore)
    assert (store.prefix, store.fleet_size, store.timeout_ms) == (redis_prefix, 4, 500)
    assert _governance.current_store() is store  # opened once
    assert asyncio.run(store.admit(Admission(P, "p", rate_limit=(1, 60.0)))).verdict == "call"
    assert store.outages == 0
    asyncio.run(store.clear())


def test_one_round_trip_before_the_provider_call(valkey_factory: Any, monkeypatch: Any) -> None:
    from perplexed.store._resp import RespClient  # private: counts the RESP round trips made

    server: ValkeyServer = valkey_factory()  # fresh: no script loaded yet
    waited: list[tuple[Any, ...]] = []  # commands a caller waited for (round trips)
    original = RespClient.execute_command

    async def counting(self: RespClient, *args: Any) -> Any:
        waited.append(args[:2])
        return await original(self, *args)

    monkeypatch.setattr(RespClient, "execute_command", counting)
    admin = redis.Redis.from_url(server.url)
    seen: list[int] = []

    def provider(query: str, options: object) -> list[dict[str, str]]:
        seen.append(len(waited))
        return [{"url": "https://example.com/a", "title": "a"}]

    store = RedisStore(server.url, timeout_ms=2000)
    perplexed.configure(store=store, rate_limits={"provider": "100/s"}, cooldown_after=3,
                        spend_limits={"day": 5.0})
    try:
        chain = perplexed.providers.FunctionProvider(provider, name="provider", cost=0.01)
        for i in range(3):
            before = len(waited)
            result = perplexed.search(f"q{i}", chain, cache_ttl_s=60)
            assert result.provider == "provider" and not result.attempts[0].cached
            # one round trip before the provider call (the admission: EVALSHA, found at once even on a fresh
            # server), none after it (the record is pipelined behind it and not waited for)
            assert seen[-1] - before == 1 and waited[before][0] == "EVALSHA", waited[before:]
            assert len(waited) == seen[-1]
        again = perplexed.search("q0", chain, cache_ttl_s=60)  # the record landed: a cache hit
        assert again.attempts[0].cached
    finally:
        perplexed.reset()
    stats = admin.info("commandstats")
    assert "cmdstat_eval" not in stats  # never a NOSCRIPT retry
    assert store.outages == 0
    admin.close()
    store.close()
