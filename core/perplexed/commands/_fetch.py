"""``perplexed fetch URL...``: page content through a chain of fetch providers (see :func:`perplexed.fetch`).

Prints each page (title, URL, content) and its attempts table, or with ``--json`` one JSON object per URL (JSON
Lines) with the :class:`~perplexed.Page` fields (a failed URL: ``url``, ``error`` and its ``attempts``). Progress on
stderr for many URLs. Exit 0 when every URL succeeded, 1 when any failed, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from perplexed._cli_options import add_option_flags, option_values
from perplexed._cli_output import EXIT_NO_RESULTS, EXIT_OK, consoles, escape, money
from perplexed._errors import UpstreamError, UsageError
from perplexed._models import Attempt, Page

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

__all__ = ["add_parser", "command"]

#: The fetch options ``perplexed fetch`` takes as flags.
_FLAG_OPTIONS = ("format", "max_chars", "start_index", "min_chars", "provider_timeout_ms", "deadline_ms")
_OUTCOME_STYLE = {"ok": "green", "empty": "yellow", "insufficient": "yellow", "timeout": "magenta",
                  "deadline": "magenta", "error": "red", "skipped": "dim", "cancelled": "dim"}


def add_parser(sub: Any, parser_class: type[argparse.ArgumentParser], positive_int: Any, whole_number: Any) -> None:
    """The ``fetch`` subcommand (``sub``: the CLI's subparsers)."""
    p = sub.add_parser("fetch", help="the content of web pages, through a chain of fetch providers", description=(
        "Fetch each URL's main content as Markdown (or text) through a chain of fetch providers, free first "
        "(default: http, the page itself). Prints the content and every attempt; --json prints one JSON object "
        "per URL (JSON Lines). Exit 0 when every URL succeeded, 1 when any failed, 2 for usage errors."))
    p.add_argument("urls", nargs="+", metavar="URL", help="the pages to fetch (http, https, or an indexed file://)")
    p.add_argument("--provider", "-p", metavar="A,B,C",
                   help="fetch provider or comma-separated chain: http, jina, exa, tavily, firecrawl (default http)")
    # each option's flag, metavar and help as the catalogue declares it (perplexed.policy._optionspec)
    add_option_flags(p, _FLAG_OPTIONS, {"whole": whole_number, "positive": positive_int},
                     helps={"deadline_ms": "time limit per URL, in ms (default 30000)"})
    p.add_argument("--concurrency", type=positive_int, metavar="N", default=8, help="URLs fetched at once (8)")
    add_access_flags(p)
    p.add_argument("--json", action="store_true", help="print one JSON object per URL (JSON Lines)")
    p.set_defaults(command="fetch", run=command)


def add_access_flags(p: argparse.ArgumentParser) -> None:
    """``--allow-private``, ``--allow-network CIDR`` and ``--no-robots``: what a fetch may read (also used by
    ``perplexed mcp`` for its ``web_fetch`` tool)."""
    p.add_argument("--allow-private", action="store_true",
                   help="allow private, loopback and link-local addresses (intranet use; off by default)")
    p.add_argument("--allow-network", action="append", metavar="CIDR",
                   help="allow only this private network (repeatable), e.g. --allow-network 10.0.0.0/8")
    p.add_argument("--no-robots", action="store_true", help="do not check robots.txt (http provider)")


def access_options(args: argparse.Namespace) -> dict[str, Any]:
    """The fetch options of :func:`add_access_flags`' flags (only those given)."""
    allow: Any = None
    if args.allow_private:
        allow = True
    elif args.allow_network:
        allow = [c.strip() for item in args.allow_network for c in item.split(",") if c.strip()]
    options = {"allow_private": allow, "respect_robots": False if args.no_robots else None}
    return {k: v for k, v in options.items() if v is not None}


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {**option_values(args, _FLAG_OPTIONS), **access_options(args)}


def _spec(raw: str | None) -> Any:
    if raw is None:
        return None
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise UsageError("--provider names no fetch provider")
    return names if len(names) > 1 else names[0]


def command(args: argparse.Namespace) -> int:
    from perplexed.operations._fetch import prepare_fetch  # here: building the parser imports no fetching

    spec = _spec(args.provider)
    options = _options(args)
    for url in args.urls:  # every URL and option validated: exit 2 before anything is fetched
        if "://" not in url and not url.startswith(("http:", "https:", "file:")):  # a plain path: say its URL
            from pathlib import Path

            raise UsageError(f"{url!r} is not a URL; for a document of the local index pass its file:// URL: "
                             f"{Path(url).expanduser().resolve().as_uri()}")
        prepare_fetch(url, spec, **options)
    out, err = consoles()
    results = _run(args.urls, spec, args.concurrency, options, err, show=not args.json and len(args.urls) > 1)
    failed = 0
    for url, item in zip(args.urls, results, strict=True):
        if isinstance(item, Page):
            if args.json:
                _line(item.model_dump(mode="json"))
            else:
                _print_page(out, item)
        else:
            failed += 1
            if args.json:
                _line({"url": url, "error": {"type": type(item).__name__, "reason": item.reason,
                                             "message": str(item)},
                       "attempts": [a.model_dump(mode="json") for a in item.attempts], "cost": item.cost})
            else:
                why = str(item).removeprefix(f"{item.reason}: ") if not item.attempts else ""
                out.print(f"[bold red]Could not fetch[/] {escape(url)}" + (f": {escape(why)}" if why else "."),
                          soft_wrap=True)  # one line, however narrow the terminal: the URL stays whole
                _print_attempts(out, item.attempts, None, failure=item)
    return EXIT_NO_RESULTS if failed else EXIT_OK


def _run(urls: list[str], spec: Any, concurrency: int, options: dict[str, Any], err: Console,
         show: bool) -> list[Page | UpstreamError]:
    from perplexed.operations._fetch import fetch_many

    if not show or not err.is_terminal:
        return fetch_many(urls, spec, concurrency, **options)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("Fetching"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as progress:
        task = progress.add_task("fetch", total=len(urls))
        return fetch_many(urls, spec, concurrency, on_result=lambda i, _: progress.advance(task), **options)


def _line(doc: dict[str, Any]) -> None:
    """One JSON object on one line (JSON Lines)."""
    try:
        sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
    except UnicodeEncodeError:
        sys.stdout.write(json.dumps(doc, ensure_ascii=True) + "\n")
    sys.stdout.flush()


def _print_page(out: Console, page: Page) -> None:
    from rich.markup import escape as rich_escape

    title = page.title or page.final_url
    out.print(f"[bold]{rich_escape(title)}[/]")
    out.print(f"[dim]{rich_escape(page.final_url)}[/]")
    out.print()
    out.print(rich_escape(page.content), markup=True, highlight=False)
    if page.truncated:
        out.print(f"[dim]… {page.total_chars - (page.next_index or 0)} more characters: "
                  f"--start-index {page.next_index}[/]")
    _print_attempts(out, page.attempts, page.provider)


def _print_attempts(out: Console, attempts: list[Attempt], answered: str | None,
                    failure: UpstreamError | None = None) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Attempts", title_justify="left", box=box.SIMPLE_HEAD)
    for name, justify in (("Provider", "left"), ("Outcome", "left"), ("Duration", "right"), ("Cost", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("Note", overflow="fold", ratio=1, min_width=24)
    if failure is not None and not attempts:  # refused before any provider was asked: the reason is the row
        table.add_row("-", Text(f"error ({failure.reason})", style=_OUTCOME_STYLE.get("error", "")), "", "",
                      Text("refused before any provider was asked (the line above says why)"))
    for attempt in attempts:
        outcome = attempt.outcome.value
        shown = "cached" if attempt.cached else (f"{outcome} ({attempt.reason})" if attempt.reason else outcome)
        note = "; ".join(p for p in (attempt.error, attempt.detail) if p)
        table.add_row(attempt.provider, Text(shown, style=_OUTCOME_STYLE.get(outcome, "")), f"{attempt.duration_ms} ms",
                      money(attempt.cost), Text(note))
    out.print(table)
    total = sum(a.cost for a in attempts)
    who = f"content from {answered}" if answered else "no content"
    out.print(f"Total cost: [bold]{money(total)}[/] · {who} · {len(attempts)} attempt{'s' if len(attempts) != 1 else ''}")
