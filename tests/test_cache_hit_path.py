"""A cache hit's own path (issue 35): with the memory store, a hit of a sequential chain's first member is answered
before the engine is set up. These tests pin what a hit returns and records, sync and async, and that it is the
same as what the engine's own path gives: a subclass of :class:`MemoryStore` (any other store type) takes the
engine's path, so each case runs on both and the two must agree."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import perplexed
import pytest
from perplexed import Attempt, Hit, Outcome, Result, telemetry
from perplexed.providers import FunctionProvider
from perplexed.store import MemoryStore
from pydantic import ValidationError


class EngineMemory(MemoryStore):
    """The memory store through the engine's admission (the hit path takes the exact ``MemoryStore`` only)."""


STORES = {"hit path": MemoryStore, "engine path": EngineMemory}


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    perplexed.reset()
    yield
    perplexed.reset()


def answers(calls: list[str]) -> Any:
    def search(query: str, options: Any) -> list[dict[str, Any]]:
        calls.append(query)
        return [{"url": "https://a.example/1", "title": "A", "raw": {"tags": ["x"]}},
                {"url": "https://b.example/2", "title": "B"}]

    return search


async def run(mode: str, query: str, provider: Any, **options: Any) -> Result:
    if mode == "sync":
        return await asyncio.to_thread(lambda: perplexed.search(query, provider, **options))
    return await perplexed.asearch(query, provider, **options)


def shape(result: Result) -> tuple[Any, ...]:
    """What a result says, but the attempt's duration (a clock reading)."""
    attempts = [a.model_dump(exclude={"duration_ms"}) for a in result.attempts]
    return (result.query, result.provider, [h.model_dump() for h in result.hits], attempts, result.cost,
            result.usage, len(result))


# -- what a hit returns ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("path", list(STORES))
async def test_a_hit_returns_the_cached_answer_as_a_cached_attempt_that_spent_nothing(mode: str, path: str) -> None:
    perplexed.configure(store=STORES[path]())
    calls: list[str] = []
    provider = FunctionProvider(answers(calls), name="kb", cost=0.25)
    first = await run(mode, "q", provider, cache_ttl_s=600)
    hit = await run(mode, "q", provider, cache_ttl_s=600)
    assert calls == ["q"]
    assert (hit.query, hit.provider, hit.hits) == ("q", "kb", first.hits)
    [attempt] = hit.attempts
    assert attempt.model_dump(exclude={"duration_ms"}) == Attempt(
        provider="kb", outcome=Outcome.OK, billable=False, cached=True).model_dump(exclude={"duration_ms"})
    assert attempt.model_fields_set == {"provider", "outcome", "billable", "cached", "duration_ms", "detail"}
    assert 0 <= attempt.duration_ms < 1000
    assert hit.cost == 0.0
    usage = hit.usage
    assert (usage.calls, usage.billable_calls, usage.cost_usd, usage.cache_hits) == (1, 0, 0.0, 1)
    assert usage.saved_usd == pytest.approx(0.25)  # the provider's list price: what the hit saved
    assert hit.route == [] and hit.fetches == []


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("path", list(STORES))
async def test_a_caller_cannot_change_the_cached_entry_through_a_hit(mode: str, path: str) -> None:
    perplexed.configure(store=STORES[path]())
    provider = FunctionProvider(answers([]), name="kb")
    await run(mode, "q", provider, cache_ttl_s=600)
    one = await run(mode, "q", provider, cache_ttl_s=600)
    two = await run(mode, "q", provider, cache_ttl_s=600)
    assert one.hits is not two.hits and one.attempts is not two.attempts  # each result's lists are its own
    one.hits.reverse()
    one.hits.append(Hit(url="https://mine.example/"))
    one.attempts.clear()
    refused: list[Any] = [
        (ValidationError, lambda: setattr(two.hits[0], "title", "changed")),
        (ValidationError, lambda: setattr(two, "provider", "changed")),
        (ValidationError, lambda: setattr(two.attempts[0], "cached", False)),
        (TypeError, lambda: two.hits[0].raw.__setitem__("tags", [])),
        (TypeError, lambda: two.hits[0].raw["tags"].append("poison")),
        (TypeError, lambda: two.hits[0].sources.append({"provider": "poison"})),
    ]
    for error, change in refused:
        with pytest.raises(error):
            change()
    three = await run(mode, "q", provider, cache_ttl_s=600)
    assert [h.title for h in three.hits] == ["A", "B"] and three.hits[0].raw == {"tags": ["x"]}
    assert three.attempts[0].cached and [h.title for h in two.hits] == ["A", "B"]


# -- what a hit records ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("path", list(STORES))
async def test_a_hit_is_one_ledger_line_an_event_and_an_on_attempt_call(mode: str, path: str) -> None:
    perplexed.configure(store=STORES[path]())
    provider = FunctionProvider(answers([]), name="kb", cost=0.5)
    events: list[tuple[Any, ...]] = []
    seen: list[Attempt] = []
    await run(mode, "q", provider, cache_ttl_s=600, tag="team-a")
    with telemetry.scoped(lambda e, m, md: events.append((e, dict(m), dict(md)))):
        hit = await run(mode, "q", provider, cache_ttl_s=600, tag="team-a", on_attempt=seen.append)
    assert seen == hit.attempts and seen[0].cached
    [(event, measured, meta)] = events
    assert event == ("perplexed", "search", "attempt") and measured["cost"] == 0.0
    assert meta == {"provider": "kb", "outcome": "ok", "billable": False, "error": None, "detail": None,
                    "query": "q", "cached": True, "reason": None}
    report = await perplexed.ausage(by=("provider", "tag", "outcome"))
    [row] = report.rows
    assert (row.provider, row.tag, row.outcome) == ("kb", "team-a", "ok")
    assert (row.calls, row.cache_hits, row.billable_calls) == (2, 1, 1)
    assert row.cost_usd == pytest.approx(0.5) and row.saved_usd == pytest.approx(0.5)


