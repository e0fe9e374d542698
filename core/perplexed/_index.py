"""The local full-text index: one SQLite file with an FTS5 table (standard library only).

:func:`build_index` adds folders of documents to an index and keeps it up to date incrementally: unchanged
files are skipped by size and modification time (then by content hash), changed files are re-read, and
files deleted from an indexed folder are dropped. A bad file (binary, not UTF-8, unreadable) or a missing
folder is reported in the :class:`IndexReport` and never stops the run.

:func:`query_index` runs a BM25-ranked search with snippets; :func:`fts_query` turns free text into a safe
FTS5 query (every term is quoted, so punctuation and FTS5 operators in user input never raise).

Connections are opened per call and closed before returning: ``sqlite3`` objects belong to one thread, and
the provider runs queries in worker threads.
"""

from __future__ import annotations

import hashlib
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

from ._doctext import EXTRACTOR_VERSION, DocumentError, extract, kind_of
from ._errors import ConfigError

__all__ = [
    "INDEX_ENV",
    "FileProblem",
    "IndexReport",
    "IndexStats",
    "Interrupt",
    "Row",
    "build_index",
    "default_index_path",
    "fts_query",
    "index_stats",
    "platform_data_dir",
    "query_index",
]

INDEX_ENV = "PERPLEXED_LOCAL_INDEX"
INDEX_FILENAME = "local-index.sqlite3"
SCHEMA_VERSION = "1"
#: files larger than this are reported and skipped (documents, not data dumps)
MAX_FILE_BYTES = 16 * 1024 * 1024
#: BM25 column weights: a match in the title counts this much more than one in the body
TITLE_WEIGHT = 4.0
_COMMIT_EVERY = 200
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"  # private-use characters that never occur in indexed text

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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
    indexed_at REAL NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
    title, body, tokenize = 'porter unicode61 remove_diacritics 2'
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
    """What one :func:`build_index` run did. Paths are absolute.

    ``errors`` lists bad input (missing folder, unreadable, binary or non-UTF-8 file); ``skipped`` lists
    files of unsupported types; ``missing_roots`` the given folders that do not exist or are not folders.
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
    documents: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (what ``perplexed index --json`` prints)."""
        return {
            "index": str(self.index),
            "roots": [str(r) for r in self.roots],
            "added": self.added,
            "updated": self.updated,
            "unchanged": len(self.unchanged),
            "removed": self.removed,
            "skipped": [{"path": p.path, "reason": p.reason} for p in self.skipped],
            "errors": [{"path": p.path, "reason": p.reason} for p in self.errors],
            "documents": self.documents,
        }


