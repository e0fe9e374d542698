"""No secret shown (issue 22 point 3): store and SearXNG URLs with passwords are masked in doctor's text and
JSON, in doctor --record cassettes, in logs (httpx's INFO line included), in errors and reprs; the SQLite store
scrubs echoed keys from cached text as the Redis store does; doctor checks the configured store itself with a
write and a read (a real valkey-server, and a closed port), and a failing store makes it exit non-zero."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import doctor
from perplexed._errors import redact, register_secret  # private: the redaction helper, table-style on URLs
from perplexed.cli import main  # private: the perplexed command run in-process, not as a subprocess
from perplexed.providers import FunctionProvider, SearXNG
from perplexed.store import RedisStore, SQLiteStore
from testkit.loopback import Json, searxng_json, serve
from testkit.valkey_servers import closed_port

PASSWORD = "Hunter2-Valkey-Pa55"


def run_doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["doctor", *args])
    out, err = capsys.readouterr()
    return code, out + err


def store_check(diagnosis: doctor.Diagnosis) -> doctor.Check:
    return {c.name: c for c in diagnosis.checks}["store"]


@pytest.mark.parametrize("password", [PASSWORD, "Hunter2%40Valkey%2FPa55"])  # also percent-encoded
def test_doctor_masks_the_store_password_and_fails_a_dead_store(
    password: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PERPLEXED_STORE", f"redis://user:{password}@127.0.0.1:{closed_port()}/0?timeout_ms=200")
    check = store_check(doctor.diagnose())
    assert check.status == "error" and check.needed  # the degraded in-process fallback is not "ok"
    code, text = run_doctor(capsys)
    code_json, text_json = run_doctor(capsys, "--json")
    assert code == code_json == 1
    for shown in (text, text_json, check.detail):
        assert password not in shown and "Hunter2" not in shown and "Pa55" not in shown
    assert "redis://user:***@127.0.0.1" in text
    assert json.loads(text_json)["ok"] is False


def test_doctor_checks_a_live_valkey_with_a_write_and_a_read(
    valkey: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PERPLEXED_STORE", valkey.url)
    check = store_check(doctor.diagnose())
    assert check.status == "ok" and "write and a read" in check.detail


def test_doctor_fails_a_valkey_that_refuses_writes(valkey_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = valkey_factory()
    _config_set(server, "maxmemory", "1")  # every write is refused (OOM), reads still answer
    monkeypatch.setenv("PERPLEXED_STORE", server.url)
    check = store_check(doctor.diagnose())
    assert check.status == "error" and "OOM" in check.detail


def _config_set(server: Any, name: str, value: str) -> None:
    import redis

    client = redis.Redis.from_url(server.url)
    try:
        client.config_set(name, value)
    finally:
        client.close()


def test_doctor_fails_an_unusable_sqlite_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "state.db"
    target.mkdir()
    perplexed.configure(store=SQLiteStore(target))
    check = store_check(doctor.diagnose())
    assert check.status == "error"
    code, _ = run_doctor(capsys)
    assert code == 1


def test_searxng_credentials_never_shown(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                         caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    secret = "Searx-Basic-Pa55word"
    with serve({"/search": Json(searxng_json(2))}) as server:
        url = server.url.replace("http://", f"http://admin:{secret}@")
        monkeypatch.setenv("SEARXNG_URL", url)
        caplog.set_level(logging.INFO)
        code, text = run_doctor(capsys, "-p", "searxng")
        _, text_json = run_doctor(capsys, "-p", "searxng", "--json")
        live_code, live = run_doctor(capsys, "--live", "--yes", "searxng", "--record", str(tmp_path))
        result = perplexed.search("q", SearXNG(base_url=url))
        assert server.requests, "nothing reached the server"
    assert code == 0 and live_code == 0 and result.hits
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "HTTP Request" in logged  # httpx's INFO line was logged, with the URL masked
    files = [p.read_text(encoding="utf-8") for p in tmp_path.rglob("*") if p.is_file()]
    assert files
    for shown in (text, text_json, live, logged, *files, repr(SearXNG(base_url=url))):
        assert secret not in shown
    assert "admin:***@" in text


def test_a_password_in_any_url_is_masked_by_redact() -> None:
    assert redact("redis://u:abc%40def@h:1/0") == "redis://u:***@h:1/0"
    assert redact("failed: rediss://:p@ss@w0rd@host/0 down") == "failed: rediss://:***@host/0 down"
    assert redact("redis://host/0?password=xyz&db=1") == "redis://host/0?password=***&db=1"
    assert redact("https://example.org/a@b") == "https://example.org/a@b"  # not user info
    assert "Pa55" not in repr(RedisStore(f"redis://u:{PASSWORD}@127.0.0.1:{closed_port()}/0"))


def test_sqlite_store_scrubs_echoed_keys_from_cached_text(tmp_path: Path) -> None:
    key = "tvly-EchoedKey-0123456789abcdef"
    register_secret(key)
    db = tmp_path / "state.db"
    perplexed.configure(store=SQLiteStore(db))

    def echo(query: str, options: Any) -> list[dict[str, Any]]:  # an upstream that echoes the key back
        return [{"url": "https://a.example/doc", "snippet": f"your key {key} is valid", "raw": {"k": key}}]

    provider = FunctionProvider(echo, name="echo")
    perplexed.search("q", provider, cache_ttl_s=600)
    assert perplexed.search("q", provider, cache_ttl_s=600).attempts[0].cached
    perplexed.reset()  # closes the store: everything is on disk
    raw = db.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("state.db-*"))
    with sqlite3.connect(db) as conn:
        values = b"".join(bytes(v) for (v,) in conn.execute("SELECT value FROM cache"))
    assert values and b"REDACTED" in values
    assert key.encode() not in raw and key.encode() not in values
