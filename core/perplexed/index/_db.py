"""Opening an index file: header and schema checks, corruption detection, typed errors, upgrades.

Connections are opened per call and closed before returning: ``sqlite3`` objects belong to one thread, and
the provider runs queries in worker threads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from perplexed._errors import ConfigError, CorruptIndexError
from perplexed.index._location import hint, rebuild_command
from perplexed.index._migrate import migrate_v1
from perplexed.index._report import IndexReport
from perplexed.index._schema import SCHEMA, SCHEMA_VERSION, doc_count

_T = TypeVar("_T")
_SQLITE_HEADER = b"SQLite format 3\x00"


def corrupt(path: Path, detail: str) -> CorruptIndexError:
    """A damaged index, in one line (the first problem SQLite reports); every line SQLite reported is in
    the error's ``details``."""
    lines = [line.strip() for line in detail.splitlines() if line.strip() and not line.strip().startswith("***")]
    first = lines[0] if lines else detail.strip() or "damaged"
    if len(first) > _SUMMARY_CHARS:
        first = first[: _SUMMARY_CHARS - 1] + "…"
    more = f", and {len(lines) - 1} more problem{'s' if len(lines) != 2 else ''}" if len(lines) > 1 else ""
    return CorruptIndexError(
        f"the local index {path} is damaged ({first}{more}); rebuild it from the indexed folders with "
        f"`{rebuild_command(path)}`",
        path=str(path),
        details=lines,
    )


_SUMMARY_CHARS = 120


def is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (11, 26):  # SQLITE_CORRUPT (incl. _VTAB), SQLITE_NOTADB
        return True
    text = str(exc).lower()
    return "malformed" in text or "corrupt" in text or "not a database" in text


def db_error(path: Path, exc: sqlite3.Error, doing: str) -> ConfigError:
    """A typed error for a failed SQLite call: damaged file (with the remedy), or another failure."""
    if is_corruption(exc):
        return corrupt(path, str(exc))
    if "locked" in str(exc).lower() or "busy" in str(exc).lower():
        return ConfigError(f"the local index {path} is busy (another process is writing it): {exc}")
    return ConfigError(f"cannot {doing} the local index {path}: {exc}")


def check_header(path: Path) -> None:
    """ConfigError when ``path`` exists, is not empty and is not an SQLite file (never overwrite it)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(f"cannot read the local index {path}: {exc.strerror or exc}") from None
    if head and head != _SQLITE_HEADER:
        raise ConfigError(
            f"{path} is not a perplexed local index (not an SQLite file); choose another file, or delete it "
            "and run `perplexed index PATH` again"
        )


def quick_check(conn: sqlite3.Connection, path: Path) -> None:
    """SQLite's structural check of every page (tens of ms for a few thousand documents)."""
    rows = conn.execute("PRAGMA quick_check(100)").fetchall()
    if rows != [("ok",)]:
        raise corrupt(path, "\n".join(str(r[0]) for r in rows))


def fts_probe(conn: sqlite3.Connection, path: Path) -> int:
    """The full-text index answers a query and holds a row per document (a few pages read); the document count.

    ``quick_check`` sees damaged pages, not damaged full-text records inside sound pages: this probe reads the
    FTS5 structure record, which every search reads first, and compares the row counts.
    """
    documents = doc_count(conn)
    try:
        rows = int(conn.execute("SELECT count(*) FROM docs_fts").fetchone()[0])
        if rows != documents:
            raise corrupt(path, f"{documents} documents but {rows} full-text rows")
        conn.execute("SELECT rowid FROM docs_fts WHERE docs_fts MATCH '\"perplexed\"' LIMIT 1").fetchall()
    except MemoryError:  # SQLITE_NOMEM: garbage sizes in a full-text record (a few small rows need no memory)
        raise corrupt(path, "the full-text index's records are garbage") from None
    return documents


def not_an_index(path: Path) -> ConfigError:
    return ConfigError(
        f"{path} is not a perplexed local index; choose another file, or delete it and run "
        "`perplexed index PATH` again"
    )


def schema_version(conn: sqlite3.Connection, path: Path) -> str | None:
    """The index's schema version; None for an empty database; ConfigError when it is something else."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if not tables:
        return None
    row = None
    if {"meta", "docs", "docs_fts"} <= tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise not_an_index(path)
    return str(row[0])


def newer(path: Path, version: str) -> ConfigError:
    return ConfigError(
        f"the local index {path} has schema version {version}, made by a newer perplexed (this one reads "
        f"version {SCHEMA_VERSION}): upgrade perplexed, or rebuild the index with `{rebuild_command(path)}`"
    )


def open_ro(path: Path) -> sqlite3.Connection:
    """A read-only connection (raises sqlite3.Error)."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)


def _opened(
    path: Path, connect: Callable[[], sqlite3.Connection], check: Callable[[sqlite3.Connection], _T], doing: str
) -> tuple[sqlite3.Connection, _T]:
    """A connection and what ``check`` found on it; closed again (with a typed error) when ``check`` fails."""
    try:
        conn = connect()
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot open the local index {path}: {exc}") from None
    try:
        return conn, check(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise db_error(path, exc, doing) from None
    except BaseException:
        conn.close()
        raise


def connect_for_write(path: Path, report: IndexReport | None = None) -> sqlite3.Connection:
    """A connection to write ``path``: created with the schema when new, upgraded when old, checked otherwise."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the folder for the local index {path}: {exc.strerror or exc}") from None
    if path.exists() and not path.is_file():
        raise ConfigError(f"the local index path {path} exists and is not a file")
    check_header(path)

    def prepare(conn: sqlite3.Connection) -> None:
        quick_check(conn, path)
        version = schema_version(conn, path)
        if version is None:
            conn.executescript(SCHEMA)
        elif version == "1":
            migrate_v1(conn, path, report)
        elif version != SCHEMA_VERSION:
            raise newer(path, version)
        else:
            fts_probe(conn, path)

    return _opened(path, lambda: sqlite3.connect(path, timeout=30), prepare, "open")[0]


def connect_for_read(path: Path) -> sqlite3.Connection:
    """A read-only connection to the index at ``path`` (a version-1 index is upgraded first, in place)."""
    if path.is_dir():
        raise ConfigError(
            f"the local index {path} is a folder; pass the index file, or index that folder with "
            f"`perplexed index {path} --index FILE` and pass FILE"
        )
    if not path.is_file():
        raise ConfigError(f"no local index at {path}: {hint(path)}")
    check_header(path)

    def version_of(conn: sqlite3.Connection) -> str:
        version = schema_version(conn, path)
        if version is None:
            raise not_an_index(path)
        if version not in ("1", SCHEMA_VERSION):
            raise newer(path, version)
        return version

    conn, version = _opened(path, lambda: open_ro(path), version_of, "read")
    if version == "1":  # upgrade it once, in place (no file is read again)
        conn.close()
        connect_for_write(path).close()
        return connect_for_read(path)
    return conn
