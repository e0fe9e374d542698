"""The adaptive strategy's pure policy, table-style: ``adaptive_order`` from member views (health, priors,
quality floor, cost, latency, exploration) and ``member_update`` (the decayed counter record)."""

from __future__ import annotations

import pytest
from perplexed.engine._adaptive import (  # private: the adaptive ordering rule, fed member views directly
    HEALTH_MARGIN,
    MemberView,
    adaptive_order,
)
from perplexed.policy._policy import (  # private: the decayed counter record, step by step
    MEMBER_DECAY,
    MemberStats,
    member_update,
)
from perplexed.policy._routing import ProviderPrior  # private: priors built by hand, no evaluation

A_PRIOR = ProviderPrior(quality=0.9, cost_per_query_usd=0.01, latency_p50_ms=400)
B_PRIOR = ProviderPrior(quality=0.7, cost_per_query_usd=0.0, latency_p50_ms=200)


def healthy(n: int = 20, cost: float = 0.0) -> MemberStats:
    stats = None
    for _ in range(n):
        stats = member_update(stats, True, 100.0, cost)
    assert stats is not None
    return stats


def failing_half(n: int = 40) -> MemberStats:
    stats = None
    for i in range(n):
        stats = member_update(stats, i % 2 == 0, 100.0, 0.0)
    assert stats is not None
    return stats


def order(views: list[MemberView], draw: float = 1.0, pick: float = 0.0, explore: float = 0.05) -> list[str]:
    return [r.label for r in adaptive_order(views, draw, pick, explore)]


CASES = [
    # (what, views, expected order)
    ("nothing known: the chain's order",
     [MemberView(0, "a"), MemberView(1, "b")], ["a", "b"]),
    ("nothing known, one paid: the free one first",
     [MemberView(0, "a", price=0.01), MemberView(1, "b")], ["b", "a"]),
    ("priors: b as good as a (both above the floor) and cheaper: b first",
     [MemberView(0, "a", prior=A_PRIOR, min_quality=0.65), MemberView(1, "b", prior=B_PRIOR, min_quality=0.65)],
     ["b", "a"]),
    ("priors: only a above the floor: a first",
     [MemberView(0, "a", prior=A_PRIOR, min_quality=0.8), MemberView(1, "b", prior=B_PRIOR, min_quality=0.8)],
     ["a", "b"]),
    ("b fails half its calls: behind the healthy a",
     [MemberView(0, "b", stats=failing_half()), MemberView(1, "a", stats=healthy())], ["a", "b"]),
    ("b fails half, with priors: behind a",
     [MemberView(0, "a", stats=healthy(cost=0.01), prior=A_PRIOR, min_quality=0.65),
      MemberView(1, "b", stats=failing_half(), prior=B_PRIOR, min_quality=0.65)], ["a", "b"]),
    ("b recovered: first again",
     [MemberView(0, "a", stats=healthy(cost=0.01), prior=A_PRIOR, min_quality=0.65),
      MemberView(1, "b", stats=healthy(60), prior=B_PRIOR, min_quality=0.65)], ["b", "a"]),
    ("same health and price: the faster first",
     [MemberView(0, "slow", stats=member_update(None, True, 900.0, 0.0)),
      MemberView(1, "fast", stats=member_update(None, True, 50.0, 0.0))], ["fast", "slow"]),
    ("a small health gap does not reorder (within the margin) unless the score says so",
     [MemberView(0, "a", stats=healthy()), MemberView(1, "b", stats=healthy())], ["a", "b"]),
]


@pytest.mark.parametrize(("what", "views", "expected"), CASES, ids=[c[0] for c in CASES])
def test_order(what: str, views: list[MemberView], expected: list[str]) -> None:
    assert order(views) == expected, what


def test_exploration_puts_another_member_first_when_drawn() -> None:
    views = [MemberView(0, "a"), MemberView(1, "b"), MemberView(2, "c")]
    assert order(views, draw=0.01, pick=0.0) == ["b", "a", "c"]
    assert order(views, draw=0.01, pick=0.99) == ["c", "a", "b"]
    ranked = adaptive_order(views, 0.01, 0.99, 0.05)
    assert [r.explored for r in ranked] == [True, False, False]
    assert order(views, draw=0.05, pick=0.0) == ["a", "b", "c"]  # draw >= explore: no exploration
    assert order(views, draw=0.0, pick=0.0, explore=0.0) == ["a", "b", "c"]


def test_exploration_never_picks_a_refused_member() -> None:
    views = [MemberView(0, "a"), MemberView(1, "paid", price=0.5, explorable=False), MemberView(2, "c")]
    for pick in (0.0, 0.4, 0.6, 0.99):
        first = adaptive_order(views, 0.0, pick, 0.05)[0]
        assert first.label == "c" and first.explored
    only = [MemberView(0, "a"), MemberView(1, "paid", price=0.5, explorable=False)]
    assert order(only, draw=0.0) == ["a", "paid"]


def test_the_health_margin() -> None:
    best = healthy()
    slightly = MemberStats(ok=best.ok * (1 - HEALTH_MARGIN / 2), calls=best.calls, latency_ms=100.0, total=20)
    views = [MemberView(0, "a", stats=slightly), MemberView(1, "b", stats=best)]
    ranked = adaptive_order(views, 1.0, 0.0, 0.0)
    assert ranked[0].label == "b"  # the score prefers the healthier one
    worse = MemberStats(ok=best.ok * 0.5, calls=best.calls, latency_ms=1.0, cost_usd=0.0, total=20)
    cheap_fast = [MemberView(0, "a", stats=worse), MemberView(1, "b", stats=best, price=0.01)]
    # demoted below the margin: behind even a paid member with a much lower value score
    assert order(cheap_fast) == ["b", "a"]


@pytest.mark.parametrize(("calls", "ok", "calls_weight"), [
    ([True], 1.0, 1.0),
    ([True, False], MEMBER_DECAY, 1 + MEMBER_DECAY),
    ([False, False, True], 1.0, 1 + MEMBER_DECAY + MEMBER_DECAY**2),
])
def test_member_update(calls: list[bool], ok: float, calls_weight: float) -> None:
    stats = None
    for good in calls:
        stats = member_update(stats, good, 100.0, 0.0)
    assert stats is not None
    assert stats.ok == pytest.approx(ok)
    assert stats.calls == pytest.approx(calls_weight)
    assert stats.total == len(calls)


def test_member_update_latency_and_cost() -> None:
    stats = member_update(None, True, 100.0, 0.01)
    assert (stats.latency_ms, stats.cost_usd) == (100.0, 0.01)
    stats = member_update(stats, False, None, 0.0)  # no latency: kept
    assert stats.latency_ms == 100.0
    assert stats.cost_usd == pytest.approx(0.01 * MEMBER_DECAY)
    stats = member_update(stats, True, 200.0, 0.0)
    assert stats.latency_ms == pytest.approx(100 * MEMBER_DECAY + 200 * (1 - MEMBER_DECAY))
    assert MemberStats().success is None
