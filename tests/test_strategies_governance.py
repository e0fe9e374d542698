"""Strategies under governance: hedged and merged calls go through the governed attempt (cache, cool-downs,
budgets), the quality floor is applied after the cache (a cached answer is judged like a fresh one), and an
insufficient answer counts as healthy for cool-downs. Sync and async (the ``api`` fixture)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from perplexed import Hit, Outcome, ProviderAnswer, Result, reset
from perplexed.providers import FunctionProvider
from testkit.loopback import SearchAPI

LONG = 60_000


@pytest.fixture(autouse=True)
def _fresh_store() -> Any:
    reset()
    yield
    reset()


class Counts:
    def __init__(self, *urls: str, delay: float = 0.0, fail: bool = False) -> None:
        self.urls, self.delay, self.fail, self.calls = urls, delay, fail, 0

    async def __call__(self, query: str, options: Any) -> ProviderAnswer:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail:
            raise ConnectionError("down")
        return ProviderAnswer(hits=[Hit(url=u) for u in self.urls])


def outcomes(result: Result) -> list[tuple[str, str]]:
    return [(a.provider, a.outcome.value) for a in result.attempts]


async def test_a_cached_answer_is_judged_like_a_fresh_one(api: SearchAPI) -> None:
    one = Counts("https://a.example/1")
    p = FunctionProvider(one, name="one")
    fresh = await api("q", [p], cache_ttl_s=60)
    assert outcomes(fresh) == [("one", "ok")]

    judged = await api("q", [p, FunctionProvider(Counts(), name="empty")], cache_ttl_s=60, min_hits=2)

    assert one.calls == 1  # served from the cache
    assert judged.attempts[0].cached is True
    assert outcomes(judged) == [("one", "insufficient"), ("empty", "empty")]
    assert judged.provider == "one"  # still the best answer
    assert [h.url for h in judged.hits] == ["https://a.example/1"]


async def test_an_insufficient_answer_is_healthy_for_cool_downs(api: SearchAPI) -> None:
    few = FunctionProvider(Counts("https://a.example/1"), name="few", cooldown_after=1)
    broken = FunctionProvider(Counts(fail=True), name="broken", cooldown_after=1)
    for _ in range(3):
        result = await api("q", [few], min_hits=2)
        assert outcomes(result) == [("few", "insufficient")]  # never skipped as cooling down
    # the same setting does cool down a failing provider (the test above is not vacuous)
    await api("q", [broken, few], min_hits=2)
    again = await api("q", [broken, few], min_hits=2)
    assert again.attempts[0].outcome is Outcome.SKIPPED
    assert again.attempts[0].reason == "cooling_down"


async def test_merge_is_cached_per_provider(api: SearchAPI) -> None:
    a, b = Counts("https://a.example/"), Counts("https://b.example/")
    pa, pb = FunctionProvider(a, name="a"), FunctionProvider(b, name="b")
    first = await api("q", [pa, pb], strategy="merge", cache_ttl_s=60)
    second = await api("q", [pa, pb], strategy="merge", cache_ttl_s=60)
    assert (a.calls, b.calls) == (1, 1)
    assert second.provider == "a,b"
    assert [a_.cached for a_ in second.attempts] == [True, True]
    assert [h.url for h in second.hits] == [h.url for h in first.hits]
    assert [h.sources for h in second.hits] == [h.sources for h in first.hits]


async def test_hedged_skips_a_cooling_down_provider_and_moves_on_at_once(api: SearchAPI) -> None:
    broken = FunctionProvider(Counts(fail=True), name="broken", cooldown_after=1, cooldown_s=60)
    good = FunctionProvider(Counts("https://g.example/"), name="good")
    await api("q", [broken, good], strategy="hedged", hedge_after_ms=LONG)
    result = await api("q", [broken, good], strategy="hedged", hedge_after_ms=LONG, deadline_ms=LONG)
    assert outcomes(result) == [("broken", "skipped"), ("good", "ok")]


async def test_merge_keeps_budget_usd_across_concurrent_calls(api: SearchAPI) -> None:
    a, b = Counts("https://a.example/"), Counts("https://b.example/")
    pa, pb = FunctionProvider(a, name="a", cost=0.01), FunctionProvider(b, name="b", cost=0.01)
    result = await api("q", [pa, pb], strategy="merge", budget_usd=0.015)
    assert outcomes(result) == [("a", "ok"), ("b", "skipped")]
    assert result.attempts[1].reason == "over_budget"
    assert b.calls == 0
    assert result.cost == pytest.approx(0.01)
    assert result.provider == "a"


async def test_hedged_keeps_budget_usd_while_the_first_call_is_in_flight(api: SearchAPI) -> None:
    events: list[asyncio.Event] = []  # made on the loop the search runs on

    def skipped() -> asyncio.Event:
        if not events:
            events.append(asyncio.Event())
        return events[0]

    async def slow(query: str, options: Any) -> ProviderAnswer:
        await skipped().wait()  # answers only once the hedge was refused
        return ProviderAnswer(hits=[Hit(url="https://s.example/")])

    def on_attempt(attempt: Any) -> None:
        if attempt.outcome is Outcome.SKIPPED:
            skipped().set()

    second = Counts("https://b.example/")
    result = await api("q", [FunctionProvider(slow, name="slow", cost=0.01),
                             FunctionProvider(second, name="second", cost=0.01)],
                       strategy="hedged", hedge_after_ms=10, budget_usd=0.015, provider_timeout_ms=LONG,
                       on_attempt=on_attempt)
    assert outcomes(result) == [("slow", "ok"), ("second", "skipped")]
    assert result.attempts[1].reason == "over_budget"
    assert second.calls == 0
    assert result.cost <= 0.015


async def test_hedged_within_budget_hedges(api: SearchAPI) -> None:
    slow = Counts("https://s.example/", delay=30)
    second = Counts("https://b.example/")
    result = await api("q", [FunctionProvider(slow, name="slow", cost=0.01),
                             FunctionProvider(second, name="second", cost=0.01)],
                       strategy="hedged", hedge_after_ms=10, budget_usd=0.02, provider_timeout_ms=LONG)
    assert outcomes(result) == [("slow", "cancelled"), ("second", "ok")]
    assert result.cost == pytest.approx(0.01)
