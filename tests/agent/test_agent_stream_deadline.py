"""A stream's overall deadline (``stream_timeout``): a server that keeps sending real events forever.

``timeout`` bounds the wait for each event, so it never fires against such a server; ``stream_timeout``
bounds the whole stream and raises ``APITimeoutError`` within the bound (+ 50 ms), on ``create(stream=True)``
and ``stream()``, sync and async.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_helpers import FAKE_KEY
from agent_sse_server import Reply, serve
from perplexed import APITimeoutError, ConfigError
from perplexed.agent import AgentClient, AsyncAgentClient
from perplexed.agent import _policy as agent_client  # private: shrinks the preset timeouts (fast tests)

BOUND = 0.5  # seconds: the stream deadline under test
SLACK = 0.05  # the call raises within BOUND + SLACK


def _frame(event: dict[str, Any]) -> bytes:
    return ("data: " + json.dumps(event) + "\n\n").encode()


def _endless(interval: float = 0.005, lifetime: float = 20.0) -> Iterator[Any]:
    """``response.created``, then a text delta every ``interval`` seconds (for ``lifetime`` at most)."""
    created = {"id": "resp_forever", "object": "response", "status": "in_progress", "output": []}
    yield _frame({"type": "response.created", "sequence_number": 0, "response": created})
    stop = time.monotonic() + lifetime
    seq = 1
    while time.monotonic() < stop:
        yield _frame(
            {
                "type": "response.output_text.delta",
                "sequence_number": seq,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": "more ",
            }
        )
        seq += 1
        yield interval


def _handler(req: Any) -> Reply:
    return Reply(steps=_endless())  # type: ignore[arg-type]  # any iterable of steps


@pytest.fixture
def server() -> Iterator[Any]:
    with serve(_handler) as srv:
        yield srv


def _bounded(elapsed: float, bound: float = BOUND) -> None:
    assert bound - 0.01 <= elapsed < bound + SLACK, f"raised after {elapsed:.3f}s, bound {bound}s"


async def test_async_stream_raises_at_the_stream_deadline(server):
    client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url, timeout=5)
    events = 0
    start = time.monotonic()
    with pytest.raises(APITimeoutError, match="stream_timeout"):
        async with client.stream(preset="fast", input="forever", stream_timeout=BOUND) as stream:
            async for _ in stream:
                events += 1
    _bounded(time.monotonic() - start)
    assert events > 10  # real events kept arriving: the per-event timeout never fired


async def test_async_create_stream_raises_at_the_stream_deadline(server):
    client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url, stream_timeout=BOUND)
    start = time.monotonic()
    with pytest.raises(APITimeoutError):
        await client.create(preset="fast", input="forever", stream=True)
    _bounded(time.monotonic() - start)


def test_sync_stream_raises_at_the_stream_deadline(server):
    client = AgentClient(api_key=FAKE_KEY, base_url=server.url, timeout=5)
    events = 0
    start = time.monotonic()
    with pytest.raises(APITimeoutError, match="stream_timeout"):
        with client.stream(preset="fast", input="forever", stream_timeout=BOUND) as stream:
            for _ in stream:
                events += 1
    _bounded(time.monotonic() - start)
    assert events > 10


def test_sync_create_stream_raises_at_the_stream_deadline(server):
    client = AgentClient(api_key=FAKE_KEY, base_url=server.url, stream_timeout=BOUND)
    assert client.stream_timeout == BOUND
    start = time.monotonic()
    with pytest.raises(APITimeoutError):
        client.create(preset="fast", input="forever", stream=True)
    _bounded(time.monotonic() - start)


def test_default_stream_deadline_is_the_preset_sized_timeout(server, monkeypatch):
    monkeypatch.setitem(agent_client.PRESET_TIMEOUTS, "fast", BOUND)
    client = AgentClient(api_key=FAKE_KEY, base_url=server.url)
    start = time.monotonic()
    with pytest.raises(APITimeoutError):
        client.create(preset="fast", input="forever", stream=True)
    _bounded(time.monotonic() - start)


def test_a_longer_per_event_timeout_lengthens_the_default_stream_deadline(server, monkeypatch):
    monkeypatch.setitem(agent_client.PRESET_TIMEOUTS, "fast", 0.2)
    client = AgentClient(api_key=FAKE_KEY, base_url=server.url)
    start = time.monotonic()
    with pytest.raises(APITimeoutError):
        client.create(preset="fast", input="forever", stream=True, timeout=BOUND)
    _bounded(time.monotonic() - start)


def test_slow_consumer_counts_against_the_stream_deadline(server):
    client = AgentClient(api_key=FAKE_KEY, base_url=server.url, timeout=5)
    start = time.monotonic()
    with pytest.raises(APITimeoutError):
        for _ in client.stream(preset="fast", input="forever", stream_timeout=0.3):
            time.sleep(0.1)  # the consumer's time is the stream's time too
    assert time.monotonic() - start < 0.3 + 0.1 + SLACK


def test_stream_timeout_must_be_positive():
    with pytest.raises(ConfigError):
        AgentClient(api_key=FAKE_KEY, stream_timeout=0)
    client = AgentClient(api_key=FAKE_KEY)
    with pytest.raises(ConfigError):
        client.stream(preset="fast", input="x", stream_timeout=-1)
    with pytest.raises(ConfigError):
        client.resume("resp_1", starting_after=3, stream_timeout=0)
