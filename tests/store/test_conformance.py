"""The store-conformance suite: every store (see ``conftest.STORES``) must pass every test here.

Time comes from the fake ``clock`` fixture, so the window, cool-down and spend rules are checked exactly.
"""

from __future__ import annotations

import asyncio
from datetime import date

import pytest
from perplexed import Hit, Page
from perplexed.store import Admission, CachedAnswer, Record, Store
from pydantic import ValidationError

P = "provider-hash-1"


def hits(n: int = 2) -> list[Hit]:
    return [Hit(id=i + 1, url=f"https://example.com/{i}", title=f"t{i}", provider="p") for i in range(n)]


async def fill(store: Store, key: str, ttl: float = 60.0, provider: str = P) -> None:
    await store.record(Record(provider=provider, label="p", health="answer", cache_key=key,
                              answer=CachedAnswer(hits(), "d"), ttl_s=ttl))


# -- cache ------------------------------------------------------------------------------------------------


async def test_cache_miss_then_hit_then_expiry(store, clock) -> None:
    assert (await store.admit(Admission(P, "p", cache_key="k"))).verdict == "call"
    await fill(store, "k", ttl=60)
    decision = await store.admit(Admission(P, "p", cache_key="k"))
    assert decision.verdict == "cached"
    assert decision.answer is not None
    assert [h.url for h in decision.answer.hits] == ["https://example.com/0", "https://example.com/1"]
    assert decision.answer.detail == "d"
    assert decision.ticket is None
    clock.advance(59.9)
    assert (await store.admit(Admission(P, "p", cache_key="k"))).verdict == "cached"
    clock.advance(0.2)
    assert (await store.admit(Admission(P, "p", cache_key="k"))).verdict == "call"


async def test_no_reader_can_change_a_cached_hit_for_the_next(store) -> None:
    """Hits are frozen (issue 35): a reader assigning a field is refused, and the next reader gets the hit as
    cached (was: the reader's change lands on its own copy)."""
    await fill(store, "k")
    first = await store.admit(Admission(P, "p", cache_key="k"))
    assert first.answer is not None
    with pytest.raises(ValidationError, match="frozen"):
        first.answer.hits[0].title = "changed"  # type: ignore[misc]
    second = await store.admit(Admission(P, "p", cache_key="k"))
    assert second.answer is not None and second.answer.hits[0].title == "t0"


async def test_every_hit_field_survives_the_cache(store) -> None:
    """Dates, scores, sources, raw values and a fetched page come back as they went in (a page used to be
    written as its repr by the persisting stores, and could not be read back)."""
    page = Page(url="https://example.com/a", final_url="https://example.com/a", title="A", content="body",
                published=date(2024, 5, 1), status=200)
    hit = Hit(id=3, url="https://example.com/a", title="A", snippet="s", content="c", published=date(2024, 5, 1),
              updated=date(2024, 6, 2), score=0.5, provider="p", sources=[{"provider": "p", "rank": 1}],
              raw={"k": [1, "x", None], "nested": {"a": 1.5}}, page=page)
    await store.record(Record(provider=P, label="p", health="answer", cache_key="full",
                              answer=CachedAnswer([hit], "detail"), ttl_s=60.0))
    decision = await store.admit(Admission(P, "p", cache_key="full"))
    assert decision.verdict == "cached" and decision.answer is not None
    assert list(decision.answer.hits) == [hit] and decision.answer.detail == "detail"


async def test_cache_keys_are_independent(store) -> None:
    await fill(store, "k1")
    assert (await store.admit(Admission(P, "p", cache_key="k2"))).verdict == "call"


async def test_record_without_answer_writes_no_cache(store) -> None:
    await store.record(Record(provider=P, label="p", health="answer", cache_key="k", ttl_s=60))
    assert (await store.admit(Admission(P, "p", cache_key="k"))).verdict == "call"


async def test_cache_wins_over_budgets_limits_and_cooldowns(store, clock) -> None:
    await fill(store, "k")
    # trip a cool-down and fill the window first
    await store.record(Record(provider=P, label="p", health="failure", cooldown_after=1))
    full = Admission(P, "p", cache_key="k", cooldown=True, rate_limit=(1, 1.0), price=1.0,
                     spend_limits=((3600.0, 0.5),), over_call_budget=True)
    decision = await store.admit(full)
    assert decision.verdict == "cached"
    assert (await store.spend(3600)) == {}
    assert (await store.state(P, 1.0)).window_calls == 0


