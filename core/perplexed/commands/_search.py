"""What ``perplexed search`` (and ``perplexed answer``, for its attempts) prints: one block per hit, then the
attempts table and the total cost (rich is imported when something is printed)."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from perplexed._cli_options import cli_words as _cli_words
from perplexed._cli_output import money as _money
from perplexed._models import Attempt, Hit, Result

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

__all__ = ["print_attempts", "print_hits"]

_OUTCOME_STYLE = {"ok": "green", "empty": "yellow", "timeout": "magenta", "deadline": "magenta", "error": "red",
                  "insufficient": "yellow", "cancelled": "dim", "skipped": "dim"}


def _query_words(query: str) -> list[str]:
    return [w for w in re.findall(r"\w+", query) if len(w) > 2]


def print_hits(out: Console, hits: list[Hit], query: str) -> None:
    """One block per hit: number, title and source, the snippet wrapped to the width, then the URL on a line of
    its own that is never wrapped (a terminal narrower than the URL folds it on screen, but the line stays one
    line, so a copied link works)."""
    from rich.rule import Rule
    from rich.style import Style
    from rich.table import Table
    from rich.text import Text

    def row(number: Text | str, body: Text | str, source: Text | str) -> Table:
        grid = Table.grid(padding=(0, 2), expand=True, pad_edge=True)
        grid.add_column(justify="right", no_wrap=True, width=3)
        grid.add_column(ratio=1, overflow="fold")
        grid.add_column(no_wrap=True, justify="left")
        grid.add_row(number, body, source)
        return grid

    out.print(row(Text("#", style="bold"), Text("Hit", style="bold"), Text("Source", style="bold")))
    out.print(Rule(style="dim"))
    for hit in hits:
        cell = Text()
        cell.append(hit.title or hit.url, style=Style(bold=True, link=hit.url or None))
        snippet = " ".join((hit.snippet or "").split())
        if snippet:
            body = Text(snippet)
            words = hit.raw.get("matches") if isinstance(hit.raw.get("matches"), list) else None
            body.highlight_words([str(w) for w in (words or _query_words(query))], "bold yellow",
                                 case_sensitive=False)
            cell.append("\n")
            cell.append_text(body)
        sources = ", ".join(f"{s.get('provider')} #{s.get('rank')}" for s in hit.sources)  # merged hits
        out.print(row(Text(str(hit.id), style="bold"), cell, Text(sources or hit.provider, style="dim")))
        url = Text(" " * 5 + hit.url, style=Style(dim=True, link=hit.url or None))
        out.print(url, soft_wrap=True, crop=False)
    out.print()


def print_attempts(out: Console, result: Result, labels: list[str]) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Attempts", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("Provider", no_wrap=True)
    table.add_column("Outcome", no_wrap=True)
    table.add_column("Duration", justify="right", no_wrap=True)
    table.add_column("Cost", justify="right", no_wrap=True)
    table.add_column("Note", overflow="fold", ratio=1, min_width=24)  # wraps to the width, never a word a line
    for attempt in result.attempts:
        outcome = attempt.outcome.value
        shown = _outcome_text(attempt)
        table.add_row(
            attempt.provider,
            Text(shown, style=_OUTCOME_STYLE.get(outcome, "")),
            f"{attempt.duration_ms} ms",
            _money(attempt.cost),
            Text(_attempt_note(attempt)),
        )
    answered = result.provider if result.hits else None
    called = Counter(a.provider for a in result.attempts)
    for label in labels:
        if called[label] > 0:
            called[label] -= 1
            continue
        why = f"not needed: {answered} answered" if answered else "not called: the chain stopped"
        table.add_row(label, Text("not called", style="dim"), "", "", Text(why, style="dim"))
    out.print(table)
    hits = f"{len(result.hits)} hit{'s' if len(result.hits) != 1 else ''} from {answered}" if answered else "no hits"
    n = len(result.attempts)
    out.print(f"Total cost: [bold]{_money(result.cost)}[/] · {hits} · {n} attempt{'s' if n != 1 else ''}")


def _outcome_text(attempt: Attempt) -> str:
    """``cached`` for a cache hit, ``skipped (reason)`` for a skipped provider, else the outcome."""
    if attempt.cached:
        return "cached"
    if attempt.outcome.value == "skipped":
        return f"skipped ({attempt.reason})" if attempt.reason else "skipped"
    return attempt.outcome.value


def _attempt_note(attempt: Attempt) -> str:
    floor = None
    if attempt.outcome.value == "insufficient":
        why = "fewer hits than --min-hits" if attempt.reason == "min_hits" else attempt.reason
        floor = f"below the quality floor: {why}"
    parts = [p for p in (floor, attempt.error, attempt.detail) if p]
    return _cli_words("; ".join(parts))
