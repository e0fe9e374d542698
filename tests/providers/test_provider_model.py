"""One provider model: a vendor is one class declaring what it can do (``operations``: search, fetch or both), all
in one registry; asking a provider for an operation it does not declare (by name, dict or instance) is a
ConfigError at validation, before any request, naming the operation and the registered providers that can."""

from __future__ import annotations

import json
from typing import Any

import httpx
import perplexed
import pytest
from perplexed import ConfigError, InvalidRequest, providers
from perplexed import fetchers as fetchers_module  # private: the earlier fetch module, kept working
from perplexed.providers import (
    Exa,
    FetchAnswer,
    FetchOptions,
    FetchProvider,
    Firecrawl,
    FunctionFetcher,
    Http,
    Jina,
    SearXNG,
    Tavily,
)

SEARCHERS = ["local", "searxng", "ceramic", "firecrawl", "perplexity", "tavily", "exa", "brave", "linkup"]
FETCHERS = ["http", "jina", "firecrawl", "tavily", "exa"]


class Recorder:
    """A transport that answers every request with ``reply`` and remembers the requests."""

    def __init__(self, reply: Any = None) -> None:
        self.requests: list[httpx.Request] = []
        self.reply = reply or {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = self.reply(request) if callable(self.reply) else self.reply
        return httpx.Response(200, json=body)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


# -- what each class declares, one registry -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "operations"),
    [
        ("tavily", {"search", "fetch"}),
        ("exa", {"search", "fetch"}),
        ("firecrawl", {"search", "fetch"}),
        ("jina", {"fetch"}),
        ("http", {"fetch"}),
        ("searxng", {"search"}),
        ("brave", {"search"}),
        ("local", {"search"}),
        ("ceramic", {"search"}),
        ("perplexity", {"search"}),
        ("linkup", {"search"}),
    ],
)
def test_each_vendor_is_one_class_declaring_its_operations(name: str, operations: set[str]) -> None:
    cls = providers.get(name)
    assert set(cls.operations) == operations
    if "fetch" in operations:
        assert fetchers_module.get(name) is cls  # the fetch side is the same class


def test_one_registry_lists_each_operation() -> None:
    assert providers.available() == SEARCHERS
    assert providers.available("search") == SEARCHERS
    assert providers.available("fetch") == FETCHERS == fetchers_module.available()
    assert sorted(providers.available(None)) == sorted(set(SEARCHERS) | set(FETCHERS))


def test_the_earlier_fetch_names_still_import_and_are_the_vendor_classes() -> None:
    from perplexed.fetchers.exa import ExaContents  # private: an earlier path, kept working
    from perplexed.fetchers.firecrawl import FirecrawlScrape  # private: an earlier path, kept working
    from perplexed.fetchers.http import MAX_REDIRECTS  # private: an earlier path, kept working
    from perplexed.fetchers.http import Http as OldHttp  # private: an earlier path, kept working
    from perplexed.fetchers.jina import Jina as OldJina  # private: an earlier path, kept working
    from perplexed.fetchers.tavily import TavilyExtract  # private: an earlier path, kept working

    assert (TavilyExtract, ExaContents, FirecrawlScrape, OldJina, OldHttp) == (Tavily, Exa, Firecrawl, Jina, Http)
    assert MAX_REDIRECTS == 5
    assert providers.TavilyExtract is Tavily  # the lazy attribute of perplexed.providers too
    assert issubclass(Tavily, FetchProvider) and issubclass(Jina, FetchProvider)


def test_search_and_fetch_prices_stay_apart_on_one_class() -> None:
    tavily, exa, firecrawl = Tavily(api_key="tvly-k"), Exa(api_key="exa-k"), Firecrawl(api_key="fc-k")
    assert tavily.price() == pytest.approx(0.008)  # a basic search: 1 credit
    assert tavily.fetch_price() == pytest.approx(0.0016)  # a basic extract: 1 credit per 5 URLs
    assert Tavily(api_key="tvly-k", extract_depth="advanced").fetch_price() == pytest.approx(0.0032)
    assert exa.price() == pytest.approx(0.007) and exa.fetch_price() == pytest.approx(0.001)
    assert firecrawl.price() == pytest.approx(0.002) and firecrawl.fetch_price() == pytest.approx(0.001)
    assert Tavily(api_key="tvly-k", cost=0.5).fetch_price() == 0.5  # an override is the price of both


