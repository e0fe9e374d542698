"""Issue 9, fault matrix for ``search`` and ``asearch``: every fault x (sync, async) x (single provider, a
chain that falls back to a good provider, a chain where everything fails after a billed attempt).

For every cell: the call returns or raises within its deadline + 50 ms (the bound the issue fixes), every
attempt is recorded with the right outcome and reason (on the result or the error, and through
``on_attempt``), the cost of billable attempts survives on the error, a hung connection is closed
(cancelled), and the peak of traced memory stays under :data:`MEMORY_BOUND`. Loopback servers only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import perplexed
import pytest
from perplexed import Attempt, Outcome, PerplexedError, Result, UpstreamError
from perplexed.providers import SearXNG
from rel_faults import (
    DEADLINE_SLACK_S,
    FAULTS,
    GOOD_COST,
    HANG_BUDGET_MS,
    MEMORY_BOUND,
    METERED_COST,
    Fault,
    Measured,
    Metered,
    ameasure,
    fault_server,
    good_server,
    measure,
    metered_soft_failure,
)
from testkit.loopback import Hang, LoopbackServer, serve

SHAPES = ("single", "fallback", "exhausted")
#: single provider: the provider budget binds (the deadline is a little later, so it does not cap it)
SINGLE_DEADLINE_MS = HANG_BUDGET_MS + 100
#: chains: one hanging provider (300 ms) plus fast ones fit well inside
CHAIN_DEADLINE_MS = 800


@pytest.fixture(scope="module")
def good() -> Iterator[LoopbackServer]:
    """The good provider's server (shared by the module), warmed up: the memory bound then measures a
    call, not first-use imports."""
    with good_server() as server:
        perplexed.search("warm up", SearXNG(base_url=server.url))
        yield server


@pytest.fixture(scope="module")
def metered() -> Iterator[LoopbackServer]:
    with serve({"/search": metered_soft_failure()}) as server:
        yield server


def _build(fault: Fault, shape: str, fault_url: str, good_url: str, metered_url: str) -> tuple[Any, int]:
    """The provider spec of a cell and its deadline (ms)."""
    faulty = SearXNG(base_url=fault_url, name=f"faulty-{fault.name}")
    extra = fault.budget_ms - HANG_BUDGET_MS
    if shape == "single":
        return faulty, SINGLE_DEADLINE_MS + extra
    if shape == "fallback":
        good = SearXNG(base_url=good_url, name="good", cost=GOOD_COST)
        return [faulty, good], CHAIN_DEADLINE_MS + extra
    metered = Metered(base_url=metered_url, name="metered")
    return [metered, faulty], CHAIN_DEADLINE_MS + extra


def _expected(fault: Fault, shape: str) -> list[tuple[str, Outcome, str | None]]:
    me = (f"faulty-{fault.name}", fault.outcome, fault.reason)
    if shape == "single":
        return [me]
    if shape == "fallback":
        return [me, ("good", Outcome.OK, None)]
    return [("metered", Outcome.ERROR, "soft_failure"), me]


def _check_cell(
    fault: Fault, shape: str, deadline_ms: int, m: Measured, seen: list[Attempt], server: Any
) -> None:
    cell = f"{fault.name}/{shape}"
    # 1. within its deadline + 50 ms
    assert m.elapsed <= deadline_ms / 1000 + DEADLINE_SLACK_S, f"{cell}: took {m.elapsed * 1000:.0f} ms"
    # 2. only documented exceptions; result or error as the chain rules say
    if m.error is not None:
        assert isinstance(m.error, PerplexedError), (
            f"{cell}: undocumented {type(m.error).__name__}: {m.error}"
        )
    ends_empty = fault.outcome is Outcome.EMPTY
    if shape == "fallback":
        assert m.error is None, f"{cell}: {m.error}"
        result: Result = m.value
        assert result.provider == "good" and len(result.hits) == 3
        attempts = result.attempts
        assert result.cost == pytest.approx(GOOD_COST)
    elif ends_empty:  # rule 7: an empty answer is still the result
        assert m.error is None, f"{cell}: {m.error}"
        result = m.value
        assert result.hits == [] and result.provider == f"faulty-{fault.name}"
        attempts = result.attempts
    else:
        assert isinstance(m.error, UpstreamError), f"{cell}: expected UpstreamError, got {m.error!r}"
        assert m.error.reason == "all_providers_failed"
        attempts = m.error.attempts
    # 3. every attempt recorded, with the right outcome and reason, also through on_attempt
    got = [(a.provider, a.outcome, a.reason) for a in attempts]
    assert got == _expected(fault, shape), f"{cell}: {attempts}"
    assert seen == attempts, f"{cell}: on_attempt saw {seen}"
    mine = next(a for a in attempts if a.provider == f"faulty-{fault.name}")
    for text in fault.error_has:
        assert mine.error and text in mine.error, f"{cell}: {text!r} not in {mine.error!r}"
    if fault.detail_has:
        assert mine.detail and fault.detail_has in mine.detail, f"{cell}: {mine.detail!r}"
    if fault.outcome is Outcome.ERROR:
        assert mine.error, f"{cell}: an error attempt without an error message"
    assert mine.cost == 0.0 and not mine.billable  # a failed free call bills nothing
    if fault.hangs:  # costs exactly its budget, then is cancelled: the server sees the connection close
        assert fault.budget_ms - 2 <= mine.duration_ms <= fault.budget_ms + 50, (
            f"{cell}: {mine.duration_ms} ms"
        )
        assert server is not None and server.wait_disconnect(2.0), f"{cell}: hung connection not closed"
    # 4. the cost of billable attempts survives on the error (or the result)
    if shape == "exhausted":
        billed = attempts[0]
        assert billed.billable and billed.cost == pytest.approx(METERED_COST)
        total = m.value.cost if m.error is None else m.error.cost
        assert total == pytest.approx(METERED_COST), f"{cell}: cost lost: {total}"
        if m.error is not None:
            assert f"${METERED_COST:.4f}" in str(m.error)
    # 5. memory stays bounded
    assert m.peak <= MEMORY_BOUND, f"{cell}: peak {m.peak / 1e6:.1f} MB"


@contextlib.contextmanager
def _cell(
    fault_name: str, shape: str, good: LoopbackServer, metered: LoopbackServer
) -> Iterator[tuple[Fault, Any, dict[str, Any], list[Attempt], Any]]:
    """The fault server of one cell, and ``(fault, spec, kwargs, seen, fault_server)``."""
    fault = FAULTS[fault_name]
    seen: list[Attempt] = []
    with fault_server(fault) as (fault_url, server):
        spec, deadline_ms = _build(fault, shape, fault_url, good.url, metered.url)
        kwargs: dict[str, Any] = {
            "provider_timeout_ms": fault.budget_ms,
            "deadline_ms": deadline_ms,
            "on_attempt": seen.append,
        }
        yield fault, spec, kwargs, seen, server


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_search_sync(fault_name: str, shape: str, good: LoopbackServer, metered: LoopbackServer) -> None:
    with _cell(fault_name, shape, good, metered) as (fault, spec, kw, seen, server):
        m = measure(lambda: perplexed.search("zoning setbacks", spec, **kw))
        _check_cell(fault, shape, kw["deadline_ms"], m, seen, server)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_search_sync_direct(fault_name: str, shape: str, good: LoopbackServer, metered: LoopbackServer) -> None:
    """The same cells through the sync API's direct path (no ``on_attempt``: the search runs in this thread,
    with no event loop); each attempt is seen by the provider's flow in this thread."""
    with _cell(fault_name, shape, good, metered) as (fault, spec, kw, seen, server):
        del kw["on_attempt"]
        m = measure(lambda: perplexed.search("zoning setbacks", spec, **kw))
        outcome = m.error if m.error is not None else m.value
        seen.extend(getattr(outcome, "attempts", []))
        _check_cell(fault, shape, kw["deadline_ms"], m, seen, server)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fault_name", list(FAULTS))