async def test_over_call_budget_without_cache_hit(store) -> None:
    decision = await store.admit(Admission(P, "p", cache_key="k", over_call_budget=True, price=0.01))
    assert decision.verdict == "over_budget"
    assert (await store.spend(3600)) == {}


# -- rolling window -------------------------------------------------------------------------------------------


async def test_rolling_window_admits_at_most_n_in_any_window(store, clock) -> None:
    limit = Admission(P, "p", rate_limit=(3, 1.0))
    for step in (0.0, 0.5, 0.4):  # admissions at t = 0, 0.5, 0.9
        clock.advance(step)
        assert (await store.admit(limit)).verdict == "call"
    clock.advance(0.05)  # t = 0.95: three in the last second
    denied = await store.admit(limit)
    assert denied.verdict == "rate_limited"
    assert denied.wait_s == pytest.approx(0.05, abs=1e-6)  # the t=0 admission leaves at t=1.0
    clock.advance(0.1)  # t = 1.05: the t=0 one left; a fixed window would also allow, so go on
    assert (await store.admit(limit)).verdict == "call"
    clock.advance(0.01)  # t = 1.06: 0.5, 0.9, 1.05 in the window
    denied = await store.admit(limit)
    assert denied.verdict == "rate_limited"
    assert denied.wait_s == pytest.approx(0.44, abs=1e-6)


async def test_denied_admissions_take_no_slot(store, clock) -> None:
    limit = Admission(P, "p", rate_limit=(1, 10.0))
    assert (await store.admit(limit)).verdict == "call"
    for _ in range(5):
        assert (await store.admit(limit)).verdict == "rate_limited"
    assert (await store.state(P, 10.0)).window_calls == 1
    clock.advance(10.01)
    assert (await store.admit(limit)).verdict == "call"


async def test_windows_are_per_provider(store) -> None:
    assert (await store.admit(Admission("a", "a", rate_limit=(1, 60.0)))).verdict == "call"
    assert (await store.admit(Admission("b", "b", rate_limit=(1, 60.0)))).verdict == "call"
    assert (await store.admit(Admission("a", "a", rate_limit=(1, 60.0)))).verdict == "rate_limited"


async def test_concurrent_admissions_never_pass_the_limit(store) -> None:
    decisions = await asyncio.gather(*(store.admit(Admission(P, "p", rate_limit=(5, 60.0))) for _ in range(40)))
    assert sum(d.verdict == "call" for d in decisions) == 5


# -- cool-downs ------------------------------------------------------------------------------------------------


def fail(trial: bool = False, after: int = 2, cooldown_s: float = 30.0, **kw) -> Record:
    return Record(provider=P, label="p", health="failure", trial=trial, cooldown_after=after,
                  cooldown_s=cooldown_s, **kw)


COOL = Admission(P, "p", cooldown=True, trial_lease_s=5.0)


async def test_cooldown_after_consecutive_failures(store, clock) -> None:
    await store.record(fail())
    assert (await store.admit(COOL)).verdict == "call"
    await store.record(Record(provider=P, label="p", health="neutral", cooldown_after=2))  # bad_request: no count
    await store.record(fail())
    denied = await store.admit(COOL)
    assert denied.verdict == "cooling_down"
    assert denied.wait_s == pytest.approx(30.0)
    state = await store.state(P)
    assert state.cooling_down and state.failures == 2


async def test_an_answer_resets_the_count(store) -> None:
    await store.record(fail())
    await store.record(Record(provider=P, label="p", health="answer", cooldown_after=2))
    await store.record(fail())
    assert (await store.admit(COOL)).verdict == "call"


async def test_one_trial_after_the_cooldown_then_success_closes(store, clock) -> None:
    await store.record(fail(after=1))
    clock.advance(30.0)
    trial = await store.admit(COOL)
    assert trial.verdict == "call" and trial.trial
    other = await store.admit(COOL)
    assert other.verdict == "cooling_down"  # the trial is in flight
    assert (await store.state(P)).trial_in_flight
    await store.record(Record(provider=P, label="p", health="answer", trial=True, cooldown_after=1))
    after = await store.admit(COOL)
    assert after.verdict == "call" and not after.trial
    assert not (await store.state(P)).cooling_down


