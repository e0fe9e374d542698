"""``perplexed index``: build, update, list, remove from and reset the local index, with a progress bar and a
report (``--json`` for scripts). Registered by :mod:`perplexed.cli`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from perplexed._cli_output import EXIT_OK, EXIT_USAGE
from perplexed._cli_output import consoles as _consoles
from perplexed._cli_output import escape as _escape
from perplexed._cli_output import print_json as _print_json
from perplexed._errors import UsageError
from perplexed.index import (
    IndexReport,
    build_index,
    default_index_path,
    list_index,
    locate_index,
    rebuild_index,
    remove_from_index,
    reset_index,
)
from perplexed.index._location import index_option

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace) -> int:
    out, err = _consoles()
    index = os.path.expanduser(args.index) if args.index else None
    if args.list or args.remove or args.reset:
        if args.paths:
            raise UsageError("--list, --remove and --reset take no PATH")
        if args.list:
            return _index_list(out, index, args.json)
        if args.reset:
            path = index or str(default_index_path())
            existed = os.path.lexists(path)
            count = reset_index(path)
            if args.json:
                _print_json({"index": path, "reset": existed, "existed": existed, "documents": count})
            elif existed:
                out.print(f"Deleted the index {_escape(path)} ({count} document{'s' if count != 1 else ''})",
                          soft_wrap=True)
            else:
                out.print(f"No index at {_escape(path)}: nothing to delete", soft_wrap=True)
            return EXIT_OK
        report = remove_from_index(args.remove, index)
    else:
        if not args.paths and not args.rebuild:
            raise UsageError("give a folder or file to index, or one of --list, --remove, --rebuild, --reset")
        follow = True if args.follow_links else None
        with _index_progress(err, enabled=not args.json and err.is_terminal) as progress:
            if args.rebuild:
                report = rebuild_index(index, args.paths, follow_links=follow, progress=progress)
            else:
                report = build_index(args.paths, index, progress=progress, follow_links=bool(follow))
    if args.json:
        _print_json(report.to_dict())
    else:
        _print_index_report(out, report)
    if args.rebuild:  # indexed folders that are gone are left out (and said so); only a bad PATH is an error
        return EXIT_USAGE if set(report.missing_roots) & set(args.paths) else EXIT_OK
    return EXIT_USAGE if report.missing_roots else EXIT_OK


@contextmanager
def _index_progress(err: Console, enabled: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    """A progress bar on stderr (in a terminal), advanced by the callback it yields."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("Indexing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("[dim]{task.fields[file]}"), console=err, transient=True,
    ) as bar:
        task = bar.add_task("index", total=None, file="")

        def progress(done: int, total: int, path: str) -> None:
            bar.update(task, completed=done, total=total, file=os.path.basename(path))

        yield progress


def _index_list(out: Console, index: str | None, as_json: bool) -> int:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    listing = list_index(index)
    if as_json:
        location = locate_index(index)
        _print_json({**listing.to_dict(), "source": location.source, "why": location.why})
        return EXIT_OK
    out.print(f"Index {_escape(_shown_path(str(listing.path)))}: {listing.documents} document"
              f"{'s' if listing.documents != 1 else ''}, {_size(listing.size)}", soft_wrap=True)
    out.print(Text(f"Why this index: {locate_index(index).why}", style="dim"))
    if not listing.folders:
        out.print("No folders indexed: run `perplexed index FOLDER`.")
        return EXIT_OK
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("Folder", overflow="fold")
    table.add_column("Documents", justify="right", no_wrap=True)
    table.add_column("Last indexed", no_wrap=True)
    table.add_column("Size", justify="right", no_wrap=True)
    for folder in listing.folders:
        when = "interrupted" if folder.indexed_at is None else folder.indexed_at.astimezone().strftime("%Y-%m-%d %H:%M")
        name = folder.path + ("" if folder.exists else " (missing)") + (" (file)" if folder.kind == "file" else "")
        table.add_row(_escape(name), str(folder.documents), when, _size(folder.bytes))
    out.print(table)
    return EXIT_OK


def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"  # pragma: no cover


def _shown_path(path: str) -> str:
    """``path`` relative to the working folder when it is inside it, else as given."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if relative.startswith("..") else relative


def _print_index_report(out: Console, report: IndexReport) -> None:
    from rich.text import Text

    roots = ", ".join(report.to_dict()["roots"]) or "nothing"
    if report.roots or not report.removed:
        out.print(f"Indexed {_escape(roots)} into {_escape(str(report.index))}", soft_wrap=True)
    else:
        out.print(f"Removed from {_escape(str(report.index))}", soft_wrap=True)
    out.print(
        f"  {len(report.added)} added, {len(report.updated)} updated, {len(report.unchanged)} unchanged, "
        f"{len(report.removed)} removed, {len(report.errors)} problem{'s' if len(report.errors) != 1 else ''}"
        f" · {report.documents} document{'s' if report.documents != 1 else ''} in the index"
    )
    if report.errors:
        out.print("Not indexed:")
        for problem in report.errors:  # one line per file, never folded, so it can be grepped
            line = Text("  ")
            line.append(_shown_path(problem.path))
            line.append(": ")
            line.append(problem.reason, style="red")
            out.print(line, soft_wrap=True)
    by_reason: dict[str, list[str]] = {}
    for problem in report.skipped:
        by_reason.setdefault(problem.reason, []).append(os.path.basename(problem.path))
    for reason, names in by_reason.items():
        listed = ", ".join(names[:8]) + (f", … ({len(names) - 8} more)" if len(names) > 8 else "")
        what = "of unsupported types" if reason == "unsupported file type" else f"- {reason}"
        out.print(Text(f"Skipped {len(names)} file{'s' if len(names) != 1 else ''} {what}: {listed}",
                       style="dim"), soft_wrap=True)
    for note in report.notes:
        out.print(Text(note, style="dim"), soft_wrap=True)
    if report.documents and report.roots:
        hint = index_option(report.index)
        out.print(f"Search it: perplexed search QUERY --provider local{_escape(hint)}")