def test_one_object_serves_a_search_chain_and_a_fetch_chain() -> None:
    def reply(request: httpx.Request) -> dict[str, Any]:
        if request.url.path == "/search":
            return {"results": [{"url": "https://example.org/a", "title": "A", "content": "a"}]}
        assert request.url.path == "/extract"
        body = json.loads(request.content)
        return {"results": [{"url": body["urls"][0], "raw_content": "x" * 300, "title": "T"}],
                "usage": {"credits": 1}}

    recorder = Recorder(reply)
    tavily = Tavily(api_key="tvly-k", transport=recorder.transport())
    result = perplexed.search("q", provider=tavily)
    assert [h.url for h in result.hits] == ["https://example.org/a"]
    page = perplexed.fetch("https://example.org/a", provider=tavily, extract_depth="basic")
    assert page.provider == "tavily" and page.content == "x" * 300
    assert [r.url.path for r in recorder.requests] == ["/search", "/extract"]


# -- asking for an operation a provider does not declare -------------------------------------------------------


def _assert_names(error: ConfigError, operation: str, able: list[str]) -> None:
    text = str(error)
    assert f"cannot {operation}" in text
    assert all(name in text for name in able)


@pytest.mark.parametrize("spec", [["jina"], "jina", "http", {"name": "jina"}, ["searxng", "http"]])
def test_search_with_a_fetch_only_provider_by_name_is_a_config_error(spec: Any) -> None:
    with pytest.raises(ConfigError) as info:
        perplexed.search("q", provider=spec)
    _assert_names(info.value, "search", SEARCHERS)
    assert "unknown provider" not in str(info.value)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_search_with_a_fetch_only_instance_fails_before_any_request(mode: str) -> None:
    recorder = Recorder({"code": 200, "data": {"content": "page"}})
    jina = Jina(transport=recorder.transport())
    with pytest.raises(ConfigError) as info:
        if mode == "sync":
            perplexed.search("q", provider=jina)
        else:
            await perplexed.asearch("q", provider=[jina])
    _assert_names(info.value, "search", SEARCHERS)
    assert recorder.requests == []
    with pytest.raises(ConfigError):
        perplexed.search("q", provider=FunctionFetcher(lambda url, options: "text"))


def test_a_dict_spec_naming_a_fetch_only_provider_sends_nothing() -> None:
    recorder = Recorder()
    with pytest.raises(ConfigError):
        perplexed.search("q", provider={"name": "jina", "transport": recorder.transport()})
    assert recorder.requests == []


@pytest.mark.parametrize("spec", ["searxng", ["http", "brave"], {"name": "local"}])
def test_fetch_with_a_search_only_provider_names_the_fetch_providers(spec: Any) -> None:
    with pytest.raises(ConfigError) as info:
        perplexed.fetch("https://example.org/a", provider=spec)
    _assert_names(info.value, "fetch pages", FETCHERS)


def test_fetch_with_a_search_only_instance_sends_nothing() -> None:
    recorder = Recorder({"results": []})
    searx = SearXNG(base_url="http://127.0.0.1:9", transport=recorder.transport())
    with pytest.raises(ConfigError) as info:
        perplexed.fetch("https://example.org/a", provider=searx)
    _assert_names(info.value, "fetch pages", FETCHERS)
    with pytest.raises(ConfigError):
        perplexed.search("q", provider="searxng", fetch_content=2, fetch_provider=searx)
    assert recorder.requests == []


def test_unknown_names_are_still_named_per_operation() -> None:
    with pytest.raises(ConfigError, match=r"unknown fetch provider 'jinna': did you mean 'jina'"):
        perplexed.fetch("https://example.org/a", provider="jinna")
    with pytest.raises(ConfigError, match=r"unknown provider 'tavly': did you mean 'tavily'"):
        perplexed.search("q", provider="tavly")


def test_options_stay_per_operation() -> None:
    with pytest.raises(InvalidRequest, match="extract_depth"):  # a fetch option is not a search option
        perplexed.search("q", provider=Tavily(api_key="tvly-k"), extract_depth="advanced")
    with pytest.raises(InvalidRequest, match="search_depth"):
        perplexed.fetch("https://example.org/a", provider=Tavily(api_key="tvly-k"), search_depth="advanced")


def test_a_plug_in_fetch_class_registers_in_the_one_registry() -> None:
    class Mirror(FetchProvider):
        name = "mirror"
        extra_options = ("flavour",)  # an earlier fetch class names its fetch options this way

        def build_fetch_request(self, url: str, options: FetchOptions) -> httpx.Request:
            return httpx.Request("GET", url)

        def parse_fetch_response(self, response: httpx.Response, url: str, options: FetchOptions) -> FetchAnswer:
            return FetchAnswer(text=response.text)

    assert Mirror.fetch_options == ("flavour",) and Mirror.operations == frozenset({"fetch"})
    fetchers_module.register("mirror", Mirror)
    try:
        assert "mirror" in providers.available("fetch") and "mirror" not in providers.available()
        with pytest.raises(ConfigError, match="cannot search"):
            perplexed.search("q", provider="mirror")
    finally:
        providers.unregister("mirror")
    with pytest.raises(ConfigError, match="not a FetchProvider"):
        fetchers_module.register("searx", SearXNG)  # type: ignore[arg-type]
