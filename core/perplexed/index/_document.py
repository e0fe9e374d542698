"""One indexed document's full text by its ``file://`` URL (what :func:`perplexed.fetch` answers for such a URL).

Only the index is read, never the file behind the URL: a ``file://`` URL that is not an indexed document is None.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from perplexed.index._db import connect_for_read, db_error
from perplexed.index._location import IndexPath, resolve_index

__all__ = ["IndexedDocument", "indexed_document"]


@dataclass(frozen=True)
class IndexedDocument:
    url: str
    title: str
    kind: str
    text: str


def indexed_document(url: str, index: IndexPath = None) -> IndexedDocument | None:
    """The indexed document whose ``file://`` URL is ``url`` (a ``#page=N`` fragment is ignored), or None."""
    path = resolve_index(index)
    if not path.exists():
        return None
    bare = url.split("#", 1)[0]
    conn = connect_for_read(path)
    try:
        try:
            row = conn.execute(
                "SELECT d.url, d.title, d.kind, f.body FROM docs d JOIN docs_fts f ON f.rowid = d.id "
                "WHERE d.url = ? LIMIT 1",
                (bare,),
            ).fetchone()
        except sqlite3.Error as exc:
            raise db_error(path, exc, "read") from None
    finally:
        conn.close()
    if row is None:
        return None
    return IndexedDocument(url=str(row[0]), title=str(row[1] or ""), kind=str(row[2] or "text"), text=str(row[3] or ""))
