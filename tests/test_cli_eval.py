"""``perplexed eval`` (issue 37) against a loopback SearXNG: the ranked table, ``--json``, ``--out`` resumable
(a second run makes no call twice), ``--html`` self-contained, ``--write-routing``; and
``perplexed search --strategy adaptive --routing FILE``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from test_cli import cli, env  # noqa: F401 - fixtures
from testkit.loopback import Json, Request, searxng_json, serve


def write_queries(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"q{i}", "query": f"query {i}",
                                 "expected_urls": [f"https://example.com/q{i}/1"]}) + "\n")
    return path


def answer(request: Request) -> Json:
    number = request.query["q"][0].rsplit(" ", 1)[-1]
    return Json(searxng_json(3, prefix=f"https://example.com/q{number}/"))


def test_eval_table_json_html_and_routing(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    queries = write_queries(tmp_path / "queries.jsonl", 6)
    with serve({"/search": answer}) as server:
        run = cli("eval", str(queries), "--provider", "searxng", "--k", "3", "--html", "report.html",
                  "--write-routing", "routing.json", extra_env={"SEARXNG_URL": server.url, "COLUMNS": "200"})
        assert run.code == 0, run.both
        assert "searxng" in run.out and "hit@3" in run.out and "100.0%" in run.out
        page = (tmp_path / "report.html").read_text(encoding="utf-8")
        assert "<svg" in page and "<script" not in page and "https://" not in page
        routing = json.loads((tmp_path / "routing.json").read_text(encoding="utf-8"))
        assert routing["version"] == 1 and routing["order"] == ["searxng"]
        run = cli("eval", str(queries), "--provider", "searxng", "--json", extra_env={"SEARXNG_URL": server.url})
        assert run.code == 0, run.both
        doc = json.loads(run.out)
        assert doc["providers"][0]["name"] == "searxng" and doc["providers"][0]["hit_at_k"] == 1.0
        assert len(doc["rows"]) == 6
        # the routing file drives an adaptive search
        run = cli("search", "query 1", "--provider", "searxng", "--strategy", "adaptive", "--routing",
                  "routing.json", "--no-cache", "--json", extra_env={"SEARXNG_URL": server.url})
        assert run.code == 0, run.both
        assert json.loads(run.out)["provider"] == "searxng"
        run = cli("search", "query 1", "--provider", "searxng", "--strategy", "adaptive", "--routing",
                  "missing.json", extra_env={"SEARXNG_URL": server.url})
        assert run.code == 2 and "routing" in run.err


def test_out_makes_the_run_resumable(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    queries = write_queries(tmp_path / "queries.jsonl", 8)
    out = tmp_path / "rows.jsonl"
    with serve({"/search": answer}) as server:
        first = cli("eval", str(queries), "--provider", "searxng", "--out", str(out), "--json",
                    extra_env={"SEARXNG_URL": server.url})
        assert first.code == 0, first.both
        assert len(server.requests) == 8
        assert len(out.read_text(encoding="utf-8").splitlines()) == 8
        write_queries(queries, 12)  # four more queries: only those are run
        second = cli("eval", str(queries), "--provider", "searxng", "--out", str(out), "--json",
                     extra_env={"SEARXNG_URL": server.url})
        assert second.code == 0, second.both
        asked = Counter(r.query["q"][0] for r in server.requests)
        assert len(asked) == 12 and max(asked.values()) == 1  # no call twice
        assert len(json.loads(second.out)["rows"]) == 12


def test_usage_errors_exit_2(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    run = cli("eval", str(tmp_path / "missing.jsonl"), "--provider", "searxng")
    assert run.code == 2 and "missing.jsonl" in run.err
    run = cli("eval", str(write_queries(tmp_path / "q.jsonl", 1)))
    assert run.code == 2 and "--provider" in run.err
