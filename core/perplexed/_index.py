"""The local full-text index: one SQLite file with an FTS5 table (standard library only).

:func:`build_index` adds folders (or single files) of documents to an index and keeps it up to date
incrementally: unchanged files are skipped by size and modification time (then by content hash), changed
files are re-read, and files deleted from an indexed folder are dropped. A bad file (binary, not UTF-8,
unreadable, a name that is not UTF-8 is fine) or a missing folder is reported in the :class:`IndexReport`
and never stops the run. A file's changes (its row and its full-text row) are always committed together, and
deleted files are dropped before any file is read, so an interrupted run leaves a consistent index that the
next run brings up to date.

Managing an index: :func:`list_index` (folders, document counts, last indexed, size), :func:`remove_from_index`,
:func:`rebuild_index` (from the indexed folders, also when the file is damaged), :func:`reset_index`, and
:func:`check_index`, a cheap integrity check that never raises.

:func:`query_index` runs a BM25-ranked search with snippets, one hit per distinct content (the same file
reached through two folders or clones is one hit); :func:`fts_query` turns free text into a safe FTS5 query
(every term is quoted, so punctuation and FTS5 operators in user input never raise). Chinese, Japanese and
Korean text is also indexed as overlapping character bigrams and unigrams, so any substring of one or more
characters is found.

Connections are opened per call and closed before returning: ``sqlite3`` objects belong to one thread, and
the provider runs queries in worker threads.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import logging
import os
import re
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from ._doctext import (
    CJK_RUN,
    EXTRACTOR_VERSION,
    PDF_HINT,
    DocumentError,
    cjk_terms,
    extract,
    kind_of,
    pdf_supported,
)
from ._errors import ConfigError, CorruptIndexError

__all__ = [
    "INDEX_ENV",
    "FileProblem",
    "IndexCheck",
    "IndexListing",
    "IndexReport",
    "IndexStats",
    "IndexedFolder",
    "Interrupt",
    "Row",
    "build_index",
    "check_index",
    "default_index_path",
    "fts_query",
    "index_stats",
    "list_index",
    "platform_data_dir",
    "query_index",
    "rebuild_index",
    "remove_from_index",
    "reset_index",
]

logger = logging.getLogger("perplexed.index")

INDEX_ENV = "PERPLEXED_LOCAL_INDEX"
INDEX_FILENAME = "local-index.sqlite3"
SCHEMA_VERSION = "2"
#: files larger than this are reported and skipped (documents, not data dumps)
MAX_FILE_BYTES = 16 * 1024 * 1024
#: PDFs carry images and fonts: they may be larger
MAX_PDF_BYTES = 64 * 1024 * 1024
#: BM25 column weights: a match in the title counts this much more than one in the body
TITLE_WEIGHT = 4.0
_COMMIT_EVERY = 200
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"  # private-use characters that never occur in indexed text
_SQLITE_HEADER = b"SQLite format 3\x00"
_CJK_COLUMNS = "{cjk_title cjk_body}"

# The roots table comes first, so that it sits on the first pages of the file: a rebuild can still read it
# when later pages are damaged.
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS roots (
    path TEXT PRIMARY KEY,
    raw BLOB,
    kind TEXT NOT NULL,
    follow_links INTEGER NOT NULL DEFAULT 0,
    indexed_at REAL
);
CREATE TABLE IF NOT EXISTS docs (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    url TEXT NOT NULL,
    title TEXT NOT NULL,
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    extractor TEXT NOT NULL,
    indexed_at REAL NOT NULL,
    pages TEXT
);
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
    title, body, cjk_title, cjk_body, tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
"""

ProgressCallback = Callable[[int, int, str], None]
"""``progress(done, total, path)``: called after each candidate file is handled."""


# --- where the index lives --------------------------------------------------------------------------------


