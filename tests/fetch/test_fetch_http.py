"""perplexed.fetch with the http provider against loopback servers: extraction, slicing, the quality floor,
content types, interstitials, page statuses, robots.txt, redirects, caps, fetch_many, sync = async."""

from __future__ import annotations

import gzip
from typing import Any

import perplexed
import pytest
from pages import ARTICLE_TITLE, CLOUDFLARE, ENABLE_JS, HugeHtml, article_html
from perplexed import InvalidRequest, Outcome, Page, UpstreamError
from pydantic import ValidationError
from testkit.loopback import Html, LoopbackServer, Raw, Status, serve

LOOP = ["127.0.0.0/8"]  # loopback servers: opt in to the loopback network only


@pytest.fixture
def site(loopback: LoopbackServer) -> LoopbackServer:
    loopback.route("/article", Html(article_html()))
    loopback.route("/robots.txt", Status(404, b"", content_type="text/plain"))
    return loopback


async def both(mode: str, url: str, provider: Any = None, **options: Any) -> Page:
    if mode == "sync":
        return perplexed.fetch(url, provider, **options)
    return await perplexed.afetch(url, provider, **options)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_article_comes_back_as_markdown_with_its_fields(mode: str, site: LoopbackServer) -> None:
    page = await both(mode, site.url_for("/article"), allow_private=LOOP)
    assert isinstance(page, Page)
    assert page.url == site.url_for("/article") == page.final_url
    assert page.title == ARTICLE_TITLE
    assert page.format == "markdown"
    assert "front yard setback" in page.content and "Paragraph 12" in page.content
    assert "All rights reserved" not in page.content and "About" not in page.content  # boilerplate dropped
    assert page.status == 200 and page.provider == "http" and page.content_type == "text/html"
    assert page.language == "en" and str(page.published) == "2025-03-04"
    assert page.total_chars == len(page.content) and not page.truncated and page.next_index is None
    assert [a.outcome for a in page.attempts] == [Outcome.OK] and page.cost == 0.0
    with pytest.raises(ValidationError):  # frozen
        page.title = "x"  # type: ignore[misc]
    request = next(r for r in site.requests if r.path == "/article")
    assert "perplexed-search" in request.headers["user-agent"]


async def test_text_format_has_no_markdown_marks(site: LoopbackServer) -> None:
    page = await perplexed.afetch(site.url_for("/article"), format="text", allow_private=LOOP)
    assert page.format == "text" and "front yard setback" in page.content and "# " not in page.content


async def test_paging_with_start_index_covers_the_whole_text_exactly(site: LoopbackServer) -> None:
    whole = (await perplexed.afetch(site.url_for("/article"), allow_private=LOOP, max_chars=100_000)).content
    pieces, start = [], 0
    while True:
        page = await perplexed.afetch(site.url_for("/article"), allow_private=LOOP, max_chars=300, start_index=start)
        assert page.total_chars == len(whole)
        pieces.append(page.content)
        assert page.truncated == (page.next_index is not None)
        if page.next_index is None:
            break
        assert page.next_index == start + 300 and len(page.content) == 300
        start = page.next_index
    assert "".join(pieces) == whole
    past = await perplexed.afetch(site.url_for("/article"), allow_private=LOOP, start_index=len(whole) + 5)
    assert past.content == "" and not past.truncated and past.next_index is None


async def test_the_quality_floor_applies_to_the_whole_text_and_falls_through(site: LoopbackServer) -> None:
    site.route("/short", Html(article_html(paragraphs=["Only a short line of text here."])))
    calls: list[str] = []

    def backup(url: str, options: Any) -> dict[str, Any]:
        calls.append(url)
        return {"text": "backup text " * 50, "title": "From backup"}

    page = await perplexed.afetch(site.url_for("/short"), ["http", backup], allow_private=LOOP)
    assert [a.outcome for a in page.attempts] == [Outcome.INSUFFICIENT, Outcome.OK]
    assert page.provider == "backup" and calls == [site.url_for("/short")]
    # a slice smaller than the floor is fine: the floor is about the whole text
    small = await perplexed.afetch(site.url_for("/article"), allow_private=LOOP, max_chars=10, min_chars=500)
    assert small.attempts[0].outcome is Outcome.OK and len(small.content) == 10
    # without insufficient (nor empty) in fallback_on the chain stops there: the insufficient page is the answer
    stop = await perplexed.afetch(site.url_for("/short"), ["http", backup], allow_private=LOOP,
                                  fallback_on=["error"])
    assert [a.outcome for a in stop.attempts] == [Outcome.INSUFFICIENT] and stop.provider == "http"


