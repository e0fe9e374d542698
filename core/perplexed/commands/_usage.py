"""``perplexed usage``: the usage ledger as a table and a bar chart of cost per day per provider (issue 38)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "command", "render"]


def add_parser(sub: Any) -> None:
    """The ``usage`` subcommand (``sub``: the CLI's subparsers)."""
    p = sub.add_parser("usage", help="where the money went: calls, cost and cache savings per provider",
                       description=(
                           "The usage ledger of everything sharing the state store ($PERPLEXED_STORE): calls, "
                           "billable calls, cost, what the cache saved, failures by reason and latency, grouped; "
                           "then a bar chart of cost per day per provider. --json / --csv print the report only."))
    p.add_argument("--since", metavar="WHEN", default="7d",
                   help="start: a span back from now (7d, 24h) or an ISO date (default 7d)")
    p.add_argument("--until", metavar="WHEN", default=None, help="end (default now)")
    p.add_argument("--by", metavar="A,B", default="provider",
                   help="group by any of provider, day, hour, tag, operation, outcome (default provider)")
    p.add_argument("--tag", metavar="T", default=None, help="only the calls made with this tag")
    p.add_argument("--operation", choices=("search", "fetch", "answer", "agent"), default=None,
                   help="only this operation")
    p.add_argument("--index", metavar="FILE", default=None,
                   help="the local index whose state.db holds the ledger (default: the one searches use)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the report as one JSON document")
    out.add_argument("--csv", action="store_true", help="print the rows as CSV")
    p.set_defaults(command="usage", run=command)


def command(args: argparse.Namespace) -> int:
    from perplexed._cli_output import use_cli_store
    from perplexed.engine._usage import usage

    use_cli_store(args.index)  # the store the CLI's searches write to ($PERPLEXED_STORE, else state.db)
    report = usage(args.since, args.until, by=tuple(args.by.split(",")), tag=args.tag, operation=args.operation)
    if args.json:
        sys.stdout.write(report.to_json(indent=2) + "\n")
        return 0
    if args.csv:
        sys.stdout.write(report.to_csv())
        return 0
    from rich.console import Console

    console = Console(highlight=False)
    chart: Any = None
    if "day" not in report.by or "provider" not in report.by:
        chart = usage(args.since, args.until, by=("day", "provider"), tag=args.tag, operation=args.operation)
    render(report, console, chart)
    return 0


def _usd(value: float) -> str:
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def render(report: Any, console: Any, chart: Any = None) -> None:
    """The report's table, its spend windows, and a bar chart of cost per day per provider (from ``chart``,
    a report grouped by day and provider, else ``report`` itself)."""
    from rich.table import Table

    width = console.width
    table = Table(title=f"Usage {report.since:%Y-%m-%d %H:%M} → {report.until:%Y-%m-%d %H:%M} UTC",
                  title_justify="left", expand=False, pad_edge=False, box=None,
                  padding=(0, 1, 0, 0), header_style="bold underline")
    for name in report.by:  # names whole on one line (never split); the failures column folds instead
        table.add_column(name, no_wrap=True, min_width=len(name))
    for figure in ("calls", "billed", "cost", "saved", "cached"):
        table.add_column(figure, justify="right", no_wrap=True)
    wide = width >= 100
    if wide:
        table.add_column("p50 ms", justify="right")
        table.add_column("p95 ms", justify="right")
    table.add_column("failures", min_width=14)  # one "reason n" a line: a reason is never split

    def cells(row: Any, keys: list[str]) -> list[str]:
        failures = "\n".join(f"{k} {v}" for k, v in row.failures.items()) or "-"
        out = [*keys, str(row.calls), str(row.billable_calls), _usd(row.cost_usd), _usd(row.saved_usd),
               str(row.cache_hits)]
        if wide:
            out += ["-" if row.latency_p50_ms is None else f"{row.latency_p50_ms:g}",
                    "-" if row.latency_p95_ms is None else f"{row.latency_p95_ms:g}"]
        return [*out, failures]

    for row in report.rows:
        table.add_row(*cells(row, [str(getattr(row, k) or "-") for k in report.by]))
    table.add_section()
    table.add_row(*cells(report.totals, ["total", *[""] * (len(report.by) - 1)]), style="bold")
    console.print(table)
    for window in report.windows:
        console.print(f"spend limit ({window.window}): {_usd(window.spend_usd)} of {_usd(window.limit_usd)}, "
                      f"headroom {_usd(window.headroom_usd)}")
    source = chart if chart is not None else report
    _chart(source, console, width)


def _chart(report: Any, console: Any, width: int) -> None:
    """Cost per day per provider as horizontal bars scaled to the widest day."""
    days: dict[str, dict[str, float]] = {}
    for row in report.rows:
        if row.day is None or row.provider is None:
            continue
        days.setdefault(row.day, {})[row.provider] = days.get(row.day, {}).get(row.provider, 0.0) + row.cost_usd
    if not days:
        console.print("no paid calls in this period" if not report.rows else "")
        return
    providers = sorted({p for per in days.values() for p in per})
    glyphs = "█▓▒░#=+*"
    styles = ["cyan", "magenta", "green", "yellow", "blue", "red", "white", "bright_black"]
    peak = max(sum(per.values()) for per in days.values()) or 1.0
    bar_width = max(10, width - 10 - 12 - 2)
    console.print("cost per day per provider")
    for day in sorted(days):
        per = days[day]
        total = sum(per.values())
        line = []
        for i, provider in enumerate(providers):
            cells = round(per.get(provider, 0.0) / peak * bar_width)
            if cells:
                line.append(f"[{styles[i % len(styles)]}]{glyphs[i % len(glyphs)] * cells}[/]")
        console.print(f"{day[5:]:<6} {''.join(line)} {_usd(total)}", overflow="crop", no_wrap=True)
    legend = "  ".join(f"[{styles[i % len(styles)]}]{glyphs[i % len(glyphs)]}[/] {p}" for i, p in enumerate(providers))
    console.print(legend)