def platform_data_dir(
    app: str = "perplexed",
    *,
    platform: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Path:
    """The per-user data folder for ``app``, by the platform's convention, with the standard library only.

    Linux and other Unixes: ``$XDG_DATA_HOME/app`` (default ``~/.local/share/app``); macOS:
    ``~/Library/Application Support/app``; Windows: ``%LOCALAPPDATA%\\app``. The same folders as
    ``platformdirs.user_data_dir(app, appauthor=False)``.
    """
    platform = sys.platform if platform is None else platform
    env = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    if platform.startswith("win"):
        base = env.get("LOCALAPPDATA") or env.get("APPDATA") or str(home / "AppData" / "Local")
        return Path(base) / app
    if platform == "darwin":
        return home / "Library" / "Application Support" / app
    xdg = env.get("XDG_DATA_HOME", "").strip()
    base_path = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".local" / "share"
    return base_path / app


def user_data_dir(app: str = "perplexed") -> Path:
    """The per-user data folder: ``platformdirs`` when installed (the ``cli`` extra), else :func:`platform_data_dir`."""
    try:
        import platformdirs
    except ImportError:
        return platform_data_dir(app)
    return Path(platformdirs.user_data_dir(app, appauthor=False))


def default_index_path() -> Path:
    """Where the local index lives: ``$PERPLEXED_LOCAL_INDEX``, else ``local-index.sqlite3`` in the user data folder."""
    override = os.environ.get(INDEX_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return user_data_dir() / INDEX_FILENAME


def _resolve_index(index: str | os.PathLike[str] | None) -> Path:
    return default_index_path() if index is None else Path(index).expanduser()


# --- building --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileProblem:
    """A file or folder that was not indexed, and why (shown to the user; never raised)."""

    path: str
    reason: str


@dataclass
class IndexReport:
    """What one :func:`build_index` (or :func:`rebuild_index`, :func:`remove_from_index`) run did.

    Paths are absolute; a file name that is not valid UTF-8 shows its bad bytes as ``\\xNN``. ``errors``
    lists bad input (missing folder, unreadable, binary or non-UTF-8 file); ``skipped`` lists files left out
    on purpose (unsupported types, PDFs without the ``pdf`` extra, links leading out of the folder);
    ``missing_roots`` the given paths that could not be indexed at all (not found, unsupported file);
    ``notes`` what else the user should know (an upgraded index, a rebuild).
    """

    index: Path
    roots: list[Path] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[FileProblem] = field(default_factory=list)
    errors: list[FileProblem] = field(default_factory=list)
    missing_roots: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    documents: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (what ``perplexed index --json`` prints)."""
        return {
            "index": str(self.index),
            "roots": [_shown(r) for r in self.roots],
            "added": self.added,
            "updated": self.updated,
            "unchanged": len(self.unchanged),
            "removed": self.removed,
            "skipped": [{"path": p.path, "reason": p.reason} for p in self.skipped],
            "errors": [{"path": p.path, "reason": p.reason} for p in self.errors],
            "notes": self.notes,
            "documents": self.documents,
        }


def _shown(path: str | os.PathLike[str]) -> str:
    """``path`` as text that SQLite, JSON and a terminal accept.

    A file name that is not valid UTF-8 reaches Python with lone surrogates in place of its bad bytes; those
    bytes are written as ``\\xNN``. The result is the file's key in the index, stable from run to run.
    """
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def _as_paths(paths: Any, name: str) -> list[str | os.PathLike[str]]:
    if isinstance(paths, str | os.PathLike):
        return [paths]
    if isinstance(paths, bytes) or not isinstance(paths, Iterable):
        raise ConfigError(f"{name} must be a path or a list of paths, got {type(paths).__name__}")
    items = list(paths)
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise ConfigError(f"{name} must be a path or a list of paths; one item is {item!r}")
    return items


def _is_default(path: Path) -> bool:
    """Whether ``path`` is the per-user index (so that a command needs no ``--index``)."""
    try:
        return os.path.abspath(path) == os.path.abspath(user_data_dir() / INDEX_FILENAME)
    except (OSError, RuntimeError):  # pragma: no cover - no home folder
        return False


def _rebuild_command(path: Path) -> str:
    return "perplexed index --rebuild" + ("" if _is_default(path) else f" --index {path}")


def _corrupt(path: Path, detail: str) -> CorruptIndexError:
    return CorruptIndexError(
        f"the local index {path} is damaged ({detail}); rebuild it from the indexed folders with "
        f"`{_rebuild_command(path)}`",
        path=str(path),
    )


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (11, 26):  # SQLITE_CORRUPT (incl. _VTAB), SQLITE_NOTADB
        return True
    text = str(exc).lower()
    return "malformed" in text or "corrupt" in text or "not a database" in text


def _db_error(path: Path, exc: sqlite3.Error, doing: str) -> ConfigError:
    """A typed error for a failed SQLite call: damaged file (with the remedy), or another failure."""
    if _is_corruption(exc):
        return _corrupt(path, str(exc))
    if "locked" in str(exc).lower() or "busy" in str(exc).lower():
        return ConfigError(f"the local index {path} is busy (another process is writing it): {exc}")
    return ConfigError(f"cannot {doing} the local index {path}: {exc}")


def _check_header(path: Path) -> None:
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


def _quick_check(conn: sqlite3.Connection, path: Path) -> None:
    """SQLite's structural check of every page (tens of ms for a few thousand documents)."""
    rows = conn.execute("PRAGMA quick_check").fetchall()
    if rows != [("ok",)]:
        raise _corrupt(path, "; ".join(str(r[0]) for r in rows[:3]))


def _fts_probe(conn: sqlite3.Connection, path: Path) -> int:
    """The full-text index answers a query and holds a row per document (a few pages read); the document count.

    ``quick_check`` sees damaged pages, not damaged full-text records inside sound pages: this probe reads the
    FTS5 structure record, which every search reads first, and compares the row counts.
    """
    documents = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
    rows = int(conn.execute("SELECT count(*) FROM docs_fts").fetchone()[0])
    if rows != documents:
        raise _corrupt(path, f"{documents} documents but {rows} full-text rows")
    conn.execute("SELECT rowid FROM docs_fts WHERE docs_fts MATCH '\"perplexed\"' LIMIT 1").fetchall()
    return documents


def _schema_version(conn: sqlite3.Connection, path: Path) -> str | None:
    """The index's schema version; None for an empty database; ConfigError when it is something else."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if not tables:
        return None
    row = None
    if {"meta", "docs", "docs_fts"} <= tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise ConfigError(
            f"{path} is not a perplexed local index; choose another file, or delete it and run "
            "`perplexed index PATH` again"
        )
    return str(row[0])


def _newer(path: Path, version: str) -> ConfigError:
    return ConfigError(
        f"the local index {path} has schema version {version}, made by a newer perplexed (this one reads "
        f"version {SCHEMA_VERSION}): upgrade perplexed, or rebuild the index with `{_rebuild_command(path)}`"
    )


def _connect_for_write(path: Path, report: IndexReport | None = None) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the folder for the local index {path}: {exc.strerror or exc}") from None
    if path.exists() and not path.is_file():
        raise ConfigError(f"the local index path {path} exists and is not a file")
    _check_header(path)
    try:
        conn = sqlite3.connect(path, timeout=30)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot open the local index {path}: {exc}") from None
    try:
        _quick_check(conn, path)
        version = _schema_version(conn, path)
        if version is None:
            conn.executescript(_SCHEMA)
        elif version == "1":
            _migrate_v1(conn, path, report)
        elif version != SCHEMA_VERSION:
            raise _newer(path, version)
        else:
            _fts_probe(conn, path)
    except sqlite3.Error as exc:
        conn.close()
        raise _db_error(path, exc, "open") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _infer_roots(paths: Iterable[str]) -> list[str]:
    """The folders a version-1 index was built from (it did not record them): the outermost document folders."""
    roots: set[str] = set()
    for folder in sorted({os.path.dirname(p) for p in paths}, key=len):
        parent, probe = folder, ""
        while parent and parent != probe and parent not in roots:
            parent, probe = os.path.dirname(parent), parent
        if parent not in roots:
            roots.add(folder)
    return sorted(roots)


def _migrate_v1(conn: sqlite3.Connection, path: Path, report: IndexReport | None) -> None:
    """Schema 1 -> 2 in place: the roots table, PDF pages, and the CJK columns (re-tokenized, no file read)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or row[0] != "1":  # another process migrated it meanwhile
            conn.rollback()
            return
        conn.create_function("perplexed_cjk", 1, cjk_terms, deterministic=True)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS roots (path TEXT PRIMARY KEY, raw BLOB, kind TEXT NOT NULL, "
            "follow_links INTEGER NOT NULL DEFAULT 0, indexed_at REAL)"
        )
        if "pages" not in {r[1] for r in conn.execute("PRAGMA table_info(docs)")}:
            conn.execute("ALTER TABLE docs ADD COLUMN pages TEXT")
        updated = conn.execute("SELECT value FROM meta WHERE key = 'updated_at'").fetchone()
        try:
            when: float | None = datetime.fromisoformat(updated[0]).timestamp() if updated else None
        except ValueError:
            when = None
        folders = _infer_roots(r[0] for r in conn.execute("SELECT path FROM docs"))
        conn.executemany(
            "INSERT OR IGNORE INTO roots (path, kind, follow_links, indexed_at) VALUES (?, 'folder', 0, ?)",
            [(folder, when) for folder in folders],
        )
        _copy_roots(conn)
        conn.execute(
            "CREATE VIRTUAL TABLE docs_fts_v2 USING fts5(title, body, cjk_title, cjk_body, "
            "tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        conn.execute(
            "INSERT INTO docs_fts_v2 (rowid, title, body, cjk_title, cjk_body) "
            "SELECT rowid, title, body, perplexed_cjk(title), perplexed_cjk(body) FROM docs_fts"
        )
        conn.execute("DROP TABLE docs_fts")
        conn.execute("ALTER TABLE docs_fts_v2 RENAME TO docs_fts")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))
        count = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    note = (
        f"upgraded the local index {path} to schema {SCHEMA_VERSION} (CJK substring search, folder list); "
        f"its {count} documents were kept"
    )
    logger.info(note)
    if report is not None:
        report.notes.append(note)