@pytest.mark.parametrize(("ctype", "body", "expected"), [
    ("text/plain; charset=utf-8", "Plain words.\nSecond line of plain words, " * 20, "Plain words."),
    ("text/markdown", "# Heading\n\nSome *markdown* text that stays as it is. " * 10, "# Heading"),
])
async def test_plain_text_and_markdown_are_kept_as_they_are(site: LoopbackServer, ctype: str, body: str,
                                                            expected: str) -> None:
    site.route("/doc", Status(200, body.encode(), content_type=ctype))
    page = await perplexed.afetch(site.url_for("/doc"), allow_private=LOOP)
    assert page.content.startswith(expected) and page.content == body.strip()


@pytest.mark.parametrize("ctype", ["application/json", "image/png", "application/zip", "video/mp4"])
async def test_other_content_types_are_unsupported_type(site: LoopbackServer, ctype: str) -> None:
    site.route("/thing", Raw(b'{"a": 1}' * 100, content_type=ctype))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/thing"), allow_private=LOOP)
    assert [a.reason for a in info.value.attempts] == ["unsupported_type"]


@pytest.mark.parametrize("html", [CLOUDFLARE, ENABLE_JS])
async def test_interstitials_are_blocked_not_insufficient(site: LoopbackServer, html: str) -> None:
    site.route("/wall", Html(html))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/wall"), allow_private=LOOP)
    attempt = info.value.attempts[0]
    assert attempt.outcome is Outcome.ERROR and attempt.reason == "blocked"


@pytest.mark.parametrize(("status", "reason"), [(404, "not_found"), (410, "not_found"), (403, "blocked"),
                                                 (451, "blocked"), (401, "blocked"), (429, "rate_limited"),
                                                 (500, "upstream"), (503, "upstream")])
async def test_page_statuses_map_to_the_failure_reasons(site: LoopbackServer, status: int, reason: str) -> None:
    site.route("/p", Status(status, b"<html>nope</html>", content_type="text/html"))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/p"), allow_private=LOOP)
    assert info.value.reason == "all_providers_failed"
    assert info.value.attempts[0].reason == reason


async def test_robots_txt_is_respected_cached_and_can_be_turned_off(loopback: LoopbackServer) -> None:
    loopback.route("/robots.txt", Status(200, b"User-agent: *\nDisallow: /private\n", content_type="text/plain"))
    loopback.route("/private/a", Html(article_html()))
    loopback.route("/article", Html(article_html()))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(loopback.url_for("/private/a"), allow_private=LOOP)
    assert info.value.attempts[0].reason == "robots"
    assert not any(r.path == "/private/a" for r in loopback.requests)  # never asked for the page
    assert (await perplexed.afetch(loopback.url_for("/article"), allow_private=LOOP)).title == ARTICLE_TITLE
    assert sum(r.path == "/robots.txt" for r in loopback.requests) == 1  # cached per origin
    page = await perplexed.afetch(loopback.url_for("/private/a"), allow_private=LOOP, respect_robots=False)
    assert page.title == ARTICLE_TITLE


async def test_robots_rules_for_our_user_agent(loopback: LoopbackServer) -> None:
    loopback.route("/robots.txt", Status(200, b"User-agent: perplexed-search\nDisallow: /\n\nUser-agent: *\nAllow: /\n",
                                         content_type="text/plain"))
    loopback.route("/article", Html(article_html()))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(loopback.url_for("/article"), allow_private=LOOP)
    assert info.value.attempts[0].reason == "robots"
    agent = {"name": "http", "user_agent": "MyBot/2.0 (+https://example.org/bot)"}
    page = await perplexed.afetch(loopback.url_for("/article"), agent, allow_private=LOOP)
    assert page.title == ARTICLE_TITLE
    assert loopback.requests[-1].headers["user-agent"] == "MyBot/2.0 (+https://example.org/bot)"


def _redirect(location: str, status: int = 302) -> Status:
    return Status(status, b"", headers={"Location": location})


async def test_redirects_are_followed_hop_by_hop_up_to_five(site: LoopbackServer) -> None:
    for i in range(1, 6):
        site.route(f"/r{i}", _redirect(f"/r{i + 1}" if i < 5 else "/article"))
    page = await perplexed.afetch(site.url_for("/r1"), allow_private=LOOP)
    assert page.final_url == site.url_for("/article") and page.url == site.url_for("/r1")
    site.route("/r0", _redirect("/r1"))  # six redirects
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/r0"), allow_private=LOOP)
    assert info.value.attempts[0].reason == "redirect"


@pytest.mark.parametrize("location", ["http://169.254.169.254/latest/meta-data/", "http://0xa9fea9fe/",
                                      "http://0251.0376.0251.0376/", "http://[::ffff:169.254.169.254]/",
                                      "http://10.0.0.1/", "http://100.64.0.1/", "http://[fd00::1]:8080/admin",
                                      "http://2852039166/", "http://1.2.3.4.5/"])
