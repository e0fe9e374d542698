"""The CLI's governance: a SQLite store beside the local index, a 1-hour cache by default (--cache-ttl,
--no-cache), --budget, and what `perplexed providers` shows. Real entry points, in subprocesses."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from test_cli import cli, env  # noqa: F401  (fixtures, used by name)
from testkit.loopback import Json, searxng_json, serve


def test_search_caches_for_an_hour_in_state_db_beside_the_index(cli, tmp_path: Path) -> None:  # noqa: F811
    with serve({"/search": Json(searxng_json(2))}) as server:
        extra = {"SEARXNG_URL": server.url}
        first = cli("search", "zoning", "-p", "searxng", extra_env=extra)
        second = cli("search", "zoning", "-p", "searxng", extra_env=extra)
        assert first.code == second.code == 0, first.both
        assert len(server.requests) == 1
    assert "cached" not in first.out.split("Attempts")[1]
    assert "cached" in second.out.split("Attempts")[1]
    state = tmp_path / "data" / "perplexed" / "state.db"
    assert state.is_file()
    with sqlite3.connect(state) as conn:
        (expires,) = conn.execute("SELECT expires FROM cache").fetchone()
        (now,) = conn.execute("SELECT CAST(strftime('%s','now') AS REAL)").fetchone()
    assert 3500 < expires - now <= 3601


def test_no_cache_and_cache_ttl(cli) -> None:  # noqa: F811
    with serve({"/search": Json(searxng_json(2))}) as server:
        extra = {"SEARXNG_URL": server.url}
        for _ in range(2):
            assert cli("search", "q", "-p", "searxng", "--no-cache", extra_env=extra).code == 0
        assert len(server.requests) == 2
        cli("search", "q2", "-p", "searxng", "--cache-ttl", "0", extra_env=extra)
        cli("search", "q2", "-p", "searxng", "--cache-ttl", "0", extra_env=extra)
        assert len(server.requests) == 4
        run = cli("search", "q3", "-p", "searxng", "--cache-ttl", "soon", extra_env=extra)
        assert run.code == 2 and "--cache-ttl" in run.err


def test_perplexed_store_overrides_the_default(cli, tmp_path: Path) -> None:  # noqa: F811
    store = tmp_path / "elsewhere" / "s.db"
    with serve({"/search": Json(searxng_json(1))}) as server:
        run = cli("search", "q", "-p", "searxng", extra_env={"SEARXNG_URL": server.url,
                                                             "PERPLEXED_STORE": f"sqlite:///{store}"})
    assert run.code == 0, run.both
    assert store.is_file()
    assert not (tmp_path / "data" / "perplexed" / "state.db").exists()
    bad = cli("search", "q", "-p", "searxng", extra_env={"PERPLEXED_STORE": "nosuch://x", "SEARXNG_URL": "http://127.0.0.1:9"})
    assert bad.code == 2 and "PERPLEXED_STORE" in bad.err


def test_budget_skips_paid_providers(cli) -> None:  # noqa: F811
    with serve({"/search": Json(searxng_json(2))}) as server:
        extra = {"SEARXNG_URL": server.url, "PERPLEXED_PRICE_SEARXNG": "0.01"}
        run = cli("search", "q", "-p", "searxng", "--budget", "0.005", "--json", extra_env=extra)
        assert run.code == 1
        doc = run.json()
        assert isinstance(doc, dict)
        assert [(a["outcome"], a["reason"]) for a in doc["attempts"]] == [("skipped", "over_budget")]
        table = cli("search", "q", "-p", "searxng", "--budget", "0.005", extra_env=extra)
        assert "skipped (over_budget)" in table.out
        assert len(server.requests) == 0
        ok = cli("search", "q", "-p", "searxng", "--budget", "0.01", extra_env=extra)
        assert ok.code == 0 and len(server.requests) == 1
        listing = cli("providers", "--json", extra_env=extra)
    rows = {row["name"]: row for row in json.loads(listing.out)}
    assert rows["searxng"]["spend_today"] == 0.01
    assert rows["searxng"]["cooldown"] == "off" and rows["searxng"]["rate_limit"] is None
    text = cli("providers", extra_env={"COLUMNS": "160", **extra})
    assert "$0.0100" in text.out and "no limit" in text.out
