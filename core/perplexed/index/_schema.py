"""The index's tables (schema version 2), and the small queries over them that several modules share.

One file holds a ``meta`` table (schema version, last update, a copy of the roots), ``roots`` (the folders and
single files indexed, with their raw path bytes), ``docs`` (one row per document: path, URL, title, size,
modification time, content hash, PDF page offsets) and ``docs_fts``, the FTS5 table (title and body, and the
same as CJK bigrams and unigrams in ``cjk_title`` / ``cjk_body``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from typing import Any

SCHEMA_VERSION = "2"
#: the columns and tokenizer of the full-text table (also used to re-create it when upgrading)
FTS_TABLE = "fts5(title, body, cjk_title, cjk_body, tokenize = 'porter unicode61 remove_diacritics 2')"
ROOTS_TABLE = (
    "roots (path TEXT PRIMARY KEY, raw BLOB, kind TEXT NOT NULL, follow_links INTEGER NOT NULL DEFAULT 0, "
    "indexed_at REAL)"
)

# The roots table comes first, so that it sits on the first pages of the file: a rebuild can still read it
# when later pages are damaged.
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {ROOTS_TABLE};
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
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING {FTS_TABLE};
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
"""

#: the documents at a root: the file itself, or every path under the folder (uses the index on docs.path)
UNDER = "(path = ? OR (path >= ? AND path < ?))"


def prefix_range(folder: str) -> tuple[str, str]:
    """[low, high) bounds of the paths under ``folder`` (uses the index on docs.path)."""
    prefix = folder.rstrip(os.sep) + os.sep
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def under(key: str) -> tuple[str, str, str]:
    """The parameters of :data:`UNDER` for the root ``key``."""
    return (key, *prefix_range(key))


def doc_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])


def count_under(conn: sqlite3.Connection, key: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM docs WHERE {UNDER}", under(key)).fetchone()[0])


def delete_doc(conn: sqlite3.Connection, doc_id: int) -> None:
    conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (doc_id,))
    conn.execute("DELETE FROM docs WHERE id = ?", (doc_id,))


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


# --- roots: the folders and files indexed --------------------------------------------------------------


def root_path(key: str, raw: Any) -> str:
    """The root's real path: its raw bytes when recorded (a name that is not UTF-8), else its key."""
    return os.fsdecode(bytes(raw)) if isinstance(raw, bytes) else key


def copy_roots(conn: sqlite3.Connection) -> None:
    """A second copy of the roots, in the meta table (another page): a rebuild still finds the folders when the
    roots table's page is damaged."""
    rows = conn.execute("SELECT path, raw, kind, follow_links FROM roots ORDER BY path").fetchall()
    copy = [[k, raw.hex() if isinstance(raw, bytes) else None, kind, bool(follow)] for k, raw, kind, follow in rows]
    set_meta(conn, "roots", json.dumps(copy))


def infer_roots(paths: Iterable[str]) -> list[str]:
    """The folders a version-1 index was built from (it did not record them): the outermost document folders."""
    roots: set[str] = set()
    for folder in sorted({os.path.dirname(p) for p in paths}, key=len):
        parent, probe = folder, ""
        while parent and parent != probe and parent not in roots:
            parent, probe = os.path.dirname(parent), parent
        if parent not in roots:
            roots.add(folder)
    return sorted(roots)


def read_roots(conn: sqlite3.Connection) -> list[tuple[str, str, bool]] | None:
    """(path, kind, follow_links) of each root, read as far as the file allows; None when unreadable.

    The roots table; else its copy in the meta table; else (a version-1 index, or both damaged) the folders
    the documents are in.
    """
    try:
        rows = conn.execute("SELECT path, raw, kind, follow_links FROM roots").fetchall()
        return [(root_path(k, raw), str(kind), bool(follow)) for k, raw, kind, follow in rows]
    except sqlite3.Error:
        pass
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'roots'").fetchone()
        if row is not None:
            return [
                (root_path(k, bytes.fromhex(raw) if raw else None), str(kind), bool(follow))
                for k, raw, kind, follow in json.loads(row[0])
            ]
    except (sqlite3.Error, ValueError, TypeError):
        pass
    try:
        docs = [r[0] for r in conn.execute("SELECT path FROM docs")]
        return [(folder, "folder", False) for folder in infer_roots(docs)]
    except sqlite3.Error:
        return None
