"""Hedged and merged searches and the quality floor, through ``perplexed.search`` and ``perplexed.asearch``
(the ``api`` fixture): every new outcome (``cancelled``, ``insufficient``) and option.

Function providers coordinate through events and "hang until cancelled" instead of wall-clock races: a
hedge delay is only ever a lower bound here, so a loaded machine makes these tests slower, not flaky.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import perplexed
import perplexed.net._http  # private: a cancelled hedge must leave the pool with no busy connection
import pytest
from perplexed import Attempt, Hit, Outcome, ProviderAnswer, Result, UpstreamError
from perplexed.engine import _governance  # private: seeds the store with a member's latency samples
from perplexed.engine._strategies import observed_p95  # private: the p95 that hedge_after_ms='auto' uses
from perplexed.providers import FunctionProvider, SearXNG
from perplexed.store import Record
from testkit.loopback import HEALTHY_MS, Hang, Json, LoopbackServer, SearchAPI, searxng_json

LONG = 60_000  # a budget nothing here reaches


def outcomes(result: Result | UpstreamError) -> list[tuple[str, str]]:
    return [(a.provider, a.outcome.value) for a in result.attempts]


def answer(*urls: str, cost: float | None = None) -> ProviderAnswer:
    return ProviderAnswer(hits=[Hit(url=u, title=u.rsplit("/", 1)[-1]) for u in urls], cost=cost)


class Hangs:
    """An async provider that never answers; it notes when it was started and when it was cancelled."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()

    async def __call__(self, query: str, options: Any) -> ProviderAnswer:
        self.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        raise AssertionError("unreachable")


class Counts:
    """An async provider that answers ``urls`` at once and counts its calls."""

    def __init__(self, *urls: str, cost: float | None = None, delay: float = 0.0) -> None:
        self.urls, self.cost, self.delay, self.calls = urls, cost, delay, 0

    async def __call__(self, query: str, options: Any) -> ProviderAnswer:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        return answer(*self.urls, cost=self.cost)


def fp(fn: Any, name: str, cost: float | None = None) -> FunctionProvider:
    return FunctionProvider(fn, name=name, cost=cost)


@pytest.fixture(autouse=True)
def _fresh_store() -> Any:
    """A fresh default state store (latency samples, spend) per test."""
    _governance.reset()
    yield
    _governance.reset()


async def add_latencies(provider: FunctionProvider, *samples: float) -> None:
    store = _governance.current_store()
    for ms in samples:
        await store.record(Record(provider=_governance.provider_identity(provider), label=provider.label,
                                  latency_ms=ms))


# --- sequential stays the default ---------------------------------------------------------------------------


async def test_the_default_strategy_is_sequential(api: SearchAPI) -> None:
    slow, fast = Hangs(), Counts("https://fast.example/1")
    # sequential: the second provider is never started while the first runs; the first times out
    err_or_result = await api("q", [fp(slow, "slow"), fp(fast, "fast")], provider_timeout_ms=HEALTHY_MS)
    assert outcomes(err_or_result) == [("slow", "timeout"), ("fast", "ok")]
    assert fast.calls == 1
    assert all(h.sources == [] for h in err_or_result.hits)


# --- hedged -------------------------------------------------------------------------------------------------


async def test_hedged_starts_the_next_provider_when_the_first_is_slow_and_cancels_the_loser(api: SearchAPI) -> None:
    slow, fast = Hangs(), Counts("https://fast.example/1", "https://fast.example/2")
    seen: list[Attempt] = []

    result = await api("q", [fp(slow, "slow", cost=0.01), fp(fast, "fast", cost=0.002)], strategy="hedged",
                       hedge_after_ms=30, provider_timeout_ms=LONG, on_attempt=seen.append)

    assert result.provider == "fast"
    assert [h.url for h in result.hits] == ["https://fast.example/1", "https://fast.example/2"]
    assert outcomes(result) == [("slow", "cancelled"), ("fast", "ok")]  # chain order
    cancelled = result.attempts[0]
    assert cancelled.cost == 0.0 and cancelled.billable is False
    assert cancelled.reason == "cancelled"
    assert cancelled.duration_ms >= 30
    assert "fast answered first" in (cancelled.error or "")
    assert result.cost == pytest.approx(0.002)
    assert slow.cancelled.is_set()  # the loser's call was cancelled before search returned
    assert [a.outcome for a in seen] == [Outcome.OK, Outcome.CANCELLED]  # as they were recorded