@dataclass(frozen=True)
class _Candidate:
    path: Path  # the file as found in the folder (its key and URL)
    target: Path  # what to open: the file, or for a link inside the folder, the file it leads to
    nofollow: bool  # open without following a link (the file was checked not to be one)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


_OUTSIDE = "symbolic link leading out of the indexed folder (not followed; use --follow-links to index it)"


def _walk(root: Path, report: IndexReport, follow_links: bool) -> list[_Candidate]:
    """Candidate files under ``root`` (sorted; hidden files and folders are left out).

    Without ``follow_links``, a link (to a file or a folder) that leads out of ``root`` is left out and
    reported in ``skipped``; links to folders are not descended (their files are found at their own place).
    """
    found: list[_Candidate] = []
    real_root = os.path.realpath(root)
    seen_dirs: set[str] = set()
    pdf = pdf_supported()

    def onerror(exc: OSError) -> None:
        where = _shown(exc.filename) if exc.filename else _shown(root)
        report.errors.append(FileProblem(where, f"cannot read folder: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=follow_links):
        if follow_links:  # a link back up would loop forever
            real = os.path.realpath(dirpath)
            if real in seen_dirs:
                dirnames[:] = []
                continue
            seen_dirs.add(real)
        kept = []
        for d in sorted(dirnames):
            if d.startswith("."):
                continue
            full = os.path.join(dirpath, d)
            if not follow_links and os.path.islink(full) and not _inside(os.path.realpath(full), real_root):
                report.skipped.append(FileProblem(_shown(full), _OUTSIDE))
            kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            kind = kind_of(name)
            if kind is None:
                report.skipped.append(FileProblem(_shown(path), "unsupported file type"))
                continue
            if kind == "pdf" and not pdf:
                report.skipped.append(FileProblem(_shown(path), f"PDF: {PDF_HINT}"))
                continue
            if follow_links:
                found.append(_Candidate(path, path, nofollow=False))
            elif os.path.islink(path) and os.path.exists(path):  # a broken link is reported as unreadable
                target = os.path.realpath(path)
                if not _inside(target, real_root):
                    report.skipped.append(FileProblem(_shown(path), _OUTSIDE))
                    continue
                found.append(_Candidate(path, Path(target), nofollow=True))
            else:
                found.append(_Candidate(path, path, nofollow=True))
    return found


def build_index(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    index: str | os.PathLike[str] | None = None,
    *,
    progress: ProgressCallback | None = None,
    follow_links: bool = False,
) -> IndexReport:
    """Add the documents under each folder in ``paths`` (one folder or file, or several) to the index, or
    bring them up to date.

    ``index`` defaults to :func:`default_index_path`. Markdown, plain text, HTML, reStructuredText and (with
    the ``pdf`` extra) PDF files are indexed, by suffix; other files are listed in ``skipped``. A folder
    indexed before is re-scanned: changed files are re-read, deleted ones dropped, unchanged ones left alone.
    Symbolic links that lead out of a folder are not followed unless ``follow_links`` is true. Bad input is
    reported in the returned :class:`IndexReport`, never raised; :class:`~perplexed.ConfigError` only when
    the index file itself cannot be created or is not a perplexed index, and
    :class:`~perplexed.CorruptIndexError` when it is damaged (rebuild it with :func:`rebuild_index`).
    A file's changes are always committed together (in batches of files), so a run that is interrupted
    leaves a consistent index, and the next run completes it.
    """
    if not isinstance(follow_links, bool):
        raise ConfigError(f"follow_links must be True or False, got {follow_links!r}")
    if progress is not None and not callable(progress):
        raise ConfigError(f"progress must be a callable progress(done, total, path), got {progress!r}")
    targets = _as_paths(paths, "paths")
    index_path = _resolve_index(index)
    report = IndexReport(index=index_path)
    conn = _connect_for_write(index_path, report)
    try:
        _build(conn, targets, report, progress, follow_links)
    except sqlite3.Error as exc:
        raise _db_error(index_path, exc, "update") from None
    finally:
        conn.close()
    return report


def _root_row(conn: sqlite3.Connection, key: str) -> tuple[str, int] | None:
    row = conn.execute("SELECT kind FROM roots WHERE path = ?", (key,)).fetchone()
    return None if row is None else (str(row[0]), _count_under(conn, key))


def _build(
    conn: sqlite3.Connection,
    targets: list[str | os.PathLike[str]],
    report: IndexReport,
    progress: ProgressCallback | None,
    follow_links: bool,
) -> None:
    work: list[tuple[Path, str, str, list[_Candidate]]] = []
    for raw in targets:
        given = _shown(raw)
        root = Path(raw).expanduser()
        if not root.exists():
            known = _root_row(conn, _shown(root.resolve()))
            what = "folder" if known is None or known[0] == "folder" else "file"
            reason = f"{what} not found"
            if known is not None:
                reason += (
                    f" (indexed before: its {known[1]} document{'s' if known[1] != 1 else ''} stay searchable "
                    f"until `perplexed index --remove {given}`)"
                )
            report.errors.append(FileProblem(given, reason))
            report.missing_roots.append(given)
            continue
        root = root.resolve()
        if root.is_dir():
            work.append((root, _shown(root), "folder", _walk(root, report, follow_links)))
            continue
        kind = kind_of(root.name) if root.is_file() else None
        if not root.is_file():
            reason = "not a file or folder"
        elif kind is None:
            reason = "unsupported file type (Markdown, text, HTML, reStructuredText and PDF files are indexed)"
        elif kind == "pdf" and not pdf_supported():
            reason = f"PDF: {PDF_HINT}"
        else:
            work.append((root, _shown(root), "file", [_Candidate(root, root, nofollow=False)]))
            continue
        report.errors.append(FileProblem(given, reason))
        report.missing_roots.append(given)
    total = sum(len(files) for *_, files in work)
    done = 0
    for root, key, kind, files in work:
        report.roots.append(root)
        conn.execute(
            "INSERT INTO roots (path, raw, kind, follow_links, indexed_at) VALUES (?, ?, ?, ?, NULL) "
            "ON CONFLICT (path) DO UPDATE SET raw = excluded.raw, kind = excluded.kind, "
            "follow_links = excluded.follow_links",
            (key, os.fsencode(root), kind, int(follow_links)),
        )
        _copy_roots(conn)
        keyed = [(candidate, _shown(candidate.path)) for candidate in files]
        if kind == "folder":  # first, so that an interrupted run has dropped them already
            _drop_deleted(conn, key, {k for _, k in keyed}, report)
        conn.commit()
        for candidate, file_key in keyed:
            _index_file(conn, candidate, file_key, report)
            done += 1
            if done % _COMMIT_EVERY == 0:
                conn.commit()
            if progress is not None:
                progress(done, total, file_key)
        conn.execute("UPDATE roots SET indexed_at = ? WHERE path = ?", (time.time(), key))
        conn.commit()
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('updated_at', ?)", (datetime.now(UTC).isoformat(),))
    conn.commit()
    report.documents = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _read(candidate: _Candidate, limit: int) -> tuple[bytes, os.stat_result]:
    """The file's bytes (at most ``limit`` + 1) and its stat, from one open file: no link can be swapped in
    between the checks and the read."""
    try:
        fd = os.open(candidate.target, _OPEN_FLAGS | (_NOFOLLOW if candidate.nofollow else 0))
    except OSError as exc:
        if candidate.nofollow and os.path.islink(candidate.target):
            raise DocumentError("became a symbolic link while indexing (not followed)") from None
        raise DocumentError(f"cannot read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise DocumentError("not a regular file")
        try:
            return fh.read(limit + 1), st
        except OSError as exc:
            raise DocumentError(f"cannot read: {exc.strerror or exc}") from None


def _index_file(conn: sqlite3.Connection, candidate: _Candidate, key: str, report: IndexReport) -> None:
    path = candidate.path
    row = conn.execute(
        "SELECT id, size, mtime_ns, sha256, extractor FROM docs WHERE path = ?", (key,)
    ).fetchone()
    current = row is not None and row[4] == EXTRACTOR_VERSION  # else re-read: extraction has changed
    limit = MAX_PDF_BYTES if kind_of(path.name) == "pdf" else MAX_FILE_BYTES
    try:
        st = os.stat(candidate.target)
        if not stat.S_ISREG(st.st_mode):
            raise DocumentError("not a regular file")
        if st.st_size > limit:
            raise DocumentError(f"too large ({st.st_size // (1024 * 1024)} MB; the limit is "
                                f"{limit // (1024 * 1024)} MB)")
        if current and row[1] == st.st_size and row[2] == st.st_mtime_ns:
            report.unchanged.append(key)
            return
        data, st = _read(candidate, limit)
        if len(data) > limit:
            raise DocumentError(f"too large (more than {limit // (1024 * 1024)} MB)")
        digest = hashlib.sha256(data).hexdigest()
        if current and row[3] == digest:  # touched, not changed
            conn.execute("UPDATE docs SET size = ?, mtime_ns = ? WHERE id = ?", (st.st_size, st.st_mtime_ns, row[0]))
            report.unchanged.append(key)
            return
        try:
            doc = extract(data, _shown(path.name))
        except DocumentError:
            raise
        except Exception as exc:  # a parser bug on a hostile file must not stop the run
            raise DocumentError(f"cannot extract its text ({type(exc).__name__}: {exc})") from None
    except OSError as exc:
        problem = f"cannot read: {exc.strerror or exc}"
    except DocumentError as exc:
        problem = str(exc)
    else:
        values = (
            path.as_uri(), doc.title, doc.kind, st.st_size, st.st_mtime_ns, digest, EXTRACTOR_VERSION, time.time(),
            json.dumps(list(doc.pages)) if doc.pages else None,
        )
        if row is None:
            cur = conn.execute(
                "INSERT INTO docs (path, url, title, kind, size, mtime_ns, sha256, extractor, indexed_at, pages) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, *values),
            )
            doc_id = cur.lastrowid
            report.added.append(key)
        else:
            doc_id = row[0]
            conn.execute(
                "UPDATE docs SET url = ?, title = ?, kind = ?, size = ?, mtime_ns = ?, sha256 = ?, extractor = ?, "
                "indexed_at = ?, pages = ? WHERE id = ?",
                (*values, doc_id),
            )
            conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (doc_id,))
            report.updated.append(key)
        conn.execute(
            "INSERT INTO docs_fts (rowid, title, body, cjk_title, cjk_body) VALUES (?, ?, ?, ?, ?)",
            (doc_id, doc.title, doc.text, cjk_terms(doc.title), cjk_terms(doc.text)),
        )
        return
    # A file that cannot be indexed any more must not keep answering with its old text.
    if row is not None:
        _delete(conn, row[0])
        problem += " (its previous version was dropped from the index)"
    report.errors.append(FileProblem(key, problem))


def _delete(conn: sqlite3.Connection, doc_id: int) -> None:
    conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (doc_id,))
    conn.execute("DELETE FROM docs WHERE id = ?", (doc_id,))


def _prefix_range(folder: str) -> tuple[str, str]:
    """[low, high) bounds of the paths under ``folder`` (uses the index on docs.path)."""
    prefix = folder.rstrip(os.sep) + os.sep
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _count_under(conn: sqlite3.Connection, key: str) -> int:
    low, high = _prefix_range(key)
    row = conn.execute(
        "SELECT count(*) FROM docs WHERE path = ? OR (path >= ? AND path < ?)", (key, low, high)
    ).fetchone()
    return int(row[0])


def _drop_deleted(conn: sqlite3.Connection, root: str, keep: set[str], report: IndexReport) -> None:
    low, high = _prefix_range(root)
    rows = conn.execute("SELECT id, path FROM docs WHERE path >= ? AND path < ?", (low, high)).fetchall()
    for doc_id, path in rows:
        if path not in keep:
            _delete(conn, doc_id)
            report.removed.append(path)


# --- managing -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexedFolder:
    """One folder (or single file) indexed into an index, as :func:`list_index` reports it.

    ``documents`` and ``bytes`` (the documents' total size) count the indexed files under it;
    ``indexed_at`` is when its last complete run ended (None: never completed, e.g. interrupted);
    ``exists`` whether it is still there.
    """

    path: str
    kind: str
    documents: int
    bytes: int
    indexed_at: datetime | None
    exists: bool
    follow_links: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "documents": self.documents,
            "bytes": self.bytes,
            "indexed_at": None if self.indexed_at is None else self.indexed_at.isoformat(),
            "exists": self.exists,
            "follow_links": self.follow_links,
        }


