"""``perplexed eval QUERIES.jsonl --provider a,b,c [--provider x,y ...]``: which provider answers your queries
best, at what price and latency (see :func:`perplexed.evaluate` and docs/eval.md).

A progress bar on stderr; a table ranked by hit@k with cost per correct answer and p50/p95 latency (or, with
``--json``, the report as one JSON document). ``--out rows.jsonl`` appends each row as it ends, and a second
run with the same file skips the pairs already done (resumable). ``--html FILE`` writes a self-contained page;
``--write-routing FILE`` the routing file (``--min-quality`` its floor). Exit 0, or 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

from perplexed._cli_output import EXIT_OK, consoles, escape, print_json
from perplexed._errors import InvalidRequest, UsageError

if TYPE_CHECKING:  # imported when `perplexed eval` runs: building the CLI's parser does not load the evaluation
    from perplexed.evaluation._eval_report import EvalReport, EvalRow

__all__ = ["add_parser", "command"]


def add_parser(sub: Any, positive_int: Any, whole_number: Any, usd: Any) -> None:
    """The ``eval`` subcommand (``sub``: the CLI's subparsers)."""
    p = sub.add_parser("eval", help="score providers on your own queries: quality, cost, latency", description=(
        "Run every query of QUERIES.jsonl (one JSON object a line: {\"id\"?, \"query\", \"expected_urls\"?, "
        "\"answer\"?}) through each --provider (a provider, or a comma-separated chain) and rank them by hit@k, "
        "with cost per correct answer and p50/p95 latency. The result cache is not used."))
    p.add_argument("queries", metavar="QUERIES.jsonl", help="the query file (JSON Lines)")
    p.add_argument("--provider", "-p", action="append", metavar="A,B,C", required=True,
                   help="a provider or a comma-separated chain to evaluate (repeat to compare several)")
    p.add_argument("--k", type=positive_int, default=5, metavar="K", help="hits scored per query (default 5)")
    p.add_argument("--budget-usd", type=usd, metavar="USD",
                   help="most the whole run may spend: calls that would exceed it are skipped (over_budget)")
    p.add_argument("--concurrency", type=positive_int, default=4, metavar="N", help="searches at once (default 4)")
    p.add_argument("--out", metavar="rows.jsonl",
                   help="append each row here as it ends; a second run with the same file skips what is done")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    p.add_argument("--write-routing", metavar="FILE", help="write the routing file (for --strategy adaptive)")
    p.add_argument("--min-quality", type=float, metavar="Q",
                   help="the routing file's quality floor (0-1): the order favours cost among providers above it")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document and nothing else")
    p.set_defaults(command="eval", run=command)


def _done_rows(path: str) -> list[EvalRow]:
    """The rows an earlier run wrote to ``--out`` (a line cut short by an interruption is ignored)."""
    from perplexed.evaluation._eval_report import EvalRow

    rows: list[EvalRow] = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    rows.append(EvalRow.model_validate(json.loads(line)))
                except ValueError:
                    continue
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UsageError(f"--out: cannot read {path!r}: {exc.strerror or exc}") from None
    return rows


def command(args: argparse.Namespace) -> int:
    out, err = consoles()
    if args.min_quality is not None and not 0 <= args.min_quality <= 1:
        raise UsageError(f"--min-quality must be between 0 and 1, got {args.min_quality!r}")
    providers = []
    for raw in args.provider:
        names = [n.strip() for n in raw.split(",") if n.strip()]
        if not names:
            raise UsageError("--provider names no provider")
        providers.append(names if len(names) > 1 else names[0])
    done = _done_rows(args.out) if args.out else []
    sink = open(args.out, "a", encoding="utf-8") if args.out else None  # closed below

    def on_row(row: EvalRow) -> None:
        if sink is not None:
            sink.write(json.dumps(row.model_dump(mode="json")) + "\n")
            sink.flush()

    show = not args.json and err.is_terminal
    try:
        if show:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            with Progress("eval", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=err,
                          transient=True) as bar:
                task = bar.add_task("eval", total=None)
                report = _run(args, providers, done, on_row,
                              lambda n, total: bar.update(task, completed=n, total=total))
        else:
            report = _run(args, providers, done, on_row, None)
    finally:
        if sink is not None:
            sink.close()
    if args.html:
        _write(args.html, report.to_html(), "--html")
    if args.write_routing:
        _write(args.write_routing, report.routing(args.min_quality).to_json() + "\n", "--write-routing")
    if args.json:
        print_json(report.to_dict())
        return EXIT_OK
    out.print(_table(report))
    if args.html:
        err.print(f"HTML report: {escape(args.html)}")
    if args.write_routing:
        err.print(f"routing file: {escape(args.write_routing)}")
    return EXIT_OK


def _run(args: argparse.Namespace, providers: list[Any], done: list[EvalRow], on_row: Any, progress: Any
         ) -> EvalReport:
    from perplexed.evaluation._eval import run_eval
    from perplexed.net import _portal

    try:
        return _portal.run(run_eval, os.path.expanduser(args.queries), providers, k=args.k,
                           concurrency=args.concurrency, budget_usd=args.budget_usd, progress=progress,
                           done=done, on_row=on_row)
    except InvalidRequest as exc:
        if exc.param == "queries":
            raise UsageError(str(exc)) from None
        raise


def _write(path: str, text: str, flag: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"{flag}: cannot write {path!r}: {exc.strerror or exc}") from None


def _table(report: EvalReport) -> Any:
    """Ranked by hit@k (answer recall when answers are the only label), with the 95 % interval, MRR, cost per
    correct answer, p50/p95 latency, the failure rate, and the skipped calls when there were any."""
    from rich import box
    from rich.table import Table

    quality = f"recall@{report.k}" if report.metric == "answer_recall_at_k" else f"hit@{report.k}"
    skipped = any(s.skipped for s in report.providers)
    table = Table(title=f"{len({r.query_id for r in report.rows})} queries, k = {report.k}", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    heads = ["provider", quality, "95% CI", "MRR", "$/correct", "p50 ms", "p95 ms", "fail"]
    for head in [*heads, *(["skipped"] if skipped else [])]:
        table.add_column(head, justify="left" if head == "provider" else "right")
    for s in report.ranked():
        value = report._quality(s)
        interval = "-" if s.hit_at_k_interval is None else (
            f"{s.hit_at_k_interval[0] * 100:.0f}-{s.hit_at_k_interval[1] * 100:.0f}%")
        cells = [
            escape(s.name), "-" if value is None else f"{value * 100:.1f}%", interval,
            "-" if s.mrr is None else f"{s.mrr:.2f}",
            "-" if s.cost_per_correct_usd is None else f"${s.cost_per_correct_usd:.4f}",
            "-" if s.latency_p50_ms is None else f"{s.latency_p50_ms:.0f}",
            "-" if s.latency_p95_ms is None else f"{s.latency_p95_ms:.0f}",
            f"{s.failure_rate * 100:.0f}%",
        ]
        table.add_row(*cells, *([str(s.skipped)] if skipped else []))
    return table
