"""Issue 38: ``perplexed usage``: the table and the bar chart of cost per day per provider, readable at 80 and
120 columns; ``--json`` and ``--csv`` parse. In process, with COLUMNS set as a terminal sets it, on a SQLite
store shared with the searches that wrote the ledger."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
from pathlib import Path

import perplexed
import pytest
from perplexed import cli  # private: the perplexed command run in-process, not as a subprocess
from perplexed.store import SQLiteStore
from perplexed.store._ledger import UsageRecord  # private: seeds the ledger with past days' rows

DAY = 86400.0


@pytest.fixture
def ledger(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith(("PERPLEXED_", "PERPLEXITY_")):
            monkeypatch.delenv(name, raising=False)
    path = tmp_path / "state.db"
    monkeypatch.setenv("PERPLEXED_STORE", f"sqlite:///{path}")
    store = SQLiteStore(path)
    import time

    now = time.time()
    records = []
    for day in range(3):  # three days of two providers and two tags, failures and cache hits
        ts = now - day * DAY - 60
        records += [UsageRecord(ts, "search", "tavily-long-provider-name", "support-bot", cost=0.008,
                                cost_source="estimate", billable=True, latency_ms=420 + day)] * (3 + day)
        records += [UsageRecord(ts, "search", "brave", "crawler", outcome="error", reason="rate_limited",
                                latency_ms=90)] * 2
        records += [UsageRecord(ts, "search", "brave", "crawler", cost=0.003, billable=True, latency_ms=300)] * 4
        records += [UsageRecord(ts, "search", "brave", "crawler", cached=True, saved=0.003)] * 2
    asyncio.run(store.usage_add(records))
    store.close()
    yield path
    perplexed.reset()


def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int, *args: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    assert cli.main(["usage", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("width", [80, 120])
def test_table_and_chart_are_readable(ledger: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    out = run(capsys, monkeypatch, width, "--since", "7d")
    lines = out.splitlines()
    assert all(len(line.rstrip()) <= width for line in lines), "\n".join(lines)
    text = " ".join(lines)
    for word in ("tavily-long-provider-name", "brave", "total", "rate_limited", "cost per day per provider"):
        assert word in text, f"{word!r} missing at {width}:\n{out}"
    table = out.split("cost per day per provider")[0]
    assert "tavily-long-provider-name" in table  # a provider's name whole on one line, never split
    assert ("p95 ms" in text) is (width >= 100)
    bars = [line for line in lines if re.match(r"\d\d-\d\d ", line)]
    assert len(bars) == 3, out  # one bar per day
    longest = max(bars, key=len)
    assert "$0.0" in longest  # each bar ends with the day's cost


def test_by_tag_and_filters(ledger: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = run(capsys, monkeypatch, 80, "--by", "provider,tag", "--tag", "crawler")
    assert "crawler" in out and "support-bot" not in out


def test_json_and_csv_parse(ledger: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(run(capsys, monkeypatch, 80, "--json", "--by", "provider,day"))
    assert doc["by"] == ["provider", "day"]
    assert doc["totals"]["calls"] == 3 * (2 + 4 + 2) + 3 + 4 + 5
    assert doc["totals"]["cache_hits"] == 6 and doc["totals"]["failures"] == {"rate_limited": 6}
    assert doc["totals"]["cost_usd"] == pytest.approx(12 * 0.008 + 12 * 0.003)
    rows = list(csv.DictReader(io.StringIO(run(capsys, monkeypatch, 80, "--csv", "--by", "provider"))))
    assert {r["provider"]: int(r["calls"]) for r in rows} == {"brave": 24, "tavily-long-provider-name": 12}
    assert {r["provider"]: r["failures"] for r in rows}["brave"] == "rate_limited=6"


def test_bad_arguments_are_usage_errors(ledger: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.main(["usage", "--by", "model"]) == 2
    assert "by" in capsys.readouterr().err
    assert cli.main(["usage", "--since", "yesterday"]) == 2
