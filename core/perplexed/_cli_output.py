"""The command line's output helpers, shared by :mod:`perplexed.cli`, ``perplexed providers``
(:mod:`perplexed.commands._providers`) and ``perplexed doctor`` (:mod:`perplexed.doctor`): exit codes, the two
consoles, markup escaping, money, the one JSON writer, and the CLI's state store. A layer below the commands,
so none of them imports another to print (rich is imported when a console is made)."""

from __future__ import annotations

import gc
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from perplexed._configure import configure
from perplexed.engine import _governance
from perplexed.index import locate_index

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

__all__ = [
    "CLI_CACHE_TTL_S",
    "EXIT_NO_RESULTS",
    "EXIT_OK",
    "EXIT_USAGE",
    "STATE_FILE",
    "consoles",
    "escape",
    "money",
    "print_json",
    "process_ends",
    "use_cli_store",
]

EXIT_OK, EXIT_NO_RESULTS, EXIT_USAGE = 0, 1, 2

#: the CLI's result cache (seconds), on unless ``--cache-ttl 0``
CLI_CACHE_TTL_S = 3600.0
#: the CLI's state store, beside the local index (unless ``PERPLEXED_STORE`` names another)
STATE_FILE = "state.db"


def print_json(doc: Any) -> None:
    """One JSON document on stdout (characters a narrow console cannot show are escaped)."""
    try:
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
    except UnicodeEncodeError:  # a console that cannot show every character: escape them
        sys.stdout.write(json.dumps(doc, ensure_ascii=True, indent=2) + "\n")
    sys.stdout.flush()


def consoles() -> tuple[Console, Console]:
    """(stdout, stderr) consoles; when stdout is not a terminal, wide enough that lines do not fold."""
    from rich.console import Console

    out = Console(highlight=False, soft_wrap=False)
    if not out.is_terminal and not os.environ.get("COLUMNS"):
        out = Console(highlight=False, width=120)
    err = Console(stderr=True, highlight=False)
    return out, err


def escape(text: str) -> str:
    """``text`` with rich markup escaped (a provider's title is shown, never interpreted)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def money(cost: float) -> str:
    return f"${cost:.4f}"


def use_cli_store(index: str | None = None) -> None:
    """The CLI's state store: ``PERPLEXED_STORE`` when set, else ``state.db`` beside the local index in use
    (``--index FILE``'s, else the one :func:`perplexed.providers.local.locate_index` finds)."""
    if os.environ.get(_governance.STORE_ENV, "").strip() or _governance._settings.store is not None:
        return
    from perplexed.store import SQLiteStore

    path = locate_index(os.path.expanduser(index) if index else None).path
    configure(store=SQLiteStore(os.path.abspath(path.parent / STATE_FILE)))


def process_ends() -> None:
    """The command has run and its process exits next (``perplexed ...``, ``python -m perplexed``): every object
    alive now goes to the garbage collector's permanent generation (:func:`gc.freeze`), so the interpreter's
    collections at exit do not walk them all again (a quarter of the time of a ``perplexed search`` of the
    local index, or of an MCP stdio session). At-exit handlers still run, the standard streams are still flushed
    and objects are still freed by reference counting as modules are torn down; only objects that a cycle
    alone keeps are left to the operating system, whose finalizers Python never promises to run at exit."""
    gc.freeze()
