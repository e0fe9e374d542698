"""``perplexed doctor`` on the command line: :func:`command` (called by :mod:`perplexed.cli` with its argparse
namespace) and the rendering of its reports, as tables (rich) or one JSON document (``--json``)."""

from __future__ import annotations

import os
import sys
from typing import Any

from perplexed._cli_options import cli_words
from perplexed._cli_output import print_json  # the CLI's one JSON writer (escapes for a narrow console)
from perplexed._errors import UsageError
from perplexed.doctor._checks import DRIFT, ERROR, INFO, MISSING, OK, WARN
from perplexed.doctor._live import (
    LiveReport,
    LiveRow,
    check_live,
    estimate,
    live_targets,
    setup_variables,
)
from perplexed.doctor._offline import Diagnosis, diagnose, split_names

__all__ = ["command"]


def command(args: Any) -> int:
    """``perplexed doctor`` (argparse namespace from :mod:`perplexed.cli`): returns the exit code."""
    names: list[str] = list(args.providers or [])
    if not args.live:
        if names or args.agent or args.record:
            raise UsageError("PROVIDER names, --agent and --record need --live (the offline chain is --provider)")
        return _offline(args)
    if not names and args.provider:  # --provider A,B with --live: check those
        names = [n for n in split_names(args.provider) if n != "local"]
    return _live(args, names)


def _offline(args: Any) -> int:
    diagnosis = diagnose(args.provider, index=getattr(args, "index", None))
    if args.json:
        print_json(diagnosis.to_dict())
    else:
        _print_diagnosis(diagnosis)
    return diagnosis.exit_code


def _live(args: Any, names: list[str]) -> int:
    """The estimate first; the paid calls only with ``--yes`` (else exit 2, nothing sent)."""
    targets = [] if args.agent and not names else live_targets(names)
    if not targets and not args.agent:
        message = (f"no configured provider to check: set a provider's key or URL ({', '.join(setup_variables())}) "
                   "or name one")
        if args.json:
            print_json({"estimated_cost": 0.0, "estimate": {}, "sent": False, "rows": [], "error": message})
        else:
            _stderr(f"perplexed doctor: {message}")
        return 1
    costs = estimate(targets, agent=args.agent)
    total = sum(costs.values())
    if not args.json:
        parts = ", ".join(f"{k} ${v:.4f}" for k, v in costs.items())
        _stdout(f"Estimated cost: ${total:.4f} ({parts})")
    if not args.yes:
        if args.json:
            print_json({"estimated_cost": total, "estimate": costs, "sent": False, "rows": []})
        _stderr("perplexed doctor: nothing was sent; add --yes to make these paid calls")
        return 2
    report = check_live(targets, agent=args.agent, record=args.record)
    if args.json:
        doc = report.to_dict()
        doc["estimate"] = costs
        doc["sent"] = True
        print_json(doc)
    else:
        _print_live(report)
    return report.exit_code


# --- output --------------------------------------------------------------------------------------------------


def _stdout(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")


_STYLE = {OK: "green", WARN: "yellow", MISSING: "red", ERROR: "red", INFO: "dim", DRIFT: "yellow"}


def _console() -> Any:
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(highlight=False, soft_wrap=False, width=200)
    return console


def _home_relative(path: str) -> str:
    """``path`` with the home folder written ``~`` (shorter: a table line rarely needs to fold it)."""
    import os

    home = os.path.expanduser("~").rstrip(os.sep)
    return "~" + path[len(home):] if home and home != "~" and path.startswith(home + os.sep) else path


def _print_diagnosis(diagnosis: Diagnosis) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    out = _console()
    out.print(Text(f"Chain: {' → '.join(diagnosis.chain)} (from {diagnosis.chain_source})"))
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("Check", no_wrap=True, style="bold")
    table.add_column("Status", no_wrap=True)
    table.add_column("Needed", no_wrap=True)
    table.add_column("Detail", overflow="fold")
    path = str(diagnosis.index["path"]) if diagnosis.index is not None else ""

    def shown(text: str) -> str:  # the table does not split the index's path: it is printed below the table
        return text.replace(path, "the index below") if path and len(path) > 12 else text

    for check in diagnosis.checks:
        table.add_row(
            check.name,
            Text(check.status, style=_STYLE.get(check.status, "")),
            "yes" if check.needed else "",
            Text(shown(check.detail)),
        )
    out.print(table)
    if diagnosis.index is not None:
        out.print(Text(f"Local index: {_home_relative(path)} ({diagnosis.index['why']})"))
    members = Table(box=box.SIMPLE_HEAD)
    members.add_column("Chain member", no_wrap=True, style="bold")
    members.add_column("Can answer now", no_wrap=True)
    members.add_column("What to do", overflow="fold")
    for member in diagnosis.members:
        can = Text("yes", style="green") if member.can_run else Text("no", style="red")
        members.add_row(member.name, can, Text("" if member.can_run else shown(member.fix or member.detail)))
    out.print(members)
    problems = diagnosis.problems
    runnable = [m.name for m in diagnosis.members if m.can_run]
    if problems:
        out.print(Text(f"Not ready: {', '.join(c.name for c in problems)} (needed by the chain)", style="red"))
    elif not runnable:
        out.print(Text("Not ready: no member of the chain can answer now (see above for what to set).", style="red"))
    else:
        out.print(Text(f"Ready: {', '.join(runnable)} can answer now.", style="green"))


def _notes(row: LiveRow) -> str:
    """The Notes cell of a live row: the error, what drifted, the cost note, new fields, the cassette."""
    notes = []
    if row.error:
        notes.append(cli_words(row.error))  # the command line's words ("set PERPLEXITY_API_KEY", not "api_key=")
    if row.missing:
        notes.append("missing: " + ", ".join(row.missing))
    if row.wrong_type:
        notes.append("type changed: " + ", ".join(row.wrong_type))
    if row.cost_note:
        notes.append("cost " + row.cost_note)
    if row.unknown:
        notes.append("new fields: " + ", ".join(row.unknown))
    if row.cassette:
        notes.append("recorded " + row.cassette)
    return "; ".join(notes)


def _print_live(report: LiveReport) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    out = _console()
    table = Table(box=box.SIMPLE_HEAD)
    for name, justify in (("Provider", "left"), ("Status", "left"), ("HTTP", "right"), ("Time", "right"),
                          ("Hits", "right"), ("Cost", "right"), ("Notes", "left")):
        table.add_column(name, justify=justify, no_wrap=name != "Notes", overflow="fold")  # type: ignore[arg-type]
    for row in report.rows:
        table.add_row(
            row.provider,
            Text(row.status, style=_STYLE.get(row.status, "")),
            "" if row.http_status is None else str(row.http_status),
            f"{row.ms} ms",
            str(row.hits),
            "" if row.cost is None else f"${row.cost:.4f}",
            Text(_notes(row)),
        )
    out.print(table)
    out.print(Text(f"Total cost: ${report.cost:.4f} (estimated ${report.estimated_cost:.4f})"))
