"""Upgrading an index in place: schema 1 -> 2 (the roots table, PDF pages, the CJK columns)."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

from perplexed._logs import get_logger
from perplexed.index._report import IndexReport
from perplexed.index._schema import (
    FTS_TABLE,
    ROOTS_TABLE,
    SCHEMA_VERSION,
    copy_roots,
    doc_count,
    infer_roots,
)

logger = get_logger("perplexed.index")


def migrate_v1(conn: sqlite3.Connection, path: Path, report: IndexReport | None) -> None:
    """Schema 1 -> 2 in place: the roots table, PDF pages, and the CJK columns (re-tokenized, no file read)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or row[0] != "1":  # another process migrated it meanwhile
            conn.rollback()
            return
        _add_roots(conn)
        _retokenize(conn)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))
        count = doc_count(conn)
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


def _add_roots(conn: sqlite3.Connection) -> None:
    """The roots table (a version-1 index did not record its folders: they are inferred) and the pages column."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS {ROOTS_TABLE}")
    if "pages" not in {r[1] for r in conn.execute("PRAGMA table_info(docs)")}:
        conn.execute("ALTER TABLE docs ADD COLUMN pages TEXT")
    updated = conn.execute("SELECT value FROM meta WHERE key = 'updated_at'").fetchone()
    try:
        when: float | None = datetime.fromisoformat(updated[0]).timestamp() if updated else None
    except ValueError:
        when = None
    folders = infer_roots(r[0] for r in conn.execute("SELECT path FROM docs"))
    conn.executemany(
        "INSERT OR IGNORE INTO roots (path, kind, follow_links, indexed_at) VALUES (?, 'folder', 0, ?)",
        [(folder, when) for folder in folders],
    )
    copy_roots(conn)


def _retokenize(conn: sqlite3.Connection) -> None:
    """The full-text table again, with the CJK columns filled from the stored text."""
    from perplexed.extract._doctext import cjk_terms  # the text tools (html.parser too): for a migration only

    conn.create_function("perplexed_cjk", 1, cjk_terms, deterministic=True)
    conn.execute(f"CREATE VIRTUAL TABLE docs_fts_v2 USING {FTS_TABLE}")
    conn.execute(
        "INSERT INTO docs_fts_v2 (rowid, title, body, cjk_title, cjk_body) "
        "SELECT rowid, title, body, perplexed_cjk(title), perplexed_cjk(body) FROM docs_fts"
    )
    conn.execute("DROP TABLE docs_fts")
    conn.execute("ALTER TABLE docs_fts_v2 RENAME TO docs_fts")