def _connect_for_write(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the folder for the local index {path}: {exc.strerror or exc}") from None
    if path.exists() and not path.is_file():
        raise ConfigError(f"the local index path {path} exists and is not a file")
    try:
        conn = sqlite3.connect(path, timeout=30)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot open the local index {path}: {exc}") from None
    try:
        _check_schema(conn, path, creating=True)
        conn.executescript(_SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


def _check_schema(conn: sqlite3.Connection, path: Path, *, creating: bool) -> None:
    """ConfigError unless ``conn`` is a perplexed index of this schema (or, when ``creating``, empty)."""
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if creating and not tables:
            return
        if "meta" not in tables or "docs" not in tables or "docs_fts" not in tables:
            raise ConfigError(
                f"{path} is not a perplexed local index; choose another file, or delete it and run "
                "`perplexed index PATH` again"
            )
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise ConfigError(
            f"{path} is not a perplexed local index ({exc}); delete it and run `perplexed index PATH` again"
        ) from None
    if row is None or row[0] != SCHEMA_VERSION:
        found = "unknown" if row is None else row[0]
        raise ConfigError(
            f"the local index {path} has schema version {found}, this perplexed needs {SCHEMA_VERSION}: "
            "delete it and run `perplexed index PATH` again"
        )


def _walk(root: Path, report: IndexReport) -> list[Path]:
    """Candidate files under ``root`` (sorted; hidden files and folders are left out)."""
    found: list[Path] = []

    def onerror(exc: OSError) -> None:
        report.errors.append(FileProblem(str(exc.filename or root), f"cannot read folder: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            if kind_of(name) is None:
                report.skipped.append(FileProblem(str(path), "unsupported file type"))
                continue
            found.append(path)
    return found


def build_index(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    index: str | os.PathLike[str] | None = None,
    *,
    progress: ProgressCallback | None = None,
) -> IndexReport:
    """Add the documents under each folder in ``paths`` (one folder or several) to the index, or bring them
    up to date.

    ``index`` defaults to :func:`default_index_path`. Markdown, plain text, HTML and reStructuredText files
    are indexed (by suffix); other files are listed in ``skipped``. A folder indexed before is re-scanned:
    changed files are re-read, deleted ones dropped, unchanged ones left alone. Bad input is reported in the
    returned :class:`IndexReport`, never raised; :class:`~perplexed.ConfigError` only when the index file
    itself cannot be created or is not a perplexed index.
    """
    index_path = _resolve_index(index)
    report = IndexReport(index=index_path)
    work: list[tuple[Path, list[Path]]] = []
    roots: list[str | os.PathLike[str]] = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    for raw in roots:
        given = str(raw)
        root = Path(raw).expanduser()
        if not root.exists():
            report.errors.append(FileProblem(given, "folder not found"))
            report.missing_roots.append(given)
            continue
        if not root.is_dir():
            report.errors.append(FileProblem(given, "not a folder (give the folder that holds the documents)"))
            report.missing_roots.append(given)
            continue
        root = root.resolve()
        report.roots.append(root)
        work.append((root, _walk(root, report)))
    conn = _connect_for_write(index_path)
    try:
        total = sum(len(files) for _, files in work)
        done = 0
        for root, files in work:
            seen: set[str] = set()
            for path in files:
                _index_file(conn, path, report, seen)
                done += 1
                if done % _COMMIT_EVERY == 0:
                    conn.commit()
                if progress is not None:
                    progress(done, total, str(path))
            _drop_deleted(conn, root, seen, report)
            conn.commit()
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('updated_at', ?)", (datetime.now(UTC).isoformat(),)
        )
        conn.commit()
        report.documents = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
    finally:
        conn.close()
    return report


def _index_file(conn: sqlite3.Connection, path: Path, report: IndexReport, seen: set[str]) -> None:
    key = str(path)
    row = conn.execute(
        "SELECT id, size, mtime_ns, sha256, extractor FROM docs WHERE path = ?", (key,)
    ).fetchone()
    current = row is not None and row[4] == EXTRACTOR_VERSION  # else re-read: extraction has changed
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise DocumentError("not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise DocumentError(f"too large ({st.st_size // (1024 * 1024)} MB; the limit is "
                                f"{MAX_FILE_BYTES // (1024 * 1024)} MB)")
        if current and row[1] == st.st_size and row[2] == st.st_mtime_ns:
            seen.add(key)
            report.unchanged.append(key)
            return
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise DocumentError(f"cannot read: {exc.strerror or exc}") from None
        digest = hashlib.sha256(data).hexdigest()
        if current and row[3] == digest:  # touched, not changed
            conn.execute("UPDATE docs SET size = ?, mtime_ns = ? WHERE id = ?", (st.st_size, st.st_mtime_ns, row[0]))
            seen.add(key)
            report.unchanged.append(key)
            return
        doc = extract(data, path.name)
    except OSError as exc:
        problem = f"cannot read: {exc.strerror or exc}"
    except DocumentError as exc:
        problem = str(exc)
    else:
        values = (
            path.as_uri(), doc.title, doc.kind, st.st_size, st.st_mtime_ns, digest, EXTRACTOR_VERSION, time.time()
        )
        if row is None:
            cur = conn.execute(
                "INSERT INTO docs (path, url, title, kind, size, mtime_ns, sha256, extractor, indexed_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, *values),
            )
            doc_id = cur.lastrowid
            report.added.append(key)
        else:
            doc_id = row[0]
            conn.execute(
                "UPDATE docs SET url = ?, title = ?, kind = ?, size = ?, mtime_ns = ?, sha256 = ?, extractor = ?, "
                "indexed_at = ? WHERE id = ?",
                (*values, doc_id),
            )
            conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (doc_id,))
            report.updated.append(key)
        conn.execute("INSERT INTO docs_fts (rowid, title, body) VALUES (?, ?, ?)", (doc_id, doc.title, doc.text))
        seen.add(key)
        return
    # A file that cannot be indexed any more must not keep answering with its old text.
    if row is not None:
        _delete(conn, row[0])
        problem += " (its previous version was dropped from the index)"
    report.errors.append(FileProblem(key, problem))
    seen.add(key)  # reported once, as an error, not again as "removed"


def _delete(conn: sqlite3.Connection, doc_id: int) -> None:
    conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (doc_id,))
    conn.execute("DELETE FROM docs WHERE id = ?", (doc_id,))


def _drop_deleted(conn: sqlite3.Connection, root: Path, seen: set[str], report: IndexReport) -> None:
    prefix = str(root).rstrip(os.sep) + os.sep
    rows = conn.execute(
        "SELECT id, path FROM docs WHERE substr(path, 1, ?) = ?", (len(prefix), prefix)
    ).fetchall()
    for doc_id, path in rows:
        if path not in seen:
            _delete(conn, doc_id)
            report.removed.append(path)


# --- reading ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexStats:
    """What an index holds: document count and the folders indexed into it."""

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
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot open the local index {path}: {exc}") from None
    try:
        _check_schema(conn, path, creating=False)
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


def fts_query(text: str) -> str | None:
    """A safe FTS5 MATCH expression for free text, or None when the text has no searchable words.

    Each whitespace-separated chunk becomes a quoted term (``HTTP/2`` -> ``"HTTP 2"``, a phrase), text in
    double quotes stays a phrase, common English words are left out, and terms are joined with ``OR`` so that
    BM25 ranks the documents matching the most (and rarest) terms first. Only quoted words reach FTS5, so no
    input can raise a syntax error.
    """
    terms: list[tuple[str, bool]] = []  # (term, is a user phrase)
    for i, part in enumerate(_QUOTED.split(text.replace("\u201c", '"').replace("\u201d", '"'))):
        if i % 2:
            words = _WORD.findall(part)
            if words:
                terms.append((" ".join(words), True))
            continue
        for chunk in part.split():
            words = _WORD.findall(chunk)
            if words:
                terms.append((" ".join(words), False))
    kept = [t for t, phrase in terms if phrase or " " in t or t.lower() not in STOPWORDS] or [t for t, _ in terms]
    unique: dict[str, str] = {}
    for term in kept:
        unique.setdefault(term.lower(), term)
    if not unique:
        return None
    return " OR ".join(f'"{term}"' for term in list(unique.values())[:_MAX_TERMS])


@dataclass(frozen=True)
class Row:
    """One search match from the index."""

    path: str
    url: str
    title: str
    kind: str
    modified: date
    snippet: str
    matches: tuple[str, ...]
    text: str
    bm25: float


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
    """The best ``limit`` documents for ``query``, best first (BM25, title matches weighted up).

    ``after`` / ``before`` bound the file's modification date (inclusive). ``time_limit`` (seconds) stops a
    runaway query with ``TimeoutError``; ``interrupt`` lets another thread stop it (``InterruptedError``).
    ConfigError when the index is missing, empty or not a perplexed index.
    """
    path = _resolve_index(index)
    match = fts_query(query)
    conn = _connect_for_read(path)
    try:
        if conn.execute("SELECT NOT EXISTS (SELECT 1 FROM docs)").fetchone()[0]:
            raise ConfigError(f"the local index {path} has no documents: {_hint(path)}")
        if match is None:
            return []
        if time_limit is not None:
            stop_at = time.monotonic() + time_limit
            conn.set_progress_handler(lambda: int(time.monotonic() > stop_at), 200)
        if interrupt is not None:
            interrupt.attach(conn)
        sql = (
            "SELECT d.path, d.url, d.title, d.kind, d.mtime_ns, "
            "snippet(docs_fts, 1, ?, ?, '…', ?), bm25(docs_fts, ?, 1.0) AS score, docs_fts.body "
            "FROM docs_fts JOIN docs AS d ON d.id = docs_fts.rowid WHERE docs_fts MATCH ?"
        )
        params: list[Any] = [_MARK_OPEN, _MARK_CLOSE, max(4, min(snippet_tokens, 64)), TITLE_WEIGHT, match]
        if after is not None:
            sql += " AND d.mtime_ns >= ?"
            params.append(_ns(after))
        if before is not None:
            sql += " AND d.mtime_ns < ?"
            params.append(_ns(before) + 86_400 * 1_000_000_000)
        sql += " ORDER BY score LIMIT ?"
        params.append(limit)
        try:
            rows = conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if "interrupt" in str(exc).lower():
                if interrupt is not None and interrupt.cancelled:
                    raise InterruptedError("the local search was cancelled") from None
                raise TimeoutError(f"the local search took longer than {time_limit} s") from None
            raise
    finally:
        if interrupt is not None:
            interrupt.attach(None)
        conn.close()
    return [_row(r) for r in rows]


def _row(r: tuple[Any, ...]) -> Row:
    path, url, title, kind, mtime_ns, marked, score, body = r
    matches = tuple(dict.fromkeys(m.lower() for m in re.findall(f"{_MARK_OPEN}(.*?){_MARK_CLOSE}", marked or "")))
    snippet = " ".join((marked or "").replace(_MARK_OPEN, "").replace(_MARK_CLOSE, "").split())
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
    )