async def test_hedged_does_not_start_the_next_provider_when_the_first_answers_in_time(api: SearchAPI) -> None:
    first, second = Counts("https://a.example/1"), Counts("https://b.example/1")
    result = await api("q", [fp(first, "first"), fp(second, "second")], strategy="hedged", hedge_after_ms=LONG)
    assert result.provider == "first"
    assert outcomes(result) == [("first", "ok")]
    assert second.calls == 0


async def test_hedged_moves_on_at_once_when_the_current_provider_fails(api: SearchAPI) -> None:
    def broken(q: str, o: Any) -> Any:
        raise RuntimeError("down")

    second = Counts("https://b.example/1")
    # the hedge delay is a minute: only the failure can have started the second provider
    result = await api("q", [fp(broken, "broken"), fp(second, "second")], strategy="hedged",
                       hedge_after_ms=LONG, deadline_ms=LONG)
    assert outcomes(result) == [("broken", "error"), ("second", "ok")]


async def test_hedged_a_fast_failure_of_the_hedge_starts_the_third(api: SearchAPI) -> None:
    slow = Hangs()

    def broken(q: str, o: Any) -> Any:
        raise RuntimeError("down")

    third = Counts("https://c.example/1")
    result = await api("q", [fp(slow, "slow"), fp(broken, "broken"), fp(third, "third")], strategy="hedged",
                       hedge_after_ms=20, provider_timeout_ms=LONG, deadline_ms=LONG)
    assert result.provider == "third"
    assert outcomes(result) == [("slow", "cancelled"), ("broken", "error"), ("third", "ok")]
    assert slow.cancelled.is_set()


async def test_hedged_the_first_to_answer_wins_even_if_it_started_first(api: SearchAPI) -> None:
    # the first provider answers once the second has started (and hangs): the first wins
    events: list[asyncio.Event] = []  # made on the loop the search runs on (the portal's, for search())

    def second_started() -> asyncio.Event:
        if not events:
            events.append(asyncio.Event())
        return events[0]

    second = Hangs()

    async def hang(query: str, options: Any) -> ProviderAnswer:
        second_started().set()
        return await second(query, options)

    async def first(query: str, options: Any) -> ProviderAnswer:
        await second_started().wait()
        return answer("https://a.example/1")

    result = await api("q", [fp(first, "first"), fp(hang, "second")], strategy="hedged", hedge_after_ms=10,
                       provider_timeout_ms=LONG)
    assert result.provider == "first"
    assert outcomes(result) == [("first", "ok"), ("second", "cancelled")]
    assert second.started.is_set() and second.cancelled.is_set()


async def test_hedged_with_hedge_after_zero_starts_all_and_takes_the_first_answer(api: SearchAPI) -> None:
    a, b, c = Hangs(), Hangs(), Counts("https://c.example/1")
    result = await api("q", [fp(a, "a"), fp(b, "b"), fp(c, "c")], strategy="hedged", hedge_after_ms=0,
                       provider_timeout_ms=LONG)
    assert result.provider == "c"
    assert outcomes(result) == [("a", "cancelled"), ("b", "cancelled"), ("c", "ok")]


async def test_hedged_empty_answers_move_on_and_the_first_empty_is_the_result(api: SearchAPI) -> None:
    e1, e2 = Counts(), Counts()
    result = await api("q", [fp(e1, "e1"), fp(e2, "e2")], strategy="hedged", hedge_after_ms=LONG)
    assert result.provider == "e1"
    assert result.hits == []
    assert outcomes(result) == [("e1", "empty"), ("e2", "empty")]


async def test_hedged_an_answer_that_would_stop_a_sequential_chain_ends_it(api: SearchAPI) -> None:
    slow, empty = Hangs(), Counts()
    # fallback_on without "empty": an empty answer ends the chain, and the slow provider is cancelled
    result = await api("q", [fp(slow, "slow"), fp(empty, "empty")], strategy="hedged", hedge_after_ms=10,
                       fallback_on=["error"], provider_timeout_ms=LONG)
    assert result.provider == "empty"
    assert outcomes(result) == [("slow", "cancelled"), ("empty", "empty")]