async def test_a_redirect_into_private_space_is_a_private_address_attempt(site: LoopbackServer, location: str) -> None:
    site.route("/jump", _redirect(location))
    with pytest.raises(UpstreamError) as info:  # the loopback server itself allowed, nothing else
        await perplexed.afetch(site.url_for("/jump"), allow_private=["127.0.0.1/32"], respect_robots=False)
    assert info.value.attempts[0].reason == "private_address"


@pytest.mark.parametrize("location", ["file:///etc/passwd", "gopher://127.0.0.1:70/", "ftp://example.com/x"])
async def test_a_redirect_to_another_scheme_is_refused(site: LoopbackServer, location: str) -> None:
    site.route("/jump", _redirect(location))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/jump"), allow_private=LOOP)
    assert info.value.attempts[0].reason == "redirect"


async def test_a_page_past_the_cap_is_body_too_large(site: LoopbackServer) -> None:
    site.route("/huge", HugeHtml(32 * 1024 * 1024))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/huge"), allow_private=LOOP)
    assert info.value.attempts[0].reason == "body_too_large"
    bomb = gzip.compress(b"<html><body>" + b"a" * (64 * 1024 * 1024) + b"</body></html>", 9)
    site.route("/bomb", Status(200, bomb, headers={"Content-Encoding": "gzip"}, content_type="text/html"))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/bomb"), allow_private=LOOP)
    assert info.value.attempts[0].reason == "body_too_large"
    small = {"name": "http", "max_body_bytes": 1000}
    with pytest.raises(UpstreamError):
        await perplexed.afetch(site.url_for("/article"), small, allow_private=LOOP)


async def test_a_gzipped_page_is_decoded(site: LoopbackServer) -> None:
    site.route("/gz", Status(200, gzip.compress(article_html().encode()), headers={"Content-Encoding": "gzip"},
                             content_type="text/html; charset=utf-8"))
    assert (await perplexed.afetch(site.url_for("/gz"), allow_private=LOOP)).title == ARTICLE_TITLE


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_fetch_many_keeps_order_and_one_failure_loses_nothing(mode: str, site: LoopbackServer) -> None:
    site.route("/missing", Status(404, b"", content_type="text/html"))
    urls = [site.url_for("/article"), site.url_for("/missing"), site.url_for("/article") + "?b=1"]
    seen: list[int] = []
    if mode == "sync":
        results = perplexed.fetch_many(urls, concurrency=2, allow_private=LOOP, on_result=lambda i, _: seen.append(i))
    else:
        results = await perplexed.afetch_many(urls, concurrency=2, allow_private=LOOP,
                                              on_result=lambda i, _: seen.append(i))
    assert isinstance(results[0], Page) and isinstance(results[2], Page)
    assert results[2].url == urls[2]
    assert isinstance(results[1], UpstreamError) and results[1].attempts[0].reason == "not_found"
    assert sorted(seen) == [0, 1, 2]


async def test_fetch_many_refuses_bad_input_before_fetching(site: LoopbackServer) -> None:
    with pytest.raises(InvalidRequest) as info:
        await perplexed.afetch_many([site.url_for("/article"), "http://169.254.169.254/"], allow_private=LOOP)
    assert info.value.param == "urls[1]" and info.value.reason == "private_address"
    with pytest.raises(InvalidRequest) as info:
        await perplexed.afetch_many("http://example.com/")
    assert info.value.param == "urls"
    with pytest.raises(InvalidRequest) as info:
        perplexed.fetch_many([site.url_for("/article")], concurrency=0)
    assert info.value.param == "concurrency"
    assert not any(r.path == "/article" for r in site.requests)


