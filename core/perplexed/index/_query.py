"""Searching an index: :func:`query_index` (BM25, one hit per distinct content, snippets, PDF pages)."""

from __future__ import annotations

import bisect
import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from perplexed._errors import ConfigError
from perplexed.index._db import connect_for_read, corrupt, db_error, is_corruption
from perplexed.index._location import IndexPath, hint, resolve_index
from perplexed.index._terms import bigrams, fts_query, query_runs

#: BM25 column weights: a match in the title counts this much more than one in the body
TITLE_WEIGHT = 4.0
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"  # private-use characters that never occur in indexed text
_MARKED = re.compile(f"{_MARK_OPEN}(.*?){_MARK_CLOSE}")


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
    index: IndexPath,
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
    path = resolve_index(index)
    match = fts_query(query)
    conn = connect_for_read(path)
    try:
        try:
            empty = conn.execute("SELECT NOT EXISTS (SELECT 1 FROM docs)").fetchone()[0]
        except sqlite3.Error as exc:
            raise db_error(path, exc, "read") from None
        if empty:
            raise ConfigError(f"the local index {path} has no documents: {hint(path)}")
        if match is None:
            return []
        if time_limit is not None:
            stop_at = time.monotonic() + time_limit
            conn.set_progress_handler(lambda: int(time.monotonic() > stop_at), 200)
        with _stoppable(conn, interrupt, time_limit, path):
            return _search(conn, match, query_runs(query), limit, after, before, snippet_tokens)
    finally:
        conn.close()


@contextmanager
def _stoppable(
    conn: sqlite3.Connection, interrupt: Interrupt | None, time_limit: float | None, path: Path
) -> Iterator[None]:
    """Run a query that ``interrupt`` (or the time limit) may stop: its errors as typed errors."""
    try:
        if interrupt is not None:
            interrupt.attach(conn)
        yield
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc).lower():
            if interrupt is not None and interrupt.cancelled:
                raise InterruptedError("the local search was cancelled") from None
            raise TimeoutError(f"the local search took longer than {time_limit} s") from None
        if is_corruption(exc):
            raise corrupt(path, str(exc)) from None
        raise
    except sqlite3.DatabaseError as exc:
        if is_corruption(exc):
            raise corrupt(path, str(exc)) from None
        raise
    finally:
        if interrupt is not None:
            interrupt.attach(None)


def _search(
    conn: sqlite3.Connection,
    match: str,
    runs: list[str],
    limit: int,
    after: date | None,
    before: date | None,
    snippet_tokens: int,
) -> list[Row]:
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
    rows: list[Row] = []
    for r, duplicates in _distinct(conn, sql, params, limit):
        marked, body = r[9] or "", r[10] or ""
        position: int | None = None
        if runs and _MARK_OPEN not in marked:
            cjk = _cjk_snippet(body, runs, tokens)
            if cjk is not None:
                marked, position = cjk
        rows.append(_row(r[:9], marked, body, position, duplicates))
    return rows


def _distinct(
    conn: sqlite3.Connection, sql: str, params: list[Any], limit: int
) -> list[tuple[tuple[Any, ...], tuple[str, ...]]]:
    """The best ``limit`` rows with distinct content hashes, each with the paths of its duplicates.

    One top-N query (SQLite keeps only the best rows while it ranks), a little deeper than ``limit`` so that
    duplicates (same content hash) can be set aside; deeper again in the rare case that was not enough.
    """
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
            return [(r, tuple(duplicates[sha])) for sha, r in chosen.items()]
        depth *= 4


def _cjk_snippet(body: str, runs: list[str], tokens: int) -> tuple[str, int] | None:
    """A snippet around the first CJK run of the query found in ``body`` (FTS5 cannot mark bigrams)."""
    candidates = runs + [g for run in runs if len(run) > 2 for g in bigrams(run)]
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


def _unmarked(marked: str) -> str:
    return marked.replace(_MARK_OPEN, "").replace(_MARK_CLOSE, "")


def _snippet_position(body: str, marked: str) -> int | None:
    """Where in ``body`` the snippet's first match is (None when it cannot be found)."""
    core = _unmarked(marked).removeprefix("…").removesuffix("…")
    at = body.find(core) if core else -1
    if at < 0:
        first = _MARKED.search(marked)
        at = body.find(first.group(1)) if first else -1
    else:
        lead = marked.split(_MARK_OPEN, 1)[0].removeprefix("…") if _MARK_OPEN in marked else ""
        at += len(lead)
    return None if at < 0 else at


def _page(pages_json: str | None, body: str, marked: str, position: int | None) -> int | None:
    """The PDF page (from 1) the snippet comes from, from the page offsets stored with the document."""
    if not pages_json:
        return None
    try:
        starts = [int(x) for x in json.loads(pages_json)]
    except (ValueError, TypeError):
        return None
    if position is None:
        position = _snippet_position(body, marked)
        if position is None:
            return None
    return max(1, bisect.bisect_right(starts, position))


def _row(r: tuple[Any, ...], marked: str, body: str, position: int | None, duplicates: tuple[str, ...]) -> Row:
    _id, path, url, title, kind, mtime_ns, _sha, pages, score = r
    matches = tuple(dict.fromkeys(m.lower() for m in _MARKED.findall(marked)))
    snippet = " ".join(_unmarked(marked).split())
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
