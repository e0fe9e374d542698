"""Fixtures for the LangChain adapter tests (the SearXNG fixtures come from ``tests/testkit/searxng.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lc_support import FAKE_KEY, EventRecorder, FakeAgentAPI


@pytest.fixture
def searxng_env(searxng: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The real SearXNG, reachable as provider ``"searxng"`` through ``SEARXNG_URL`` (settings)."""
    monkeypatch.setenv("SEARXNG_URL", searxng.base_url)
    return searxng


@pytest.fixture
def recorder() -> EventRecorder:
    """A sync callback handler recording custom events."""
    return EventRecorder()


@pytest.fixture(scope="session")
def fake_agent_server() -> Iterator[FakeAgentAPI]:
    server = FakeAgentAPI()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def agent_api(fake_agent_server: FakeAgentAPI, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAgentAPI]:
    """The fake Agent API on loopback, reachable through the settings (``PERPLEXITY_BASE_URL``/``_API_KEY``)."""
    monkeypatch.setenv("PERPLEXITY_BASE_URL", fake_agent_server.url)
    monkeypatch.setenv("PERPLEXITY_API_KEY", FAKE_KEY)
    fake_agent_server.ok()
    fake_agent_server.server.clear()
    try:
        yield fake_agent_server
    finally:
        fake_agent_server.ok()


_SEARXNG_FIXTURES = frozenset({"searxng", "searxng_no_json", "searxng_env"})
_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark this directory's tests that start the real SearXNG as ``integration`` (``-m "not integration"``
    then runs the rest without starting it)."""
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents and _SEARXNG_FIXTURES.intersection(item.fixturenames):
            item.add_marker(pytest.mark.integration)
