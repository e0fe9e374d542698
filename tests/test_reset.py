"""``perplexed.reset()`` forgets what ``perplexed.configure(...)`` set and the in-process state (cache,
cool-downs, rate-limit windows, spend): the next search runs as in a fresh process."""

from __future__ import annotations

from typing import Any

import perplexed
import pytest
from perplexed import Outcome
from perplexed.policy._settings import (  # private: reads the settings without running a search
    default_chain,
    price_override,
)
from perplexed.providers import FunctionProvider
from perplexed.store import MemoryStore


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, query: str, options: Any) -> Any:
        self.calls += 1
        return [{"url": f"https://example.org/{self.calls}", "title": "A"}]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXED_PROVIDER", raising=False)
    monkeypatch.delenv("PERPLEXED_STORE", raising=False)
    monkeypatch.delenv("PERPLEXED_PRICE_FN", raising=False)


def test_reset_forgets_the_default_chain_and_prices() -> None:
    before = default_chain()
    perplexed.configure(provider=["brave"], prices={"fn": 0.25})
    assert default_chain() == ["brave"] and price_override("fn") == 0.25
    perplexed.reset()
    assert default_chain() == before
    assert price_override("fn") is None


def test_reset_keeps_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERPLEXED_PROVIDER", "searxng")
    perplexed.configure(provider=["brave"])
    perplexed.reset()
    assert default_chain() == ["searxng"]


def test_reset_forgets_the_cache_and_spend() -> None:
    fn = Counter()
    provider = FunctionProvider(fn, name="fn", cost=0.5)
    perplexed.search("q", provider, cache_ttl_s=60)
    assert perplexed.search("q", provider, cache_ttl_s=60).attempts[0].cached
    assert perplexed.spend("day") == {"fn": 0.5}
    perplexed.reset()
    assert perplexed.spend("day") == {}
    again = perplexed.search("q", provider, cache_ttl_s=60)
    assert not again.attempts[0].cached and fn.calls == 2


def test_reset_closes_and_forgets_the_configured_store() -> None:
    store = MemoryStore()
    closed: list[bool] = []
    store.close = lambda: closed.append(True)  # type: ignore[method-assign]
    perplexed.configure(store=store, spend_limits={"day": 1.0})
    perplexed.search("q", FunctionProvider(Counter(), name="fn", cost=0.5))
    perplexed.reset()
    assert closed == [True]
    assert perplexed.spend("day") == {}  # a fresh default store, not the configured one


def test_reset_forgets_rate_limits_a_provider_already_used() -> None:
    # a provider instance memoises its effective settings: reset() must make that memo stale too
    fn = Counter()
    provider = FunctionProvider(fn, name="fn")
    perplexed.configure(rate_limits={"fn": "1/min"}, rate_limit_wait_ms=0)
    perplexed.search("q1", provider)
    with pytest.raises(perplexed.UpstreamError) as info:
        perplexed.search("q2", provider)
    assert info.value.attempts[0].outcome is Outcome.SKIPPED
    perplexed.reset()
    perplexed.configure(rate_limits={"fn": "5/min"}, rate_limit_wait_ms=0)
    assert perplexed.search("q3", provider).attempts[0].outcome is Outcome.OK
    assert perplexed.search("q4", provider).attempts[0].outcome is Outcome.OK
    assert fn.calls == 3


def test_reset_is_public_and_documented() -> None:
    assert "reset" in perplexed.__all__
    assert perplexed.reset.__doc__ and "configure" in perplexed.reset.__doc__