@dataclass(frozen=True)
class IndexListing:
    """What an index holds (:func:`list_index`): its folders, document count and file size in bytes."""

    path: Path
    size: int
    documents: int
    folders: list[IndexedFolder]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (what ``perplexed index --list --json`` prints)."""
        return {
            "index": str(self.path),
            "size": self.size,
            "documents": self.documents,
            "folders": [f.to_dict() for f in self.folders],
        }


def _file_size(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-journal"):
        try:
            total += os.stat(f"{path}{suffix}").st_size
        except OSError:
            pass
    return total


def _root_path(key: str, raw: Any) -> str:
    return os.fsdecode(bytes(raw)) if isinstance(raw, bytes) else key


def list_index(index: str | os.PathLike[str] | None = None) -> IndexListing:
    """The folders and files indexed into ``index``, each with its document count, size and last run.

    ConfigError when the index does not exist or is not a perplexed index; CorruptIndexError when damaged.
    """
    path = _resolve_index(index)
    conn = _connect_for_read(path)
    try:
        try:
            roots = conn.execute("SELECT path, raw, kind, follow_links, indexed_at FROM roots ORDER BY path").fetchall()
            folders = []
            for key, raw, kind, follow, indexed_at in roots:
                low, high = _prefix_range(key)
                count, size = conn.execute(
                    "SELECT count(*), coalesce(sum(size), 0) FROM docs WHERE path = ? OR (path >= ? AND path < ?)",
                    (key, low, high),
                ).fetchone()
                folders.append(
                    IndexedFolder(
                        path=key,
                        kind=str(kind),
                        documents=int(count),
                        bytes=int(size),
                        indexed_at=None if indexed_at is None else datetime.fromtimestamp(indexed_at, tz=UTC),
                        exists=os.path.exists(_root_path(key, raw)),
                        follow_links=bool(follow),
                    )
                )
            documents = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
        except sqlite3.Error as exc:
            raise _db_error(path, exc, "read") from None
    finally:
        conn.close()
    return IndexListing(path=path, size=_file_size(path), documents=documents, folders=folders)


def remove_from_index(
    folders: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    index: str | os.PathLike[str] | None = None,
) -> IndexReport:
    """Drop indexed folders (or files) and their documents from ``index``, also folders that no longer exist.

    Documents that another indexed folder also covers stay. ConfigError, before anything is removed, when
    one of ``folders`` is not indexed there (:func:`list_index` shows what is).
    """
    targets = _as_paths(folders, "folders")
    path = _resolve_index(index)
    if not path.is_file():
        raise ConfigError(f"no local index at {path}: nothing to remove")
    report = IndexReport(index=path)
    conn = _connect_for_write(path, report)
    try:
        try:
            known = {r[0]: str(r[1]) for r in conn.execute("SELECT path, kind FROM roots")}
            keys: list[str] = []
            for raw in targets:
                given = Path(raw).expanduser()
                options = [_shown(given.resolve()), _shown(os.path.abspath(given))]
                key = next((k for k in options if k in known), None)
                if key is None:
                    listed = "perplexed index --list" + ("" if _is_default(path) else f" --index {path}")
                    raise ConfigError(f"{_shown(raw)} is not indexed in {path} (`{listed}` shows what is)")
                keys.append(key)
            for key in dict.fromkeys(keys):
                conn.execute("DELETE FROM roots WHERE path = ?", (key,))
                _copy_roots(conn)
                del known[key]
                low, high = _prefix_range(key)
                rows = conn.execute(
                    "SELECT id, path FROM docs WHERE path = ? OR (path >= ? AND path < ?)", (key, low, high)
                ).fetchall()
                for doc_id, doc_path in rows:
                    if any(doc_path == other or (kind == "folder" and _inside(doc_path, other))
                           for other, kind in known.items()):
                        continue
                    _delete(conn, doc_id)
                    report.removed.append(doc_path)
                kept = len(rows) - sum(1 for _, p in rows if p in report.removed)
                if kept:
                    report.notes.append(f"{kept} documents under {key} stay: another indexed folder covers them")
            conn.commit()
            report.documents = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
        except sqlite3.Error as exc:
            raise _db_error(path, exc, "update") from None
    finally:
        conn.close()
    return report


def reset_index(index: str | os.PathLike[str] | None = None) -> int:
    """Delete the index file (an empty index afterwards); returns how many documents it held (0 if unknown).

    Refuses (ConfigError) a file that is not a perplexed index; a damaged index is deleted.
    """
    path = _resolve_index(index)
    if not path.exists():
        return 0
    if not path.is_file():
        raise ConfigError(f"the local index path {path} is not a file")
    _check_header(path)
    documents = 0
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            if _schema_version(conn, path) is not None:
                documents = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:  # damaged: delete it all the same
        pass
    for suffix in ("-journal", "-wal", "-shm", ""):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise ConfigError(f"cannot delete the local index {path}{suffix}: {exc.strerror or exc}") from None
    return documents


def _copy_roots(conn: sqlite3.Connection) -> None:
    """A second copy of the roots, in the meta table (another page): a rebuild still finds the folders when the
    roots table's page is damaged."""
    rows = conn.execute("SELECT path, raw, kind, follow_links FROM roots ORDER BY path").fetchall()
    copy = [[k, raw.hex() if isinstance(raw, bytes) else None, kind, bool(follow)] for k, raw, kind, follow in rows]
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('roots', ?)", (json.dumps(copy),))