async def test_failed_trial_doubles_up_to_600(store, clock) -> None:
    await store.record(fail(after=1))
    expected = [60.0, 120.0, 240.0, 480.0, 600.0, 600.0]
    clock.advance(30.0)
    for period in expected:
        trial = await store.admit(COOL)
        assert trial.verdict == "call" and trial.trial
        await store.record(fail(trial=True, after=1))
        denied = await store.admit(COOL)
        assert denied.verdict == "cooling_down"
        assert denied.wait_s == pytest.approx(period)
        clock.advance(period)
    trial = await store.admit(COOL)
    await store.record(Record(provider=P, label="p", health="answer", trial=True, cooldown_after=1))
    # success reset the period: the next cool-down is cooldown_s again
    await store.record(fail(after=1))
    assert (await store.admit(COOL)).wait_s == pytest.approx(30.0)


async def test_trial_lease_expires(store, clock) -> None:
    await store.record(fail(after=1))
    clock.advance(30.0)
    assert (await store.admit(COOL)).trial
    clock.advance(4.9)
    assert (await store.admit(COOL)).verdict == "cooling_down"
    clock.advance(0.2)  # the lease (5 s) ran out: the worker died; another trial may go
    assert (await store.admit(COOL)).trial


async def test_neutral_trial_releases_the_lease(store, clock) -> None:
    await store.record(fail(after=1))
    clock.advance(30.0)
    assert (await store.admit(COOL)).trial
    await store.record(Record(provider=P, label="p", health="neutral", trial=True, cooldown_after=1))
    assert (await store.admit(COOL)).trial


async def test_early_trial_during_cooldown_one_at_a_time(store, clock) -> None:
    await store.record(fail(after=1))
    early = Admission(P, "p", cooldown=True, trial_lease_s=5.0, early_trial=True)
    first = await store.admit(early)
    assert first.verdict == "call" and first.trial
    second = await store.admit(early)
    assert second.verdict == "cooling_down"


async def test_retry_after_cools_down_exactly_that_long(store, clock) -> None:
    await store.record(fail(after=5, retry_after_s=7.5))
    denied = await store.admit(COOL)
    assert denied.verdict == "cooling_down" and denied.wait_s == pytest.approx(7.5)
    clock.advance(7.5)
    assert (await store.admit(COOL)).trial
    await store.record(fail(trial=True, after=5, retry_after_s=10_000))
    assert (await store.admit(COOL)).wait_s == pytest.approx(600.0)


async def test_cooldown_off_ignores_failures(store) -> None:
    for _ in range(5):
        await store.record(Record(provider=P, label="p", health="failure", cooldown_after=None))
    assert (await store.admit(COOL)).verdict == "call"


async def test_cooling_down_takes_no_slot_and_no_money(store) -> None:
    await store.record(fail(after=1))
    adm = Admission(P, "p", cooldown=True, rate_limit=(1, 60.0), price=0.5, spend_limits=((3600.0, 10.0),))
    assert (await store.admit(adm)).verdict == "cooling_down"
    assert (await store.state(P, 60.0)).window_calls == 0
    assert (await store.spend(3600)) == {}


# -- spend -------------------------------------------------------------------------------------------------------


async def test_spend_reservation_and_settlement(store, clock) -> None:
    paid = Admission(P, "exa", price=0.4, spend_limits=((3600.0, 1.0),))
    first = await store.admit(paid)
    second = await store.admit(paid)
    assert first.verdict == second.verdict == "call"
    assert first.ticket and second.ticket and first.ticket != second.ticket
    assert (await store.admit(paid)).verdict == "over_budget"  # 0.8 reserved + 0.4 > 1.0
    await store.record(Record(provider=P, label="exa", ticket=first.ticket, cost=0.1))
    assert (await store.spend(3600)) == pytest.approx({"exa": 0.5})
    third = await store.admit(paid)
    assert third.verdict == "call"  # 0.5 + 0.4 <= 1.0
    assert (await store.spend(3600)) == pytest.approx({"exa": 0.9})


async def test_spend_limit_is_inclusive_and_free_calls_pass(store) -> None:
    paid = Admission(P, "exa", price=0.5, spend_limits=((3600.0, 1.0),))
    assert (await store.admit(paid)).verdict == "call"
    assert (await store.admit(paid)).verdict == "call"  # exactly 1.0
    assert (await store.admit(paid)).verdict == "over_budget"
    free = Admission("free", "searxng", price=0.0, spend_limits=((3600.0, 1.0),))
    assert (await store.admit(free)).verdict == "call"


