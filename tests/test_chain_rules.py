"""The chain rules (README, "The fallback chain"), one test per rule and behaviour, each run through
``perplexed.search`` and ``perplexed.asearch`` (the ``api`` fixture).

Providers are real :class:`~perplexed.providers.SearXNG` instances whose upstream answers ok, empty, fail or
hangs: an in-process ``httpx.MockTransport`` (``tests/mock_upstream.py``), since these rules are about what
the chain does, not about sockets. Socket-level behaviour (closed connections, drips, resets) is covered in
``test_chain_budget.py`` and ``tests/reliability/`` on real loopback sockets.
Rule 4 (budgets, cancellation, closed connections) is in ``test_chain_budget.py``, rule 8 (telemetry) in
``test_telemetry.py``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import perplexed
import pytest
from perplexed import Attempt, Outcome, PerplexedError, Result, UpstreamError
from perplexed.providers import FunctionProvider, SearXNG
from testkit.loopback import HEALTHY_MS, SLACK, Hang, Json, LoopbackServer, SearchAPI, Status, searxng_json
from testkit.mock_upstream import MockUpstream


def _routes(loopback: Any) -> None:
    loopback.route("/ok/search", Json(searxng_json(3, prefix="https://ok.example/")))
    loopback.route("/ok2/search", Json(searxng_json(2, prefix="https://ok2.example/")))
    loopback.route("/empty/search", Json(searxng_json(0)))
    loopback.route("/fail/search", Status(500, "internal error"))
    loopback.route("/hang/search", Hang())


@pytest.fixture
def upstream() -> MockUpstream:
    """One upstream with a SearXNG endpoint per behaviour: /ok, /ok2, /empty, /fail, /hang."""
    mock = MockUpstream()
    _routes(mock)
    return mock


@pytest.fixture
def socket_upstream(loopback: LoopbackServer) -> LoopbackServer:
    """The same endpoints on a real loopback server, for providers resolved by name or from the environment
    (no transport can be handed to them)."""
    _routes(loopback)
    return loopback


def sx(server: MockUpstream, behaviour: str, name: str | None = None, **kw: Any) -> SearXNG:
    """A SearXNG provider on ``server``'s ``/{behaviour}`` endpoint, labelled ``name`` (default: behaviour)."""
    return SearXNG(base_url=f"{server.url}/{behaviour}", name=name or behaviour, transport=server.transport, **kw)


def hits_of(server: MockUpstream | LoopbackServer, behaviour: str) -> int:
    """How many requests the ``/{behaviour}`` endpoint received."""
    return sum(1 for r in server.requests if r.path == f"/{behaviour}/search")


def outcomes(result: Result | PerplexedError) -> list[tuple[str, Outcome]]:
    return [(a.provider, a.outcome) for a in result.attempts]


# --- rule 1: a single provider is a plain call ---------------------------------------------------------


async def test_rule1_single_provider_is_one_attempt(api: SearchAPI, upstream: MockUpstream) -> None:
    result = await api("zoning setbacks", sx(upstream, "ok"))

    assert isinstance(result, Result)
    assert result.provider == "ok"
    assert outcomes(result) == [("ok", Outcome.OK)]
    assert [h.url for h in result.hits] == [f"https://ok.example/{i}" for i in (1, 2, 3)]
    assert [h.id for h in result.hits] == [1, 2, 3]
    assert all(h.provider == "ok" for h in result.hits)
    assert upstream.requests[0].query["q"] == ["zoning setbacks"]
    assert upstream.requests[0].query["format"] == ["json"]


