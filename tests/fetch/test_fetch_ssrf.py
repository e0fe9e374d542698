"""The trust boundary end to end: every refused spelling is refused before any provider is called; names are
checked by what they resolve to; the http provider connects only to the address it checked (a DNS answer that
changes between the check and the connection does not get through); allow_private reaches the entry points."""

from __future__ import annotations

import ipaddress
from typing import Any

import httpcore
import perplexed
import pytest
from pages import ARTICLE_TITLE, article_html
from perplexed import InvalidRequest, Outcome, UpstreamError
from perplexed.net._fetch_net import GuardedBackend  # private: the guarded transport is tested below fetch
from perplexed.net._ssrf import (  # private: the allow_private parser is tested table-style
    NOTHING,
    parse_allow_private,
)
from test_ssrf import SPELLINGS
from testkit.loopback import Html, LoopbackServer, Status

METADATA_FORMS = ["169.254.169.254", "0xa9fea9fe", "2852039166", "0251.0376.0251.0376", "169.254.43518",
                  "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "[64:ff9b::a9fe:a9fe]"]
OTHER_FORMS = ["10.0.0.1", "100.64.0.1", "192.168.0.1", "172.16.5.4", "224.0.0.1", "0.0.0.0", "[fd00::1]",
               "[fe80::1]", "[::]", "240.0.0.1", "1.2.3.4.5", "0x1g", "999.1.1.1", "256.256.256.256"]


class Spy:
    """A fetch provider (a function) that records whether it was called."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, url: str, options: Any) -> str:
        self.calls.append(url)
        return "x" * 500


@pytest.mark.parametrize("host", [h for h, _ in SPELLINGS] + METADATA_FORMS + OTHER_FORMS)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_every_refused_spelling_is_refused_before_any_provider(host: str, mode: str) -> None:
    spy = Spy()
    url = f"http://{host}/latest/meta-data/"
    with pytest.raises(InvalidRequest) as info:
        if mode == "sync":
            perplexed.fetch(url, ["http", spy])
        else:
            await perplexed.afetch(url, ["http", spy])
    assert info.value.reason == "private_address" and info.value.param == "url"
    assert spy.calls == []


def resolver_of(table: dict[str, list[str]]) -> Any:
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        answer = table.get(host)
        if answer is None:
            raise OSError(f"no such host {host}")
        return answer

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


async def test_a_name_that_resolves_only_to_private_addresses_is_refused_before_any_provider() -> None:
    spy = Spy()
    resolve = resolver_of({"internal.example": ["10.1.2.3", "fd00::5"]})
    with pytest.raises(InvalidRequest) as info:
        await perplexed.afetch("http://internal.example/admin", [{"name": "http", "resolver": resolve}, spy])
    assert info.value.reason == "private_address" and spy.calls == []


async def test_localhost_is_refused() -> None:
    with pytest.raises(InvalidRequest) as info:
        await perplexed.afetch("http://localhost:9/")
    assert info.value.reason == "private_address"


async def test_a_name_that_does_not_resolve_goes_to_the_chain_and_fails_with_connection() -> None:
    resolve = resolver_of({})
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch("http://nowhere.invalid/", {"name": "http", "resolver": resolve}, provider_timeout_ms=5000)
    assert info.value.attempts[0].reason == "connection"


async def test_allow_private_opts_in_by_network(loopback: LoopbackServer) -> None:
    loopback.route("/robots.txt", Status(404, b""))
    loopback.route("/a", Html(article_html()))
    page = await perplexed.afetch(loopback.url_for("/a"), allow_private=True)
    assert page.title == ARTICLE_TITLE
    assert (await perplexed.afetch(loopback.url_for("/a"), allow_private=["127.0.0.0/8"])).title == ARTICLE_TITLE
    with pytest.raises(InvalidRequest):
        await perplexed.afetch(loopback.url_for("/a"), allow_private=["10.0.0.0/8"])


async def test_a_name_resolving_to_the_loopback_server_connects_only_with_allow_private(loopback: LoopbackServer) -> None:
    loopback.route("/robots.txt", Status(404, b""))
    loopback.route("/a", Html(article_html()))
    resolve = resolver_of({"intranet.example": ["127.0.0.1"]})
    url = f"http://intranet.example:{loopback.port}/a"
    provider = {"name": "http", "resolver": resolve}
    assert (await perplexed.afetch(url, provider, allow_private=["127.0.0.0/8"])).title == ARTICLE_TITLE
    with pytest.raises(InvalidRequest):
        await perplexed.afetch(url, provider)


async def test_a_dns_answer_that_changes_between_check_and_connect_does_not_get_through(loopback: LoopbackServer) -> None:
    """Rebinding: the first answer (the check) is public, the next (the connection) is loopback. The connection
    uses the address its own resolution checked, so the loopback server is never reached."""
    loopback.route("/a", Html(article_html()))
    answers = iter([["93.184.216.34"], ["127.0.0.1"], ["127.0.0.1"], ["127.0.0.1"]])
    seen: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        seen.append(host)
        return next(answers)

    url = f"http://rebind.example:{loopback.port}/a"
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(url, {"name": "http", "resolver": rebinding}, respect_robots=False)
    assert info.value.attempts[0].outcome is Outcome.ERROR
    assert info.value.attempts[0].reason == "private_address"
    assert not any(r.path == "/a" for r in loopback.requests)


class FakeInner:
    def __init__(self) -> None:
        self.connected: list[str] = []

    async def connect_tcp(self, host: str, port: int, *args: Any) -> Any:
        self.connected.append(host)
        if host.startswith("203.0.113.") or host == "2001:db8::1":
            raise httpcore.ConnectError("unreachable")
        return f"stream to {host}"


async def test_the_guarded_backend_connects_only_to_allowed_addresses_of_a_mixed_name() -> None:
    backend = GuardedBackend(NOTHING, resolver_of({"mixed.example": ["127.0.0.1", "93.184.216.34", "10.0.0.1"]}))
    inner = FakeInner()
    backend._inner = inner  # type: ignore[assignment]
    stream = await backend.connect_tcp("mixed.example", 443)
    assert stream == "stream to 93.184.216.34" and inner.connected == ["93.184.216.34"]


async def test_the_guarded_backend_refuses_literals_and_private_only_names() -> None:
    inner = FakeInner()
    backend = GuardedBackend(NOTHING, resolver_of({"private.example": ["192.168.1.1"]}))
    backend._inner = inner  # type: ignore[assignment]
    for host in ("127.0.0.1", "private.example", "0x7f.1", "1.2.3.4.5"):
        with pytest.raises(InvalidRequest) as info:
            await backend.connect_tcp(host, 80)
        assert info.value.reason == "private_address"
    assert inner.connected == []
    allowed = GuardedBackend(parse_allow_private(["192.168.0.0/16"]), resolver_of({"private.example": ["192.168.1.1"]}))
    allowed._inner = inner  # type: ignore[assignment]
    assert await allowed.connect_tcp("private.example", 80) == "stream to 192.168.1.1"
    assert ipaddress.ip_address(inner.connected[-1]) == ipaddress.ip_address("192.168.1.1")