async def test_spend_windows_roll(store, clock) -> None:
    paid = Admission(P, "exa", price=1.0, spend_limits=((3600.0, 1.0), (86400.0, 1.5)))
    assert (await store.admit(paid)).verdict == "call"
    clock.advance(3600.5)
    assert (await store.spend(3600)) == {}
    assert (await store.spend(86400)) == pytest.approx({"exa": 1.0})
    assert (await store.admit(paid)).verdict == "over_budget"  # the day: 1.0 + 1.0 > 1.5
    clock.advance(86400)
    assert (await store.admit(paid)).verdict == "call"


async def test_spend_per_label_and_add_spend(store) -> None:
    await store.record(Record(provider=P, label="tavily", cost=0.008))
    await store.add_spend("perplexity-agent", 0.25)
    await store.add_spend("perplexity-agent", 0.0)
    got = await store.spend(86400)
    assert got == pytest.approx({"tavily": 0.008, "perplexity-agent": 0.25})


async def test_concurrent_reservations_never_overshoot(store) -> None:
    paid = Admission(P, "exa", price=0.3, spend_limits=((3600.0, 1.0),))
    decisions = await asyncio.gather(*(store.admit(paid) for _ in range(20)))
    assert sum(d.verdict == "call" for d in decisions) == 3


async def test_over_budget_takes_no_slot(store) -> None:
    adm = Admission(P, "exa", rate_limit=(5, 60.0), price=2.0, spend_limits=((3600.0, 1.0),))
    assert (await store.admit(adm)).verdict == "over_budget"
    assert (await store.state(P, 60.0)).window_calls == 0


# -- latency, state, clear ----------------------------------------------------------------------------------------


async def test_latency_p95(store) -> None:
    assert await store.latency_p95(P) is None
    for ms in range(1, 5):
        await store.record(Record(provider=P, label="p", health="answer", latency_ms=float(ms)))
    assert await store.latency_p95(P) is None  # fewer than 5 samples
    for ms in range(5, 21):
        await store.record(Record(provider=P, label="p", health="answer", latency_ms=float(ms)))
    assert await store.latency_p95(P) == 19.0
    assert await store.latency_p95("other") is None


async def test_clear_forgets_everything(store) -> None:
    await fill(store, "k")
    await store.record(fail(after=1))
    await store.add_spend("x", 1.0)
    await store.clear()
    assert (await store.admit(Admission(P, "p", cache_key="k", cooldown=True))).verdict == "call"
    assert await store.spend(86400) == {}


# -- single flight across processes (shared stores) ---------------------------------------------------------------


async def test_fill_claims(store, clock) -> None:
    claim = Admission(P, "p", cache_key="k", claim_fill=True, fill_lease_s=5.0)
    first = await store.admit(claim)
    assert first.verdict == "call"
    if not store.shared:  # a per-process store shares calls in the chain itself: it never says fill_pending
        assert (await store.admit(claim)).verdict == "call"
        return
    assert first.fill_claimed
    second = await store.admit(claim)
    assert second.verdict == "fill_pending"
    await store.record(Record(provider=P, label="p", health="answer", cache_key="k", answer=CachedAnswer(hits()),
                              ttl_s=60, release_fill=True))
    filled = await store.wait_fill("k", 1.0, provider=P)
    assert filled is not None and [h.url for h in filled.hits] == ["https://example.com/0", "https://example.com/1"]
    assert (await store.admit(claim)).verdict == "cached"


async def test_a_fill_claim_expires_and_a_failed_fill_releases_it(store, clock) -> None:
    if not store.shared:
        pytest.skip("per-process store: no cross-process fill claims")
    claim = Admission(P, "p", cache_key="k", claim_fill=True, fill_lease_s=5.0)
    assert (await store.admit(claim)).fill_claimed
    clock.advance(5.1)  # the filler died: its claim lapsed
    assert (await store.admit(claim)).fill_claimed
    await store.record(Record(provider=P, label="p", health="failure", cache_key="k", release_fill=True))
    assert await store.wait_fill("k", 0.2, provider=P) is None  # released without an answer
    assert (await store.admit(claim)).fill_claimed
