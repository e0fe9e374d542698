"""Checking an index: :func:`check_index` (never raises for a bad index) and :func:`index_stats`."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perplexed._errors import ConfigError, CorruptIndexError
from perplexed.index._db import (
    check_header,
    connect_for_read,
    db_error,
    fts_probe,
    is_corruption,
    open_ro,
    quick_check,
    schema_version,
)
from perplexed.index._location import IndexPath, index_option, rebuild_command, resolve_index
from perplexed.index._schema import SCHEMA_VERSION, doc_count

_ELSEWHERE = "choose another index file with --index FILE, or delete this one"


@dataclass(frozen=True)
class IndexCheck:
    """The result of :func:`check_index`. ``ok``: a usable perplexed index (possibly with no documents).

    ``problem`` says what is wrong and ``remedy`` what to run (both None when ok); ``documents`` and
    ``folders`` are None when they could not be read; ``seconds`` is how long the check took.
    """

    path: Path
    exists: bool
    ok: bool
    documents: int | None
    folders: int | None
    schema_version: str | None
    problem: str | None
    remedy: str | None
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": str(self.path),
            "exists": self.exists,
            "ok": self.ok,
            "documents": self.documents,
            "folders": self.folders,
            "schema_version": self.schema_version,
            "problem": self.problem,
            "remedy": self.remedy,
            "seconds": round(self.seconds, 4),
        }


def _what(exc: Exception) -> str:
    """What is wrong, from an error that also says what to do ("...; choose another file, ..."): the remedy
    is the check's own (:data:`_ELSEWHERE`, naming ``--index``), said once."""
    return str(exc).split("; ", 1)[0]


class _Found(Exception):
    """A problem found by the check: its ``problem`` and ``remedy``."""

    def __init__(self, problem: str, remedy: str) -> None:
        super().__init__(problem)
        self.problem, self.remedy = problem, remedy


@dataclass
class _Counts:
    documents: int | None = None
    folders: int | None = None
    version: str | None = None


def check_index(index: IndexPath = None, *, thorough: bool = False) -> IndexCheck:
    """Check that ``index`` (default :func:`default_index_path`) is a sound perplexed index. Never raises
    for a bad index: the answer is in the returned :class:`IndexCheck`.

    Cheap (tens of ms for thousands of documents): SQLite's ``quick_check`` of every page, the schema, the
    document and full-text row counts, and a probe of the full-text index. ``thorough`` adds FTS5's own
    integrity check, which re-reads every indexed term (about as long as a search over every document).
    """
    if not isinstance(thorough, bool):
        raise ConfigError(f"thorough must be True or False, got {thorough!r}")
    started = time.monotonic()
    path = resolve_index(index)
    counts = _Counts()
    problem: str | None = None
    remedy: str | None = None
    try:
        _check(path, counts, thorough)
    except _Found as found:
        problem, remedy = found.problem, found.remedy
    return IndexCheck(
        path=path, exists=path.exists(), ok=problem is None, documents=counts.documents, folders=counts.folders,
        schema_version=counts.version, problem=problem, remedy=remedy, seconds=time.monotonic() - started,
    )


def _check(path: Path, counts: _Counts, thorough: bool) -> None:
    """Fill ``counts``; raise _Found for the first problem."""
    if not path.exists():
        raise _Found(f"no local index at {path}", f"run `perplexed index FOLDER{index_option(path)}`")
    if not path.is_file():
        raise _Found(f"the local index path {path} is not a file", "pass the index file with --index FILE")
    try:
        check_header(path)
        conn = open_ro(path)
    except (ConfigError, sqlite3.Error) as exc:
        raise _Found(_what(exc), _ELSEWHERE) from None
    def rebuild() -> str:  # worked out for a problem only: finding the default index looks at the disk
        return f"rebuild it from the indexed folders: `{rebuild_command(path)}`"

    try:
        _inspect(conn, path, counts, thorough, rebuild)
    except CorruptIndexError as exc:
        detail = str(exc).removeprefix(f"the local index {path} is damaged (").rsplit("); rebuild it", 1)[0]
        raise _Found(f"damaged ({detail})", rebuild()) from None
    except ConfigError as exc:
        raise _Found(_what(exc), _ELSEWHERE) from None
    except sqlite3.Error as exc:
        if is_corruption(exc):
            raise _Found(f"damaged ({exc})", rebuild()) from None
        raise _Found(f"cannot read it: {exc}", "try again; if it persists, " + rebuild()) from None
    finally:
        conn.close()


def _inspect(conn: sqlite3.Connection, path: Path, counts: _Counts, thorough: bool, rebuild: Callable[[], str]) -> None:
    quick_check(conn, path)
    counts.version = version = schema_version(conn, path)
    if version is None:
        raise _Found(f"{path} is an empty database, not an index yet",
                     f"run `perplexed index FOLDER{index_option(path)}`")
    if version not in ("1", SCHEMA_VERSION):
        raise _Found(f"schema version {version} is newer than this perplexed reads ({SCHEMA_VERSION})",
                     "upgrade perplexed, or " + rebuild())
    counts.documents = doc_count(conn)
    if version != "1":
        counts.folders = int(conn.execute("SELECT count(*) FROM roots").fetchone()[0])
    fts_probe(conn, path)
    if thorough:  # a command written as an INSERT: it needs a writable connection (it changes nothing)
        rw = sqlite3.connect(path, timeout=10)
        try:
            rw.execute("INSERT INTO docs_fts (docs_fts, rank) VALUES ('integrity-check', 0)")
        finally:
            rw.close()


def index_problem(index: IndexPath = None) -> str | None:
    """One line for the user when ``index`` is not a usable index: what :func:`check_index` finds (missing,
    damaged, from a newer perplexed, not an index) and its remedy; None when the index is sound."""
    check = check_index(index)
    if check.ok or check.problem is None:
        return None
    where = "" if str(check.path) in check.problem else f"{check.path}: "
    return f"{where}{check.problem}" + (f"; {check.remedy}" if check.remedy else "")


@dataclass(frozen=True)
class IndexStats:
    """What an index holds: document count and when it was last updated."""

    path: Path
    documents: int
    updated_at: str | None


def index_stats(index: IndexPath = None) -> IndexStats:
    """Document count of an index. ConfigError when it does not exist or is not a perplexed index."""
    path = resolve_index(index)
    conn = connect_for_read(path)
    try:
        count = doc_count(conn)
        row = conn.execute("SELECT value FROM meta WHERE key = 'updated_at'").fetchone()
    except sqlite3.Error as exc:
        raise db_error(path, exc, "read") from None
    finally:
        conn.close()
    return IndexStats(path=path, documents=count, updated_at=None if row is None else str(row[0]))
