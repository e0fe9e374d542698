"""One URL, read one way (issue 40 #4), from the attacker's side: a URL that WHATWG parsers (browsers, Node, the
extraction services) and RFC 3986 parsers (Python's, httpx's) read with different hosts is refused before any
provider is called, and every provider receives exactly the URL that was checked."""

from __future__ import annotations

import json
from typing import Any

import perplexed
import pytest
from perplexed import InvalidRequest
from perplexed.providers import FetchAnswer
from testkit.loopback import Json, LoopbackServer

PRIVATE_PROBES = [
    "http://127.0.0.1\\@example.com/",
    "http://169.254.169.254\\@example.com/latest/meta-data/",
    "http://10.0.0.5:8080\\@example.com/",
    "http://[::1]\\@example.com/",
    "https://0x7f.1\\@example.com/",
]
AMBIGUOUS = [
    "http://localhost\\@example.com/",
    "http://example.com\\@example.org/",
    "http://example.com\\evil.test/",
    "http:/example.com/",
    "http:///example.com/",
    "http:\\\\example.com/",
    "http://exa%20mple.com/",
]


class Recorder:
    """A fetch provider that records the URLs it is asked for (an API fetch service stand-in)."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def __call__(self, url: str, options: Any) -> FetchAnswer:
        self.urls.append(url)
        return FetchAnswer(text="a page about setbacks " * 20)


@pytest.mark.parametrize("url", PRIVATE_PROBES)
async def test_a_backslash_before_the_at_sign_is_read_as_the_private_host(url: str) -> None:
    vendor = Recorder()
    with pytest.raises(InvalidRequest) as info:
        await perplexed.afetch(url, vendor)
    assert info.value.reason == "private_address" and info.value.param == "url"
    assert vendor.urls == []


@pytest.mark.parametrize("url", AMBIGUOUS)
async def test_an_ambiguous_url_is_refused_naming_url(url: str) -> None:
    vendor = Recorder()
    with pytest.raises(InvalidRequest) as info:
        await perplexed.afetch(url, vendor)
    assert info.value.param == "url"
    assert vendor.urls == []


@pytest.mark.parametrize("url", PRIVATE_PROBES + AMBIGUOUS)
def test_fetch_many_and_search_content_refuse_them_too(url: str) -> None:
    vendor = Recorder()
    with pytest.raises(InvalidRequest) as info:
        perplexed.fetch_many(["https://example.com/", url], vendor)
    assert info.value.param == "urls[1]"
    assert vendor.urls == []


@pytest.mark.parametrize(("given", "sent"), [
    ("http://ex%61mple.com/a\\b?q=\\x", "http://example.com/a/b?q=\\x"),
    ("http://0x5db8d822/", "http://93.184.216.34/"),
    ("https://EXAMPLE.com/Path", "https://EXAMPLE.com/Path"),
])
async def test_every_provider_receives_the_url_that_was_checked(given: str, sent: str) -> None:
    vendor = Recorder()
    page = await perplexed.afetch(given, vendor, min_chars=0)
    assert vendor.urls == [sent] and page.url == sent


async def test_an_api_fetch_service_is_sent_the_checked_url(loopback: LoopbackServer) -> None:
    loopback.route("/", Json({"code": 200, "data": {"title": "T", "content": "setbacks " * 40, "url": "x"}}))
    provider = {"name": "jina", "base_url": loopback.url}
    page = await perplexed.afetch("http://ex%61mple.com/docs\\a", provider, min_chars=0)
    assert page.provider == "jina"
    assert [json.loads(r.body)["url"] for r in loopback.requests if r.method == "POST"] == ["http://example.com/docs/a"]
