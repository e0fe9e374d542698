"""answer()'s deadline_ms is the whole call's budget (issue 12 §5), and answer() keeps the search attempts
and their cost on any failure of the Agent API call (issue 12 §4).

Before the fix, ``deadline_ms`` bounded only the search: an Agent API that took 6 s made
``answer(..., deadline_ms=1000)`` return after 6 s. The Agent API here is an ``httpx.MockTransport`` whose
handler sleeps (no socket); the search provider is a function that takes ~200 ms and costs $0.002.
Allowances are generous (a loaded machine), but far below the Agent API's 30 s sleep.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import perplexed
import pytest
from perplexed import APIError, APITimeoutError, Hit, UpstreamError
from perplexed.agent import AgentClient, APIConnectionError, AsyncAgentClient
from perplexed.providers import FunctionProvider

SLOW_AGENT_S = 30.0
ALLOWANCE_S = 1.5  # the promise is +50 ms; the machine may be busy
HITS = [Hit(title="Setbacks", url="https://example.org/setbacks", snippet="Front setbacks are 20 feet.")]


def slow_search(delay: float = 0.2) -> FunctionProvider:
    async def search(query: str, options: Any) -> list[Hit]:
        await asyncio.sleep(delay)
        return [h.model_copy() for h in HITS]

    return FunctionProvider(search, name="web", cost=0.002)


def agent_transport(handler: Any) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


async def _hang(request: httpx.Request) -> httpx.Response:
    await asyncio.sleep(SLOW_AGENT_S)
    return httpx.Response(500)


def _client(handler: Any = _hang) -> AgentClient:
    return AgentClient(api_key="pplx-test", base_url="https://api.perplexity.ai",
                       transport=agent_transport(handler), max_retries=0)


def _async_client(handler: Any = _hang) -> AsyncAgentClient:
    return AsyncAgentClient(api_key="pplx-test", base_url="https://api.perplexity.ai",
                            transport=agent_transport(handler), max_retries=0)


def _check_attempts(exc: perplexed.PerplexedError) -> None:
    assert [a.provider for a in exc.attempts] == ["web"]
    assert exc.attempts[0].outcome.value == "ok"
    assert exc.cost == pytest.approx(0.002)


def test_deadline_bounds_search_plus_agent_call() -> None:
    started = time.perf_counter()
    with pytest.raises(APITimeoutError) as info:
        perplexed.answer("setbacks?", provider=slow_search(), client=_client(), deadline_ms=1000)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0 + ALLOWANCE_S, f"answer(deadline_ms=1000) took {elapsed:.2f}s"
    assert elapsed >= 0.9  # the Agent API had what the search left, not less
    _check_attempts(info.value)


async def test_deadline_bounds_the_async_answer() -> None:
    started = time.perf_counter()
    with pytest.raises(APITimeoutError) as info:
        await perplexed.aanswer("setbacks?", provider=slow_search(), client=_async_client(), deadline_ms=800)
    assert time.perf_counter() - started < 0.8 + ALLOWANCE_S
    _check_attempts(info.value)


def test_deadline_bounds_a_stream_that_stalls_after_its_first_delta() -> None:
    async def drip(request: httpx.Request) -> httpx.Response:
        async def body() -> Any:
            yield b'data: {"type": "response.created", "sequence_number": 0, "response": {"id": "r1", "status": "in_progress", "output": []}}\n\n'
            yield b'data: {"type": "response.output_text.delta", "sequence_number": 1, "item_id": "m", "output_index": 0, "content_index": 0, "delta": "Setbacks"}\n\n'
            await asyncio.sleep(SLOW_AGENT_S)

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    started = time.perf_counter()
    chunks: list[Any] = []
    with pytest.raises(APITimeoutError) as info:
        for chunk in perplexed.stream_answer("setbacks?", provider=slow_search(), client=_client(drip),
                                             deadline_ms=1000):
            chunks.append(chunk)
    elapsed = time.perf_counter() - started
    assert chunks == ["Setbacks"]
    assert elapsed < 1.0 + ALLOWANCE_S, f"stream_answer(deadline_ms=1000) took {elapsed:.2f}s"
    _check_attempts(info.value)


def test_a_search_that_uses_the_whole_budget_never_calls_the_agent_api() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return httpx.Response(500)

    with pytest.raises(UpstreamError) as info:
        perplexed.answer("setbacks?", provider=[slow_search(0.35)], client=_client(handler), deadline_ms=300,
                         provider_timeout_ms=5000)
    # the chain's own deadline cut the search: the attempt is a timeout, and the model was never asked
    assert calls == []
    assert info.value.attempts and info.value.attempts[0].provider == "web"


def test_without_deadline_ms_the_agent_timeout_is_the_clients() -> None:
    # No deadline_ms: today's defaults (the client's own timeout, here 0.3 s) apply, not the chain's.
    client = AgentClient(api_key="pplx-test", base_url="https://api.perplexity.ai",
                         transport=agent_transport(_hang), max_retries=0, timeout=0.3)
    started = time.perf_counter()
    with pytest.raises(APITimeoutError):
        perplexed.answer("setbacks?", provider=slow_search(0.0), client=client)
    assert time.perf_counter() - started < 0.3 + ALLOWANCE_S


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (httpx.TooManyRedirects("Exceeded maximum allowed redirects."), APIConnectionError),
        (httpx.DecodingError("Error -3 while decompressing data"), APIConnectionError),
        (RuntimeError("a bug in a client wrapper"), APIError),
    ],
)
def test_any_agent_failure_keeps_the_search_attempts(failure: Exception, expected: type[Exception]) -> None:
    class Broken:
        """A duck-typed client whose calls fail with something that is not a PerplexedError."""

        async def create(self, request: Any, **kw: Any) -> Any:
            raise failure

        def stream(self, request: Any, **kw: Any) -> Any:
            raise failure

    with pytest.raises(expected) as info:
        perplexed.answer("setbacks?", provider=slow_search(0.0), client=Broken())
    _check_attempts(info.value)
    assert info.value.__cause__ is failure
    with pytest.raises(expected) as info2:
        list(perplexed.stream_answer("setbacks?", provider=slow_search(0.0), client=Broken()))
    _check_attempts(info2.value)