def _read_roots(path: Path) -> list[tuple[str, str, bool]] | None:
    """(path, kind, follow_links) of each root, read as far as the file allows; None when unreadable."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error:
        return None
    try:
        try:
            rows = conn.execute("SELECT path, raw, kind, follow_links FROM roots").fetchall()
            return [(_root_path(k, raw), str(kind), bool(follow)) for k, raw, kind, follow in rows]
        except sqlite3.Error:
            pass
        try:  # the copy in the meta table
            row = conn.execute("SELECT value FROM meta WHERE key = 'roots'").fetchone()
            if row is not None:
                return [
                    (_root_path(k, bytes.fromhex(raw) if raw else None), str(kind), bool(follow))
                    for k, raw, kind, follow in json.loads(row[0])
                ]
        except (sqlite3.Error, ValueError, TypeError):
            pass
        try:  # a version-1 index, or a damaged roots table: the folders the documents are in
            docs = [r[0] for r in conn.execute("SELECT path FROM docs")]
            return [(folder, "folder", False) for folder in _infer_roots(docs)]
        except sqlite3.Error:
            return None
    finally:
        conn.close()


def rebuild_index(
    index: str | os.PathLike[str] | None = None,
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] = (),
    *,
    follow_links: bool | None = None,
    progress: ProgressCallback | None = None,
) -> IndexReport:
    """Build ``index`` anew from the folders (and files) indexed into it, plus ``paths``; works on a damaged
    index too (that is what it is for).

    The new index is written beside the old one and replaces it only when complete. Folders that no longer
    exist are reported and left out. ``follow_links`` overrides each folder's own setting. ConfigError when
    the folders cannot be read from the file and no ``paths`` are given.
    """
    if follow_links is not None and not isinstance(follow_links, bool):
        raise ConfigError(f"follow_links must be True, False or None, got {follow_links!r}")
    extra = _as_paths(paths, "paths")
    path = _resolve_index(index)
    if path.exists() and not path.is_file():
        raise ConfigError(f"the local index path {path} exists and is not a file")
    _check_header(path)
    roots = _read_roots(path) if path.exists() else []
    if roots is None and not extra:
        raise ConfigError(
            f"the folders indexed into {path} cannot be read from it; give them: "
            f"`perplexed index --rebuild FOLDER [FOLDER ...]{'' if _is_default(path) else f' --index {path}'}`"
        )
    if not roots and not extra:
        raise ConfigError(f"nothing to rebuild: no folders are indexed in {path} ({_hint(path)})")
    groups: dict[bool, list[str | os.PathLike[str]]] = {}
    for root, _kind, follow in roots or []:
        groups.setdefault(follow if follow_links is None else follow_links, []).append(root)
    for raw in extra:
        groups.setdefault(bool(follow_links), []).append(raw)
    fresh = path.with_name(path.name + ".rebuild")
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(f"{fresh}{suffix}")
        except FileNotFoundError:
            pass
    report = IndexReport(index=path)
    conn = _connect_for_write(fresh, report)
    try:
        for follow, targets in groups.items():
            _build(conn, list(dict.fromkeys(targets)), report, progress, follow)
    except sqlite3.Error as exc:
        conn.close()
        raise _db_error(fresh, exc, "write") from None
    except BaseException:
        conn.close()
        os.unlink(fresh)
        raise
    conn.close()
    for suffix in ("-journal", "-wal", "-shm"):  # the old file's journal must never be applied to the new one
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass
    os.replace(fresh, path)
    report.notes.append(
        f"rebuilt {path} from {len(report.roots)} folder{'s' if len(report.roots) != 1 else ''}"
        + (f"; not found and left out: {', '.join(report.missing_roots)}" if report.missing_roots else "")
    )
    return report


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


def check_index(index: str | os.PathLike[str] | None = None, *, thorough: bool = False) -> IndexCheck:
    """Check that ``index`` (default :func:`default_index_path`) is a sound perplexed index. Never raises
    for a bad index: the answer is in the returned :class:`IndexCheck`.

    Cheap (tens of ms for thousands of documents): SQLite's ``quick_check`` of every page, the schema, the
    document and full-text row counts, and a probe of the full-text index. ``thorough`` adds FTS5's own
    integrity check, which re-reads every indexed term (about as long as a search over every document).
    """
    if not isinstance(thorough, bool):
        raise ConfigError(f"thorough must be True or False, got {thorough!r}")
    started = time.monotonic()
    path = _resolve_index(index)
    opt = "" if _is_default(path) else f" --index {path}"
    documents: int | None = None
    folders: int | None = None
    version: str | None = None

    def done(problem: str | None = None, remedy: str | None = None, exists: bool = True) -> IndexCheck:
        return IndexCheck(
            path=path, exists=exists, ok=problem is None, documents=documents, folders=folders,
            schema_version=version, problem=problem, remedy=remedy, seconds=time.monotonic() - started,
        )

    if not path.exists():
        return done(f"no local index at {path}", f"run `perplexed index FOLDER{opt}`", exists=False)
    if not path.is_file():
        return done(f"the local index path {path} is not a file", "pass the index file with --index FILE")
    try:
        _check_header(path)
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    except (ConfigError, sqlite3.Error) as exc:
        return done(str(exc), "choose another index file with --index FILE, or delete this one")
    rebuild = f"rebuild it from the indexed folders: `{_rebuild_command(path)}`"
    try:
        _quick_check(conn, path)
        version = _schema_version(conn, path)
        if version is None:
            return done(f"{path} is an empty database, not an index yet", f"run `perplexed index FOLDER{opt}`")
        if version not in ("1", SCHEMA_VERSION):
            return done(f"schema version {version} is newer than this perplexed reads ({SCHEMA_VERSION})",
                        "upgrade perplexed, or " + rebuild)
        documents = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
        if version != "1":
            folders = int(conn.execute("SELECT count(*) FROM roots").fetchone()[0])
        _fts_probe(conn, path)
        if thorough:  # a command written as an INSERT: it needs a writable connection (it changes nothing)
            rw = sqlite3.connect(path, timeout=10)
            try:
                rw.execute("INSERT INTO docs_fts (docs_fts, rank) VALUES ('integrity-check', 0)")
            finally:
                rw.close()
    except CorruptIndexError as exc:
        detail = str(exc).removeprefix(f"the local index {path} is damaged (").rsplit("); rebuild it", 1)[0]
        return done(f"damaged ({detail})", rebuild)
    except ConfigError as exc:
        return done(str(exc), "choose another index file with --index FILE, or delete this one")
    except sqlite3.Error as exc:
        if _is_corruption(exc):
            return done(f"damaged ({exc})", rebuild)
        return done(f"cannot read it: {exc}", "try again; if it persists, " + rebuild)
    finally:
        conn.close()
    return done()


# --- reading ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexStats:
    """What an index holds: document count and when it was last updated."""

    path: Path
    documents: int
    updated_at: str | None


def _hint(path: Path) -> str:
    if os.environ.get(INDEX_ENV, "").strip():
        return f"run `perplexed index PATH` (the index path comes from {INDEX_ENV}={path})"
    return "run `perplexed index PATH` to index a folder of documents"


def _connect_for_read(path: Path) -> sqlite3.Connection:
    if path.is_dir():
        raise ConfigError(
            f"the local index {path} is a folder; pass the index file, or index that folder with "
            f"`perplexed index {path} --index FILE` and pass FILE"
        )
    if not path.is_file():
        raise ConfigError(f"no local index at {path}: {_hint(path)}")
    _check_header(path)
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot open the local index {path}: {exc}") from None
    try:
        version = _schema_version(conn, path)
        if version is None:
            raise ConfigError(
                f"{path} is not a perplexed local index; choose another file, or delete it and run "
                "`perplexed index PATH` again"
            )
        if version == "1":  # upgrade it once, in place (no file is read again)
            conn.close()
            _connect_for_write(path).close()
            return _connect_for_read(path)
        if version != SCHEMA_VERSION:
            raise _newer(path, version)
    except sqlite3.Error as exc:
        conn.close()
        raise _db_error(path, exc, "read") from None
    except BaseException:
        conn.close()
        raise
    return conn


def index_stats(index: str | os.PathLike[str] | None = None) -> IndexStats:
    """Document count of an index. ConfigError when it does not exist or is not a perplexed index."""
    path = _resolve_index(index)
    conn = _connect_for_read(path)
    try:
        count = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
        row = conn.execute("SELECT value FROM meta WHERE key = 'updated_at'").fetchone()
    except sqlite3.Error as exc:
        raise _db_error(path, exc, "read") from None
    finally:
        conn.close()
    return IndexStats(path=path, documents=count, updated_at=None if row is None else str(row[0]))


_WORD = re.compile(r"\w+")
_QUOTED = re.compile(r'"([^"]*)"')
_MAX_TERMS = 64
#: common English words left out of free-text queries (unless the query has nothing else)
STOPWORDS = frozenset(
    """a about after all also am an and any are as at be been but by can could did do does for from had has
    have how i if in into is it its me may must my no not of on or our should so than that the their them then there these
    they this those to was we were what when where which while who whom why will with would you your""".split()
)


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _cjk_expr(grams: list[str]) -> str:
    return f'{_CJK_COLUMNS} : "{" ".join(grams)}"'


def _split_cjk(words: list[str]) -> tuple[list[str], list[str]]:
    """(the words' non-CJK parts, their CJK runs)."""
    plain: list[str] = []
    runs: list[str] = []
    for word in words:
        pos = 0
        for run in CJK_RUN.finditer(word):
            if run.start() > pos:
                plain.append(word[pos : run.start()])
            runs.append(run.group())
            pos = run.end()
        if pos < len(word):
            plain.append(word[pos:])
    return plain, runs


def _query_terms(text: str) -> list[tuple[str, str, bool]]:
    """(FTS5 expression, dedupe key, droppable stopword) for each term of a free-text query."""
    terms: list[tuple[str, str, bool]] = []

    def add(words: list[str], phrase: bool) -> None:
        if not any(CJK_RUN.search(w) for w in words):
            joined = " ".join(words)
            terms.append((f'"{joined}"', joined.lower(), not phrase and " " not in joined and joined.lower() in STOPWORDS))
            return
        plain, runs = _split_cjk(words)
        if plain:
            add(plain, phrase)
        for run in runs:  # any substring: a phrase of overlapping bigrams (a single character: itself)
            terms.append((_cjk_expr(_bigrams(run)), run, False))
            if len(run) > 2 and not phrase:  # a longer run also ranks documents holding parts of it
                for gram in dict.fromkeys(_bigrams(run)):
                    terms.append((_cjk_expr([gram]), gram, False))

    for i, part in enumerate(_QUOTED.split(text.replace("\u201c", '"').replace("\u201d", '"'))):
        if i % 2:
            words = _WORD.findall(part)
            if words:
                add(words, True)
            continue
        for chunk in part.split():
            words = _WORD.findall(chunk)
            if words:
                add(words, False)
    return terms


def fts_query(text: str) -> str | None:
    """A safe FTS5 MATCH expression for free text, or None when the text has no searchable words.

    Each whitespace-separated chunk becomes a quoted term (``HTTP/2`` -> ``"HTTP 2"``, a phrase), text in
    double quotes stays a phrase, common English words are left out, and terms are joined with ``OR`` so that
    BM25 ranks the documents matching the most (and rarest) terms first. A run of Chinese, Japanese or Korean
    characters matches as a substring (a phrase of its overlapping bigrams in the CJK columns; one character
    matches itself), and a longer run also matches documents holding some of its bigrams, ranked lower.
    Only quoted words reach FTS5, so no input can raise a syntax error.
    """
    terms = _query_terms(text)
    kept = [t for t in terms if not t[2]] or terms
    unique: dict[str, str] = {}
    for expr, key, _ in kept:
        unique.setdefault(key.lower(), expr)
    if not unique:
        return None
    return " OR ".join(list(unique.values())[:_MAX_TERMS])


def _query_runs(text: str) -> list[str]:
    """The CJK runs of a query, longest first (to find and mark them in a snippet)."""
    runs = dict.fromkeys(m.group() for m in CJK_RUN.finditer(text))
    return sorted(runs, key=len, reverse=True)


@dataclass(frozen=True)
class Row:
    """One search match from the index.

    ``page``: for a PDF, the page (from 1) the snippet comes from; ``duplicates``: other indexed paths with
    the same content (the same file reached through another folder, a second clone, a link), not returned.
    """

    path: str
    url: str
    title: str
    kind: str
    modified: date
    snippet: str
    matches: tuple[str, ...]
    text: str
    bm25: float
    page: int | None = None
    duplicates: tuple[str, ...] = ()


class Interrupt:
    """Lets another thread stop a running query (``sqlite3.Connection.interrupt``), e.g. on cancellation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.cancelled = False

    def attach(self, conn: sqlite3.Connection | None) -> None:
        """Set (or clear) the connection to interrupt; raises InterruptedError when already cancelled."""
        with self._lock:
            if conn is not None and self.cancelled:
                raise InterruptedError("cancelled")
            self._conn = conn

    def cancel(self) -> None:
        """Stop the running query, if any, and any query started afterwards."""
        with self._lock:
            self.cancelled = True
            if self._conn is not None:
                self._conn.interrupt()


def _ns(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()) * 1_000_000_000


def query_index(
    index: str | os.PathLike[str] | None,
    query: str,
    *,
    limit: int = 10,
    after: date | None = None,
    before: date | None = None,
    snippet_tokens: int = 32,
    time_limit: float | None = None,
    interrupt: Interrupt | None = None,
) -> list[Row]:
    """The best ``limit`` documents for ``query``, best first (BM25, title matches weighted up), one per
    distinct content: documents with the same content hash (the same file indexed through another path, a
    second clone, a link) are returned once, the best ranked, with the others in :attr:`Row.duplicates`.

    ``after`` / ``before`` bound the file's modification date (inclusive). ``time_limit`` (seconds) stops a
    runaway query with ``TimeoutError``; ``interrupt`` lets another thread stop it (``InterruptedError``).
    ConfigError when the index is missing, empty or not a perplexed index; CorruptIndexError when damaged.
    """
    path = _resolve_index(index)
    match = fts_query(query)
    conn = _connect_for_read(path)
    try:
        try:
            empty = conn.execute("SELECT NOT EXISTS (SELECT 1 FROM docs)").fetchone()[0]
        except sqlite3.Error as exc:
            raise _db_error(path, exc, "read") from None
        if empty:
            raise ConfigError(f"the local index {path} has no documents: {_hint(path)}")
        if match is None:
            return []
        if time_limit is not None:
            stop_at = time.monotonic() + time_limit
            conn.set_progress_handler(lambda: int(time.monotonic() > stop_at), 200)
        if interrupt is not None:
            interrupt.attach(conn)
        try:
            return _search(conn, match, _query_runs(query), limit, after, before, snippet_tokens)
        except sqlite3.OperationalError as exc:
            if "interrupt" in str(exc).lower():
                if interrupt is not None and interrupt.cancelled:
                    raise InterruptedError("the local search was cancelled") from None
                raise TimeoutError(f"the local search took longer than {time_limit} s") from None
            if _is_corruption(exc):
                raise _corrupt(path, str(exc)) from None
            raise
        except sqlite3.DatabaseError as exc:
            if _is_corruption(exc):
                raise _corrupt(path, str(exc)) from None
            raise
    finally:
        if interrupt is not None:
            interrupt.attach(None)
        conn.close()


def _search(
    conn: sqlite3.Connection,
    match: str,
    runs: list[str],
    limit: int,
    after: date | None,
    before: date | None,
    snippet_tokens: int,
) -> list[Row]:
    # One top-N query (SQLite keeps only the best rows while it ranks), a little deeper than ``limit`` so that
    # duplicates (same content hash) can be set aside; deeper again in the rare case that was not enough.
    sql = (
        "SELECT d.id, d.path, d.url, d.title, d.kind, d.mtime_ns, d.sha256, d.pages, "
        "bm25(docs_fts, ?, 1.0, ?, 1.0) AS score, snippet(docs_fts, 1, ?, ?, '…', ?), docs_fts.body "
        "FROM docs_fts JOIN docs AS d ON d.id = docs_fts.rowid WHERE docs_fts MATCH ?"
    )
    tokens = max(4, min(snippet_tokens, 64))
    params: list[Any] = [TITLE_WEIGHT, TITLE_WEIGHT, _MARK_OPEN, _MARK_CLOSE, tokens, match]
    if after is not None:
        sql += " AND d.mtime_ns >= ?"
        params.append(_ns(after))
    if before is not None:
        sql += " AND d.mtime_ns < ?"
        params.append(_ns(before) + 86_400 * 1_000_000_000)
    sql += " ORDER BY score, d.path LIMIT ?"
    depth = limit + max(5, limit // 2)
    while True:
        found = conn.execute(sql, [*params, depth]).fetchall()
        chosen: dict[str, tuple[Any, ...]] = {}
        duplicates: dict[str, list[str]] = {}
        for r in found:
            sha = r[6]
            if sha in chosen:
                duplicates[sha].append(r[1])
            elif len(chosen) < limit:
                chosen[sha] = r
                duplicates[sha] = []
        if len(chosen) >= limit or len(found) < depth:
            break
        depth *= 4
    rows: list[Row] = []
    for sha, r in chosen.items():
        marked, body = r[9] or "", r[10] or ""
        position: int | None = None
        if runs and _MARK_OPEN not in marked:
            cjk = _cjk_snippet(body, runs, tokens)
            if cjk is not None:
                marked, position = cjk
        rows.append(_row(r[:9], marked, body, position, tuple(duplicates[sha])))
    return rows


def _cjk_snippet(body: str, runs: list[str], tokens: int) -> tuple[str, int] | None:
    """A snippet around the first CJK run of the query found in ``body`` (FTS5 cannot mark bigrams)."""
    candidates = runs + [g for run in runs if len(run) > 2 for g in _bigrams(run)]
    found = [(pos, run) for run in candidates if (pos := body.find(run)) >= 0]
    if not found:
        return None
    pos, run = min(found, key=lambda f: (f[0], -len(f[1])))
    width = max(24, tokens * 3)
    start = max(0, pos - width // 3)
    end = min(len(body), pos + len(run) + width - width // 3)
    piece = body[start:end]
    pattern = "|".join(re.escape(c) for c in sorted(set(candidates), key=len, reverse=True))
    piece = re.sub(pattern, lambda m: f"{_MARK_OPEN}{m.group()}{_MARK_CLOSE}", piece)
    return ("…" if start > 0 else "") + piece + ("…" if end < len(body) else ""), pos


def _page(pages_json: str | None, body: str, marked: str, position: int | None) -> int | None:
    """The PDF page (from 1) the snippet comes from, from the page offsets stored with the document."""
    if not pages_json:
        return None
    try:
        starts = [int(x) for x in json.loads(pages_json)]
    except (ValueError, TypeError):
        return None
    if position is None:
        plain = marked.replace(_MARK_OPEN, "").replace(_MARK_CLOSE, "")
        core = plain.removeprefix("…").removesuffix("…")
        at = body.find(core) if core else -1
        if at < 0:
            first = re.search(f"{_MARK_OPEN}(.*?){_MARK_CLOSE}", marked)
            at = body.find(first.group(1)) if first else -1
        else:
            lead = marked.split(_MARK_OPEN, 1)[0].removeprefix("…") if _MARK_OPEN in marked else ""
            at += len(lead)
        if at < 0:
            return None
        position = at
    return max(1, bisect.bisect_right(starts, position))


def _row(r: tuple[Any, ...], marked: str, body: str, position: int | None, duplicates: tuple[str, ...]) -> Row:
    _id, path, url, title, kind, mtime_ns, _sha, pages, score = r
    matches = tuple(dict.fromkeys(m.lower() for m in re.findall(f"{_MARK_OPEN}(.*?){_MARK_CLOSE}", marked)))
    snippet = " ".join(marked.replace(_MARK_OPEN, "").replace(_MARK_CLOSE, "").split())
    modified = datetime.fromtimestamp(mtime_ns / 1_000_000_000, tz=UTC).date()
    return Row(
        path=path,
        url=url,
        title=title,
        kind=kind,
        modified=modified,
        snippet=snippet,
        matches=matches,
        text=body,
        bm25=float(score),
        page=_page(pages, body, marked, position),
        duplicates=duplicates,
    )