async def test_hedged_an_error_that_does_not_move_on_starts_nothing_more(api: SearchAPI) -> None:
    def broken(q: str, o: Any) -> Any:
        raise RuntimeError("down")

    never = Counts("https://n.example/1")
    with pytest.raises(UpstreamError) as info:
        await api("q", [fp(broken, "broken"), fp(never, "never")], strategy="hedged", hedge_after_ms=LONG,
                  fallback_on=["empty"])
    assert outcomes(info.value) == [("broken", "error")]
    assert never.calls == 0


async def test_hedged_all_failing_raises_with_every_attempt(api: SearchAPI) -> None:
    def broken(q: str, o: Any) -> Any:
        raise RuntimeError("down")

    with pytest.raises(UpstreamError) as info:
        await api("q", [fp(broken, "a"), fp(broken, "b")], strategy="hedged", hedge_after_ms=5)
    assert info.value.reason == "all_providers_failed"
    assert sorted(outcomes(info.value)) == [("a", "error"), ("b", "error")]
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.timing
async def test_hedged_keeps_the_deadline(api: SearchAPI) -> None:
    providers = [fp(Hangs(), f"h{i}") for i in range(12)]
    with pytest.raises(UpstreamError) as info:
        await api("q", providers, strategy="hedged", hedge_after_ms=40, deadline_ms=300, provider_timeout_ms=LONG)
    got = [a.outcome.value for a in info.value.attempts]
    assert len(got) == 12
    assert got[0] == "timeout"  # capped by the deadline
    assert got[-1] == "deadline"  # never started
    assert set(got) <= {"timeout", "deadline"}
    # chain order: every started provider comes before every one the deadline left out
    assert got == sorted(got, key=lambda o: o == "deadline")
    for a in info.value.attempts:
        if a.outcome is Outcome.TIMEOUT:
            assert "capped by the chain deadline" in (a.error or "")


async def test_hedged_single_provider_is_one_attempt(api: SearchAPI) -> None:
    result = await api("q", fp(Counts("https://a.example/"), "only"), strategy="hedged", hedge_after_ms=0)
    assert outcomes(result) == [("only", "ok")]


@pytest.mark.timing
async def test_hedged_auto_uses_the_observed_p95(api: SearchAPI) -> None:
    slow, fast = Hangs(), Counts("https://f.example/")
    p_slow, p_fast = fp(slow, "slow"), fp(fast, "fast")
    await add_latencies(p_slow, 10.0, 12.0, 11.0, 13.0)
    assert await observed_p95(p_slow) is None  # too few samples
    await add_latencies(p_slow, *[20.0] * 30, 300.0)
    assert await observed_p95(p_slow) == 20.0

    result = await api("q", [p_slow, p_fast], strategy="hedged", provider_timeout_ms=LONG)

    assert result.provider == "fast"
    assert slow.cancelled.is_set()
    # with the default (1000 ms) the cancelled call would have run a second before the hedge
    assert result.attempts[0].outcome is Outcome.CANCELLED
    assert result.attempts[0].duration_ms < 900


async def test_hedged_samples_cancelled_calls_as_lower_bounds(api: SearchAPI) -> None:
    slow = fp(Hangs(), "slow")
    for _ in range(5):
        result = await api("q", [slow, fp(Counts("https://f.example/"), "fast")], strategy="hedged",
                           hedge_after_ms=20, provider_timeout_ms=LONG)
        assert result.attempts[0].outcome is Outcome.CANCELLED
    observed = await observed_p95(slow)
    assert observed is not None and observed >= 20  # five cancelled calls, each ran at least 20 ms


async def test_hedged_samples_latencies_for_auto(api: SearchAPI) -> None:
    first = fp(Counts("https://a.example/"), "first")
    for _ in range(5):
        await api("q", [first, fp(Counts("https://b.example/"), "second")], strategy="hedged")
    assert await observed_p95(first) is not None  # five answers sampled, nothing configured


