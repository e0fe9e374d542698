"""Option validation: bad input raises ConfigError / InvalidRequest before any provider is called.

Every "raises" test runs through search() and asearch() with a chain whose providers would record any call
(a loopback server and a function provider); after the error, neither saw anything.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import perplexed
import pytest
from perplexed import ChainOptions, ConfigError, InvalidRequest, PerplexedError, SearchOptions
from perplexed import reset as reset_settings
from perplexed.providers import FunctionProvider, SearXNG
from testkit.loopback import Json, LoopbackServer, SearchAPI, searxng_json


class Spy:
    """Providers that record every call: a SearXNG on a loopback server and a function provider."""

    def __init__(self, server: LoopbackServer) -> None:
        server.route("/search", Json(searxng_json(2)))
        self.server = server
        self.calls: list[tuple[str, SearchOptions]] = []

    def fn(self, query: str, options: SearchOptions) -> list[dict[str, str]]:
        self.calls.append((query, options))
        return [{"url": "https://fn.example/"}]

    def chain(self) -> list[Any]:
        return [FunctionProvider(self.fn, name="spyfn"), SearXNG(base_url=self.server.url, name="spyhttp")]

    def assert_untouched(self) -> None:
        assert self.calls == []
        assert self.server.requests == []


@pytest.fixture
def spy(loopback: LoopbackServer) -> Spy:
    return Spy(loopback)


# --- the query ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "\n\t ", "\x00\x01"])
async def test_empty_query_raises_before_any_call(api: SearchAPI, spy: Spy, query: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        await api(query, spy.chain())
    assert info.value.param == "query"
    assert "empty" in str(info.value)
    spy.assert_untouched()


@pytest.mark.parametrize("query", [None, 42, b"bytes", ["zoning"]])
async def test_a_query_that_is_not_a_string_raises(api: SearchAPI, spy: Spy, query: Any) -> None:
    with pytest.raises(InvalidRequest, match="query must be a string"):
        await api(query, spy.chain())
    spy.assert_untouched()


async def test_an_overlong_query_raises(api: SearchAPI, spy: Spy) -> None:
    with pytest.raises(InvalidRequest, match="4000"):
        await api("z" * 4001, spy.chain())
    spy.assert_untouched()


async def test_control_characters_become_spaces(api: SearchAPI, spy: Spy) -> None:
    result = await api("  zoning\x00set\tbacks\n", spy.chain())

    assert result.provider == "spyfn"
    assert spy.calls[0][0] == "zoning set backs"


# --- the provider spec ----------------------------------------------------------------------------------------


async def test_unknown_provider_raises_config_error(api: SearchAPI, spy: Spy) -> None:
    with pytest.raises(ConfigError) as info:
        await api("zoning", "no-such-provider")
    assert "no-such-provider" in str(info.value)
    assert "searxng" in str(info.value)  # the known names are listed


async def test_an_unknown_name_anywhere_in_the_chain_raises_before_the_first_call(
    api: SearchAPI, spy: Spy
) -> None:
    with pytest.raises(ConfigError, match="bogus"):
        await api("zoning", [*spy.chain(), "bogus"])
    spy.assert_untouched()


@pytest.mark.parametrize("chain", [[], (), ""])
async def test_an_empty_chain_raises(api: SearchAPI, chain: Any) -> None:
    with pytest.raises(ConfigError):
        await api("zoning", chain)


@pytest.mark.parametrize(
    "spec",
    [{"base_url": "http://127.0.0.1:9"}, {"name": 5}, {"name": "nope"}, 3.14, object()],
    ids=["dict-without-name", "dict-name-not-str", "dict-unknown-name", "float", "object"],
)
async def test_a_bad_provider_spec_raises(api: SearchAPI, spy: Spy, spec: Any) -> None:
    with pytest.raises(ConfigError):
        await api("zoning", [*spy.chain(), spec])
    spy.assert_untouched()


async def test_a_bad_default_chain_in_the_environment_raises(
    api: SearchAPI, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    reset_settings()
    monkeypatch.setenv("PERPLEXED_PROVIDER", "searxng,not-a-provider")
    monkeypatch.setenv("SEARXNG_URL", spy.server.url)

    with pytest.raises(ConfigError, match="not-a-provider"):
        await api("zoning")
    spy.assert_untouched()


async def test_a_negative_provider_cost_raises(api: SearchAPI, spy: Spy) -> None:
    with pytest.raises(ConfigError, match="non-negative"):
        await api("zoning", [*spy.chain(), {"name": "searxng", "base_url": spy.server.url, "cost": -1}])
    spy.assert_untouched()


# --- chain options ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fallback_on",
    [("errors",), ("ok",), ("deadline",), "everything", 5, ["error", 7], [None]],
    ids=["typo", "ok", "deadline", "unknown-str", "int", "mixed", "none-item"],
)
async def test_bad_fallback_on_raises(api: SearchAPI, spy: Spy, fallback_on: Any) -> None:
    with pytest.raises(InvalidRequest) as info:
        await api("zoning", spy.chain(), fallback_on=fallback_on)
    assert info.value.param == "fallback_on"
    spy.assert_untouched()


@pytest.mark.parametrize("option", ["provider_timeout_ms", "deadline_ms"])
@pytest.mark.parametrize(
    "value", [-1, 0, -0.5, 0.4, float("inf"), float("nan"), "1000", True, 3_600_001],
    ids=["neg", "zero", "neg-float", "rounds-to-zero", "inf", "nan", "str", "bool", "over-an-hour"],
)
async def test_bad_timeouts_raise(api: SearchAPI, spy: Spy, option: str, value: Any) -> None:
    with pytest.raises(InvalidRequest) as info:
        await api("zoning", spy.chain(), **{option: value})
    assert info.value.param == option
    spy.assert_untouched()


def test_chain_option_defaults() -> None:
    options = ChainOptions.build()
    assert options.provider_timeout_ms == 15000
    assert options.deadline_ms == 30000
    assert options.fallback_on == frozenset({"error", "empty"})
    assert options.moves_on("error") and options.moves_on("empty") and options.moves_on("timeout")
    assert not options.moves_on("ok")


def test_timeout_moves_on_with_error_or_timeout() -> None:
    assert ChainOptions.build(fallback_on=["error"]).moves_on("timeout")
    assert ChainOptions.build(fallback_on=["timeout"]).moves_on("timeout")
    assert not ChainOptions.build(fallback_on=["timeout"]).moves_on("error")
    assert not ChainOptions.build(fallback_on=["empty"]).moves_on("timeout")


def test_float_milliseconds_are_accepted() -> None:
    assert ChainOptions.build(provider_timeout_ms=1500.7, deadline_ms=2000.0).provider_timeout_ms == 1500


# --- search options --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("published_after", "2024-13-01"),
        ("published_after", "yesterday"),
        ("published_after", 20240101),
        ("published_before", "01/02/2024"),
        ("published_before", ""),
    ],
)
async def test_bad_dates_raise(api: SearchAPI, spy: Spy, option: str, value: Any) -> None:
    with pytest.raises(InvalidRequest) as info:
        await api("zoning", spy.chain(), **{option: value})
    assert info.value.param == option
    spy.assert_untouched()


async def test_an_inverted_date_range_raises(api: SearchAPI, spy: Spy) -> None:
    with pytest.raises(InvalidRequest, match="later than"):
        await api("zoning", spy.chain(), published_after="2024-06-01", published_before="2024-01-01")
    spy.assert_untouched()


@pytest.mark.parametrize("option", ["include_domains", "exclude_domains"])
@pytest.mark.parametrize(
    "value",
    [["exa mple.com"], [""], ["https://"], [123], 5, ["-bad.com"], ["exa_mple.com"]],
    ids=["space", "empty", "scheme-only", "int-item", "int", "leading-dash", "underscore"],
)
async def test_bad_domains_raise(api: SearchAPI, spy: Spy, option: str, value: Any) -> None:
    with pytest.raises(InvalidRequest) as info:
        await api("zoning", spy.chain(), **{option: value})
    assert info.value.param == option
    spy.assert_untouched()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_results", 0),
        ("max_results", -3),
        ("max_results", 101),
        ("max_results", "ten"),
        ("max_results", True),
        ("max_results", 2.5),
        ("recency", "hour"),
        ("safe_search", "maximum"),
        ("safe_search", 7),
        ("language", "english!"),
        ("country", 1),
    ],
)
async def test_bad_search_options_raise(api: SearchAPI, spy: Spy, option: str, value: Any) -> None:
    with pytest.raises(InvalidRequest) as info:
        await api("zoning", spy.chain(), **{option: value})
    assert info.value.param == option
    spy.assert_untouched()


def test_validation_errors_are_perplexed_errors_and_value_errors() -> None:
    with pytest.raises(PerplexedError):
        perplexed.search("", "searxng")
    with pytest.raises(ValueError):
        perplexed.search("zoning", "searxng", max_results=0)
    with pytest.raises(ValueError):
        perplexed.search("zoning", "no-such-provider")


def test_valid_options_are_normalised() -> None:
    options = SearchOptions.build(
        include_domains="https://www.Example.com/",
        exclude_domains=["*.spam.example", "docs.example.org/blog/"],
        published_after=datetime(2024, 1, 2, 3, 4),
        published_before="2024-02-01",
        safe_search=True,
        recency="week",
        language="en-US",
        engines=["a", "b"],
    )
    assert options.include_domains == ["example.com"]
    assert options.exclude_domains == ["*.spam.example", "docs.example.org/blog"]
    assert options.published_after == date(2024, 1, 2)
    assert options.published_before == date(2024, 2, 1)
    assert options.safe_search == "moderate"
    assert options.recency == "week"
    assert options.max_results == 10
    assert options.extra == {"engines": ["a", "b"]}
    assert SearchOptions.build(safe_search=0).safe_search == "off"
    assert SearchOptions.build(safe_search=2).safe_search == "strict"
    assert SearchOptions.build(include_domains=[]).include_domains is None


async def test_options_reach_every_provider_in_the_chain(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/search", Json(searxng_json(0)))
    seen: list[SearchOptions] = []

    def first(query: str, options: SearchOptions) -> list[dict[str, str]]:
        seen.append(options)
        return []

    result = await api(
        "zoning",
        [FunctionProvider(first), SearXNG(base_url=loopback.url)],
        max_results=4,
        recency="month",
        categories=["news", "it"],
        engines="bing",
        my_custom_flag=True,
    )

    assert [a.provider for a in result.attempts] == ["first", "searxng"]
    (options,) = seen
    assert options.max_results == 4 and options.recency == "month"
    assert options.extra == {"categories": ["news", "it"], "engines": "bing", "my_custom_flag": True}
    query = loopback.requests[0].query
    assert query["time_range"] == ["month"]
    assert query["categories"] == ["news,it"]
    assert query["engines"] == ["bing"]


async def test_chain_options_are_not_passed_to_providers(api: SearchAPI) -> None:
    seen: list[SearchOptions] = []

    def fn(query: str, options: SearchOptions) -> list[dict[str, str]]:
        seen.append(options)
        return [{"url": "https://a.example/"}]

    await api("zoning", FunctionProvider(fn), provider_timeout_ms=5000, deadline_ms=9000, fallback_on=["error"])

    assert seen[0].extra == {}
