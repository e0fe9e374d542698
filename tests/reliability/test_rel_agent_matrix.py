"""Issue 9, fault matrix for the Agent API paths and grounded answers: every fault x (``create``,
``stream``, background ``wait``, ``answer`` / ``stream_answer``), each sync and async.

For every cell: the call raises a documented exception of the right class within its timeout + 50 ms, the
attempts (search attempts for answers, the billed agent attempt for a failed run) survive on the error with
their cost, and the peak of traced memory stays bounded. Fault servers: asyncio servers in a child process
(``testkit.fault_process``), loopback only. The clients use ``max_retries=0`` so one fault is one request; a
separate cell checks that retries stay inside the budget.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import perplexed
import pytest
from perplexed import APIError, APITimeoutError, PerplexedError, UpstreamError
from perplexed.agent import (
    AgentClient,
    APIConnectionError,
    AsyncAgentClient,
    RateLimitError,
    ResponseFailedError,
    ServerError,
    StreamError,
)
from perplexed.providers import SearXNG
from rel_faults import DEADLINE_SLACK_S, ameasure, measure
from testkit.fault_process import AGENT_FAILED_COST, AGENT_OK_COST, fault_servers

TIMEOUT = 0.5  # seconds: the Agent API calls' budget in this matrix
#: the largest legitimate buffer is one capped Agent API body (32 MB); streaming holds one event at a time
AGENT_MEMORY_BOUND = 40 * 1024 * 1024
SEARCH_COST = 0.001

CONN = (APIConnectionError, StreamError)
#: fault -> exception classes a call may end with (documented ones; the first is the usual one)
EXPECTED: dict[str, tuple[type[PerplexedError], ...]] = {
    "refused": (APIConnectionError,),
    "accept_hang": (APITimeoutError,),
    "drip": (APITimeoutError,),
    "reset_mid_body": CONN,
    "close": CONN,
    "429_retry_after": (RateLimitError,),
    "500": (ServerError,),
    "502": (ServerError,),
    "503": (ServerError,),
    "malformed_json": (APIError,),
    "html_not_json": (APIError,),  # StreamError is an APIError
    "agent_failed": (ResponseFailedError,),
    "body_100mb": (APIError,),
    "body_100mb_chunked": (APIError,),
    "sse_cut": CONN,
    "sse_endless": (APITimeoutError,),
}
FAULTS = list(EXPECTED)
#: background wait: a run that never ends is the "never terminal" fault of polling
WAIT_FAULTS = [f for f in FAULTS if not f.startswith("sse_")] + ["agent_in_progress"]
WAIT_EXPECTED = {**EXPECTED, "agent_in_progress": (APITimeoutError,)}


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    with fault_servers([*FAULTS, "agent_in_progress", "agent_ok", "agent_sse_ok", "good"]) as found:
        # warm up: imports and the pooled clients, so the memory bound measures a call
        perplexed.search("warm", SearXNG(base_url=found["good"]))
        AgentClient(api_key="k", base_url=found["agent_ok"]).create(preset="fast", input="warm")
        yield found


def _check(cell: str, m: Any, expected: tuple[type[PerplexedError], ...], bound: float) -> PerplexedError:
    assert m.elapsed <= bound + DEADLINE_SLACK_S, (
        f"{cell}: took {m.elapsed * 1000:.0f} ms (bound {bound * 1000:.0f})"
    )
    assert m.error is not None, f"{cell}: no error, got {m.value!r}"
    assert isinstance(m.error, expected), f"{cell}: {type(m.error).__name__}: {m.error}"
    assert m.peak <= AGENT_MEMORY_BOUND, f"{cell}: peak {m.peak / 1e6:.1f} MB"
    err: PerplexedError = m.error
    if isinstance(err, RateLimitError):
        assert err.retry_after == 7 and err.status == 429
    if isinstance(err, ServerError):
        assert err.status in (500, 502, 503)
    if isinstance(err, ResponseFailedError):  # a failed run is billed: its cost survives on the error
        run = err.attempts[-1]
        assert run.provider == "perplexity-agent" and run.billable, err.attempts
        assert run.cost == pytest.approx(AGENT_FAILED_COST) and err.cost >= AGENT_FAILED_COST
    return err


class _Clock:
    """When the caller started reading a stream and when it last received an event (``perf_counter``)."""

    def __init__(self) -> None:
        self.start = self.last = 0.0

    def begin(self) -> None:
        self.start = self.last = time.perf_counter()

    def tick(self) -> None:
        self.last = time.perf_counter()

    @property
    def before_last_event(self) -> float:
        """Seconds from the start to the last event received (0 when none arrived)."""
        return self.last - self.start


async def _drain_async(stream: Any, clock: _Clock) -> None:
    clock.begin()
    async with stream as s:
        async for _ in s:
            clock.tick()


def _drain_sync(stream: Any, clock: _Clock) -> None:
    clock.begin()
    with stream as s:
        for _ in s:
            clock.tick()


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_create(fault: str, mode: str, urls: dict[str, str]) -> None:
    if mode == "sync":
        client = AgentClient(api_key="k", base_url=urls[fault], max_retries=0)
        m = measure(lambda: client.create(preset="fast", input="hi", timeout=TIMEOUT))
    else:
        aclient = AsyncAgentClient(api_key="k", base_url=urls[fault], max_retries=0)
        m = await ameasure(lambda: aclient.create(preset="fast", input="hi", timeout=TIMEOUT))
    _check(f"create/{fault}/{mode}", m, EXPECTED[fault], TIMEOUT)


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_stream(fault: str, mode: str, urls: dict[str, str]) -> None:
    clock = _Clock()
    if mode == "sync":
        client = AgentClient(api_key="k", base_url=urls[fault], max_retries=0)
        m = measure(lambda: _drain_sync(client.stream(preset="fast", input="hi", timeout=TIMEOUT), clock))
    else:
        aclient = AsyncAgentClient(api_key="k", base_url=urls[fault], max_retries=0)
        m = await ameasure(
            lambda: _drain_async(aclient.stream(preset="fast", input="hi", timeout=TIMEOUT), clock)
        )
    # A stream's timeout bounds the wait for each event (docs/agent-api.md, "Stream deadline"): the call
    # ends within one timeout (+ the slack) of the last event it received. Most faults deliver none, so
    # their bound is one timeout from the call; sse_endless delivers a few events first, and the fault
    # server's speed, not the client's, decides when those arrive.
    _check(f"stream/{fault}/{mode}", m, EXPECTED[fault], TIMEOUT + clock.before_last_event)


@pytest.mark.parametrize("fault", WAIT_FAULTS)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_background_wait(fault: str, mode: str, urls: dict[str, str]) -> None:
    kw: dict[str, Any] = {"timeout": TIMEOUT, "poll_interval": 0.05}
    if mode == "sync":
        client = AgentClient(api_key="k", base_url=urls[fault], max_retries=0)
        m = measure(lambda: client.wait("resp_123", **kw))
    else:
        aclient = AsyncAgentClient(api_key="k", base_url=urls[fault], max_retries=0)
        m = await ameasure(lambda: aclient.wait("resp_123", **kw))
    _check(f"wait/{fault}/{mode}", m, WAIT_EXPECTED[fault], TIMEOUT)


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("mode", ["sync", "async", "stream"])
async def test_answer(fault: str, mode: str, urls: dict[str, str]) -> None:
    """A paid search answers, then the Agent API fails: the error carries the search attempts and their
    cost (nothing paid for is lost), plus the failed run's own cost when it was billed."""
    search = SearXNG(base_url=urls["good"], name="good", cost=SEARCH_COST)
    kw: dict[str, Any] = {"provider_timeout_ms": 5_000}
    if mode == "sync":
        client = AgentClient(api_key="k", base_url=urls[fault], max_retries=0, timeout=TIMEOUT)
        m = measure(lambda: perplexed.answer("zoning setbacks", [search], client=client, **kw))
    else:
        aclient = AsyncAgentClient(api_key="k", base_url=urls[fault], max_retries=0, timeout=TIMEOUT)
        if mode == "async":
            m = await ameasure(lambda: perplexed.aanswer("zoning setbacks", [search], client=aclient, **kw))
        else:

            async def consume() -> None:
                async for _ in perplexed.astream_answer("zoning setbacks", [search], client=aclient, **kw):
                    pass

            m = await ameasure(consume)
    cell = f"answer/{fault}/{mode}"
    # bound: the search (fast, loopback; budget 5 s but it answers in ms) plus one Agent API timeout
    err = _check(cell, m, EXPECTED[fault], TIMEOUT + 1.0)
    search_attempts = [a for a in err.attempts if a.provider == "good"]
    assert len(search_attempts) == 1 and search_attempts[0].outcome.value == "ok", err.attempts
    billed = SEARCH_COST + (AGENT_FAILED_COST if fault == "agent_failed" else 0.0)
    assert err.cost == pytest.approx(billed), f"{cell}: cost {err.cost} != {billed}: {err.attempts}"


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_answer_whose_search_fails_raises_before_calling_the_model(
    mode: str, urls: dict[str, str]
) -> None:
    searches = [SearXNG(base_url=urls["500"], name="a"), SearXNG(base_url=urls["refused"], name="b")]
    kw: dict[str, Any] = {"provider_timeout_ms": 2_000}
    if mode == "sync":
        client = AgentClient(api_key="k", base_url=urls["agent_ok"], max_retries=0, timeout=TIMEOUT)
        m = measure(lambda: perplexed.answer("q", searches, client=client, **kw))
    else:
        aclient = AsyncAgentClient(api_key="k", base_url=urls["agent_ok"], max_retries=0, timeout=TIMEOUT)
        m = await ameasure(lambda: perplexed.aanswer("q", searches, client=aclient, **kw))
    assert isinstance(m.error, UpstreamError) and m.error.reason == "all_providers_failed"
    assert [(a.provider, a.reason) for a in m.error.attempts] == [("a", "upstream"), ("b", "connection")]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_healthy_paths_answer_with_their_cost(mode: str, urls: dict[str, str]) -> None:
    """The matrix's servers are not broken for everything: the healthy twins of each path succeed."""
    search = SearXNG(base_url=urls["good"], name="good", cost=SEARCH_COST)
    if mode == "sync":
        client = AgentClient(api_key="k", base_url=urls["agent_ok"], max_retries=0, timeout=5)
        created = client.create(preset="fast", input="hi")
        streamed = AgentClient(api_key="k", base_url=urls["agent_sse_ok"], timeout=5)
        with streamed.stream(preset="fast", input="hi") as s:
            events = [e.type for e in s]
        ans = perplexed.answer("zoning", [search], client=client)
    else:
        aclient = AsyncAgentClient(api_key="k", base_url=urls["agent_ok"], max_retries=0, timeout=5)
        created = await aclient.create(preset="fast", input="hi")
        astreamed = AsyncAgentClient(api_key="k", base_url=urls["agent_sse_ok"], timeout=5)
        async with astreamed.stream(preset="fast", input="hi") as s:
            events = [e.type async for e in s]
        ans = await perplexed.aanswer("zoning", [search], client=aclient)
    assert created.status == "completed" and created.cost == pytest.approx(AGENT_OK_COST)
    assert events[-1] == "response.completed"
    assert ans.cost == pytest.approx(SEARCH_COST + AGENT_OK_COST) and ans.sources


async def test_retries_stay_inside_the_budget(urls: dict[str, str]) -> None:
    """With retries on (the default 2), a 503 is retried with backoff but never past the timeout, and a 429
    whose Retry-After (7 s) exceeds what is left is not waited for."""
    for fault in ("503", "429_retry_after", "refused"):
        aclient = AsyncAgentClient(api_key="k", base_url=urls[fault], timeout=TIMEOUT)
        m = await ameasure(lambda c=aclient: c.create(preset="fast", input="hi"))
        _check(f"create-with-retries/{fault}", m, EXPECTED[fault], TIMEOUT)