# -- the same as the engine's path -------------------------------------------------------------------------------


CASES: dict[str, dict[str, Any]] = {
    "plain": {},
    "budget_usd": {"budget_usd": 0.06},
    "tag and single flight": {"tag": "svc", "cache_single_flight": True},
    "search options in the key": {"max_results": 1, "language": "en"},
    "a chain: the first member's entry": {"chain": True},
    "deadline and timeout": {"deadline_ms": 5000, "provider_timeout_ms": 2000},
}


@pytest.mark.parametrize("mode", ["async", "sync"])
@pytest.mark.parametrize("case", list(CASES))
async def test_the_hit_path_gives_what_the_engine_gives(mode: str, case: str) -> None:
    options = dict(CASES[case])
    chain = options.pop("chain", False)
    got: dict[str, tuple[Any, ...]] = {}
    for path, store in STORES.items():
        perplexed.reset()
        perplexed.configure(store=store(), spend_limits={"day": 100.0})
        calls: list[str] = []
        provider = FunctionProvider(answers(calls), name="kb", cost=0.05)
        spec: Any = [provider, FunctionProvider(answers([]), name="other")] if chain else provider
        first = await run(mode, "q", spec, cache_ttl_s=600, **options)
        hit = await run(mode, "q", spec, cache_ttl_s=600, **options)
        assert calls == ["q"] and hit.attempts[0].cached and not first.attempts[0].cached
        report = await perplexed.ausage(by=("provider", "outcome"))
        got[path] = (shape(hit), [(r.provider, r.outcome, r.calls, r.cache_hits, r.cost_usd, r.saved_usd)
                                  for r in report.rows])
    assert got["hit path"] == got["engine path"]


@pytest.mark.parametrize("path", list(STORES))
async def test_a_hit_consults_no_cool_down_rate_limit_or_spend_limit(path: str) -> None:
    """The cache is consulted before anything else: a provider cooling down, out of rate-limit slots, or whose
    price the spend limit no longer allows still answers from the cache (and spends nothing)."""
    perplexed.configure(store=STORES[path]())
    calls: list[str] = []
    fail = [False]

    def flaky(query: str, options: Any) -> list[dict[str, Any]]:
        calls.append(query)
        if fail[0]:
            raise perplexed.ProviderError("upstream", "HTTP 500")
        return [{"url": "https://a.example/1", "title": query}]

    provider = FunctionProvider(flaky, name="kb", cost=0.25, rate_limit="2/min", rate_limit_wait_ms=0,
                                cooldown_after=1, cooldown_s=600)
    await perplexed.asearch("cached", provider, cache_ttl_s=600)
    fail[0] = True
    with pytest.raises(perplexed.UpstreamError) as failed:  # the second rate-limit slot; fails: cooling down now
        await perplexed.asearch("other", provider, cache_ttl_s=600)
    assert failed.value.attempts[0].outcome is Outcome.ERROR
    perplexed.configure(spend_limits={"day": 0.01})  # spent more than that already: no paid call fits
    hit = await perplexed.asearch("cached", provider, cache_ttl_s=600)
    assert hit.attempts[0].cached and hit.hits[0].title == "cached" and hit.cost == 0.0
    skipped = await perplexed.asearch("third", [provider, FunctionProvider(answers([]), name="b")],
                                      cache_ttl_s=600)
    assert skipped.attempts[0].outcome is Outcome.SKIPPED and calls == ["cached", "other"]


@pytest.mark.parametrize("path", list(STORES))
async def test_identical_concurrent_searches_still_make_one_call(path: str) -> None:
    perplexed.configure(store=STORES[path]())
    calls: list[str] = []

    async def slow(query: str, options: Any) -> list[dict[str, Any]]:
        calls.append(query)
        await asyncio.sleep(0.05)
        return [{"url": "https://a.example/1", "title": "A"}]

    provider = FunctionProvider(slow, name="kb")
    results = await asyncio.gather(*(perplexed.asearch("q", provider, cache_ttl_s=600) for _ in range(5)))
    assert calls == ["q"] and sorted(r.attempts[0].cached for r in results) == [False, True, True, True, True]
    again = await perplexed.asearch("q", provider, cache_ttl_s=600)
    assert again.attempts[0].cached and calls == ["q"]


async def test_an_expired_entry_is_a_miss_and_is_filled_again() -> None:
    now = [1000.0]
    perplexed.configure(store=MemoryStore(clock=lambda: now[0]))
    calls: list[str] = []
    provider = FunctionProvider(answers(calls), name="kb")
    await perplexed.asearch("q", provider, cache_ttl_s=60)
    now[0] += 61
    assert not (await perplexed.asearch("q", provider, cache_ttl_s=60)).attempts[0].cached
    assert (await perplexed.asearch("q", provider, cache_ttl_s=60)).attempts[0].cached
    assert calls == ["q", "q"]
