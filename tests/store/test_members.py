"""The adaptive strategy's per-member record, on every store (memory, SQLite, Redis/Valkey when available):
each store applies ``perplexed.policy._policy.member_update`` atomically, so every store ends with the same figures
as the pure rule, concurrent calls included."""

from __future__ import annotations

import asyncio

import pytest
from perplexed.policy._policy import (  # private: the member decay rule is pure arithmetic
    MEMBER_DECAY,
    MemberStats,
    member_update,
)


async def test_unseen_members_have_no_record(store) -> None:
    assert await store.member_stats(["p1", "p2"]) == {}


async def test_records_follow_the_pure_rule(store) -> None:
    calls = [(True, 120.0, 0.01), (False, 900.0, 0.0), (True, None, 0.01), (False, 30.0, 0.02)]
    expected: MemberStats | None = None
    for ok, latency, cost in calls:
        await store.record_member("p1", ok, latency, cost)
        expected = member_update(expected, ok, latency, cost)
    got = (await store.member_stats(["p1", "p2"]))["p1"]
    assert expected is not None
    assert got.total == expected.total == 4
    assert got.ok == pytest.approx(expected.ok)
    assert got.calls == pytest.approx(expected.calls)
    assert got.latency_ms == pytest.approx(expected.latency_ms)
    assert got.cost_usd == pytest.approx(expected.cost_usd)
    assert got.success == pytest.approx(expected.ok / expected.calls)


async def test_members_are_independent_and_cleared(store) -> None:
    await store.record_member("p1", True, 10.0, 0.0)
    await store.record_member("p2", False, 20.0, 0.0)
    stats = await store.member_stats(["p1", "p2"])
    assert (stats["p1"].ok, stats["p2"].ok) == (1.0, 0.0)
    await store.clear()
    assert await store.member_stats(["p1", "p2"]) == {}


async def test_concurrent_records_lose_no_call(store) -> None:
    await asyncio.gather(*(store.record_member("p1", i % 2 == 0, 5.0, 0.0) for i in range(40)))
    got = (await store.member_stats(["p1"]))["p1"]
    assert got.total == 40
    assert got.calls == pytest.approx((1 - MEMBER_DECAY**40) / (1 - MEMBER_DECAY))
