"""How each provider maps the common options onto its API (sans-io: ``build_request`` only, no network), and
its configuration: keys from the environment, base URLs, missing keys, ignored options."""

from __future__ import annotations

import json
import logging
from datetime import date, timedelta
from typing import Any

import httpx
import perplexed
import pytest
from perplexed import ConfigError, Outcome, SearchOptions, UpstreamError, providers
from perplexed.providers import Brave, Ceramic, Exa, Firecrawl, Linkup, PerplexitySearch, Provider, Tavily
from perplexed.providers._common import (  # private: recency windows are computed from the same clock
    RECENCY_DAYS,
    today,
)
from testkit.cassettes import FAKE_KEYS, PROVIDERS

ENV_KEYS = {
    "ceramic": "CERAMIC_API_KEY",
    "firecrawl": "FIRECRAWL_API_KEY",
    "perplexity": "PERPLEXITY_API_KEY",
    "tavily": "TAVILY_API_KEY",
    "exa": "EXA_API_KEY",
    "brave": "BRAVE_API_KEY",
    "linkup": "LINKUP_API_KEY",
}
CLASSES = {
    "ceramic": "Ceramic",
    "firecrawl": "Firecrawl",
    "perplexity": "PerplexitySearch",
    "tavily": "Tavily",
    "exa": "Exa",
    "brave": "Brave",
    "linkup": "Linkup",
}


def opts(**kw: Any) -> SearchOptions:
    return SearchOptions.build(**kw)


def body(request: httpx.Request) -> dict[str, Any]:
    data = json.loads(request.content)
    assert isinstance(data, dict)
    return data


def key(name: str) -> str:
    return FAKE_KEYS[name]


# --- registry, keys, configuration -------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROVIDERS)
def test_registered_under_its_name_and_class(name: str) -> None:
    cls = providers.get(name)
    assert cls.__name__ == CLASSES[name] and cls.name == name
    assert getattr(providers, CLASSES[name]) is cls
    assert cls.env_key == ENV_KEYS[name]
    assert cls.__doc__ and cls.build_request.__doc__ and cls.parse_response.__doc__


@pytest.mark.parametrize("name", PROVIDERS)
def test_missing_key_is_a_config_error_naming_the_env_var(name: str) -> None:
    provider = providers.get(name)()
    assert not provider.configured
    assert "api_key=missing" in repr(provider)
    with pytest.raises(ConfigError, match=ENV_KEYS[name]):
        provider.build_request("q", opts())


@pytest.mark.parametrize("name", PROVIDERS)
async def test_missing_key_is_an_error_attempt_when_the_chain_reaches_it(name: str) -> None:
    # no cassette and no network: the provider fails before any request is built
    with pytest.raises(UpstreamError) as info:
        await perplexed.asearch("q", provider=[name])
    [attempt] = info.value.attempts
    assert attempt.outcome is Outcome.ERROR and attempt.reason == "config"
    assert ENV_KEYS[name] in (attempt.error or "") and attempt.cost == 0


@pytest.mark.parametrize("name", PROVIDERS)
def test_key_from_environment_and_secret_handling(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_KEYS[name], key(name))
    provider = providers.get(name)()
    assert provider.configured
    request = provider.build_request("q", opts())
    assert key(name) in " ".join(request.headers.values())
    assert key(name) not in repr(provider) and "api_key=set" in repr(provider)


def test_api_key_is_kept_as_secretstr() -> None:
    provider = Tavily(api_key=key("tavily"))
    assert key("tavily") not in repr(vars(provider))


@pytest.mark.parametrize("name", PROVIDERS)
def test_base_url_override(name: str) -> None:
    provider = providers.get(name)(api_key=key(name), base_url="http://127.0.0.1:9/proxy/")
    request = provider.build_request("q", opts())
    assert str(request.url).startswith("http://127.0.0.1:9/proxy/")


def test_ignored_options_are_debug_logged(caplog: pytest.LogCaptureFixture) -> None:
    provider = Ceramic(api_key=key("ceramic"))
    with caplog.at_level(logging.DEBUG, logger="perplexed.providers"):
        provider.log_ignored(opts(recency="week", language="de", include_domains=["a.org"]))
    text = caplog.text
    assert "recency" in text and "language" in text and "include_domains" not in text


def test_dict_spec_passes_provider_options() -> None:
    [provider], _ = providers.resolve([{"name": "exa", "api_key": key("exa"), "type": "fast", "cost": 0.01}])
    assert isinstance(provider, Exa)
    assert body(provider.build_request("q", opts()))["type"] == "fast"
    assert provider.price() == 0.01


