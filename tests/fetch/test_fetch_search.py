"""search(fetch_content=N) and answer(fetch_content=N): the top hits' pages become Hit.content / Hit.page, the
fetches' cost is part of Result.cost, allow_private reaches the fetches, bad fetch options fail before the
search is paid for."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import perplexed
import pytest
from pages import ARTICLE_TITLE, article_html
from perplexed import Hit, InvalidRequest, Page, integration
from perplexed.providers import FunctionProvider
from testkit.loopback import Html, LoopbackServer, Status

sys.path.insert(0, str(Path(__file__).parents[1]))
from test_answer_fakes import FakeAgentAPI

LOOP = ["127.0.0.0/8"]


def searcher(urls: list[str], calls: list[str] | None = None) -> FunctionProvider:
    def search(query: str, options: Any) -> list[Hit]:
        if calls is not None:
            calls.append(query)
        return [Hit(url=u, title=f"hit {i}", snippet="a short snippet") for i, u in enumerate(urls)]

    return FunctionProvider(search, name="web", cost=0.002)


@pytest.fixture
def site(loopback: LoopbackServer) -> LoopbackServer:
    loopback.route("/robots.txt", Status(404, b""))
    loopback.route("/a", Html(article_html()))
    loopback.route("/b", Html(article_html(title="Second page")))
    loopback.route("/gone", Status(404, b"", content_type="text/html"))
    return loopback


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_fetch_content_sets_content_and_page_and_cost(mode: str, site: LoopbackServer) -> None:
    urls = [site.url_for("/a"), site.url_for("/gone"), site.url_for("/b")]
    paid_fetch = {"name": "http", "cost": 0.001}
    kwargs: dict[str, Any] = {"fetch_content": 2, "fetch_provider": [paid_fetch], "allow_private": LOOP,
                              "max_chars": 400}
    if mode == "sync":
        result = perplexed.search("setbacks", searcher(urls), **kwargs)
    else:
        result = await perplexed.asearch("setbacks", searcher(urls), **kwargs)
    first, second, third = result.hits
    assert isinstance(first.page, Page) and first.page.title == ARTICLE_TITLE
    assert first.content == first.page.content and len(first.content) == 400 and first.page.truncated
    assert second.page is None and second.content is None  # its fetch failed (404): the hit stays as it was
    assert third.page is None  # only the top 2 were fetched
    assert result.cost == pytest.approx(0.002 + 0.001)  # the search and the fetch (a failed call bills nothing)
    assert [a.reason for a in result.fetches] == [None, "not_found"]


async def test_fetch_content_true_fetches_every_hit(site: LoopbackServer) -> None:
    result = await perplexed.asearch("q", searcher([site.url_for("/a"), site.url_for("/b")]), fetch_content=True,
                                     allow_private=LOOP)
    assert [h.page.title for h in result.hits if h.page] == [ARTICLE_TITLE, "Second page"]


async def test_without_allow_private_the_loopback_hits_are_not_fetched(site: LoopbackServer) -> None:
    result = await perplexed.asearch("q", searcher([site.url_for("/a")]), fetch_content=1)
    assert result.hits[0].page is None and not any(r.path == "/a" for r in site.requests)


@pytest.mark.parametrize(("kwargs", "param"), [
    ({"fetch_content": "all"}, "fetch_content"),
    ({"fetch_content": -2}, "fetch_content"),
    ({"fetch_provider": "http"}, "fetch_provider"),
    ({"max_chars": 10}, "max_chars"),
    ({"fetch_content": 1, "max_chars": 0}, "max_chars"),
    ({"fetch_content": 1, "allow_private": "bogus"}, "allow_private"),
])
async def test_bad_fetch_arguments_fail_before_the_search(kwargs: dict[str, Any], param: str) -> None:
    calls: list[str] = []
    with pytest.raises(InvalidRequest) as info:
        await perplexed.asearch("q", searcher(["https://example.com/"], calls), **kwargs)
    assert info.value.param == param and calls == []


async def test_answer_grounds_on_page_content(site: LoopbackServer) -> None:
    api = FakeAgentAPI()
    ans = await perplexed.aanswer("What is the setback?", provider=searcher([site.url_for("/a")]),
                                  client=api.async_client(), fetch_content=1, allow_private=LOOP)
    text = api.body["input"]
    assert "front yard setback in the residential zone is twenty feet" in text  # page text, not the snippet
    assert ans.sources[0].page is not None
    assert ans.search_cost == pytest.approx(0.002)


async def test_answer_fetch_options_are_validated_before_anything_runs() -> None:
    with pytest.raises(InvalidRequest) as info:
        integration.prepare_answer("q", provider=searcher(["https://example.com/"]), fetch_content=1, max_chars=-1)
    assert info.value.param == "max_chars"
