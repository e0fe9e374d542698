"""Hit normalisation, the same for every provider (``chain.finalize_hits``): client-side domain filters,
duplicate-URL merging, the ``max_results`` cap and 1-based ids; then the same through the engine."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perplexed import Hit, Outcome, SearchOptions, UpstreamError
from perplexed.engine.chain import (  # private: hit normalisation table-style, before the engine runs it
    _norm_url,
    finalize_hits,
)
from perplexed.providers import FunctionProvider, SearXNG
from testkit.loopback import Json, LoopbackServer, SearchAPI, searxng_json


def hit(url: str, **kw: Any) -> Hit:
    return Hit(url=url, **kw)


def opts(**kw: Any) -> SearchOptions:
    return SearchOptions.build(**kw)


def urls(hits: list[Hit]) -> list[str]:
    return [h.url for h in hits]


# --- max_results and ids ----------------------------------------------------------------------------------------


def test_max_results_caps_and_ids_run_from_one() -> None:
    hits = [hit(f"https://e.example/{i}") for i in range(7)]

    out = finalize_hits(hits, "p", opts(max_results=3))

    assert urls(out) == ["https://e.example/0", "https://e.example/1", "https://e.example/2"]
    assert [h.id for h in out] == [1, 2, 3]


def test_ids_are_renumbered_after_filtering_and_merging() -> None:
    hits = [
        hit("https://a.example/x", id=9),
        hit("https://spam.example/y", id=9),
        hit("https://a.example/x/", id=9),  # duplicate of the first
        hit("https://b.example/z", id=9),
    ]

    out = finalize_hits(hits, "p", opts(exclude_domains=["spam.example"]))

    assert urls(out) == ["https://a.example/x", "https://b.example/z"]
    assert [h.id for h in out] == [1, 2]


def test_provider_label_is_filled_in_but_not_overwritten() -> None:
    out = finalize_hits([hit("https://a.example/"), hit("https://b.example/", provider="upstream-engine")], "p", opts())

    assert [h.provider for h in out] == ["p", "upstream-engine"]


def test_the_input_hits_are_not_modified() -> None:
    original = [hit("https://a.example/"), hit("https://a.example", title="filled")]
    snapshot = [h.model_dump() for h in original]

    out = finalize_hits(original, "p", opts())

    assert [h.model_dump() for h in original] == snapshot
    assert out[0] is not original[0]
    assert (out[0].id, out[0].title) == (1, "filled")


def test_hits_without_a_url_are_dropped() -> None:
    out = finalize_hits([hit(""), hit("https://a.example/"), hit("   ")], "p", opts())

    assert urls(out) == ["https://a.example/"]


# --- duplicates -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "twin",
    [
        "http://a.example/page",  # scheme
        "https://www.a.example/page",  # www.
        "https://A.EXAMPLE/page",  # host case
        "https://a.example/page/",  # trailing slash
        "https://a.example/page#section",  # fragment
        "https://a.example:443/page",  # default port
        "https://user@a.example/page",  # user info
        "  https://a.example/page  ",  # whitespace
    ],
)
def test_duplicate_urls_are_merged(twin: str) -> None:
    out = finalize_hits([hit("https://a.example/page", title="first"), hit(twin, title="second")], "p", opts())

    assert [(h.url, h.title) for h in out] == [("https://a.example/page", "first")]


@pytest.mark.parametrize(
    "other",
    [
        "https://a.example/page?x=1",  # a different query is a different page
        "https://a.example/Page",  # paths are case-sensitive
        "https://b.a.example/page",  # a subdomain is another site
        "https://a.example:8443/page",  # a non-default port
        "https://a.example/page/more",
    ],
)
def test_distinct_urls_are_kept(other: str) -> None:
    out = finalize_hits([hit("https://a.example/page"), hit(other)], "p", opts())

    assert len(out) == 2


def test_a_duplicate_fills_the_fields_the_first_one_lacks() -> None:
    first = hit("https://a.example/p", title="Title", snippet="")
    later = hit(
        "https://www.a.example/p/",
        title="Other title",
        snippet="a snippet",
        content="full text",
        published=date(2024, 5, 1),
        score=0.7,
    )

    (merged,) = finalize_hits([first, later], "p", opts())

    assert merged.url == "https://a.example/p"
    assert merged.title == "Title"  # set fields are kept
    assert (merged.snippet, merged.content, merged.published, merged.score) == (
        "a snippet", "full text", date(2024, 5, 1), 0.7,
    )


def test_duplicates_do_not_use_up_max_results() -> None:
    hits = [hit("https://a.example/"), hit("http://a.example"), hit("https://b.example/"), hit("https://c.example/")]

    out = finalize_hits(hits, "p", opts(max_results=2))

    assert urls(out) == ["https://a.example/", "https://b.example/"]


def test_malformed_urls_never_raise() -> None:
    hits = [hit("http://a.example:99999/x"), hit("http://[::1"), hit("not a url"), hit("http://a.example:99999/x")]

    out = finalize_hits(hits, "p", opts(include_domains=None))

    assert urls(out) == ["http://a.example:99999/x", "http://[::1", "not a url"]
    assert urls(finalize_hits(hits, "p", opts(include_domains=["a.example"]))) == ["http://a.example:99999/x"]


# --- domain filters ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "url", "matches"),
    [
        ("example.com", "https://example.com/a", True),
        ("example.com", "https://www.example.com/a", True),
        ("example.com", "https://docs.example.com/a", True),
        ("example.com", "https://notexample.com/a", False),
        ("example.com", "https://example.com.evil.net/a", False),
        ("*.example.com", "https://deep.sub.example.com/", True),
        ("docs.example.com", "https://example.com/a", False),
        ("example.com/blog", "https://example.com/blog", True),
        ("example.com/blog", "https://example.com/blog/post-1", True),
        ("example.com/blog", "https://example.com/blogging", False),
        ("example.com/blog", "https://example.com/about", False),
        ("https://www.Example.com/", "https://example.com/x", True),
    ],
)
def test_include_and_exclude_domains(domain: str, url: str, matches: bool) -> None:
    included = finalize_hits([hit(url)], "p", opts(include_domains=[domain]))
    excluded = finalize_hits([hit(url)], "p", opts(exclude_domains=[domain]))

    assert (len(included) == 1) is matches
    assert (len(excluded) == 1) is (not matches)


def test_include_and_exclude_together() -> None:
    hits = [hit("https://a.example/x"), hit("https://ads.a.example/y"), hit("https://b.example/z")]

    out = finalize_hits(hits, "p", opts(include_domains=["a.example"], exclude_domains=["ads.a.example"]))

    assert urls(out) == ["https://a.example/x"]


# --- a property: whatever comes in, the output is well-formed -----------------------------------------------------

_hosts = st.sampled_from(["a.example", "www.a.example", "b.example", "A.Example", "c.example:8080"])
_paths = st.sampled_from(["", "/", "/x", "/x/", "/y?q=1", "/x#f"])
_urls = st.builds(lambda s, h, p: f"{s}://{h}{p}", st.sampled_from(["http", "https"]), _hosts, _paths)


@settings(max_examples=200, deadline=None)
@given(st.lists(_urls, max_size=30), st.integers(min_value=1, max_value=12))
def test_output_is_numbered_capped_and_free_of_duplicates(raw_urls: list[str], max_results: int) -> None:
    out = finalize_hits([hit(u) for u in raw_urls], "p", opts(max_results=max_results))

    keys = [_norm_url(h.url) for h in out]
    assert [h.id for h in out] == list(range(1, len(out) + 1))
    assert len(out) == min(max_results, len({_norm_url(u) for u in raw_urls}))
    assert len(set(keys)) == len(keys)
    # first occurrence wins and order is preserved
    firsts: dict[str, str] = {}
    for u in raw_urls:
        firsts.setdefault(_norm_url(u), u)
    assert [h.url for h in out] == list(firsts.values())[:max_results]


# --- the same through the engine -----------------------------------------------------------------------------------


async def test_max_results_is_applied_to_what_a_provider_returns(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/search", Json(searxng_json(8)))

    result = await api("zoning", SearXNG(base_url=loopback.url), max_results=3)

    assert [h.id for h in result.hits] == [1, 2, 3]
    assert urls(result.hits) == [f"https://example.com/page{i}" for i in (1, 2, 3)]


async def test_duplicates_from_a_provider_are_merged(api: SearchAPI, loopback: LoopbackServer) -> None:
    data = searxng_json(2, prefix="https://a.example/p")
    data["results"].append({"url": "http://www.a.example/p1/", "title": "dup", "content": "ignored"})
    loopback.route("/search", Json(data))

    result = await api("zoning", SearXNG(base_url=loopback.url))

    assert urls(result.hits) == ["https://a.example/p1", "https://a.example/p2"]
    assert [h.id for h in result.hits] == [1, 2]
    assert result.hits[0].title == "Result 1"


async def test_domain_filters_apply_to_every_provider(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/search", Json({"results": [
        {"url": "https://docs.example.org/a", "title": "a"},
        {"url": "https://spam.example/b", "title": "b"},
        {"url": "https://docs.example.org/c", "title": "c"},
    ]}))

    def fn(query: str, options: SearchOptions) -> list[dict[str, str]]:
        return [{"url": "https://spam.example/x"}, {"url": "https://docs.example.org/y"}]

    http_result = await api("zoning", SearXNG(base_url=loopback.url), exclude_domains=["spam.example"])
    fn_result = await api("zoning", FunctionProvider(fn), include_domains=["example.org"])

    assert urls(http_result.hits) == ["https://docs.example.org/a", "https://docs.example.org/c"]
    assert urls(fn_result.hits) == ["https://docs.example.org/y"]


async def test_a_provider_whose_hits_are_all_filtered_out_is_empty_and_the_chain_moves_on(
    api: SearchAPI, loopback: LoopbackServer
) -> None:
    loopback.route("/spam/search", Json({"results": [{"url": "https://spam.example/1"}]}))
    loopback.route("/good/search", Json({"results": [{"url": "https://good.example/1"}]}))

    result = await api(
        "zoning",
        [SearXNG(base_url=f"{loopback.url}/spam", name="spam"), SearXNG(base_url=f"{loopback.url}/good", name="good")],
        exclude_domains=["spam.example"],
    )

    assert [(a.provider, a.outcome) for a in result.attempts] == [("spam", Outcome.EMPTY), ("good", Outcome.OK)]
    assert urls(result.hits) == ["https://good.example/1"]


async def test_function_provider_hit_objects_are_copied_not_renumbered_in_place(api: SearchAPI) -> None:
    shared = [Hit(url="https://a.example/"), Hit(url="https://b.example/")]

    result = await api("zoning", FunctionProvider(lambda q, o: shared, name="static"))

    assert [h.id for h in result.hits] == [1, 2]
    assert [h.id for h in shared] == [0, 0]  # the caller's objects are untouched
    assert [h.provider for h in shared] == ["", ""]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, Outcome.EMPTY),
        ([], Outcome.EMPTY),
        ([{"url": "https://a.example/", "title": "t", "unknown_field": 1}], Outcome.OK),
        ([Hit(url="https://a.example/")], Outcome.OK),
    ],
    ids=["none", "empty-list", "dicts", "hits"],
)
async def test_what_a_function_provider_may_return(api: SearchAPI, value: Any, expected: Outcome) -> None:
    result = await api("zoning", FunctionProvider(lambda q, o: value, name="fn"))

    assert result.attempts[0].outcome is expected


@pytest.mark.parametrize("value", [[42], ["https://a.example/"], [{"title": "no url"}]], ids=["int", "str", "no-url"])
async def test_a_function_provider_returning_garbage_is_an_error_not_a_crash(api: SearchAPI, value: Any) -> None:
    with pytest.raises(UpstreamError) as info:
        await api("zoning", FunctionProvider(lambda q, o: value, name="fn"))

    assert info.value.attempts[0].outcome is Outcome.ERROR


async def test_a_custom_provider_with_a_bad_hit_url_is_an_error_attempt_not_a_crash(api: SearchAPI) -> None:
    # before the fix, an invalid port in a hit URL raised ValueError out of the whole search
    result = await api("zoning", FunctionProvider(lambda q, o: [{"url": "http://a.example:99999/x"}], name="weird"))

    assert result.attempts[0].outcome is Outcome.OK
    assert urls(result.hits) == ["http://a.example:99999/x"]