async def test_hedged_auto_without_samples_waits_the_default_before_hedging(api: SearchAPI) -> None:
    first, second = Counts("https://a.example/", delay=0.05), Counts("https://b.example/")
    result = await api("q", [fp(first, "first"), fp(second, "second")], strategy="hedged")
    # no samples: the default (1000 ms) is far above 50 ms, so no hedge
    assert result.provider == "first"
    assert second.calls == 0


async def test_hedged_attempt_events_include_the_cancelled_call(api: SearchAPI) -> None:
    events: list[tuple[str, str]] = []

    def handler(event: tuple[str, ...], measurements: dict[str, Any], metadata: dict[str, Any]) -> None:
        if event == ("perplexed", "search", "attempt"):  # the event name docs/production.md documents
            events.append((metadata["provider"], metadata["outcome"]))

    handle = perplexed.telemetry.attach(handler)
    try:
        await api("q", [fp(Hangs(), "slow"), fp(Counts("https://f.example/"), "fast")], strategy="hedged",
                  hedge_after_ms=10, provider_timeout_ms=LONG)
    finally:
        perplexed.telemetry.detach(handle)
    assert sorted(events) == [("fast", "ok"), ("slow", "cancelled")]


# --- hedged over HTTP: the loser's connection is closed ---------------------------------------------------


class _HangAnnounced(Hang):
    """:class:`Hang`, saying when the request has reached the server."""

    def __init__(self, arrived: threading.Event) -> None:
        super().__init__()
        self.arrived = arrived

    def write(self, conn: Any, request: Any) -> bool:
        self.arrived.set()
        return super().write(conn, request)


class _JsonAfter(Json):
    """:class:`Json`, sent only once ``arrived`` is set (at most 5 s): the hedge's answer never beats the slow
    request to the server, however busy the machine (else there would be no connection of the loser's to check)."""

    def __init__(self, data: Any, arrived: threading.Event) -> None:
        super().__init__(data)
        self.arrived = arrived

    def write(self, conn: Any, request: Any) -> bool:
        self.arrived.wait(5.0)
        return super().write(conn, request)


async def test_hedged_cancellation_closes_the_losers_connection(api: SearchAPI, loopback: LoopbackServer) -> None:
    arrived = threading.Event()
    loopback.route("/hang/search", _HangAnnounced(arrived))
    loopback.route("/ok/search", _JsonAfter(searxng_json(2, prefix="https://ok.example/"), arrived))
    slow = SearXNG(base_url=f"{loopback.url}/hang", name="hang")
    fast = SearXNG(base_url=f"{loopback.url}/ok", name="ok")

    result = await api("q", [slow, fast], strategy="hedged", hedge_after_ms=30, provider_timeout_ms=LONG)

    assert result.provider == "ok"
    assert outcomes(result) == [("hang", "cancelled"), ("ok", "ok")]
    hung = [r.connection for r in loopback.requests if r.path == "/hang/search"]
    assert len(hung) == 1
    assert await settle(lambda: hung[0].closed_at is not None), "the cancelled request's connection is open"
    assert hung[0].closed_by == "client"
    if not api.is_sync:  # the pooled client of this loop holds no busy connection and no queued request
        pool = perplexed.net._http.get_client()._transport._pool  # type: ignore[attr-defined]
        assert [c for c in pool.connections if not c.is_idle()] == []
        assert len(pool._requests) == 0