async def test_asearch(fault_name: str, shape: str, good: LoopbackServer, metered: LoopbackServer) -> None:
    with _cell(fault_name, shape, good, metered) as (fault, spec, kw, seen, server):
        m = await ameasure(lambda: perplexed.asearch("zoning setbacks", spec, **kw))
        _check_cell(fault, shape, kw["deadline_ms"], m, seen, server)


# --- the deadline, when it is what binds ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_chain_deadline_caps_the_second_hang_and_skips_the_rest(mode: str) -> None:
    """[hang, hang, good] with 300 ms per provider and a 450 ms deadline: the second provider gets what is
    left (about 150 ms), the third is recorded as ``deadline`` and never called."""
    seen: list[Attempt] = []
    with serve({"*": Hang(read_request=False)}) as h1, serve({"*": Hang()}) as h2, good_server() as good:
        good.clear()
        spec = [
            SearXNG(base_url=h1.url, name="h1"),
            SearXNG(base_url=h2.url, name="h2"),
            SearXNG(base_url=good.url, name="good"),
        ]
        kw: dict[str, Any] = {"provider_timeout_ms": 300, "deadline_ms": 450, "on_attempt": seen.append}
        if mode == "sync":
            m = measure(lambda: perplexed.search("q", spec, **kw))
        else:
            m = await ameasure(lambda: perplexed.asearch("q", spec, **kw))
        assert m.elapsed <= 0.450 + DEADLINE_SLACK_S
        assert isinstance(m.error, UpstreamError)
        a = m.error.attempts
        assert [(x.provider, x.outcome) for x in a] == [
            ("h1", Outcome.TIMEOUT),
            ("h2", Outcome.TIMEOUT),
            ("good", Outcome.DEADLINE),
        ]
        assert 298 <= a[0].duration_ms <= 350
        assert 130 <= a[1].duration_ms <= 200 and "capped by the chain deadline" in (a[1].error or "")
        assert seen == a
        assert good.requests == []  # a provider past the deadline is not called
        assert h1.wait_disconnect(2.0) and h2.wait_disconnect(2.0)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_single_provider_budget_is_capped_by_the_deadline(mode: str) -> None:
    with serve({"*": Hang()}) as hung:
        kw: dict[str, Any] = {"provider_timeout_ms": 10_000, "deadline_ms": 250}
        spec = SearXNG(base_url=hung.url)
        if mode == "sync":
            m = measure(lambda: perplexed.search("q", spec, **kw))
        else:
            m = await ameasure(lambda: perplexed.asearch("q", spec, **kw))
        assert m.elapsed <= 0.250 + DEADLINE_SLACK_S
        assert isinstance(m.error, UpstreamError)
        (attempt,) = m.error.attempts
        assert attempt.outcome is Outcome.TIMEOUT and 245 <= attempt.duration_ms <= 300
        assert "capped by the chain deadline" in (attempt.error or "")
