"""Hostile pages never get the reasons reserved for bugs and set-up (issue 40 #12): a bad charset is read like
an unknown one, a malformed or forbidden redirect target is ``redirect`` (never ``unexpected`` or ``config``)."""

from __future__ import annotations

import perplexed
import pytest
from pages import ARTICLE_TITLE, article_html
from perplexed import Page, UpstreamError
from testkit.loopback import LoopbackServer, Status

LOOP = ["127.0.0.0/8"]


@pytest.mark.parametrize("charset", ["idna", "punycode", "base64", "rot13", "zlib", "undefined", "utf-8-sig\x01"])
async def test_a_page_with_a_hostile_charset_is_read(loopback: LoopbackServer, charset: str) -> None:
    body = article_html().encode("utf-8")
    loopback.route("/p", Status(200, body, content_type=f"text/html; charset={charset}"))
    loopback.route("/robots.txt", Status(404, b""))
    page = await perplexed.afetch(loopback.url_for("/p"), allow_private=LOOP)
    assert isinstance(page, Page) and page.title == ARTICLE_TITLE


async def test_a_hostile_meta_charset_is_read_too(loopback: LoopbackServer) -> None:
    body = article_html().replace("<head>", '<head><meta charset="idna">').encode("utf-8")
    loopback.route("/p", Status(200, body, content_type="text/html"))
    loopback.route("/robots.txt", Status(404, b""))
    page = await perplexed.afetch(loopback.url_for("/p"), allow_private=LOOP)
    assert page.title == ARTICLE_TITLE


@pytest.mark.parametrize("location", [
    "http://[::1", "http://[::1]:99999/", "data:text/html,<p>hi</p>", "javascript:alert(1)", "http:127.0.0.1:80/",
    "ftp://example.com/", "http://", "http:///path", "//[zz]/", "http://exa mple.com/",
])
async def test_a_malformed_or_forbidden_redirect_is_redirect(loopback: LoopbackServer, location: str) -> None:
    loopback.route("/jump", Status(302, b"", headers={"Location": location}))
    loopback.route("/robots.txt", Status(404, b""))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(loopback.url_for("/jump"), allow_private=LOOP)
    reasons = [a.reason for a in info.value.attempts]
    assert reasons in (["redirect"], ["private_address"]), (location, info.value.attempts)


@pytest.mark.parametrize("location", ["http://[::1", "data:text/html,hi", "javascript:alert(1)", "http:127.0.0.1:80/"])
async def test_a_hostile_robots_redirect_does_not_fail_the_fetch(loopback: LoopbackServer, location: str) -> None:
    loopback.route("/robots.txt", Status(302, b"", headers={"Location": location}))
    loopback.route("/p", Status(200, article_html().encode(), content_type="text/html"))
    page = await perplexed.afetch(loopback.url_for("/p"), allow_private=LOOP)
    assert page.title == ARTICLE_TITLE


@pytest.mark.parametrize("location", ["http://127.0.0.1\\@example.com/", "http://example.com\\@127.0.0.1/"])
async def test_a_backslash_redirect_is_refused_not_read_two_ways(loopback: LoopbackServer, location: str) -> None:
    loopback.route("/jump", Status(302, b"", headers={"Location": location}))
    loopback.route("/robots.txt", Status(404, b""))
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(loopback.url_for("/jump"), allow_private=["127.0.0.1/32"])
    assert [a.reason for a in info.value.attempts] in (["redirect"], ["private_address"])
    assert not any("example.com" in r.headers.get("host", "") for r in loopback.requests)
