"""Prices: the default table, credits-based and reported costs, and every way to override them."""

from __future__ import annotations

from typing import Any

import httpx
import perplexed
import pytest
from perplexed import ConfigError, SearchOptions, providers
from perplexed.providers import Brave, Ceramic, Exa, Firecrawl, Linkup, PerplexitySearch, SearXNG, Tavily
from testkit.cassettes import FAKE_KEYS, cassette

QUERY = "california rental laws"


def opts(**kw: Any) -> SearchOptions:
    return SearchOptions.build(**kw)


def test_default_price_table() -> None:
    expected = {
        "searxng": 0.0,
        "ceramic": 0.001,
        "firecrawl": 0.002,
        "perplexity": 0.005,
        "tavily": 0.008,
        "exa": 0.007,
        "brave": 0.005,
        "linkup": 0.005,
    }
    for name, price in expected.items():
        cls = providers.get(name)
        assert cls.default_price == pytest.approx(price), name
        instance = cls(
            api_key=FAKE_KEYS.get(name), base_url="http://127.0.0.1:9" if name == "searxng" else None
        )
        assert instance.price(opts()) == pytest.approx(price), name
        assert instance.paid is (price > 0)


def test_class_prices_agree_with_their_units() -> None:
    assert Firecrawl.default_price == pytest.approx(
        Firecrawl().credits(10) * Firecrawl.default_usd_per_credit
    )
    assert Tavily.default_price == pytest.approx(Tavily.default_usd_per_credit)


def test_firecrawl_credits() -> None:
    fc = Firecrawl(api_key=FAKE_KEYS["firecrawl"])
    assert fc.credits(10) == 2 and fc.credits(11) == 4 and fc.credits(0) == 2
    assert fc.credits(5, scraped=5) == 7
    assert fc.price(opts(max_results=25)) == pytest.approx(6 * 0.001)
    assert Firecrawl(api_key="fc-test-not-a-real-key", scrape=True).price(
        opts(max_results=10)
    ) == pytest.approx(12 * 0.001)
    assert Firecrawl(usd_per_credit=0.01).price(opts()) == pytest.approx(0.02)


def test_firecrawl_cost_without_credits_used_is_estimated_from_hits() -> None:
    fc = Firecrawl(api_key=FAKE_KEYS["firecrawl"])
    data = {
        "success": True,
        "data": {"web": [{"url": f"https://a.org/{i}", "title": "t"} for i in range(12)]},
    }
    answer = fc.parse_response(httpx.Response(200, json=data), "q", opts(max_results=20))
    assert len(answer.hits) == 12
    assert answer.cost == pytest.approx(4 * 0.001)


def test_tavily_credit_price() -> None:
    assert Tavily(search_depth="advanced").price(opts()) == pytest.approx(0.016)
    assert Tavily(usd_per_credit=0.005).price(opts()) == pytest.approx(0.005)
    assert Tavily().price(opts(search_depth="advanced", usd_per_credit=0.005)) == pytest.approx(0.01)
    data = {"results": [{"url": "https://a.org", "title": "t"}], "usage": {"credits": 2}}
    answer = Tavily(api_key=FAKE_KEYS["tavily"]).parse_response(httpx.Response(200, json=data), "q", opts())
    assert answer.cost == pytest.approx(0.016)
    with pytest.raises(ConfigError):
        Tavily(usd_per_credit="cheap")


def test_exa_fallback_price_when_no_cost_is_reported() -> None:
    exa = Exa(api_key=FAKE_KEYS["exa"])
    assert exa.price(opts(max_results=20)) == pytest.approx(0.007 + 10 * 0.001)
    answer = exa.parse_response(httpx.Response(200, json={"results": []}), "q", opts())
    assert answer.cost is None  # the engine then charges price(options)


def test_linkup_deep_price() -> None:
    assert Linkup(depth="deep").price(opts()) == pytest.approx(0.05)
    assert Linkup().price(opts(depth="deep")) == pytest.approx(0.05)
    assert Linkup().price(opts()) == pytest.approx(0.005)


async def _cost(name: str, provider: Any, **options: Any) -> float:
    with cassette(f"{name}/ok.yaml"):
        result = await perplexed.asearch(QUERY, provider=[provider], **options)
    return result.cost


async def test_constructor_cost_overrides_everything() -> None:
    assert await _cost("ceramic", Ceramic(api_key=FAKE_KEYS["ceramic"], cost=0.5)) == pytest.approx(0.5)
    # even a cost the provider reports
    assert await _cost("exa", Exa(api_key=FAKE_KEYS["exa"], cost=0.02)) == pytest.approx(0.02)
    assert await _cost("firecrawl", Firecrawl(api_key=FAKE_KEYS["firecrawl"], cost=0)) == 0


async def test_configure_prices_override() -> None:
    perplexed.configure(prices={"tavily": 0.003, "perplexity": 0.004})
    assert await _cost("tavily", Tavily(api_key=FAKE_KEYS["tavily"])) == pytest.approx(0.003)
    assert await _cost("perplexity", PerplexitySearch(api_key=FAKE_KEYS["perplexity"])) == pytest.approx(
        0.004
    )


async def test_env_price_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERPLEXED_PRICE_BRAVE", "0.0042")
    monkeypatch.setenv("PERPLEXED_PRICE_LINKUP", "0")
    assert await _cost("brave", Brave(api_key=FAKE_KEYS["brave"])) == pytest.approx(0.0042)
    assert await _cost("linkup", Linkup(api_key=FAKE_KEYS["linkup"])) == 0


async def test_price_override_by_label() -> None:
    perplexed.configure(prices={"brave-eu": 0.001})
    brave = Brave(api_key=FAKE_KEYS["brave"], name="brave-eu")
    with cassette("brave/ok.yaml"):
        result = await perplexed.asearch(QUERY, provider=[brave])
    assert result.provider == "brave-eu" and result.cost == pytest.approx(0.001)


def test_searxng_is_free() -> None:
    assert not SearXNG(base_url="http://127.0.0.1:9").paid