# --- Ceramic -----------------------------------------------------------------------------------------------


def test_ceramic_request() -> None:
    request = Ceramic(api_key=key("ceramic"), max_description_length=2000).build_request(
        "rental laws", opts(max_results=80, recency="day", include_domains=["a.org"])
    )
    assert request.method == "POST" and str(request.url) == "https://api.ceramic.ai/search"
    assert request.headers["authorization"] == f"Bearer {key('ceramic')}"
    # only the three fields Ceramic accepts (anything else is a 422)
    assert body(request) == {"query": "rental laws", "maxResults": 50, "maxDescriptionLength": 2000}


def test_ceramic_max_results_limit_is_configurable() -> None:
    request = Ceramic(api_key=key("ceramic"), max_results_limit=20).build_request("q", opts(max_results=30))
    assert body(request)["maxResults"] == 20


def test_ceramic_base_url_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CERAMIC_BASE_URL", "http://127.0.0.1:9")
    assert str(Ceramic(api_key=key("ceramic")).build_request("q", opts()).url) == "http://127.0.0.1:9/search"


async def test_ceramic_rejects_long_queries_before_calling() -> None:
    with pytest.raises(UpstreamError) as info:
        await perplexed.asearch(" ".join(["word"] * 51), provider=[Ceramic(api_key=key("ceramic"))])
    attempt = info.value.attempts[0]
    assert attempt.reason == "bad_request" and "50 words" in (attempt.error or "") and attempt.cost == 0


# --- Firecrawl ---------------------------------------------------------------------------------------------


def test_firecrawl_request_maps_options() -> None:
    request = Firecrawl(api_key=key("firecrawl")).build_request(
        "q",
        opts(
            max_results=100,
            include_domains=["a.org"],
            exclude_domains=["b.org"],
            recency="week",
            country="en-GB",
            safe_search="strict",
        ),
    )
    assert str(request.url) == "https://api.firecrawl.dev/v2/search"
    assert request.headers["authorization"] == f"Bearer {key('firecrawl')}"
    assert body(request) == {
        "query": "q",
        "limit": 100,
        "includeDomains": ["a.org"],  # the two are exclusive: exclude is applied to the hits
        "tbs": "qdr:w",
        "country": "gb",  # lower case, as the API's default ("us") and examples
    }  # no "safe": the v2 schema has no such key and rejects unknown keys (a 400)


@pytest.mark.parametrize("safe", ["off", "moderate", "strict"])
def test_firecrawl_never_sends_safe(safe: str) -> None:
    provider = Firecrawl(api_key=key("firecrawl"))
    request = provider.build_request("q", opts(safe_search=safe, country="US"))
    assert "safe" not in body(request) and body(request)["country"] == "us"
    assert "safe_search" in provider.ignored(opts(safe_search=safe))


def test_firecrawl_dates_and_scrape() -> None:
    request = Firecrawl(api_key=key("firecrawl"), scrape=True).build_request(
        "q",
        opts(exclude_domains=["b.org"], published_after="2025-01-02", published_before="2025-03-04"),
    )
    data = body(request)
    assert data["excludeDomains"] == ["b.org"]
    assert data["tbs"] == "cdr:1,cd_min:01/02/2025,cd_max:03/04/2025"
    assert data["scrapeOptions"] == {"formats": ["markdown"], "onlyMainContent": True}


def test_firecrawl_raw_options_pass_through() -> None:
    provider = Firecrawl(api_key=key("firecrawl"), scrape_options={"formats": ["html"]}, tbs="sbd:1")
    data = body(provider.build_request("q", opts(recency="day", sources=["news"], location="Paris,France")))
    assert data["scrapeOptions"] == {"formats": ["html"]}
    assert data["tbs"] == "sbd:1"
    assert data["sources"] == ["news"] and data["location"] == "Paris,France"


def test_firecrawl_self_hosted_needs_no_key_and_is_free() -> None:
    provider = Firecrawl(base_url="http://127.0.0.1:3002")
    assert provider.self_hosted and provider.configured
    request = provider.build_request("q", opts())
    assert str(request.url) == "http://127.0.0.1:3002/v2/search"
    assert "authorization" not in request.headers
    assert provider.price(opts()) == 0.0
    # with a key (a self-hosted instance with auth on) the key is sent
    keyed = Firecrawl(base_url="http://127.0.0.1:3002", api_key=key("firecrawl"))
    assert keyed.build_request("q", opts()).headers["authorization"] == f"Bearer {key('firecrawl')}"


