"""The real-SearXNG harness itself, exercised with plain httpx (no perplexed code).

These prove that the server started by ``testkit.searxng`` behaves as providers.md §1.4 / §11.6
describe, so provider tests built on it test perplexed and not the harness.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from testkit.searxng import CORPUS, ENGINE_TIMEOUT, JSON_ENGINE, SQLITE_ENGINE, SearxngServer, Upstream

pytestmark = pytest.mark.integration

NO_MATCH = "quokka"  # in no corpus document, so only the upstream can answer
assert not any(NO_MATCH in (d.title + d.content).lower() for d in CORPUS)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    # trust_env=False: never route loopback traffic through a proxy from the environment
    with httpx.Client(trust_env=False, timeout=ENGINE_TIMEOUT * 5) as client:
        yield client


def search(http: httpx.Client, server: SearxngServer, q: str | None, **params: str) -> httpx.Response:
    query = {"q": q, "format": "json", **params} if q is not None else {"format": "json", **params}
    return http.get(server.url("/search"), params=query)


def urls(body: dict) -> list[str]:
    return [hit["url"] for hit in body["results"]]


def corpus_urls(*words: str) -> set[str]:
    return {d.url for d in CORPUS if all(w in (d.title + " " + d.content).lower() for w in words)}


def test_healthz_and_only_our_engines(searxng: SearxngServer, http: httpx.Client) -> None:
    assert searxng.base_url.startswith("http://127.0.0.1:")
    assert searxng.alive()
    health = http.get(searxng.url("/healthz"))
    assert health.status_code == 200

    config = http.get(searxng.url("/config")).json()
    enabled = sorted(e["name"] for e in config["engines"] if e["enabled"])
    assert enabled == sorted([SQLITE_ENGINE, JSON_ENGINE])
    plugin_names = {p["name"] for p in config["plugins"]}
    assert "tracker_url_remover" not in plugin_names  # §11.3 fix 2: no ClearURLs download


def test_ok_query_returns_corpus_and_upstream_hits(searxng: SearxngServer, http: httpx.Client) -> None:
    assert searxng.upstream.mode == "ok"  # reset by the plugin before every test
    response = search(http, searxng, "python httpx")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["query"] == "python httpx"
    assert body["unresponsive_engines"] == []
    by_url = {hit["url"]: hit for hit in body["results"]}
    httpx_doc = next(d for d in CORPUS if d.url == "https://docs.example.org/httpx")
    corpus_hit = by_url[httpx_doc.url]
    assert corpus_hit["title"] == httpx_doc.title
    assert corpus_hit["content"] == httpx_doc.content
    assert corpus_hit["engine"] == SQLITE_ENGINE
    assert "https://upstream.example/python-httpx" in by_url
    assert by_url["https://upstream.example/python-httpx"]["engine"] == JSON_ENGINE
    assert searxng.upstream.queries == ["python httpx"]


def test_sqlite_engine_alone_is_deterministic(searxng: SearxngServer, http: httpx.Client) -> None:
    first = search(http, searxng, "zoning", engines=SQLITE_ENGINE).json()
    second = search(http, searxng, "zoning", engines=SQLITE_ENGINE).json()

    assert set(urls(first)) == corpus_urls("zoning")
    assert len(urls(first)) == 3
    assert urls(first) == urls(second)
    assert {hit["engine"] for hit in first["results"]} == {SQLITE_ENGINE}
    assert searxng.upstream.requests == 0  # the json engine was not asked


def test_empty_upstream_and_no_corpus_match_is_a_clean_empty(
    searxng: SearxngServer, http: httpx.Client
) -> None:
    searxng.upstream.set_mode("empty")
    body = search(http, searxng, NO_MATCH).json()

    assert body["results"] == []
    assert body["unresponsive_engines"] == []
    assert searxng.upstream.requests == 1


@pytest.mark.parametrize(
    ("mode", "error_text"),
    [("429", "too many requests"), ("500", "HTTP error"), ("hang", "timeout")],
)
def test_upstream_failure_is_200_with_unresponsive_engine(
    searxng: SearxngServer, http: httpx.Client, mode: str, error_text: str
) -> None:
    searxng.upstream.set_mode(mode)
    started = time.monotonic()
    response = search(http, searxng, NO_MATCH)
    elapsed = time.monotonic() - started

    assert response.status_code == 200
    body = response.json()
    assert body["results"] == []
    assert [name for name, _ in body["unresponsive_engines"]] == [JSON_ENGINE]
    # English texts (default locale); callers should match on the engine name only (§1.4)
    assert body["unresponsive_engines"][0][1] == error_text
    if mode == "hang":
        assert ENGINE_TIMEOUT * 0.8 <= elapsed < ENGINE_TIMEOUT * 4
    else:
        assert elapsed < ENGINE_TIMEOUT


def test_partial_failure_keeps_corpus_hits(searxng: SearxngServer, http: httpx.Client) -> None:
    searxng.upstream.set_mode("500")
    body = search(http, searxng, "backoff").json()

    assert urls(body) == ["https://docs.example.org/backoff"]
    assert body["unresponsive_engines"] == [[JSON_ENGINE, "HTTP error"]]


def test_mode_set_in_a_previous_test_does_not_leak(
    searxng: SearxngServer, searxng_upstream: Upstream
) -> None:
    # runs right after test_partial_failure_keeps_corpus_hits, which left the upstream in "500"
    # with one request logged; the plugin resets both before this test
    assert searxng_upstream is searxng.upstream
    assert searxng_upstream.mode == "ok"
    assert searxng_upstream.requests == 0


def test_slow_upstream_inside_engine_timeout_still_answers(
    searxng: SearxngServer, http: httpx.Client
) -> None:
    searxng.upstream.set_mode("slow", delay=0.6)
    started = time.monotonic()
    body = search(http, searxng, NO_MATCH).json()

    assert time.monotonic() - started >= 0.6
    assert urls(body) == [f"https://upstream.example/{NO_MATCH}", f"https://upstream.example/{NO_MATCH}/more"]
    assert body["unresponsive_engines"] == []


def test_engines_are_never_suspended(searxng: SearxngServer, http: httpx.Client) -> None:
    """§1.4: with zeroed suspension times, 429 -> ok -> 500 -> ok works in sequence."""
    for mode, expect_hits in [("429", False), ("ok", True), ("500", False), ("ok", True)]:
        searxng.upstream.set_mode(mode)
        body = search(http, searxng, NO_MATCH).json()
        assert bool(body["results"]) is expect_hits, (mode, body)
        for _, text in body["unresponsive_engines"]:
            assert not text.startswith("Suspended"), (mode, body)
    assert searxng.upstream.requests == 4


def test_upstream_mode_fixture_resets(searxng_upstream_mode: Upstream) -> None:
    assert searxng_upstream_mode.mode == "ok"
    with pytest.raises(ValueError, match="unknown upstream mode"):
        searxng_upstream_mode.set_mode("teapot")
    searxng_upstream_mode.set_mode("hang")  # the fixture resets it afterwards


def test_no_query_is_400(searxng: SearxngServer, http: httpx.Client) -> None:
    response = search(http, searxng, None)

    assert response.status_code == 400
    assert response.json() == {"error": "No query"}


def test_bad_parameter_is_400(searxng: SearxngServer, http: httpx.Client) -> None:
    response = search(http, searxng, "python", time_range="decade")

    assert response.status_code == 400
    assert response.json() == {"error": "Invalid value decade for parameter time_range"}


def test_json_disabled_is_403(searxng_no_json: SearxngServer, http: httpx.Client) -> None:
    assert not searxng_no_json.json_enabled
    response = search(http, searxng_no_json, "python httpx")

    assert response.status_code == 403
    assert "text/html" in response.headers["content-type"]  # HTML even though JSON was asked for
    assert "403 Forbidden" in response.text
    # every format=json request is refused, even one without q (§11.5)
    assert search(http, searxng_no_json, None).status_code == 403
    # the same server still serves HTML, so the 403 is the format switch and nothing else
    assert http.get(searxng_no_json.url("/search"), params={"q": "python"}).status_code == 200


def test_post_form_is_accepted(searxng: SearxngServer, http: httpx.Client) -> None:
    response = http.post(
        searxng.url("/search"), data={"q": "rust", "format": "json", "engines": SQLITE_ENGINE}
    )

    assert response.status_code == 200
    assert urls(response.json()) == ["https://docs.example.org/rust-ownership"]
