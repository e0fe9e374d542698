"""verify(fetch=True): the cited pages' content through the fetch chain instead of the hits' snippets, with the
fetch cost in Verification.cost, and the snippet when a page cannot be fetched (evidence says which text)."""

from __future__ import annotations

from typing import Any

import perplexed
import pytest
from perplexed import Hit, InvalidRequest
from perplexed.fetchers import FunctionFetcher
from testkit.loopback import Html, Status, serve

PAGE = (
    "Setbacks in the residential zone. The front yard setback is twenty feet, measured from the property line. "
    "The rear setback is fifteen feet unless the lot is a corner lot."
)
HITS = [
    Hit(
        id=1,
        url="https://city.example/setbacks",
        title="Setbacks",
        snippet="Setback rules for the residential zone.",
    ),
    Hit(id=2, url="https://other.example/gone", title="Gone", snippet="Corner lots need two front setbacks."),
]
TEXT = "The rear setback is fifteen feet [1]. Corner lots need two front setbacks [2]."


def fetcher(calls: list[str]) -> FunctionFetcher:
    def pages(url: str, options: Any) -> str:
        calls.append(url)
        if "gone" in url:
            raise ConnectionError("the page is gone")
        return PAGE

    return FunctionFetcher(pages, name="pages", cost=0.002)


async def test_fetch_checks_the_page_and_falls_back_to_the_snippet() -> None:
    calls: list[str] = []
    snippets_only = await perplexed.averify(TEXT, HITS)
    assert snippets_only.sentences[0].label != "supported"  # the snippet does not say it
    v = await perplexed.averify(TEXT, HITS, fetch={"provider": fetcher(calls)})
    assert sorted(calls) == sorted(h.url for h in HITS)
    first, second = v.sentences
    assert first.label == "supported" and first.evidence[0].source == "page"
    assert PAGE[first.evidence[0].start : first.evidence[0].end] == first.evidence[0].text
    assert "fifteen feet" in first.evidence[0].text
    assert (
        second.label == "supported" and second.evidence[0].source == "snippet"
    )  # the page could not be fetched
    assert second.evidence[0].text == HITS[1].snippet
    assert v.cost == pytest.approx(0.002)  # one page fetched at 0.002; the failed one cost nothing


def test_sync_verify_fetches_too_and_only_cited_hits() -> None:
    calls: list[str] = []
    v = perplexed.verify("The rear setback is fifteen feet [1].", HITS, fetch={"provider": fetcher(calls)})
    assert calls == [HITS[0].url] and v.sentences[0].label == "supported" and v.cost == pytest.approx(0.002)


def test_fetch_true_uses_the_default_http_chain() -> None:
    body = (
        "<html><head><title>Setbacks</title></head><body><article>"
        + "".join(f"<p>{s}.</p>" for s in PAGE.split(". "))
        + "<p>"
        + "Other zoning words fill this page. " * 10
        + "</p></article></body></html>"
    )
    with serve({"/setbacks": Html(body), "/robots.txt": Status(404, b"")}) as site:
        hits = [Hit(id=1, url=site.url_for("/setbacks"), snippet="Setback rules.")]
        v = perplexed.verify("The rear setback is fifteen feet [1].", hits, fetch={"allow_private": True})
        assert v.sentences[0].label == "supported" and v.sentences[0].evidence[0].source == "page"
        # loopback is refused without allow_private: the snippet is used, nothing fails
        refused = perplexed.verify("The rear setback is fifteen feet [1].", hits, fetch=True)
        assert refused.sentences[0].label != "supported" and refused.cost == 0.0


def test_bad_fetch_options_fail_before_anything_is_fetched() -> None:
    with pytest.raises(InvalidRequest) as info:
        perplexed.verify(TEXT, HITS, fetch="yes")
    assert info.value.param == "fetch"
    with pytest.raises(InvalidRequest):
        perplexed.verify(TEXT, HITS, fetch={"max_chars": -1})