def test_firecrawl_self_hosted_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRECRAWL_API_URL", "http://127.0.0.1:3002")
    assert str(Firecrawl().build_request("q", opts()).url) == "http://127.0.0.1:3002/v2/search"


def test_firecrawl_bad_usd_per_credit() -> None:
    with pytest.raises(ConfigError, match="usd_per_credit"):
        Firecrawl(usd_per_credit=-1)


# --- Perplexity --------------------------------------------------------------------------------------------


def test_perplexity_request_maps_options() -> None:
    request = PerplexitySearch(api_key=key("perplexity")).build_request(
        "q", opts(max_results=30, include_domains=["a.org"], recency="month", language="de-AT", country="at")
    )
    assert str(request.url) == "https://api.perplexity.ai/search"
    assert body(request) == {
        "query": "q",
        "max_results": 20,
        "search_domain_filter": ["a.org"],
        "search_recency_filter": "month",
        "search_language_filter": ["de"],
        "country": "AT",
    }


def test_perplexity_deny_list_and_dates() -> None:
    request = PerplexitySearch(api_key=key("perplexity"), search_type="fast").build_request(
        "q", opts(exclude_domains=["b.org", "c.org"], published_after="2025-01-02", recency="year")
    )
    data = body(request)
    assert data["search_domain_filter"] == ["-b.org", "-c.org"]
    # recency cannot be combined with dates: it becomes the later lower bound
    year_ago = today() - timedelta(days=RECENCY_DAYS["year"])
    expected = max(date(2025, 1, 2), year_ago)
    assert data["search_after_date_filter"] == expected.strftime("%m/%d/%Y")
    assert "search_recency_filter" not in data
    assert data["search_type"] == "fast"


def test_perplexity_mixed_domain_lists_send_the_allow_list() -> None:
    data = body(
        PerplexitySearch(api_key=key("perplexity")).build_request(
            "q", opts(include_domains=["a.org"], exclude_domains=["b.org"])
        )
    )
    assert data["search_domain_filter"] == ["a.org"]


# --- Tavily ------------------------------------------------------------------------------------------------


def test_tavily_request_maps_options() -> None:
    request = Tavily(api_key=key("tavily"), search_depth="advanced").build_request(
        "q",
        opts(
            max_results=50,
            include_domains=["a.org"],
            exclude_domains=["b.org"],
            recency="day",
            language="fr",
            country="FR",
            safe_search="strict",
        ),
    )
    assert str(request.url) == "https://api.tavily.com/search"
    assert request.headers["authorization"] == f"Bearer {key('tavily')}"
    assert body(request) == {
        "query": "q",
        "max_results": 20,
        "include_domains": ["a.org"],
        "exclude_domains": ["b.org"],
        "time_range": "day",
        "language": "fr",
        "country": "france",
        "include_usage": True,
        "search_depth": "advanced",
    }


def test_tavily_dates_and_country_name() -> None:
    provider = Tavily(api_key=key("tavily"), include_usage=False, country_name="new zealand")
    data = body(
        provider.build_request("q", opts(published_after="2025-01-02", published_before="2025-02-03"))
    )
    assert data["start_date"] == "2025-01-02" and data["end_date"] == "2025-02-03"
    assert data["country"] == "new zealand" and "include_usage" not in data


def test_tavily_unknown_country_code_is_not_sent() -> None:
    data = body(Tavily(api_key=key("tavily")).build_request("q", opts(country="xx")))
    assert "country" not in data


# --- Exa ---------------------------------------------------------------------------------------------------


def test_exa_request_maps_options() -> None:
    request = Exa(api_key=key("exa")).build_request(
        "q",
        opts(
            max_results=5,
            include_domains=["a.org"],
            exclude_domains=["b.org"],
            published_after="2025-01-02",
            published_before="2025-02-03",
            country="us",
            safe_search="moderate",
        ),
    )
    assert str(request.url) == "https://api.exa.ai/search"
    assert request.headers["x-api-key"] == key("exa") and "authorization" not in request.headers
    assert body(request) == {
        "query": "q",
        "numResults": 5,
        "includeDomains": ["a.org"],
        "excludeDomains": ["b.org"],
        "startPublishedDate": "2025-01-02T00:00:00.000Z",
        "endPublishedDate": "2025-02-03T23:59:59.999Z",
        "userLocation": "US",
        "moderation": True,
        "contents": {"text": {"maxCharacters": 10000}, "highlights": True},
    }


