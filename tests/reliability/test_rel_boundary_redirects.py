"""Issue 12 section 2: no credential ever reaches another origin on a redirect.

A provider that sends a credential follows no redirect at all: a 301/302/307/308 is an ``error`` attempt with
``reason == "redirect"`` whose message names the target origin (``scheme://host:port``), never its path or
query. SearXNG (no credential) follows redirects within its own origin only, at most 5. Two loopback servers:
the provider's (which redirects) and another origin that counts every credential it receives. On the code
before the fix, httpx followed every redirect and passed ``x-api-key`` / ``X-Subscription-Token`` along (it
strips only ``Authorization``), and 301/302 turned the POST into a GET answered ``ok`` by the other origin.
"""

from __future__ import annotations

from collections.abc import Iterator

import perplexed
import pytest
from testkit.loopback import Json, LoopbackServer, Request, Status, searxng_json, serve

KEYS = {
    "exa": "exa-Qm7vX2pL9sK4wR8tN3yB6cF1",
    "brave": "BSAz8Kq3Wm5Xr7Tn2Vp9Ly4Jc6Hd",
    "tavily": "tvly-Hx4Np8Rz2Kc6Wv9Ts3Lm7Qb5",
}
#: where each provider puts its key
CREDENTIAL_HEADERS = ("x-api-key", "x-subscription-token", "authorization", "cookie")


@pytest.fixture
def other() -> Iterator[LoopbackServer]:
    """The other origin: answers like every provider would (so a followed redirect would look like success)."""
    with serve({"*": Json({"results": [{"url": "https://evil.example/", "title": "served by the other origin"}]})}) as s:
        yield s


def _credentials_seen(server: LoopbackServer) -> list[str]:
    seen = []
    for request in server.requests:
        for name in CREDENTIAL_HEADERS:
            if name in request.headers:
                seen.append(f"{name}: {request.headers[name]}")
        for key in KEYS.values():
            if key in request.path or key.encode() in request.body:
                seen.append(f"key in {request.path}")
    return seen


def _redirect_to(target: str, status: int) -> Status:
    return Status(status, b"", {"Location": f"{target}/steal/path?api_key=hunter2&q=secret-query"})


@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize("name", sorted(KEYS))
@pytest.mark.parametrize("where", ["other_port", "localhost"])
def test_credentialed_provider_follows_no_redirect(
    name: str, status: int, where: str, other: LoopbackServer
) -> None:
    with serve() as home:
        target = other.url if where == "other_port" else f"http://localhost:{home.port}"
        home.route("*", _redirect_to(target, status))
        spec = {"name": name, "base_url": home.url, "api_key": KEYS[name]}
        with pytest.raises(perplexed.UpstreamError) as info:
            perplexed.search("who holds my key", provider=[spec], provider_timeout_ms=5000)
        attempt = info.value.attempts[0]
        assert attempt.outcome.value == "error" and attempt.reason == "redirect", attempt
        expected_origin = f"http://127.0.0.1:{other.port}" if where == "other_port" else f"http://localhost:{home.port}"
        assert expected_origin in (attempt.error or "")
        for leak in ("/steal", "hunter2", "secret-query", KEYS[name]):
            assert leak not in (attempt.error or "") and leak not in str(info.value)
        assert len(home.requests) == 1, "the redirect was followed back to the same server under another name"
        assert other.requests == [], _credentials_seen(other)


def test_other_origin_gets_nothing_in_a_chain_and_the_next_provider_answers(other: LoopbackServer) -> None:
    with serve() as home, serve({"*": Json(searxng_json(2))}) as searx:
        home.route("*", _redirect_to(other.url, 302))
        chain = [
            {"name": "exa", "base_url": home.url, "api_key": KEYS["exa"]},
            {"name": "searxng", "base_url": searx.url},
        ]
        result = perplexed.search("fallback after a redirect", provider=chain, provider_timeout_ms=5000)
        assert [a.reason for a in result.attempts] == ["redirect", None]
        assert result.provider == "searxng" and len(result.hits) == 2
        assert other.requests == []


def test_searxng_follows_a_same_origin_redirect() -> None:
    with serve() as searx:
        searx.route("/search", Status(301, b"", {"Location": "/moved/search?format=json&q=x"}))
        searx.route("/moved/search", Json(searxng_json(3)))
        result = perplexed.search("moved", provider=[{"name": "searxng", "base_url": searx.url}])
        assert len(result.hits) == 3
        assert [r.path for r in searx.requests] == ["/search", "/moved/search"]


def test_searxng_does_not_follow_another_origin(other: LoopbackServer) -> None:
    with serve() as searx:
        searx.route("*", _redirect_to(other.url, 307))
        with pytest.raises(perplexed.UpstreamError) as info:
            perplexed.search("cross", provider=[{"name": "searxng", "base_url": searx.url}])
        attempt = info.value.attempts[0]
        assert attempt.reason == "redirect" and f"http://127.0.0.1:{other.port}" in (attempt.error or "")
        assert "/steal" not in (attempt.error or "")
        assert other.requests == []


def test_searxng_redirect_loop_is_bounded() -> None:
    with serve() as searx:
        searx.route("*", Status(302, b"", {"Location": "/search?again=1"}))
        with pytest.raises(perplexed.UpstreamError) as info:
            perplexed.search("loop", provider=[{"name": "searxng", "base_url": searx.url}])
        attempt = info.value.attempts[0]
        assert attempt.reason == "redirect" and "more than 5 redirects" in (attempt.error or "")
        assert len(searx.requests) == 6


def test_a_cookie_one_server_sets_is_never_sent_to_another() -> None:
    def set_cookie(request: Request) -> Status:
        return Status(
            200, b'{"results": []}', {"Set-Cookie": "session=cookie-secret-123; Path=/"}, "application/json"
        )

    with serve({"*": set_cookie}) as first, serve({"*": Json(searxng_json(1))}) as second:
        for server in (first, second, first):
            perplexed.search("cookies", provider=[{"name": "searxng", "base_url": server.url}])
        assert all("cookie" not in r.headers for r in first.requests + second.requests)