async def test_rule1_single_failing_provider_raises_with_its_one_attempt(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    with pytest.raises(UpstreamError) as info:
        await api("zoning", sx(upstream, "fail"))

    assert info.value.reason == "all_providers_failed"
    assert outcomes(info.value) == [("fail", Outcome.ERROR)]
    assert hits_of(upstream, "fail") == 1


@pytest.mark.parametrize("spec_kind", ["name", "dict", "instance"])
async def test_rule1_every_single_spec_kind_is_one_plain_call(
    api: SearchAPI, socket_upstream: LoopbackServer, monkeypatch: pytest.MonkeyPatch, spec_kind: str
) -> None:
    monkeypatch.setenv("SEARXNG_URL", f"{socket_upstream.url}/ok")
    spec: Any = {
        "name": "searxng",
        "dict": {"name": "searxng", "base_url": f"{socket_upstream.url}/ok"},
        "instance": SearXNG(base_url=f"{socket_upstream.url}/ok"),
    }[spec_kind]

    result = await api("zoning", spec)

    assert outcomes(result) == [("searxng", Outcome.OK)]
    assert hits_of(socket_upstream, "ok") == 1


async def test_rule1_a_list_of_one_is_a_chain_of_one(api: SearchAPI, upstream: MockUpstream) -> None:
    result = await api("zoning", [sx(upstream, "empty")])

    assert result.provider == "empty"
    assert outcomes(result) == [("empty", Outcome.EMPTY)]
    assert result.hits == []


# --- rule 2: in order; the first ok answer ends the chain ---------------------------------------------


async def test_rule2_providers_are_tried_in_order_and_the_first_ok_ends_the_chain(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    chain = [sx(upstream, "fail"), sx(upstream, "empty"), sx(upstream, "ok"), sx(upstream, "ok2")]

    result = await api("zoning", chain)

    assert result.provider == "ok"
    assert outcomes(result) == [("fail", Outcome.ERROR), ("empty", Outcome.EMPTY), ("ok", Outcome.OK)]
    assert [r.path for r in upstream.requests] == ["/fail/search", "/empty/search", "/ok/search"]
    assert hits_of(upstream, "ok2") == 0
    assert all(h.provider == "ok" for h in result.hits)


async def test_rule2_the_order_given_is_the_order_used(api: SearchAPI, upstream: MockUpstream) -> None:
    result = await api("zoning", [sx(upstream, "ok2"), sx(upstream, "ok")])

    assert result.provider == "ok2"
    assert [h.url for h in result.hits] == ["https://ok2.example/1", "https://ok2.example/2"]
    assert hits_of(upstream, "ok") == 0


async def test_rule2_comma_separated_names_are_a_chain(
    api: SearchAPI, upstream: MockUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARXNG_URL", f"{upstream.url}/fail")

    with pytest.raises(UpstreamError) as info:
        await api("zoning", "searxng, searxng")

    assert outcomes(info.value) == [("searxng", Outcome.ERROR), ("searxng", Outcome.ERROR)]


async def test_rule2_default_chain_comes_from_PERPLEXED_PROVIDER(
    api: SearchAPI, socket_upstream: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERPLEXED_PROVIDER", "searxng")
    monkeypatch.setenv("SEARXNG_URL", f"{socket_upstream.url}/ok")

    result = await api("zoning")

    assert outcomes(result) == [("searxng", Outcome.OK)]
    assert hits_of(socket_upstream, "ok") == 1


# --- rule 3: fallback_on --------------------------------------------------------------------------------


async def test_rule3_by_default_error_and_empty_move_on(api: SearchAPI, upstream: MockUpstream) -> None:
    result = await api("zoning", [sx(upstream, "empty"), sx(upstream, "fail"), sx(upstream, "ok")])

    assert result.provider == "ok"
    assert outcomes(result) == [("empty", Outcome.EMPTY), ("fail", Outcome.ERROR), ("ok", Outcome.OK)]


async def test_rule3_with_fallback_on_error_an_empty_answer_ends_the_chain(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    result = await api("zoning", [sx(upstream, "empty"), sx(upstream, "ok")], fallback_on=("error",))

    assert result.provider == "empty"
    assert result.hits == []
    assert outcomes(result) == [("empty", Outcome.EMPTY)]
    assert hits_of(upstream, "ok") == 0


async def test_rule3_with_fallback_on_error_an_error_still_moves_on(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    result = await api("zoning", [sx(upstream, "fail"), sx(upstream, "ok")], fallback_on=["error"])

    assert result.provider == "ok"
    assert outcomes(result) == [("fail", Outcome.ERROR), ("ok", Outcome.OK)]


async def test_rule3_timeout_counts_as_error(api: SearchAPI, upstream: MockUpstream) -> None:
    result = await api(
        "zoning", [sx(upstream, "hang"), sx(upstream, "ok")], fallback_on=("error",), provider_timeout_ms=HEALTHY_MS
    )

    assert result.provider == "ok"
    assert outcomes(result) == [("hang", Outcome.TIMEOUT), ("ok", Outcome.OK)]


async def test_rule3_with_fallback_on_empty_an_error_ends_the_chain(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    with pytest.raises(UpstreamError) as info:
        await api("zoning", [sx(upstream, "fail"), sx(upstream, "ok")], fallback_on=("empty",))

    assert outcomes(info.value) == [("fail", Outcome.ERROR)]
    assert hits_of(upstream, "ok") == 0


async def test_rule3_with_fallback_on_empty_a_timeout_ends_the_chain(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    with pytest.raises(UpstreamError) as info:
        await api(
            "zoning", [sx(upstream, "hang"), sx(upstream, "ok")], fallback_on=("empty",), provider_timeout_ms=150
        )

    assert outcomes(info.value) == [("hang", Outcome.TIMEOUT)]
    assert hits_of(upstream, "ok") == 0


async def test_rule3_empty_fallback_on_never_moves_on(api: SearchAPI, upstream: MockUpstream) -> None:
    with pytest.raises(UpstreamError) as info:
        await api("zoning", [sx(upstream, "fail"), sx(upstream, "ok")], fallback_on=())

    assert outcomes(info.value) == [("fail", Outcome.ERROR)]


async def test_rule3_fallback_on_accepts_a_single_name_and_outcome_members(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    single = await api("zoning", [sx(upstream, "empty"), sx(upstream, "ok")], fallback_on="error")
    members = await api(
        "zoning", [sx(upstream, "empty"), sx(upstream, "ok")], fallback_on=[Outcome.ERROR, Outcome.EMPTY]
    )

    assert outcomes(single) == [("empty", Outcome.EMPTY)]
    assert outcomes(members) == [("empty", Outcome.EMPTY), ("ok", Outcome.OK)]


# --- rule 5: after the deadline, the providers left are `deadline` and not called -------------------------


async def test_rule5_providers_after_the_deadline_are_recorded_and_not_called(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    chain = [sx(upstream, "hang"), sx(upstream, "ok"), sx(upstream, "ok2", cost=0.01)]

    start = time.monotonic()
    with pytest.raises(UpstreamError) as info:
        await api("zoning", chain, deadline_ms=250, provider_timeout_ms=10_000)
    elapsed = time.monotonic() - start

    err = info.value
    assert outcomes(err) == [("hang", Outcome.TIMEOUT), ("ok", Outcome.DEADLINE), ("ok2", Outcome.DEADLINE)]
    assert hits_of(upstream, "ok") == 0 and hits_of(upstream, "ok2") == 0
    late = err.attempts[1:]
    assert all(a.cost == 0 and not a.billable and a.duration_ms == 0 for a in late)
    assert all(a.error and "deadline" in a.error for a in late)
    assert 0.25 <= elapsed < 0.25 + SLACK


async def test_rule5_deadline_spent_by_earlier_failures(api: SearchAPI, upstream: MockUpstream) -> None:
    upstream.route("/slowfail/search", Status(503, "busy", delay=0.3))
    chain = [sx(upstream, "slowfail"), sx(upstream, "ok")]

    with pytest.raises(UpstreamError) as info:
        await api("zoning", chain, deadline_ms=250, provider_timeout_ms=1000)

    assert outcomes(info.value) == [("slowfail", Outcome.TIMEOUT), ("ok", Outcome.DEADLINE)]
    assert hits_of(upstream, "ok") == 0


async def test_rule5_deadline_attempts_survive_with_an_earlier_empty_answer(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    upstream.route("/slowempty/search", Json(searxng_json(0), delay=0.3))
    chain = [sx(upstream, "slowempty"), sx(upstream, "ok")]

    result = await api("zoning", chain, deadline_ms=2000, provider_timeout_ms=1000)
    assert result.provider == "ok"  # plenty of deadline: the empty answer moves on

    upstream.clear()
    result = await api("zoning", [sx(upstream, "empty"), sx(upstream, "hang"), sx(upstream, "ok")],
                       deadline_ms=HEALTHY_MS, provider_timeout_ms=10_000)
    assert result.provider == "empty"  # rule 7: the empty answer is the result
    assert outcomes(result) == [("empty", Outcome.EMPTY), ("hang", Outcome.TIMEOUT), ("ok", Outcome.DEADLINE)]
    assert hits_of(upstream, "ok") == 0


# --- rule 6: cost ---------------------------------------------------------------------------------------


async def test_rule6_every_attempt_carries_its_cost_and_the_result_sums_them(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    chain = [
        sx(upstream, "fail", cost=0.05),
        sx(upstream, "empty", cost=0.01),
        sx(upstream, "ok", cost=0.002),
    ]

    result = await api("zoning", chain)

    assert [(a.provider, a.cost, a.billable) for a in result.attempts] == [
        ("fail", 0.0, False),
        ("empty", 0.01, True),
        ("ok", 0.002, True),
    ]
    assert result.cost == pytest.approx(0.012)
    assert result.cost == sum(a.cost for a in result.attempts)
    assert isinstance(result.cost, float)
    assert result.model_dump()["cost"] == pytest.approx(0.012)


async def test_rule6_a_paid_empty_answer_bills(api: SearchAPI, upstream: MockUpstream) -> None:
    result = await api("zoning", sx(upstream, "empty", cost=0.008))

    assert result.provider == "empty"
    assert result.attempts[0].outcome is Outcome.EMPTY
    assert result.attempts[0].billable is True
    assert result.cost == pytest.approx(0.008)


async def test_rule6_errors_timeouts_and_deadlines_bill_nothing(api: SearchAPI, upstream: MockUpstream) -> None:
    chain = [
        sx(upstream, "fail", cost=0.05),
        sx(upstream, "hang", cost=0.05),
        sx(upstream, "ok", cost=0.05),
    ]

    with pytest.raises(UpstreamError) as info:
        await api("zoning", chain, provider_timeout_ms=10_000, deadline_ms=HEALTHY_MS)

    err = info.value
    assert [a.outcome for a in err.attempts] == [Outcome.ERROR, Outcome.TIMEOUT, Outcome.DEADLINE]
    assert all(a.cost == 0.0 and a.billable is False for a in err.attempts)
    assert err.cost == 0.0


async def test_rule6_a_charge_reported_by_a_failing_provider_is_billed(api: SearchAPI) -> None:
    def charged_failure(query: str, options: Any) -> Any:
        raise perplexed.ProviderError("upstream", "answered 200 then failed", cost=0.003)

    def free_ok(query: str, options: Any) -> Any:
        return [{"url": "https://ok.example/1", "title": "ok"}]

    result = await api("zoning", [FunctionProvider(charged_failure, cost=0.5), FunctionProvider(free_ok)])

    first = result.attempts[0]
    assert (first.outcome, first.cost, first.billable) == (Outcome.ERROR, 0.003, True)
    assert result.cost == pytest.approx(0.003)

    with pytest.raises(UpstreamError) as info:
        await api("zoning", FunctionProvider(charged_failure))
    assert info.value.cost == pytest.approx(0.003)
    assert info.value.attempts[0].billable


async def test_rule6_a_cost_reported_with_the_answer_wins_over_the_price(api: SearchAPI) -> None:
    def reports_cost(query: str, options: Any) -> perplexed.ProviderAnswer:
        return perplexed.ProviderAnswer(hits=[perplexed.Hit(url="https://a.example/")], cost=0.0042)

    result = await api("zoning", FunctionProvider(reports_cost, cost=1.0))

    assert result.attempts[0].cost == 0.0042
    assert result.cost == 0.0042


async def test_rule6_price_overrides_from_the_environment_are_billed(
    api: SearchAPI, socket_upstream: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERPLEXED_PRICE_SEARXNG", "0.0031")

    result = await api("zoning", SearXNG(base_url=f"{socket_upstream.url}/ok"))

    assert result.attempts[0].cost == pytest.approx(0.0031)
    assert result.attempts[0].billable


async def test_rule7_an_earlier_empty_answer_is_the_result_when_an_error_ends_the_chain(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    result = await api(
        "zoning", [sx(upstream, "empty", cost=0.01), sx(upstream, "fail"), sx(upstream, "ok")], fallback_on=("empty",)
    )

    assert result.provider == "empty"
    assert outcomes(result) == [("empty", Outcome.EMPTY), ("fail", Outcome.ERROR)]
    assert result.cost == pytest.approx(0.01)
    assert hits_of(upstream, "ok") == 0


async def test_rule6_paid_attempts_before_a_failure_are_on_the_error(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    def paid_error(query: str, options: Any) -> Any:
        raise perplexed.ProviderError("soft_failure", "200 with an error body", cost=0.02)

    with pytest.raises(UpstreamError) as info:
        await api("zoning", [FunctionProvider(paid_error, name="paid"), sx(upstream, "fail")])

    err = info.value
    assert [(a.provider, a.cost) for a in err.attempts] == [("paid", 0.02), ("fail", 0.0)]
    assert err.cost == pytest.approx(0.02)


# --- rule 7: an empty answer beats no answer; otherwise all_providers_failed ---------------------------------


async def test_rule7_an_empty_answer_is_returned_when_every_provider_fails(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    result = await api("zoning", [sx(upstream, "fail", name="a"), sx(upstream, "empty"), sx(upstream, "fail", name="b")])

    assert result.provider == "empty"
    assert result.hits == []
    assert outcomes(result) == [("a", Outcome.ERROR), ("empty", Outcome.EMPTY), ("b", Outcome.ERROR)]


async def test_rule7_the_first_empty_answer_is_the_result(api: SearchAPI, upstream: MockUpstream) -> None:
    result = await api("zoning", [sx(upstream, "empty", name="e1"), sx(upstream, "empty", name="e2")])

    assert result.provider == "e1"
    assert outcomes(result) == [("e1", Outcome.EMPTY), ("e2", Outcome.EMPTY)]


async def test_rule7_no_answer_at_all_raises_all_providers_failed(
    api: SearchAPI, upstream: MockUpstream
) -> None:
    chain = [sx(upstream, "fail"), sx(upstream, "hang")]

    with pytest.raises(UpstreamError) as info:
        await api("zoning", chain, provider_timeout_ms=HEALTHY_MS)

    err = info.value
    assert isinstance(err, PerplexedError)
    assert err.reason == "all_providers_failed"
    assert all(isinstance(a, Attempt) for a in err.attempts)
    assert outcomes(err) == [("fail", Outcome.ERROR), ("hang", Outcome.TIMEOUT)]
    message = str(err)
    for attempt in err.attempts:  # provider, outcome, error and duration of every attempt
        assert attempt.error
        assert f"{attempt.provider}: {attempt.outcome.value} after {attempt.duration_ms} ms" in message
        assert attempt.error in message
    assert "HTTP 500" in message and f"no answer within {HEALTHY_MS} ms" in message


async def test_rule7_the_last_provider_failure_is_the_cause(api: SearchAPI, upstream: MockUpstream) -> None:
    with pytest.raises(UpstreamError) as info:
        await api("zoning", [sx(upstream, "hang"), sx(upstream, "fail")], provider_timeout_ms=HEALTHY_MS)

    cause = info.value.__cause__
    assert isinstance(cause, perplexed.ProviderError)
    assert cause.reason == "upstream" and cause.status == 500 and cause.provider == "fail"


# --- MockTransport providers follow the same rules ----------------------------------------------------------


def mock(name: str, handler: Any, **kw: Any) -> SearXNG:
    return SearXNG(base_url="http://search.invalid", name=name, transport=httpx.MockTransport(handler), **kw)


async def test_mock_transport_chain_ok_empty_fail_hang(api: SearchAPI) -> None:
    seen: list[str] = []

    def ok(request: httpx.Request) -> httpx.Response:
        seen.append("ok")
        return httpx.Response(200, json=searxng_json(2))

    def empty(request: httpx.Request) -> httpx.Response:
        seen.append("empty")
        return httpx.Response(200, json=searxng_json(0))

    def fail(request: httpx.Request) -> httpx.Response:
        seen.append("fail")
        return httpx.Response(502, text="bad gateway")

    async def hang(request: httpx.Request) -> httpx.Response:
        seen.append("hang")
        await asyncio.sleep(30)
        raise AssertionError("not cancelled")  # pragma: no cover

    chain = [mock("fail", fail), mock("hang", hang), mock("empty", empty, cost=0.01), mock("ok", ok)]
    result = await api("zoning", chain, provider_timeout_ms=HEALTHY_MS)

    assert seen == ["fail", "hang", "empty", "ok"]
    assert outcomes(result) == [
        ("fail", Outcome.ERROR), ("hang", Outcome.TIMEOUT), ("empty", Outcome.EMPTY), ("ok", Outcome.OK),
    ]
    assert result.provider == "ok"
    assert result.cost == pytest.approx(0.01)
    assert result.attempts[0].error is not None and "502" in result.attempts[0].error


async def test_mock_transport_drip_is_bounded_by_the_budget(api: SearchAPI) -> None:
    async def dribble() -> Any:
        yield b'{"results": ['
        for _ in range(100):
            await asyncio.sleep(0.05)
            yield b" "
        yield b"]}"  # pragma: no cover

    def slow_body(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json"}, content=dribble())

    start = time.monotonic()
    with pytest.raises(UpstreamError) as info:
        await api("zoning", mock("drip", slow_body), provider_timeout_ms=250)
    elapsed = time.monotonic() - start

    assert outcomes(info.value) == [("drip", Outcome.TIMEOUT)]
    assert 0.25 <= elapsed < 0.25 + SLACK
