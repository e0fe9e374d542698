"""When the call's timeout ends while a failed request is being retried, the caller gets what the API
answered (here a 503 → ServerError), not a bare timeout that hides it."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from perplexed import APITimeoutError
from perplexed.agent import AsyncAgentClient, ServerError


async def test_timeout_during_a_retry_reports_the_last_api_error() -> None:
    calls = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            return httpx.Response(503, json={"error": {"message": "overloaded", "type": "server_error"}})
        await asyncio.sleep(5)  # the retry hangs past the budget
        return httpx.Response(200, json={})

    client = AsyncAgentClient(api_key="pplx-test-not-a-real-key", transport=httpx.MockTransport(handler), timeout=1.0)
    with pytest.raises(ServerError) as info:
        await client.create(preset="fast", input="hi")
    assert calls == 2
    assert info.value.status == 503
    assert "overloaded" in str(info.value) and "ran past the 1s timeout" in str(info.value)


async def test_timeout_with_nothing_answered_is_a_timeout() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, json={})

    client = AsyncAgentClient(api_key="pplx-test-not-a-real-key", transport=httpx.MockTransport(handler), timeout=0.3)
    with pytest.raises(APITimeoutError):
        await client.create(preset="fast", input="hi")