def test_exa_recency_and_contents_options() -> None:
    provider = Exa(api_key=key("exa"), type="fast", text=False, highlights=False, include_text="tenant law")
    data = body(provider.build_request("q", opts(recency="week")))
    start = today() - timedelta(days=RECENCY_DAYS["week"])
    assert data["startPublishedDate"] == f"{start.isoformat()}T00:00:00.000Z"
    assert "contents" not in data
    assert data["type"] == "fast" and data["includeText"] == ["tenant law"]
    raw = Exa(api_key=key("exa"), contents={"summary": True})
    assert body(raw.build_request("q", opts()))["contents"] == {"summary": True}


# --- Brave -------------------------------------------------------------------------------------------------


def test_brave_request_maps_options() -> None:
    request = Brave(api_key=key("brave"), extra_snippets=True).build_request(
        "rental laws",
        opts(max_results=50, recency="month", language="en-GB", country="gb", safe_search="off"),
    )
    assert request.method == "GET"
    assert request.url.path == "/res/v1/web/search" and request.url.host == "api.search.brave.com"
    assert request.headers["x-subscription-token"] == key("brave")
    assert dict(request.url.params) == {
        "q": "rental laws",
        "count": "20",
        "text_decorations": "false",
        "freshness": "pm",
        "country": "GB",
        "search_lang": "en",
        "safesearch": "off",
        "extra_snippets": "true",
    }


def test_brave_date_range() -> None:
    request = Brave(api_key=key("brave")).build_request("q", opts(published_after="2025-01-02"))
    assert request.url.params["freshness"] == f"2025-01-02to{today().isoformat()}"
    request = Brave(api_key=key("brave")).build_request("q", opts(published_before="2025-01-02"))
    assert request.url.params["freshness"] == "1970-01-01to2025-01-02"


def test_brave_rejects_overlong_queries() -> None:
    with pytest.raises(perplexed.ProviderError) as info:
        Brave(api_key=key("brave")).build_request("x" * 401, opts())
    assert info.value.reason == "bad_request"


# --- Linkup ------------------------------------------------------------------------------------------------


def test_linkup_request_maps_options() -> None:
    request = Linkup(api_key=key("linkup")).build_request(
        "q",
        opts(
            max_results=7, include_domains=["a.org"], exclude_domains=["b.org"], published_before="2025-02-03"
        ),
    )
    assert str(request.url) == "https://api.linkup.so/v1/search"
    assert body(request) == {
        "q": "q",
        "depth": "standard",
        "outputType": "searchResults",
        "maxResults": 7,
        "includeDomains": ["a.org"],
        "excludeDomains": ["b.org"],
        "toDate": "2025-02-03",
    }


def test_linkup_recency_and_depth() -> None:
    data = body(Linkup(api_key=key("linkup"), depth="deep").build_request("q", opts(recency="day")))
    assert data["depth"] == "deep"
    assert data["fromDate"] == (today() - timedelta(days=1)).isoformat()


# --- per-call extras override constructor options -----------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "extra", "field", "value"),
    [
        (
            Tavily(api_key="tvly-test-not-a-real-key", search_depth="basic"),
            "search_depth",
            "search_depth",
            "advanced",
        ),
        (Linkup(api_key="linkup-test-not-a-real-key", depth="fast"), "depth", "depth", "deep"),
        (Exa(api_key="exa-test-not-a-real-key", type="fast"), "type", "type", "neural"),
    ],
)
def test_per_call_extra_wins(provider: Provider, extra: str, field: str, value: str) -> None:
    assert body(provider.build_request("q", opts(**{extra: value})))[field] == value


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"scrape": True}, {"formats": ["markdown"], "onlyMainContent": True}),
        ({"formats": ["markdown", "links"]}, {"formats": ["markdown", "links"], "onlyMainContent": True}),
        ({"formats": "markdown"}, {"formats": ["markdown"], "onlyMainContent": True}),
        ({"scrapeOptions": {"formats": ["markdown"]}}, {"formats": ["markdown"]}),
        ({"scrape": False}, None),
    ],
)
def test_firecrawl_ways_to_ask_for_scraping(options: dict[str, Any], expected: dict[str, Any] | None) -> None:
    provider = Firecrawl(api_key=key("firecrawl"))
    data = body(provider.build_request("q", opts(**options)))
    assert data.get("scrapeOptions") == expected
    scraped = 10 if expected else 0
    assert provider.price(opts(**options)) == pytest.approx(provider.credits(10, scraped) * 0.001)