async def settle(predicate: Any, within: float = 5.0) -> bool:
    """Poll ``predicate`` until it holds (at most ``within`` seconds)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return bool(predicate())


# --- merge --------------------------------------------------------------------------------------------------


async def test_merge_fuses_two_providers(api: SearchAPI) -> None:
    exa = Counts("https://a.example/1", "https://b.example/2", "https://c.example/3", cost=0.005)
    brave = Counts("https://c.example/3/", "https://www.d.example/4", "https://a.example/1", cost=0.003)
    third = Counts("https://z.example/")

    result = await api("q", [fp(exa, "exa"), fp(brave, "brave"), fp(third, "third")], strategy="merge")

    assert result.provider == "exa,brave"
    assert [h.url for h in result.hits] == [
        "https://a.example/1", "https://c.example/3", "https://b.example/2", "https://www.d.example/4"
    ]
    assert [h.id for h in result.hits] == [1, 2, 3, 4]
    assert result.hits[0].sources == [{"provider": "exa", "rank": 1}, {"provider": "brave", "rank": 3}]
    assert result.hits[3].sources == [{"provider": "brave", "rank": 2}]
    assert result.cost == pytest.approx(0.008)
    assert outcomes(result) == [("exa", "ok"), ("brave", "ok")]
    assert third.calls == 0  # the rest is a fallback only


async def test_merge_calls_the_group_at_once(api: SearchAPI) -> None:
    # each provider waits until the other has started: only concurrent calls can both answer
    started: dict[str, threading.Event] = {"p": threading.Event(), "q": threading.Event()}

    def waits_for(me: str, other: str, url: str) -> Any:
        async def fn(query: str, options: Any) -> list[dict[str, str]]:
            started[me].set()
            for _ in range(2000):
                if started[other].is_set():
                    return [{"url": url}]
                await asyncio.sleep(0.005)
            return []

        return fn

    result = await api("q", [fp(waits_for("p", "q", "https://p.example/"), "p"),
                             fp(waits_for("q", "p", "https://q.example/"), "q")], strategy="merge")
    assert result.provider == "p,q"
    assert len(result.hits) == 2


async def test_merge_providers_sets_the_group_size(api: SearchAPI) -> None:
    ps = [Counts(f"https://{n}.example/") for n in "abc"]
    result = await api("q", [fp(p, n) for p, n in zip(ps, "abc", strict=True)], strategy="merge",
                       merge_providers=3)
    assert result.provider == "a,b,c"
    assert [len(h.sources) for h in result.hits] == [1, 1, 1]
    assert [h.url for h in result.hits] == ["https://a.example/", "https://b.example/", "https://c.example/"]


async def test_merge_skips_unconfigured_providers_for_the_group(api: SearchAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    p, q = Counts("https://p.example/"), Counts("https://q.example/")
    result = await api("q", ["tavily", fp(p, "p"), fp(q, "q")], strategy="merge")
    assert result.provider == "p,q"
    assert outcomes(result) == [("p", "ok"), ("q", "ok")]  # tavily (no key) was not called


async def test_merge_one_answering_provider(api: SearchAPI) -> None:
    def broken(q: str, o: Any) -> Any:
        raise RuntimeError("down")

    result = await api("q", [fp(broken, "broken"), fp(Counts("https://ok.example/"), "ok")], strategy="merge")
    assert result.provider == "ok"
    assert outcomes(result) == [("broken", "error"), ("ok", "ok")]
    assert result.hits[0].sources == [{"provider": "ok", "rank": 1}]


async def test_merge_falls_back_sequentially_when_the_group_fails(api: SearchAPI) -> None:
    def broken(q: str, o: Any) -> Any:
        raise RuntimeError("down")

    empty, third, fourth = Counts(), Counts("https://c.example/"), Counts("https://d.example/")
    result = await api("q", [fp(broken, "a"), fp(empty, "b"), fp(third, "c"), fp(fourth, "d")], strategy="merge")
    assert result.provider == "c"
    assert outcomes(result) == [("a", "error"), ("b", "empty"), ("c", "ok")]
    assert fourth.calls == 0
    assert result.hits[0].sources == []  # a sequential answer


async def test_merge_respects_fallback_on(api: SearchAPI) -> None:
    def broken(q: str, o: Any) -> Any:
        raise RuntimeError("down")

    third = Counts("https://c.example/")
    with pytest.raises(UpstreamError) as info:
        await api("q", [fp(broken, "a"), fp(broken, "b"), fp(third, "c")], strategy="merge", fallback_on=["empty"])
    assert outcomes(info.value) == [("a", "error"), ("b", "error")]
    assert third.calls == 0


async def test_merge_caps_at_max_results_and_applies_domain_filters(api: SearchAPI) -> None:
    p = Counts(*(f"https://p.example/{i}" for i in range(6)), "https://blocked.example/x")
    q = Counts(*(f"https://q.example/{i}" for i in range(6)))
    result = await api("q", [fp(p, "p"), fp(q, "q")], strategy="merge", max_results=4,
                       exclude_domains=["blocked.example"])
    assert len(result.hits) == 4
    assert [h.id for h in result.hits] == [1, 2, 3, 4]
    assert not any("blocked" in h.url for h in result.hits)


async def test_merge_with_a_slow_member_waits_for_it_within_its_budget(api: SearchAPI) -> None:
    result = await api("q", [fp(Hangs(), "slow"), fp(Counts("https://f.example/"), "fast")], strategy="merge",
                       provider_timeout_ms=HEALTHY_MS)
    assert result.provider == "fast"
    assert outcomes(result) == [("slow", "timeout"), ("fast", "ok")]


# --- the quality floor --------------------------------------------------------------------------------------


async def test_min_hits_moves_on_and_keeps_the_insufficient_attempt(api: SearchAPI) -> None:
    few, many = Counts("https://a.example/1", cost=0.004), Counts(*(f"https://b.example/{i}" for i in range(3)))
    result = await api("q", [fp(few, "few"), fp(many, "many")], min_hits=3)
    assert result.provider == "many"
    assert outcomes(result) == [("few", "insufficient"), ("many", "ok")]
    insufficient = result.attempts[0]
    assert insufficient.reason == "min_hits"
    assert insufficient.cost == pytest.approx(0.004) and insufficient.billable  # an answer bills
    assert result.cost == pytest.approx(0.004)


async def test_min_hits_counts_after_filters_and_dedupe(api: SearchAPI) -> None:
    dupes = Counts("https://a.example/x", "https://www.a.example/x/", "https://blocked.example/", "https://b.example/")
    result = await api("q", [fp(dupes, "dupes"), fp(Counts(), "empty")], min_hits=3,
                       exclude_domains=["blocked.example"])
    # 4 hits from the provider, 2 after de-duplication and the domain filter: insufficient; it stays the result
    assert outcomes(result) == [("dupes", "insufficient"), ("empty", "empty")]
    assert result.provider == "dupes"
    assert len(result.hits) == 2


async def test_the_insufficient_answer_with_most_hits_is_the_result(api: SearchAPI) -> None:
    def broken(q: str, o: Any) -> Any:
        raise RuntimeError("down")

    one, two_a, two_b = Counts("https://1.example/"), Counts("https://2.example/a", "https://2.example/b"), \
        Counts("https://3.example/a", "https://3.example/b")
    result = await api("q", [fp(one, "one"), fp(two_a, "two_a"), fp(broken, "broken"), fp(two_b, "two_b"),
                             fp(Counts(), "empty")], min_hits=5)
    assert result.provider == "two_a"  # most hits; the earliest on a tie
    assert [h.url for h in result.hits] == ["https://2.example/a", "https://2.example/b"]
    assert [o for _, o in outcomes(result)] == ["insufficient", "insufficient", "error", "insufficient", "empty"]


async def test_insufficient_stops_the_chain_without_empty_in_fallback_on(api: SearchAPI) -> None:
    many = Counts("https://b.example/1", "https://b.example/2")
    result = await api("q", [fp(Counts("https://a.example/"), "few"), fp(many, "many")], min_hits=2,
                       fallback_on=["error"])
    assert result.provider == "few"
    assert outcomes(result) == [("few", "insufficient")]
    assert many.calls == 0


async def test_accept_false_is_rejected_and_a_string_is_the_reason(api: SearchAPI) -> None:
    seen: list[Result] = []

    def gate(result: Result) -> bool | str:
        seen.append(result)
        if result.provider == "a":
            return False
        if result.provider == "b":
            return "off topic"
        return True

    result = await api("q", [fp(Counts("https://a.example/"), "a"), fp(Counts("https://b.example/"), "b"),
                             fp(Counts("https://c.example/"), "c")], accept=gate)
    assert result.provider == "c"
    assert [(a.outcome.value, a.reason) for a in result.attempts] == [
        ("insufficient", "rejected"), ("insufficient", "off topic"), ("ok", None)
    ]
    assert [r.provider for r in seen] == ["a", "b", "c"]
    assert [h.url for h in seen[1].hits] == ["https://b.example/"]
    assert [a.provider for a in seen[2].attempts] == ["a", "b", "c"]  # the attempts so far, this one last


async def test_accept_is_not_called_for_empty_answers(api: SearchAPI) -> None:
    calls: list[Result] = []
    result = await api("q", [fp(Counts(), "empty"), fp(Counts("https://x.example/"), "x")],
                       accept=lambda r: calls.append(r) or True)
    assert [r.provider for r in calls] == ["x"]
    assert result.provider == "x"


async def test_accept_that_raises_is_an_error_attempt(api: SearchAPI) -> None:
    def gate(result: Result) -> bool:
        raise ValueError("gate bug")

    with pytest.raises(UpstreamError) as info:
        await api("q", [fp(Counts("https://a.example/"), "a")], accept=gate)
    (attempt,) = info.value.attempts
    assert attempt.outcome is Outcome.ERROR
    assert attempt.reason == "accept"
    assert "gate bug" in (attempt.error or "")


async def test_floor_with_a_single_provider(api: SearchAPI) -> None:
    result = await api("q", fp(Counts("https://a.example/"), "one"), min_hits=2)
    assert outcomes(result) == [("one", "insufficient")]
    assert len(result.hits) == 1


async def test_floor_in_hedged_moves_on(api: SearchAPI) -> None:
    few, many = Counts("https://a.example/"), Counts("https://b.example/1", "https://b.example/2")
    result = await api("q", [fp(few, "few"), fp(many, "many")], strategy="hedged", hedge_after_ms=LONG,
                       min_hits=2)
    assert result.provider == "many"
    assert outcomes(result) == [("few", "insufficient"), ("many", "ok")]


async def test_floor_in_merge_judges_the_merged_answer(api: SearchAPI) -> None:
    p, q = Counts("https://p.example/"), Counts("https://q.example/")
    fallback = Counts(*(f"https://f.example/{i}" for i in range(4)))
    # each member alone has 1 hit, merged 2: min_hits=2 passes on the merged answer
    result = await api("q", [fp(p, "p"), fp(q, "q"), fp(fallback, "f")], strategy="merge", min_hits=2)
    assert result.provider == "p,q"
    assert fallback.calls == 0
    # min_hits=3: the merged answer is insufficient, the fallback answers
    result = await api("q", [fp(p, "p"), fp(q, "q"), fp(fallback, "f")], strategy="merge", min_hits=3)
    assert result.provider == "f"
    assert outcomes(result) == [("p", "insufficient"), ("q", "insufficient"), ("f", "ok")]
    # nothing better: the merged answer is the result
    result = await api("q", [fp(p, "p"), fp(q, "q"), fp(Counts(), "e")], strategy="merge", min_hits=3)
    assert result.provider == "p,q"
    assert len(result.hits) == 2
    assert outcomes(result) == [("p", "insufficient"), ("q", "insufficient"), ("e", "empty")]


async def test_accept_sees_the_merged_result(api: SearchAPI) -> None:
    seen: list[Result] = []
    await api("q", [fp(Counts("https://p.example/"), "p"), fp(Counts("https://q.example/"), "q")],
              strategy="merge", accept=lambda r: seen.append(r) or True)
    (merged,) = seen
    assert merged.provider == "p,q"
    assert [len(h.sources) for h in merged.hits] == [1, 1]
    assert {a.provider for a in merged.attempts} == {"p", "q"}


@pytest.mark.parametrize("strategy", ["hedged", "merge"])
async def test_cancelling_the_search_cancels_every_call(strategy: str) -> None:
    a, b = Hangs(), Hangs()
    task = asyncio.create_task(perplexed.asearch("q", [fp(a, "a"), fp(b, "b")], strategy=strategy,
                                                 hedge_after_ms=0, provider_timeout_ms=LONG))
    for _ in range(2000):  # both calls running (a started Hangs sets its flag before awaiting)
        if a.started.is_set() and b.started.is_set():
            break
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert a.cancelled.is_set() and b.cancelled.is_set()
    me = asyncio.current_task()
    assert [t for t in asyncio.all_tasks() if t is not me and not t.done()] == []
