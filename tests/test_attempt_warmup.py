"""Issue 26: process warm-up (the HTTP client's set-up: TLS context, pools; the first telemetry span) is never
counted in an attempt's duration: it measures the provider."""

from __future__ import annotations

import time
from typing import Any

import perplexed
import pytest
from perplexed.engine import chain  # private: slows each member's client set-up, which no public hook can
from testkit.loopback import Json, searxng_json, serve

SLOW_SETUP_S = 2.0


@pytest.mark.timing
def test_client_set_up_is_not_in_the_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    real = chain.SearchOperation.client

    def slow_client(self: Any, member: Any) -> Any:
        time.sleep(SLOW_SETUP_S)  # a process's first TLS context and pool, exaggerated
        return real(self, member)

    monkeypatch.setattr(chain.SearchOperation, "client", slow_client)
    with serve({"/search": Json(searxng_json(2))}) as server:
        started = time.perf_counter()
        result = perplexed.search("zoning", {"name": "searxng", "base_url": server.url})
        total = time.perf_counter() - started
    assert result.provider == "searxng" and total >= SLOW_SETUP_S
    assert result.attempts[0].duration_ms < SLOW_SETUP_S * 1000, result.attempts[0]


@pytest.mark.timing
def test_the_first_span_is_not_in_the_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextlib import contextmanager

    from perplexed import telemetry

    real = telemetry.span

    @contextmanager
    def slow_span(name: str, attributes: Any = None, kind: str | None = None) -> Any:
        time.sleep(SLOW_SETUP_S)  # the first span imports the tracing API
        with real(name, attributes, kind) as span:
            yield span

    monkeypatch.setattr(telemetry, "span", slow_span)

    def fast(query: str, options: Any) -> list[dict[str, str]]:
        return [{"url": "https://fast.example/"}]

    result = perplexed.search("zoning", fast)
    assert result.attempts[0].duration_ms < SLOW_SETUP_S * 1000, result.attempts[0]
