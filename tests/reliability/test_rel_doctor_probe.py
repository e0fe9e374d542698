"""`perplexed doctor`'s SearXNG probe crosses the same trust boundary as a search (issue 12): it follows no
redirect (the origin is reported, nothing is sent there) and reads the body within a cap on decoded bytes, so a
hostile "SearXNG" can neither pull the probe elsewhere nor inflate a compression bomb in it."""

from __future__ import annotations

import gzip
import zlib

import pytest
from perplexed import doctor
from testkit.loopback import Json, Status, searxng_json, serve


def _searxng_check(monkeypatch: pytest.MonkeyPatch, url: str) -> doctor.Check:
    monkeypatch.setenv("SEARXNG_URL", url)
    diagnosis = doctor.diagnose("searxng")
    return next(c for c in diagnosis.checks if c.name == "searxng")


def test_a_redirect_is_reported_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve({"/search": Json(searxng_json(2))}) as elsewhere, serve() as server:
        server.route("/search", Status(302, "", {"Location": f"{elsewhere.url}/search?q=x"}))
        check = _searxng_check(monkeypatch, server.url)
        assert elsewhere.requests == []  # never reached
    assert check.status == "error"
    assert f"redirects to {elsewhere.url}" in check.detail and "?q=" not in check.detail


def test_a_gzip_bomb_is_refused_within_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    bomb = compressor.compress(b"\0" * (64 * 1024 * 1024)) + compressor.flush()  # 64 MiB of zeros, ~64 KB
    with serve({"/search": Status(200, bomb, {"Content-Encoding": "gzip"}, "application/json")}) as server:
        check = _searxng_check(monkeypatch, server.url)
    assert check.status == "error" and "unreadable body" in check.detail


def test_a_compressed_answer_still_probes_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    body = gzip.compress(json.dumps(searxng_json(3)).encode())
    with serve({"/search": Status(200, body, {"Content-Encoding": "gzip"}, "application/json")}) as server:
        check = _searxng_check(monkeypatch, server.url)
    assert check.status == "ok" and "3 hits" in check.detail
