"""perplexed.evaluate (issue 37) on providers with known behaviour (tests/evalkit.py): the report reproduces
their figures, the budget cap holds exactly under concurrency, a resumed run makes no call twice, the HTML
page holds its SVG and no external reference; URL normalisation and answer matching table-style."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import perplexed
import pytest
from evalkit import N_QUERIES, Planned, abc, queries
from perplexed import EvalQuery, EvalReport, Hit, InvalidRequest
from perplexed.evaluation._eval import run_eval  # private: resuming a run (done=, on_row=)
from perplexed.evaluation._eval_report import (  # private: URL normalisation and answer matching, table-style
    answer_found,
    normalize_text,
    normalize_url,
    wilson,
)


@pytest.fixture(scope="module")
def report_abc() -> tuple[EvalReport, tuple[Planned, Planned, Planned]]:
    a, b, c = abc()
    report = perplexed.evaluate(queries(), [a.provider, b.provider, c.provider], concurrency=8)
    return report, (a, b, c)


def test_the_report_reproduces_the_providers_figures(report_abc) -> None:  # type: ignore[no-untyped-def]
    report, (a, b, c) = report_abc
    scores = {s.name: s for s in report.providers}
    assert [s.name for s in report.providers] == ["a", "b", "c"]
    for name, hit, fail in (("a", 0.9, 0.0), ("b", 0.7, 0.0), ("c", 0.5, 0.2)):
        s = scores[name]
        assert s.queries == s.labelled == N_QUERIES
        assert s.hit_at_k == pytest.approx(hit, abs=0.05), name
        assert s.failure_rate == pytest.approx(fail, abs=0.05), name
        assert s.mrr == pytest.approx(s.hit_at_k)  # every correct hit is at rank 1
        assert s.ndcg_at_k == pytest.approx(s.hit_at_k)
        assert s.answer_recall_at_k is None  # no query has an answer label
        lo, hi = s.hit_at_k_interval
        assert lo < s.hit_at_k < hi
    # and exactly what the plans say
    assert scores["a"].hit_at_k == a.share("right")
    assert scores["c"].failure_rate == c.share("fail")
    assert scores["c"].failures == {"upstream": round(c.share("fail") * N_QUERIES)}
    # cost exact
    assert scores["a"].cost_usd == 4.0
    assert scores["a"].cost_per_query_usd == 0.01
    assert scores["a"].cost_per_correct_usd == pytest.approx(4.0 / (a.share("right") * N_QUERIES))
    assert scores["b"].cost_usd == 0.0 and scores["b"].cost_per_correct_usd == 0.0
    # latency: A sleeps 4 ms, B 2 ms
    assert scores["a"].latency_p50_ms > scores["b"].latency_p50_ms >= 2.0
    assert scores["a"].latency_p95_ms >= scores["a"].latency_p50_ms
    assert a.total_calls == b.total_calls == c.total_calls == N_QUERIES


def test_rows(report_abc) -> None:  # type: ignore[no-untyped-def]
    report, (a, _b, c) = report_abc
    assert len(report.rows) == 3 * N_QUERIES
    rows = {(r.query_id, r.provider): r for r in report.rows}
    for i in range(N_QUERIES):
        query = f"query {i}"
        row = rows[(f"q{i}", "a")]
        assert row.cost_usd == 0.01 and row.outcome == "ok"
        assert row.rank == (1 if a.plan[query] == "right" else None)
        assert row.urls[0].startswith("https://")
        failed = rows[(f"q{i}", "c")]
        if c.plan[query] == "fail":
            assert (failed.outcome, failed.reason, failed.rank, failed.urls) == ("error", "upstream", None, [])


def test_routing_orders(report_abc) -> None:  # type: ignore[no-untyped-def]
    report, _ = report_abc
    assert report.routing(min_quality=0.65).order[:2] == ["b", "a"]
    assert report.routing(min_quality=0.8).order[0] == "a"
    routing = report.routing(min_quality=0.65)
    assert routing.version == 1 and routing.metric == "hit_at_k" and routing.k == 5
    assert routing.providers["a"].cost_per_query_usd == 0.01
    assert routing.providers["b"].quality == pytest.approx(0.7, abs=0.05)
    again = perplexed.Routing.from_json(routing.to_json())
    assert again == routing
    with pytest.raises(InvalidRequest) as info:
        report.routing(min_quality=2)
    assert info.value.param == "min_quality"


def test_overlap(report_abc) -> None:  # type: ignore[no-untyped-def]
    report, (a, b, _c) = report_abc
    both_right = sum(1 for q in a.plan if a.plan[q] == b.plan[q] == "right")
    # each returns 2 URLs; when both are right they share the first: 1 / 3; otherwise nothing
    assert report.overlap["a"]["b"] == pytest.approx(both_right / N_QUERIES / 3)
    assert report.overlap["b"]["a"] == report.overlap["a"]["b"]
    assert "a" not in report.overlap["a"]


def test_budget_cap_holds_exactly_under_concurrency_8() -> None:
    a, b, _ = abc()
    report = perplexed.evaluate(queries(), [a.provider, b.provider], concurrency=8, budget_usd=1.0)
    s = report.score("a")
    assert a.total_calls == 100  # $1.00 at $0.01 a call, not one more
    assert s.cost_usd == pytest.approx(1.0) and s.cost_usd <= 1.0 + 1e-9
    assert s.skipped == 300 and s.queries == 100
    skipped = [r for r in report.rows if r.provider == "a" and r.outcome == "skipped"]
    assert len(skipped) == 300 and {r.reason for r in skipped} == {"over_budget"}
    assert b.total_calls == N_QUERIES  # free calls always fit
    a2 = Planned("a", right=0.9, cost=0.01, delay_s=0.004, seed=11)
    perplexed.evaluate(queries(), [a2.provider], concurrency=8, budget_usd=0.995)
    assert a2.total_calls == 99


def test_a_chain_under_the_budget_falls_back_to_its_free_member() -> None:
    a, b, _ = abc()
    report = perplexed.evaluate(queries(50), [[a.provider, b.provider]], concurrency=8, budget_usd=0.2)
    (score,) = report.providers
    assert score.name == "a,b" and score.skipped == 0 and score.queries == 50
    assert a.total_calls == 20 and score.cost_usd == pytest.approx(0.2)
    assert b.total_calls == 30


def test_a_resumed_run_makes_no_call_twice() -> None:
    a, b, _ = abc()
    first: list = []
    asyncio.run(run_eval(queries(60), [a.provider, b.provider], concurrency=8, on_row=first.append))
    assert len(first) == 120 and a.total_calls == 60
    # a second run with the rows of the first, and 20 more queries: only the new ones are called
    report = asyncio.run(run_eval(queries(80), [a.provider, b.provider], concurrency=8, done=first))
    assert max(a.calls.values()) == 1 and max(b.calls.values()) == 1
    assert a.total_calls == b.total_calls == 80
    assert len(report.rows) == 160 and report.score("a").queries == 80


def test_skipped_rows_are_run_again_on_resume() -> None:
    a, _, _ = abc()
    first: list = []
    asyncio.run(run_eval(queries(10), [a.provider], budget_usd=0.05, on_row=first.append))
    assert a.total_calls == 5
    report = asyncio.run(run_eval(queries(10), [a.provider], budget_usd=0.05, done=first))
    assert a.total_calls == 10 and max(a.calls.values()) == 1
    assert report.score("a").skipped == 0


def test_the_html_page_holds_the_svg_and_no_external_reference(report_abc) -> None:  # type: ignore[no-untyped-def]
    report, _ = report_abc
    page = report.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") >= 2 and "<circle" in page  # the scatter and the latency distributions
    assert "q17" in page  # the per-query table
    for external in ("<script", "<link", "@import", "url(", "src=", "href=", "http://", "https://", "//"):
        assert external not in page, external


def test_to_json(report_abc) -> None:  # type: ignore[no-untyped-def]
    report, _ = report_abc
    doc = json.loads(report.to_json())
    assert set(doc) >= {"k", "providers", "rows", "overlap"}
    assert doc["providers"][0]["name"] == "a" and doc["providers"][0]["cost_usd"] == 4.0
    row = doc["rows"][0]
    assert set(row) >= {"query_id", "provider", "outcome", "reason", "rank", "latency_ms", "cost_usd", "urls"}
    assert EvalReport.model_validate(doc) == report


def test_cache_serves_repeats_and_marks_them() -> None:
    b = Planned("b", right=1.0, seed=3)
    asked = [{"id": "1", "query": "query 1"}, {"id": "2", "query": "query 1"}, {"id": "3", "query": "query 2"}]
    report = perplexed.evaluate(asked, [b.provider], concurrency=1, cache=True)
    assert [r.cached for r in report.rows] == [False, True, False]
    assert b.total_calls == 2
    b2 = Planned("b", right=1.0, seed=3)
    report = perplexed.evaluate(asked, [b2.provider], concurrency=1)  # off by default: the providers measured
    assert b2.total_calls == 3 and not any(r.cached for r in report.rows)


def test_unlabelled_queries_count_for_latency_cost_and_failures_only() -> None:
    c = Planned("c", right=0.5, fail=0.5, cost=0.001, seed=5, n=20)
    report = perplexed.evaluate([{"query": f"query {i}"} for i in range(20)], [c.provider])
    s = report.score("c")
    assert (s.labelled, s.hit_at_k, s.mrr, s.ndcg_at_k, s.cost_per_correct_usd) == (0, None, None, None, None)
    assert s.queries == 20 and s.cost_usd == pytest.approx(0.001 * 20 * (1 - c.share("fail")))
    assert s.failure_rate == c.share("fail")
    assert [r.query_id for r in report.rows] == [str(i) for i in range(1, 21)]  # ids: 1-based positions


def test_answer_labels() -> None:
    async def provider(query: str, options: object) -> list[Hit]:
        if query == "capital":
            return [Hit(url="https://x.example/1", title="Nothing"),
                    Hit(url="https://x.example/2", snippet="The  CAPITAL is\nParis, France")]
        return [Hit(url="https://x.example/3", content="ﬁnance ministry")]

    asked = [EvalQuery(query="capital", answer="capital is paris"), EvalQuery(query="other", answer="Finance  Ministry"),
             EvalQuery(query="none", answer="absent")]
    report = perplexed.evaluate(asked, [provider])
    s = report.providers[0]
    assert [r.rank for r in report.rows] == [2, 1, None]  # "none" gets the finance hit: its answer is absent
    assert [r.answer_hit for r in report.rows] == [True, True, False]
    assert report.metric == "answer_recall_at_k"
    assert report.routing().metric == "answer_recall_at_k"
    assert s.answer_recall_at_k == pytest.approx(s.hit_at_k)


@pytest.mark.parametrize(("url", "normal"), [
    ("HTTPS://WWW.Example.COM/a/b/", "https://example.com/a/b"),
    ("https://example.com:443/a#frag", "https://example.com/a"),
    ("http://example.com:80/", "http://example.com"),
    ("http://example.com:8080/x", "http://example.com:8080/x"),
    ("https://example.com/a?utm_source=n&id=3&UTM_medium=m", "https://example.com/a?id=3"),
    ("https://example.com/A/Path?q=1#x", "https://example.com/A/Path?q=1"),
    ("https://wwwx.example.com/", "https://wwwx.example.com"),
])
def test_normalize_url(url: str, normal: str) -> None:
    assert normalize_url(url) == normal


def test_answer_matching() -> None:
    assert normalize_text("  \uff30\uff41\uff52\uff49\uff53\tIS  \ufb01ne ") == "paris is fine"  # fullwidth, ligature
    hits = [Hit(url="https://a.example", title="x"), Hit(url="https://b.example", content="STRASSE  des")]
    assert answer_found("straße des", hits) == 2  # case-folded: ß is ss
    assert answer_found("nothing", hits) is None


def test_wilson() -> None:
    lo, hi = wilson(90, 100)
    assert 0.82 < lo < 0.84 and 0.94 < hi < 0.95
    assert wilson(0, 0) is None


def test_queries_from_a_jsonl_file_and_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": 7, "query": "query 1", "expected_urls": ["https://example.com/doc/1"]}\n\n'
                    '{"query": "query 2"}\n', encoding="utf-8")
    b = Planned("b", right=1.0, seed=2, n=3)
    report = perplexed.evaluate(path, [b.provider], k=3)
    assert [r.query_id for r in report.rows] == ["7", "2"]
    assert report.k == 3 and report.rows[0].rank == 1
    for kwargs, param in (({"k": 0}, "k"), ({"concurrency": 0}, "concurrency"), ({"budget_usd": -1}, "budget_usd")):
        with pytest.raises(InvalidRequest) as info:
            perplexed.evaluate(path, [b.provider], **kwargs)
        assert info.value.param == param
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(InvalidRequest, match=re.escape("query 1")) as info:
        perplexed.evaluate(bad, [b.provider])
    assert info.value.param == "queries"
    with pytest.raises(InvalidRequest) as info:
        perplexed.evaluate([{"id": "1", "query": "a"}, {"id": "1", "query": "b"}], [b.provider])
    assert info.value.param == "queries"
    with pytest.raises(InvalidRequest) as info:
        perplexed.evaluate(path, [])
    assert info.value.param == "providers"


def test_progress_and_chain_names() -> None:
    a, b, _ = abc()
    seen: list[tuple[int, int]] = []
    report = perplexed.evaluate(queries(10), [a.provider, [b.provider, a.provider],
                                              {"providers": [a.provider, b.provider], "strategy": "merge",
                                               "name": "merged"}],
                                progress=lambda done, total: seen.append((done, total)))
    assert [s.name for s in report.providers] == ["a", "b,a", "merged"]
    assert seen[0] == (0, 30) and seen[-1] == (30, 30)
    assert report.score("merged").cost_usd == pytest.approx(0.1)


async def test_aevaluate() -> None:
    b = Planned("b", right=1.0, seed=2, n=5)
    report = await perplexed.aevaluate(queries(5), [b.provider])
    assert report.score("b").hit_at_k == 1.0
