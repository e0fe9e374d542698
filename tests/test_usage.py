"""Issue 38: the usage ledger (one record per attempt that reached a provider, and per cache hit) on every
store, ``perplexed.usage()``, the ``tag`` option, ``Result.usage``, retention, and a store outage."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import multiprocessing
import os
import sqlite3
import traceback
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import ConfigError, InvalidRequest, Outcome, UpstreamError
from perplexed._errors import StoreError  # private: the typed error of an unreadable report, not exported
from perplexed.providers import FunctionProvider, SearXNG
from perplexed.store import MemoryStore, RedisStore, SQLiteStore
from perplexed.store._ledger import UsageRecord  # private: seeds the ledger with past days' rows
from testkit import loopback as lb
from testkit.loopback import Json, LoopbackServer, SearchAPI, Status, searxng_json
from testkit.valkey_servers import ValkeyServer, closed_port


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    perplexed.reset()
    yield
    perplexed.reset()


def hit(query: str, options: Any) -> list[dict[str, str]]:
    return [{"url": "https://a.example/1", "title": "A"}]


def nothing(query: str, options: Any) -> list[dict[str, str]]:
    return []


def by_keys(report: perplexed.UsageReport) -> dict[tuple[str | None, ...], perplexed.UsageRow]:
    return {tuple(row.keys(report.by).values()): row for row in report.rows}


# -- the report, the tag, Result.usage ------------------------------------------------------------------------


async def test_every_attempt_that_reached_a_provider_is_one_record(api: SearchAPI) -> None:
    paid = FunctionProvider(hit, name="paid", cost=0.01)
    empty = FunctionProvider(nothing, name="empty", cost=0.002)
    result = await api("q one", [empty, paid], tag="team-a")
    assert [a.outcome for a in result.attempts] == [Outcome.EMPTY, Outcome.OK]
    assert result.usage.calls == 2 and result.usage.billable_calls == 2
    assert result.usage.cost_usd == pytest.approx(0.012) and result.usage.saved_usd == 0.0

    report = await perplexed.ausage(by=("provider", "tag", "outcome"))
    rows = by_keys(report)
    assert set(rows) == {("empty", "team-a", "empty"), ("paid", "team-a", "ok")}
    assert rows[("paid", "team-a", "ok")].cost_usd == pytest.approx(0.01)
    assert report.totals.calls == 2 and report.totals.billable_calls == 2
    assert report.totals.cost_usd == pytest.approx(0.012)
    assert report.totals.latency_p50_ms is not None and report.totals.latency_p95_ms is not None


def test_cache_hits_are_records_with_what_they_saved() -> None:
    paid = FunctionProvider(hit, name="paid", cost=0.25)
    first = perplexed.search("cached q", paid, cache_ttl_s=60, tag="svc")
    second = perplexed.search("cached q", paid, cache_ttl_s=60, tag="svc")
    assert first.usage.billable_calls == 1 and first.usage.cache_hits == 0
    assert second.attempts[0].cached
    assert second.usage.cache_hits == 1 and second.usage.billable_calls == 0
    assert second.usage.saved_usd == pytest.approx(0.25) and second.usage.cost_usd == 0.0
    totals = perplexed.usage().totals
    assert (totals.calls, totals.cache_hits, totals.billable_calls) == (2, 1, 1)
    assert totals.cost_usd == pytest.approx(0.25) and totals.saved_usd == pytest.approx(0.25)


def test_skipped_and_missing_key_attempts_are_not_records() -> None:
    paid = FunctionProvider(hit, name="paid", cost=1.0)
    with pytest.raises(UpstreamError):
        perplexed.search("q", paid, budget_usd=0.5)  # skipped over_budget: never reached the provider
    assert perplexed.usage().totals.calls == 0


def test_failures_by_reason_and_billed_failures() -> None:
    def broken(query: str, options: Any) -> Any:
        raise perplexed.ProviderError("rate_limited", "slow down", status=429)

    for _ in range(3):
        perplexed.search("q", [FunctionProvider(broken, name="flaky"), FunctionProvider(hit, name="ok")])
    row = by_keys(perplexed.usage(by="provider"))[("flaky",)]
    assert row.calls == 3 and row.failures == {"rate_limited": 3} and row.billable_calls == 0


def test_the_tag_is_validated_like_a_name_and_has_a_configured_default() -> None:
    for bad in ("", "two words", "x" * 65, 5, "https://user:pw@host/"):
        with pytest.raises(InvalidRequest) as info:
            perplexed.search("q", FunctionProvider(hit, name="fn"), tag=bad)
        assert info.value.param == "tag"
    with pytest.raises(InvalidRequest):
        perplexed.fetch("https://example.org/", "http", tag="no spaces")
    with pytest.raises(ConfigError):
        perplexed.configure(tag="bad tag")
    perplexed.configure(tag="default-team")
    perplexed.search("q", FunctionProvider(hit, name="fn"))
    perplexed.search("q", FunctionProvider(hit, name="fn"), tag="other")
    report = perplexed.usage(by=["tag"])
    assert {row.tag: row.calls for row in report.rows} == {"default-team": 1, "other": 1}
    assert perplexed.usage(tag="other").totals.calls == 1
    assert perplexed.usage(operation="fetch").totals.calls == 0


def test_since_until_and_by_are_validated() -> None:
    perplexed.search("q", FunctionProvider(hit, name="fn"))
    now = datetime.now(UTC)
    assert perplexed.usage("7d").totals.calls == 1
    assert perplexed.usage("24h").totals.calls == 1
    assert perplexed.usage(since=now - timedelta(minutes=5), until=now + timedelta(minutes=1)).totals.calls == 1
    assert perplexed.usage(since=(now + timedelta(days=1)).date().isoformat()).totals.calls == 0
    assert perplexed.usage(until=(now - timedelta(days=1)).isoformat()).totals.calls == 0
    for kwargs, param in (({"since": "yesterday"}, "since"), ({"until": 5}, "until"), ({"by": ("model",)}, "by"),
                          ({"operation": "embed"}, "operation"), ({"tag": "a b"}, "tag")):
        with pytest.raises(InvalidRequest) as info:
            perplexed.usage(**kwargs)
        assert info.value.param == param
    with pytest.raises(ConfigError):
        perplexed.configure(usage_retention_days=0)


def test_report_groups_json_and_csv() -> None:
    perplexed.search("q", FunctionProvider(hit, name="a", cost=0.5), tag="t1")
    perplexed.search("q", FunctionProvider(hit, name="b", cost=0.25), tag="t2")
    report = perplexed.usage(by=("provider", "day", "hour", "tag", "operation", "outcome"))
    assert len(report.rows) == 2
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert {(r.provider, r.day, r.tag, r.operation, r.outcome) for r in report.rows} == {
        ("a", today, "t1", "search", "ok"), ("b", today, "t2", "search", "ok")}
    doc = json.loads(report.to_json())
    assert doc["totals"]["cost_usd"] == pytest.approx(0.75) and len(doc["rows"]) == 2
    rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert [(r["provider"], r["tag"], float(r["cost_usd"])) for r in rows] == [("a", "t1", 0.5), ("b", "t2", 0.25)]


def test_spend_limits_show_each_window_with_headroom() -> None:
    perplexed.configure(spend_limits={"day": 1.0, "hour": 0.5})
    perplexed.search("q", FunctionProvider(hit, name="paid", cost=0.2))
    windows = {w.window: w for w in perplexed.usage().windows}
    assert set(windows) == {"day", "hour"}
    assert windows["hour"].spend_usd == pytest.approx(0.2) and windows["hour"].headroom_usd == pytest.approx(0.3)
    assert windows["day"].limit_usd == 1.0 and windows["day"].headroom_usd == pytest.approx(0.8)


def test_fetch_and_answer_operations_are_recorded(loopback: LoopbackServer) -> None:
    loopback.route("/page", lb.Html("<html><head><title>T</title></head><body><article><p>" + "words here " * 60
                                    + "</p></article></body></html>"))
    page = perplexed.fetch(loopback.url + "/page", "http", allow_private=True, tag="crawler")
    assert page.usage.calls == 1
    report = perplexed.usage(by=("operation", "tag", "provider"))
    assert by_keys(report)[("fetch", "crawler", "http")].calls == 1


# -- no query text, no key ---------------------------------------------------------------------------------------


def test_records_hold_no_query_text_key_or_url_credentials(tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.route("/search", Json(searxng_json(2)))
    path = tmp_path / "state.db"
    perplexed.configure(store=SQLiteStore(path))
    secret_query = "very-private-question-7f3a"
    key = "sk-live-1234567890abcdef"
    url = loopback.url.replace("http://", "http://user:hunter2pass@")
    perplexed.search(secret_query, SearXNG(base_url=url, api_key=key), tag="t")
    perplexed.usage()  # the worker has written it
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT * FROM usage_ledger").fetchall()
    conn.close()
    assert len(rows) == 1
    text = repr(rows)
    for secret in (secret_query, key, "hunter2pass", "user:", loopback.url):
        assert secret not in text


# -- every store: totals equal what the upstreams received, under 200 concurrent calls ----------------------------


def _store(kind: str, tmp_path: Path, valkey: ValkeyServer | None, prefix: str) -> Any:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "ledger.db")
    assert valkey is not None
    return RedisStore(valkey.url, prefix=prefix, timeout_ms=2000)


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_ledger_totals_equal_what_the_upstreams_received(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest, redis_prefix: str
) -> None:
    valkey = request.getfixturevalue("valkey") if store_kind == "redis" else None
    perplexed.configure(store=_store(store_kind, tmp_path, valkey, redis_prefix))
    with lb.serve() as server:
        server.route("/fail/search", Status(500, "down"))
        server.route("/ok/search", Json(searxng_json(2)))
        chain = [SearXNG(base_url=f"{server.url}/fail", name="fail"),
                 SearXNG(base_url=f"{server.url}/ok", name="ok", cost=0.001)]

        async def one(i: int) -> None:
            await perplexed.asearch(f"t{i % 3}-{i}", chain, tag=f"t{i % 3}")

        await asyncio.gather(*(one(i) for i in range(200)))
        received: Counter[tuple[str, str]] = Counter()
        for req in server.requests:
            received[(req.path.split("/")[1], req.query["q"][0].split("-")[0])] += 1
    report = await perplexed.ausage(by=("provider", "tag"))
    ledger = {(row.provider, row.tag): row.calls for row in report.rows}
    assert ledger == dict(received)
    assert report.totals.calls == 400 == sum(received.values())
    assert report.totals.billable_calls == 200
    assert report.totals.cost_usd == pytest.approx(0.2)
    fails = Counter[str]()
    for row in report.rows:
        if row.provider == "fail":
            fails.update(row.failures)
    assert len(fails) == 1 and sum(fails.values()) == 200  # every failure, under its one reason


# -- a fleet: 4 processes on one Valkey ---------------------------------------------------------------------------


def _fleet_child(cfg: dict[str, Any], conn: Any) -> None:
    try:
        perplexed.reset()
        perplexed.configure(store=RedisStore(cfg["store"], prefix=cfg["prefix"], timeout_ms=2000))
        provider = SearXNG(base_url=cfg["base"], name="fleet", cost=0.01)
        for i in range(cfg["n"]):
            perplexed.search(f"w{cfg['worker']}-{i}", provider, tag=f"w{cfg['worker']}")
        conn.send(("ok", ""))
    except BaseException as exc:
        conn.send(("error", "".join(traceback.format_exception(exc))))
    finally:
        conn.close()
        os._exit(0)


def test_four_processes_on_one_valkey_fleet_totals_are_exact(valkey: ValkeyServer, redis_prefix: str) -> None:
    ctx = multiprocessing.get_context("fork")
    with lb.serve() as server:
        server.route("/search", Json(searxng_json(1)))
        procs = []
        for worker in range(4):
            parent, child = ctx.Pipe(duplex=False)
            cfg = {"store": valkey.url, "prefix": redis_prefix, "base": server.url, "worker": worker, "n": 25}
            proc = ctx.Process(target=_fleet_child, args=(cfg, child), daemon=True)
            proc.start()
            child.close()
            procs.append((proc, parent))
        for proc, conn in procs:
            assert conn.poll(90), "a fleet worker did not finish"
            status, payload = conn.recv()
            assert status == "ok", payload
            proc.join(5)
        received = Counter(r.query["q"][0].split("-")[0] for r in server.requests)
    perplexed.configure(store=RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000))
    report = perplexed.usage(by=("tag",))
    assert {row.tag: row.calls for row in report.rows} == dict(received) == {f"w{i}": 25 for i in range(4)}
    assert report.totals.cost_usd == pytest.approx(1.0)


# -- a store outage, retention ------------------------------------------------------------------------------------


def test_a_store_outage_never_fails_a_search_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    perplexed.configure(store=RedisStore(f"redis://127.0.0.1:{closed_port()}", timeout_ms=100))
    caplog.set_level(logging.DEBUG, logger="perplexed")
    for i in range(20):
        result = perplexed.search(f"q{i}", FunctionProvider(hit, name="fn"), tag="t")
        assert result.attempts[0].outcome is Outcome.OK
    lost = [r for r in caplog.records if r.name == "perplexed.usage" and r.levelno >= logging.WARNING]
    assert len(lost) == 1 and "lost" in lost[0].getMessage()
    with pytest.raises(StoreError):  # the report cannot be read now: a typed error, not a wrong report
        perplexed.usage()


def test_after_an_outage_records_are_kept_again(caplog: pytest.LogCaptureFixture) -> None:
    class Flaky(MemoryStore):
        down = True

        async def usage_add(self, records: Any, keep_s: float = 86400.0) -> None:
            if self.down:
                raise ConnectionError("store down")
            await super().usage_add(records, keep_s)

    store = Flaky()
    perplexed.configure(store=store)
    caplog.set_level(logging.INFO, logger="perplexed.usage")
    for i in range(5):
        perplexed.search(f"q{i}", FunctionProvider(hit, name="fn"))
    store.down = False
    for i in range(3):
        perplexed.search(f"r{i}", FunctionProvider(hit, name="fn"))
    assert perplexed.usage().totals.calls == 3  # the outage's 5 records lost, nothing after it
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1


def test_retention_trims_old_records_on_the_memory_store() -> None:
    now = [1_800_000_000.0]
    store = MemoryStore(clock=lambda: now[0])
    perplexed.configure(store=store, usage_retention_days=1)
    perplexed.search("q", FunctionProvider(hit, name="fn"))
    now[0] += 0.5 * 86400
    perplexed.search("q", FunctionProvider(hit, name="fn"))
    assert perplexed.usage().totals.calls == 2
    now[0] += 0.75 * 86400  # the first record is now 1.25 days old
    perplexed.search("q", FunctionProvider(hit, name="fn"))
    assert perplexed.usage().totals.calls == 2


async def test_usage_trim_on_sqlite_and_redis(tmp_path: Path, valkey: ValkeyServer, redis_prefix: str) -> None:
    base = 1_800_000_000.0
    records = [UsageRecord(base + day * 86400 + 60, "search", "p", "t", cost=0.1) for day in range(5)]
    for store in (SQLiteStore(tmp_path / "trim.db"), RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=2000)):
        await store.usage_add(records, keep_s=10 * 86400)
        assert len(await store.usage_read(0, base + 10 * 86400)) == 5
        dropped = await store.usage_trim(base + 2 * 86400 + 120)  # keeps days 3 and 4
        assert dropped == 3
        kept = await store.usage_read(0, base + 10 * 86400)
        assert [r.ts for r in kept] == [r.ts for r in records[3:]]
        await store.aclose()


def test_sqlite_records_of_a_process_that_exits_at_once_are_kept(tmp_path: Path) -> None:
    """The SQLite store buffers a search's records until its next transaction: a process that searches once
    and exits still leaves them in the file (the exit hook writes them)."""
    import subprocess
    import sys
    import textwrap

    path = tmp_path / "exit.db"
    script = textwrap.dedent(f"""
        import perplexed
        from perplexed.providers import FunctionProvider
        from perplexed.store import SQLiteStore
        perplexed.configure(store=SQLiteStore({str(path)!r}))
        perplexed.search("q", FunctionProvider(lambda q, o: [{{"url": "https://a.example/"}}], name="fn"), tag="exit")
    """)
    core = Path(__file__).resolve().parents[1] / "core"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(core)})
    assert proc.returncode == 0, proc.stderr
    perplexed.configure(store=SQLiteStore(path))
    assert perplexed.usage(tag="exit").totals.calls == 1
