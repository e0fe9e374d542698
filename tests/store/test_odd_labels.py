"""A provider labelled with text no environment variable or database encoding can hold (a lone surrogate)
works on every store exactly as a plain label does (issue 40, #15: it was always skipped on SQLite, because
looking up its ``PERPLEXED_PRICE_<LABEL>`` variable raised inside the attempt)."""

from __future__ import annotations

from pathlib import Path

import perplexed
import pytest
from perplexed import Hit
from perplexed.providers import FunctionProvider
from perplexed.store import MemoryStore, SQLiteStore
from testkit.valkey_servers import shared_valkey

ODD = "odd\ud800label"


def _stores() -> dict[str, object]:
    stores: dict[str, object] = {
        "memory": lambda tmp: MemoryStore(),
        "sqlite": lambda tmp: SQLiteStore(tmp / "state.db"),
    }
    stores["redis"] = lambda tmp: shared_valkey().url
    return stores


STORES = _stores()


@pytest.fixture(params=sorted(STORES))
def odd_store(request: pytest.FixtureRequest, tmp_path: Path):
    store = STORES[request.param](tmp_path)  # type: ignore[operator]
    perplexed.configure(store=store, spend_limits={"day": 1.0})
    try:
        yield request.param
    finally:
        perplexed.reset()


def test_a_lone_surrogate_label_is_called_cached_and_charged(odd_store: str) -> None:
    calls: list[str] = []

    def fn(query: str, options: object) -> list[Hit]:
        calls.append(query)
        return [Hit(title="t", url="https://example.com/a", snippet="s")]

    provider = FunctionProvider(fn, name=ODD, cost=0.01)
    first = perplexed.search("q", provider=[provider], cache_ttl_s=60, rate_limit="5/s")
    assert [(a.provider, a.outcome.value) for a in first.attempts] == [(ODD, "ok")]
    assert first.cost == pytest.approx(0.01)
    second = perplexed.search("q", provider=[provider], cache_ttl_s=60, rate_limit="5/s")
    assert [(a.provider, a.outcome.value, a.cached) for a in second.attempts] == [(ODD, "ok", True)]
    assert calls == ["q"]
    spent = perplexed.spend()
    assert sum(spent.values()) == pytest.approx(0.01)
    assert list(spent) == [ODD.encode("utf-8", "replace").decode("utf-8")] or list(spent) == [ODD]


def test_a_lone_surrogate_label_without_a_price_is_called(odd_store: str) -> None:
    """Without ``cost=``, the label's price is looked up in ``PERPLEXED_PRICE_<LABEL>``: a label no variable
    can name has no configured price (free), instead of an ``unexpected`` error in every attempt."""
    provider = FunctionProvider(lambda query, options: [Hit(title="t", url="https://example.com/b", snippet="s")],
                                name=ODD)
    result = perplexed.search("q", provider=[provider], rate_limit="5/s")
    assert [(a.provider, a.outcome.value, a.reason) for a in result.attempts] == [(ODD, "ok", None)]
    assert result.cost == 0.0