@pytest.mark.parametrize(("kwargs", "param", "hint"), [
    ({"max_char": 10}, "max_char", "max_chars"),
    ({"format": "html"}, "format", "markdown"),
    ({"max_chars": 0}, "max_chars", ">= 1"),
    ({"start_index": -1}, "start_index", ">= 0"),
    ({"min_chars": "a"}, "min_chars", "integer"),
    ({"max_age_s": -1}, "max_age_s", "non-negative"),
    ({"respect_robots": "no"}, "respect_robots", "True or False"),
    ({"fallback_on": ["sometimes"]}, "fallback_on", "insufficient"),
    ({"allow_private": "nope"}, "allow_private", "CIDR"),
])
def test_bad_options_are_invalid_requests_naming_the_option(kwargs: dict[str, Any], param: str, hint: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        perplexed.fetch("https://example.com/", **kwargs)
    assert info.value.param == param and hint in str(info.value)


@pytest.mark.parametrize("url", ["ftp://example.com/x", "javascript:alert(1)", "example.com", "", "http:///nohost", 3])
def test_urls_that_are_not_http_are_refused(url: Any) -> None:
    with pytest.raises(InvalidRequest) as info:
        perplexed.fetch(url)
    assert info.value.param == "url"


async def test_a_file_url_is_answered_from_the_local_index_only(tmp_path: Any) -> None:
    from perplexed.providers.local import build_index

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\n" + "Indexed words about setbacks. " * 30, encoding="utf-8")
    (tmp_path / "secret.txt").write_text("not indexed", encoding="utf-8")
    build_index(folder)
    url = (folder / "notes.md").resolve().as_uri()
    page = await perplexed.afetch(url, max_chars=50)
    assert page.provider == "local" and page.title == "Notes" and page.content.startswith("Indexed words")
    assert page.truncated and page.total_chars > 50
    with pytest.raises(InvalidRequest) as info:
        await perplexed.afetch((tmp_path / "secret.txt").resolve().as_uri())
    assert info.value.param == "url" and "not a document of the local index" in str(info.value)


async def test_all_providers_failing_raises_upstream_error_with_the_attempts(site: LoopbackServer) -> None:
    site.route("/gone", Status(404, b"", content_type="text/html"))

    def broken(url: str, options: Any) -> str:
        raise RuntimeError("boom")

    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/gone"), ["http", broken], allow_private=LOOP)
    assert info.value.reason == "all_providers_failed"
    assert [a.reason for a in info.value.attempts] == ["not_found", "unexpected"]


def test_serve_helper_is_available() -> None:
    with serve() as server:
        assert server.url.startswith("http://127.0.0.1:")


async def test_governance_one_engine_cache_and_budget(site: LoopbackServer) -> None:
    first = await perplexed.afetch(site.url_for("/article"), allow_private=LOOP, cache_ttl_s=60)
    second = await perplexed.afetch(site.url_for("/article"), allow_private=LOOP, cache_ttl_s=60, max_chars=50,
                                    start_index=10)
    assert not first.attempts[0].cached and second.attempts[0].cached
    assert second.content == first.content[10:60] and second.total_chars == first.total_chars
    assert sum(r.path == "/article" for r in site.requests) == 1  # the second page came from the cache
    paid = {"name": "http", "cost": 0.01}
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/article"), paid, allow_private=LOOP, budget_usd=0.001)
    assert info.value.attempts[0].outcome is Outcome.SKIPPED and info.value.attempts[0].reason == "over_budget"


@pytest.mark.timing
async def test_a_slow_drip_stops_at_the_deadline(site: LoopbackServer) -> None:
    import time

    from pages import DripHtml
    from testkit.loopback import SLACK

    site.route("/drip", DripHtml())
    started = time.perf_counter()
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(site.url_for("/drip"), allow_private=LOOP, deadline_ms=500)
    elapsed = time.perf_counter() - started
    assert info.value.attempts[0].outcome is Outcome.TIMEOUT
    assert elapsed < 0.5 + SLACK


async def test_reset_forgets_the_cached_robots_rules(loopback: LoopbackServer) -> None:
    loopback.route("/robots.txt", Status(200, b"User-agent: *\nDisallow: /\n", content_type="text/plain"))
    loopback.route("/a", Html(article_html()))
    with pytest.raises(UpstreamError):
        await perplexed.afetch(loopback.url_for("/a"), allow_private=LOOP)
    loopback.route("/robots.txt", Status(404, b""))
    with pytest.raises(UpstreamError):  # still the cached rules
        await perplexed.afetch(loopback.url_for("/a"), allow_private=LOOP)
    perplexed.reset()
    assert (await perplexed.afetch(loopback.url_for("/a"), allow_private=LOOP)).title == ARTICLE_TITLE


async def test_a_server_error_everywhere_is_upstream_not_robots(loopback: LoopbackServer) -> None:
    loopback.route("*", Status(503, b"<html>down</html>", content_type="text/html"))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(loopback.url_for("/a"), allow_private=LOOP)
    assert info.value.attempts[0].reason == "upstream"


async def test_a_short_article_with_a_noscript_note_is_not_an_interstitial(site: LoopbackServer) -> None:
    html = article_html(paragraphs=[f"Notice {i}: the new setback rules for corner lots are in force from March; "
                                    "the details are available at the planning office counter." for i in range(3)])
    html = html.replace("<body>", "<body><noscript>Please enable JavaScript for the full experience.</noscript>")
    site.route("/short-js", Html(html))
    page = await perplexed.afetch(site.url_for("/short-js"), allow_private=LOOP, min_chars=50)
    assert page.attempts[0].outcome is Outcome.OK and "corner lots" in page.content
