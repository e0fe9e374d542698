"""The chain's memory through the public API: cache, single flight, budgets, rate limits, cool-downs, spend.

Calls are counted at the server (loopback) or in the provider function; time-sensitive assertions are
generous. The pure rules are tested in test_policy.py, the stores in tests/store/.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import ConfigError, InvalidRequest, Outcome, ProviderAnswer, UpstreamError, telemetry
from perplexed.engine import _governance  # private: reads settings, the current store, member identities
from perplexed.providers import FunctionProvider, SearXNG
from perplexed.providers.local import build_index
from perplexed.store import MemoryStore, SQLiteStore, Store
from testkit.loopback import Json, LoopbackServer, Status, searxng_json, sequence, serve

loopback_api = pytest.fixture(params=["sync", "async"])(lambda request: request.param)


@pytest.fixture
def server() -> Any:
    with serve({"/search": Json(searxng_json(3))}) as srv:
        yield srv


async def run(mode: str, query: str, provider: Any, **options: Any) -> perplexed.Result:
    if mode == "sync":
        return await asyncio.to_thread(perplexed.search, query, provider, **options)
    return await perplexed.asearch(query, provider, **options)


def searx(srv: LoopbackServer, **kw: Any) -> SearXNG:
    return SearXNG(base_url=srv.url, **kw)


class Counter:
    """A function provider that counts its calls and answers from a script."""

    def __init__(self, *replies: Any, price: float | None = None) -> None:
        self.calls = 0
        self.replies = list(replies) or [[{"url": "https://example.org/a", "title": "A"}]]

    def __call__(self, query: str, options: Any) -> Any:
        self.calls += 1
        reply = self.replies[min(self.calls, len(self.replies)) - 1]
        if isinstance(reply, BaseException):
            raise reply
        return reply


# -- cache --------------------------------------------------------------------------------------------------


async def test_cache_hit_is_a_free_cached_ok_attempt_and_no_call(server: LoopbackServer, loopback_api: str) -> None:
    provider = searx(server, cost=0.002)
    first = await run(loopback_api, "zoning", provider, cache_ttl_s=60)
    second = await run(loopback_api, "  zoning  ", provider, cache_ttl_s=60)
    assert len(server.requests) == 1
    assert first.attempts[0].cached is False and first.attempts[0].cost == 0.002
    hit = second.attempts[0]
    assert (hit.outcome, hit.cached, hit.cost, hit.billable) == (Outcome.OK, True, 0.0, False)
    assert second.cost == 0.0
    assert [h.url for h in second.hits] == [h.url for h in first.hits]
    assert [h.id for h in second.hits] == [1, 2, 3]
    assert second.provider == "searxng"


async def test_cache_key_ignores_chain_options_but_not_search_options(server: LoopbackServer) -> None:
    provider = searx(server)
    await perplexed.asearch("q", provider, cache_ttl_s=60)
    for options in ({"provider_timeout_ms": 5000}, {"deadline_ms": 9000}, {"fallback_on": ["error"]},
                    {"budget_usd": 1.0}, {"cache_ttl_s": 5}):
        options.setdefault("cache_ttl_s", 60)
        result = await perplexed.asearch("q", provider, **options)
        assert result.attempts[0].cached, options
    assert len(server.requests) == 1
    for options in ({"max_results": 2}, {"language": "de"}, {"engines": "bing"}):
        result = await perplexed.asearch("q", provider, cache_ttl_s=60, **options)
        assert not result.attempts[0].cached, options
    assert not (await perplexed.asearch("another q", provider, cache_ttl_s=60)).attempts[0].cached
    assert len(server.requests) == 5


async def test_cache_is_per_provider_identity(server: LoopbackServer) -> None:
    with serve({"/search": Json(searxng_json(2))}) as other:
        await perplexed.asearch("q", searx(server), cache_ttl_s=60)
        result = await perplexed.asearch("q", searx(other), cache_ttl_s=60)
        assert not result.attempts[0].cached
        # the same identity built again (another object) shares the entry
        assert (await perplexed.asearch("q", searx(other), cache_ttl_s=60)).attempts[0].cached
    f1, f2 = Counter(), Counter()
    await perplexed.asearch("q", FunctionProvider(f1, name="fn"), cache_ttl_s=60)
    await perplexed.asearch("q", FunctionProvider(lambda q, o: f2(q, o), name="fn"), cache_ttl_s=60)
    assert f2.calls == 1  # same label, another function: another identity


async def test_empty_answers_and_errors_are_not_cached() -> None:
    empty, broken = Counter([]), Counter(RuntimeError("down"))
    for _ in range(2):
        await perplexed.asearch("q", FunctionProvider(empty, name="empty"), cache_ttl_s=60)
        with pytest.raises(UpstreamError):
            await perplexed.asearch("q", FunctionProvider(broken, name="broken"), cache_ttl_s=60)
    assert (empty.calls, broken.calls) == (2, 2)


async def test_cache_expires(server: LoopbackServer) -> None:
    provider = searx(server)
    await perplexed.asearch("q", provider, cache_ttl_s=0.2)
    await asyncio.sleep(0.3)
    assert not (await perplexed.asearch("q", provider, cache_ttl_s=0.2)).attempts[0].cached
    assert len(server.requests) == 2


async def test_a_chain_looks_each_provider_up_in_order() -> None:
    failing, ok = Counter(RuntimeError("down")), Counter()
    chain = [FunctionProvider(failing, name="a"), FunctionProvider(ok, name="b")]
    await perplexed.asearch("q", chain, cache_ttl_s=60)
    result = await perplexed.asearch("q", chain, cache_ttl_s=60)
    assert [(a.provider, a.outcome.value, a.cached) for a in result.attempts] == [("a", "error", False), ("b", "ok", True)]
    assert (failing.calls, ok.calls) == (2, 1)


def test_local_provider_is_never_cached(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "zoning.md").write_text("# Zoning\n\nSetbacks are five feet from the lot line.\n")
    build_index([docs], tmp_path / "index.sqlite")
    local = perplexed.providers.Local(tmp_path / "index.sqlite")
    first = perplexed.search("setbacks", local, cache_ttl_s=60)
    second = perplexed.search("setbacks", local, cache_ttl_s=60)
    assert first.hits and second.hits
    assert not second.attempts[0].cached


async def test_a_cache_hit_counts_against_no_rate_window() -> None:
    fn = Counter()
    provider = FunctionProvider(fn, name="fn", rate_limit="2/min", rate_limit_wait_ms=0)
    for _ in range(4):  # one call, three hits
        await perplexed.asearch("q", provider, cache_ttl_s=60)
    result = await perplexed.asearch("other", provider, cache_ttl_s=60)  # the window holds one call only
    assert result.attempts[0].outcome is Outcome.OK and not result.attempts[0].cached
    assert fn.calls == 2


async def test_cache_wins_over_budget_and_limits() -> None:
    fn = Counter()
    provider = FunctionProvider(fn, name="fn", rate_limit="1/min", rate_limit_wait_ms=0, cost=0.5)
    first = await perplexed.asearch("q", provider, cache_ttl_s=60)
    assert first.cost == 0.5
    perplexed.configure(spend_limits={"hour": 0.5})
    for _ in range(3):  # the window is full, the hour's budget spent, budget_usd=0: the cache still answers
        result = await perplexed.asearch("q", provider, cache_ttl_s=60, budget_usd=0.0)
        assert result.attempts[0].cached
    assert fn.calls == 1
    assert perplexed.spend("hour") == {"fn": 0.5}


# -- single flight ---------------------------------------------------------------------------------------------


async def test_single_flight_shares_one_call() -> None:
    with serve({"/search": Json(searxng_json(3), delay=0.3)}) as srv:
        provider = searx(srv, cost=0.01)
        results = await asyncio.gather(
            *(perplexed.asearch("q", provider, cache_ttl_s=60, cache_single_flight=True) for _ in range(5))
        )
        assert len(srv.requests) == 1
        cached = [r.attempts[0].cached for r in results]
        assert sorted(cached) == [False, True, True, True, True]
        assert sum(r.cost for r in results) == pytest.approx(0.01)
        assert all(len(r.hits) == 3 for r in results)


async def test_single_flight_in_process_is_on_with_the_cache_alone() -> None:
    # the contract (issue 22 point 5): in-process single flight comes with the cache; cache_single_flight only
    # adds the cross-process wait
    with serve({"/search": Json(searxng_json(3), delay=0.2)}) as srv:
        results = await asyncio.gather(*(perplexed.asearch("q", searx(srv), cache_ttl_s=60) for _ in range(3)))
        assert len(srv.requests) == 1
        assert sorted(r.attempts[0].cached for r in results) == [False, True, True]


async def test_single_flight_failure_lets_each_waiter_call_itself() -> None:
    with serve({"/search": sequence(Status(500, "boom", delay=0.3), then=Json(searxng_json(2)))}) as srv:
        results = await asyncio.gather(
            *(perplexed.asearch("q", [searx(srv)], cache_ttl_s=60, cache_single_flight=True) for _ in range(4)),
            return_exceptions=True,
        )
        assert isinstance(results[0], UpstreamError)  # the leader's own call failed
        waiters = results[1:]
        assert all(isinstance(r, perplexed.Result) for r in waiters)
        # each waiter called the provider itself (none was handed the failure as a hit)
        assert len(srv.requests) == 4
        assert all(not r.attempts[0].cached for r in waiters)  # type: ignore[union-attr]


# -- per-call budget --------------------------------------------------------------------------------------------


async def test_budget_usd_skips_a_paid_provider_that_would_exceed_it(loopback_api: str) -> None:
    empty_paid, paid, free = Counter([]), Counter(), Counter()
    chain = [FunctionProvider(empty_paid, name="p1", cost=0.01), FunctionProvider(paid, name="p2", cost=0.01),
             FunctionProvider(free, name="free")]
    result = await run(loopback_api, "q", chain, budget_usd=0.015)
    assert [(a.provider, a.outcome.value, a.reason) for a in result.attempts] == [
        ("p1", "empty", None), ("p2", "skipped", "over_budget"), ("free", "ok", None)]
    skipped = result.attempts[1]
    assert (skipped.cost, skipped.billable) == (0.0, False)
    assert "budget_usd" in (skipped.error or "")
    assert (empty_paid.calls, paid.calls, free.calls) == (1, 0, 1)
    assert result.cost == pytest.approx(0.01)


async def test_budget_usd_all_paid_skipped_is_all_providers_failed() -> None:
    with pytest.raises(UpstreamError) as info:
        await perplexed.asearch("q", [FunctionProvider(Counter(), name="p", cost=0.5)], budget_usd=0.1)
    assert info.value.reason == "all_providers_failed"
    assert [(a.outcome.value, a.reason) for a in info.value.attempts] == [("skipped", "over_budget")]


def test_budget_usd_is_validated() -> None:
    with pytest.raises(InvalidRequest, match="budget_usd"):
        perplexed.search("q", FunctionProvider(Counter(), name="p"), budget_usd=-1)


# -- rate limits ---------------------------------------------------------------------------------------------------


@pytest.mark.timing
async def test_rate_limit_waits_for_a_slot_when_it_fits(loopback_api: str) -> None:
    fn = Counter()
    provider = FunctionProvider(fn, name="fn", rate_limit="2/s", rate_limit_wait_ms=3000)
    for _ in range(2):
        await run(loopback_api, "q", provider)
    start = time.monotonic()
    result = await run(loopback_api, "q", provider)
    waited = time.monotonic() - start
    assert result.attempts[0].outcome is Outcome.OK
    assert waited >= 0.5  # the slot frees a second after the first call
    assert result.attempts[0].duration_ms >= 500  # the wait is part of the attempt
    assert fn.calls == 3


async def test_rate_limit_skips_when_the_wait_does_not_fit(loopback_api: str) -> None:
    fn, other = Counter(), Counter()
    provider = FunctionProvider(fn, name="fn", rate_limit="1/min", rate_limit_wait_ms=1000)
    await run(loopback_api, "q", provider)
    result = await run(loopback_api, "q", [provider, FunctionProvider(other, name="other")])
    assert [(a.provider, a.outcome.value, a.reason) for a in result.attempts] == [
        ("fn", "skipped", "rate_limited"), ("other", "ok", None)]
    assert fn.calls == 1
    with pytest.raises(UpstreamError) as info:  # rate limits are hard: no early trial
        await run(loopback_api, "q", [provider])
    assert info.value.reason == "all_providers_failed"
    assert [a.reason for a in info.value.attempts] == ["rate_limited"]


async def test_rate_limit_wait_is_capped_by_the_provider_budget() -> None:
    fn = Counter()
    provider = FunctionProvider(fn, name="fn", rate_limit="1/s", rate_limit_wait_ms=5000)
    await perplexed.asearch("q", provider)
    start = time.monotonic()
    with pytest.raises(UpstreamError):
        await perplexed.asearch("q", [provider], provider_timeout_ms=200)
    assert time.monotonic() - start < 0.5


async def test_configure_rate_limits_by_name_and_label(server: LoopbackServer) -> None:
    perplexed.configure(rate_limits={"searxng": "1/min", "mine": "3/min"}, rate_limit_wait_ms=0)
    plain, labelled = searx(server), searx(server, name="mine")
    await perplexed.asearch("q1", plain)
    assert (await perplexed.asearch("q2", [plain, labelled])).attempts[0].reason == "rate_limited"
    # "mine" has its own limit (3/min: the label wins over the name), counted on the provider's identity,
    # which it shares with `plain` (same registry name and URL): two calls so far, one more fits
    assert (await perplexed.asearch("l0", labelled)).attempts[0].outcome is Outcome.OK
    with pytest.raises(UpstreamError) as info:
        await perplexed.asearch("l1", [labelled])
    assert info.value.attempts[0].reason == "rate_limited"
    own = searx(server, name="mine", rate_limit="10/min")  # the constructor wins over configure
    assert (await perplexed.asearch("q3", own)).attempts[0].outcome is Outcome.OK


def test_malformed_rate_limits_are_config_errors_before_any_call() -> None:
    with pytest.raises(ConfigError, match="rate_limit"):
        FunctionProvider(Counter(), name="fn", rate_limit="5 per second")
    with pytest.raises(ConfigError, match="rate_limit"):
        perplexed.search("q", {"name": "searxng", "base_url": "http://127.0.0.1:9", "rate_limit": "fast"})
    perplexed.configure(rate_limits={"brave": "1/s"})
    with pytest.raises(ConfigError, match="rate_limits"):
        perplexed.configure(rate_limits={"brave": "1/fortnight"}, spend_limits={"day": 1.0})
    assert _governance._settings.rate_limits["brave"].text == "1/s"  # nothing changed
    assert _governance._settings.spend_limits == ()


# -- cool-downs -------------------------------------------------------------------------------------------------------


async def test_cooldown_trips_and_skips_without_calling(loopback_api: str) -> None:
    with serve({"/search": Status(500, "boom")}) as bad:
        ok = Counter()
        chain = [searx(bad, cooldown_after=2, cooldown_s=60), FunctionProvider(ok, name="ok")]
        for _ in range(2):
            await run(loopback_api, "q", chain)
        assert len(bad.requests) == 2
        result = await run(loopback_api, "q", chain)
        assert len(bad.requests) == 2
        first = result.attempts[0]
        assert (first.outcome, first.reason, first.cost, first.billable) == (Outcome.SKIPPED, "cooling_down", 0.0, False)
        assert result.provider == "ok"


async def test_request_specific_errors_do_not_count() -> None:
    with serve({"/search": Status(400, "bad")}) as srv:
        provider = searx(srv, cooldown_after=1)
        for _ in range(3):
            with pytest.raises(UpstreamError):
                await perplexed.asearch("q", [provider])
        assert len(srv.requests) == 3


async def test_an_answer_resets_the_count() -> None:
    fn = Counter(RuntimeError("a"), [], RuntimeError("b"), [{"url": "https://x.org"}])
    provider = FunctionProvider(fn, name="fn", cooldown_after=2)
    for _ in range(3):
        try:
            await perplexed.asearch("q", [provider])
        except UpstreamError:
            pass
    result = await perplexed.asearch("q", [provider])  # failure, empty, failure: never two in a row
    assert result.attempts[0].outcome is Outcome.OK and fn.calls == 4


async def test_retry_after_starts_a_cooldown_at_once() -> None:
    with serve({"/search": Status(429, "slow down", headers={"Retry-After": "30"})}) as srv:
        ok = Counter()
        chain = [searx(srv, cooldown_after=5), FunctionProvider(ok, name="ok")]
        await perplexed.asearch("q", chain)
        result = await perplexed.asearch("q", chain)
        assert len(srv.requests) == 1
        assert result.attempts[0].reason == "cooling_down"
        assert "29" in (result.attempts[0].error or "") or "30" in (result.attempts[0].error or "")


async def test_lone_search_gets_the_early_trial_and_success_closes_the_cooldown(loopback_api: str) -> None:
    fn = Counter(RuntimeError("down"), [{"url": "https://x.org/1"}])
    provider = FunctionProvider(fn, name="fn", cooldown_after=1, cooldown_s=300)
    with pytest.raises(UpstreamError):
        await run(loopback_api, "q", provider)
    result = await run(loopback_api, "q", provider)  # cooling down, but nothing else can answer: trial now
    assert [(a.outcome.value, a.reason) for a in result.attempts] == [("skipped", "cooling_down"), ("ok", None)]
    assert fn.calls == 2
    result = await run(loopback_api, "q", provider)
    assert [a.outcome.value for a in result.attempts] == ["ok"]  # closed


async def test_early_trial_picks_the_cooldown_that_ends_first() -> None:
    a, b = Counter(RuntimeError("a")), Counter(RuntimeError("b"), [{"url": "https://x.org/1"}])
    pa = FunctionProvider(a, name="a", cooldown_after=1, cooldown_s=300)
    pb = FunctionProvider(b, name="b", cooldown_after=1, cooldown_s=100)
    with pytest.raises(UpstreamError):
        await perplexed.asearch("q", [pa, pb])
    result = await perplexed.asearch("q", [pa, pb])
    assert [(x.provider, x.outcome.value) for x in result.attempts] == [
        ("a", "skipped"), ("b", "skipped"), ("b", "ok")]
    assert (a.calls, b.calls) == (1, 2)


async def test_a_crowd_sends_one_trial_not_a_stampede() -> None:
    with serve({"/search": sequence(Status(500, "down"), then=Json(searxng_json(2), delay=0.4))}) as srv:
        provider = searx(srv, cooldown_after=1, cooldown_s=300)
        with pytest.raises(UpstreamError):
            await perplexed.asearch("q", provider)
        results = await asyncio.gather(*(perplexed.asearch("q", provider) for _ in range(6)), return_exceptions=True)
        assert len(srv.requests) == 2  # the failure, then exactly one trial
        answered = [r for r in results if isinstance(r, perplexed.Result)]
        failed = [r for r in results if isinstance(r, UpstreamError)]
        assert len(answered) == 1 and len(failed) == 5
        assert all([a.reason for a in f.attempts] == ["cooling_down"] for f in failed)


async def test_failed_trial_doubles_the_cooldown() -> None:
    store = MemoryStore()
    perplexed.configure(store=store)
    fn = Counter(RuntimeError("down"))
    provider = FunctionProvider(fn, name="fn", cooldown_after=1, cooldown_s=10)
    with pytest.raises(UpstreamError):
        await perplexed.asearch("q", provider)
    with pytest.raises(UpstreamError):  # early trial fails
        await perplexed.asearch("q", provider)
    state = await store.state(_governance.provider_identity(provider))
    assert state.cooling_down and state.cooldown_ends_in_s == pytest.approx(20.0, abs=1.0)


# -- spend limits and reporting ------------------------------------------------------------------------------------


async def test_spend_limits_skip_paid_providers_free_ones_still_run(loopback_api: str) -> None:
    perplexed.configure(spend_limits={"hour": 0.025, "day": 5.0})
    paid, free = Counter(), Counter()
    chain = [FunctionProvider(paid, name="paid", cost=0.01), FunctionProvider(free, name="free")]
    results = [await run(loopback_api, f"q{i}", chain) for i in range(3)]
    assert [r.provider for r in results] == ["paid", "paid", "free"]
    assert results[2].attempts[0].reason == "over_budget"
    assert paid.calls == 2
    assert perplexed.spend("hour") == pytest.approx({"paid": 0.02})
    assert perplexed.spend() == pytest.approx({"paid": 0.02})
    assert await perplexed.aspend("day") == pytest.approx({"paid": 0.02})


async def test_spend_is_settled_with_the_actual_cost() -> None:
    perplexed.configure(spend_limits={"day": 1.0})

    def billed(q: str, o: Any) -> ProviderAnswer:
        return ProviderAnswer(hits=[perplexed.Hit(url="https://x.org")], cost=0.003)

    await perplexed.asearch("q", FunctionProvider(billed, name="billed", cost=0.5))
    assert perplexed.spend("day") == pytest.approx({"billed": 0.003})


def test_spend_window_is_validated() -> None:
    with pytest.raises(InvalidRequest, match="window"):
        perplexed.spend(window="year")


def test_plain_searches_and_agent_spend_are_reported() -> None:
    perplexed.search("q", FunctionProvider(Counter(), name="paid", cost=0.004))
    _governance.record_spend("perplexity-agent", 0.25)
    _governance.record_spend("perplexity-agent", None)
    assert perplexed.spend("day") == pytest.approx({"paid": 0.004, "perplexity-agent": 0.25})


def test_spend_limits_are_validated() -> None:
    with pytest.raises(ConfigError, match="spend_limits"):
        perplexed.configure(spend_limits={"year": 1.0})


# -- the store -------------------------------------------------------------------------------------------------------


class BrokenStore(Store):
    clock = staticmethod(time.time)

    async def admit(self, request: Any) -> Any:
        raise OSError("disk on fire")

    async def record(self, record: Any) -> None:
        raise OSError("disk on fire")

    async def spend(self, window_s: float) -> dict[str, float]:
        raise OSError("disk on fire")

    async def latency_p95(self, provider: str) -> float | None:
        raise OSError("disk on fire")

    async def state(self, provider: str, window_s: float | None = None) -> Any:
        raise OSError("disk on fire")


async def test_a_store_failure_never_fails_a_search(server: LoopbackServer, caplog: pytest.LogCaptureFixture,
                                                    loopback_api: str) -> None:
    perplexed.configure(store=BrokenStore(), spend_limits={"day": 1.0}, cooldown_after=1)
    with caplog.at_level(logging.WARNING, logger="perplexed.governance"):
        result = await run(loopback_api, "q", [searx(server, rate_limit="1/s")], cache_ttl_s=60, budget_usd=1.0)
    assert result.attempts[0].outcome is Outcome.OK
    assert "disk on fire" in caplog.text
    assert perplexed.spend() == {}


def test_unknown_store_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("bogus://x", "sqlite://", "postgres://db/x", "", 42):
        with pytest.raises(ConfigError):
            perplexed.configure(store=bad)
    monkeypatch.setenv("PERPLEXED_STORE", "mysql://nope")
    with pytest.raises(ConfigError, match="PERPLEXED_STORE"):
        perplexed.search("q", FunctionProvider(Counter(), name="fn"), cache_ttl_s=60)


def test_sqlite_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    absolute = tmp_path / "abs" / "state.db"
    perplexed.configure(store=f"sqlite:///{absolute}")  # four slashes in all: absolute
    store = _governance.current_store()
    assert isinstance(store, SQLiteStore) and store.path == absolute
    perplexed.configure(store="sqlite:///rel/state.db")
    store = _governance.current_store()
    assert isinstance(store, SQLiteStore) and store.path == Path("rel/state.db")
    fn = Counter()
    perplexed.search("q", FunctionProvider(fn, name="fn"), cache_ttl_s=60)
    perplexed.search("q", FunctionProvider(fn, name="fn"), cache_ttl_s=60)
    assert fn.calls == 1 and (tmp_path / "rel" / "state.db").exists()


def test_perplexed_store_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERPLEXED_STORE", f"sqlite:///{tmp_path}/env.db")
    fn = Counter()
    perplexed.search("q", FunctionProvider(fn, name="fn"), cache_ttl_s=60)
    assert (tmp_path / "env.db").exists()
    assert isinstance(_governance.current_store(), SQLiteStore)
    perplexed.configure(store="memory")  # code wins over the environment
    assert isinstance(_governance.current_store(), MemoryStore)


def test_configuring_memory_again_starts_fresh() -> None:
    fn = Counter()
    provider = FunctionProvider(fn, name="fn")
    perplexed.configure(store="memory")
    perplexed.search("q", provider, cache_ttl_s=60)
    perplexed.search("q", provider, cache_ttl_s=60)
    perplexed.configure(store="memory")
    perplexed.search("q", provider, cache_ttl_s=60)
    assert fn.calls == 2


def test_nothing_configured_touches_no_store() -> None:
    result = perplexed.search("q", FunctionProvider(Counter(), name="free"))
    assert result.attempts[0].outcome is Outcome.OK
    assert _governance._settings.default_store is None


async def test_attempt_events_carry_cached_and_reason(server: LoopbackServer) -> None:
    events: list[dict[str, Any]] = []
    with telemetry.scoped(lambda name, measurements, metadata: events.append(metadata)):
        provider = searx(server)
        await perplexed.asearch("q", provider, cache_ttl_s=60)
        await perplexed.asearch("q", provider, cache_ttl_s=60)
        with pytest.raises(UpstreamError):
            await perplexed.asearch("q", [FunctionProvider(Counter(), name="p", cost=1.0)], budget_usd=0.5)
    assert [(e["outcome"], e["cached"], e["reason"]) for e in events] == [
        ("ok", False, None), ("ok", True, None), ("skipped", False, "over_budget")]


async def test_sqlite_store_never_holds_up_the_event_loop(tmp_path: Path) -> None:
    """Admits and records run inline only when the write lock is free at once (else on the store's worker
    thread, which waits for it), on a connection that never checkpoints (the worker does); other coroutines
    keep running."""
    store = SQLiteStore(tmp_path / "s.db")
    perplexed.configure(store=store, cooldown_after=3, spend_limits={"day": 100.0})
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    provider = FunctionProvider(Counter(), name="fn", cost=0.001, rate_limit="1000/s")
    for i in range(30):
        await perplexed.asearch(f"q{i}", provider, cache_ttl_s=60)
        await asyncio.sleep(0.002)
    stop.set()
    await tick
    assert store._inline_conns
    assert store._conn is not None and store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] > 0
    for conn in store._inline_conns:
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert max(gaps) < 0.25  # generous on a loaded machine; ~10 ms on an idle one


async def test_a_cancelled_call_releases_its_trial_lease_and_reservation() -> None:
    store = MemoryStore()
    perplexed.configure(store=store, spend_limits={"day": 1.0})
    started = asyncio.Event()

    async def slow(query: str, options: Any) -> list[dict[str, str]]:
        started.set()
        await asyncio.sleep(30)
        return []

    provider = FunctionProvider(slow, name="slow", cost=0.4, cooldown_after=1, cooldown_s=60)
    identity = _governance.provider_identity(provider)
    await store.record(_governance.Record(provider=identity, label="slow", health="failure", cooldown_after=1))
    task = asyncio.create_task(perplexed.asearch("q", provider))  # cooling down: the early trial calls it
    await asyncio.wait_for(started.wait(), 5)
    assert (await store.state(identity)).trial_in_flight
    assert await store.spend(86400) == {"slow": 0.4}
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(50):
        await asyncio.sleep(0.01)
        if not (await store.state(identity)).trial_in_flight:
            break
    assert not (await store.state(identity)).trial_in_flight  # the next search may send a trial
    assert await store.spend(86400) == {}  # settled at 0: a cancelled call is not billed
