"""Managing an index: :func:`list_index`, :func:`remove_from_index`, :func:`rebuild_index`, :func:`reset_index`."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perplexed._errors import ConfigError
from perplexed.index._build import build
from perplexed.index._db import (
    check_header,
    connect_for_read,
    connect_for_write,
    db_error,
    open_ro,
    schema_version,
)
from perplexed.index._location import (
    IndexPath,
    PathsArg,
    as_paths,
    hint,
    index_option,
    inside,
    resolve_index,
    shown,
    unlink_all,
)
from perplexed.index._report import IndexReport, ProgressCallback
from perplexed.index._schema import UNDER, copy_roots, delete_doc, doc_count, read_roots, root_path, under


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


def list_index(index: IndexPath = None) -> IndexListing:
    """The folders and files indexed into ``index``, each with its document count, size and last run.

    ConfigError when the index does not exist or is not a perplexed index; CorruptIndexError when damaged.
    """
    path = resolve_index(index)
    conn = connect_for_read(path)
    try:
        roots = conn.execute("SELECT path, raw, kind, follow_links, indexed_at FROM roots ORDER BY path").fetchall()
        folders = [_folder(conn, *root) for root in roots]
        documents = doc_count(conn)
    except sqlite3.Error as exc:
        raise db_error(path, exc, "read") from None
    finally:
        conn.close()
    return IndexListing(path=path, size=_file_size(path), documents=documents, folders=folders)


def _folder(conn: sqlite3.Connection, key: str, raw: Any, kind: Any, follow: Any, indexed_at: Any) -> IndexedFolder:
    count, size = conn.execute(
        f"SELECT count(*), coalesce(sum(size), 0) FROM docs WHERE {UNDER}", under(key)
    ).fetchone()
    return IndexedFolder(
        path=key,
        kind=str(kind),
        documents=int(count),
        bytes=int(size),
        indexed_at=None if indexed_at is None else datetime.fromtimestamp(indexed_at, tz=UTC),
        exists=os.path.exists(root_path(key, raw)),
        follow_links=bool(follow),
    )


def remove_from_index(folders: PathsArg, index: IndexPath = None) -> IndexReport:
    """Drop indexed folders (or files) and their documents from ``index``, also folders that no longer exist.

    Documents that another indexed folder also covers stay. ConfigError, before anything is removed, when
    one of ``folders`` is not indexed there (:func:`list_index` shows what is).
    """
    targets = as_paths(folders, "folders")
    path = resolve_index(index)
    if not path.is_file():
        raise ConfigError(f"no local index at {path}: nothing to remove")
    report = IndexReport(index=path)
    conn = connect_for_write(path, report)
    try:
        known = {r[0]: str(r[1]) for r in conn.execute("SELECT path, kind FROM roots")}
        keys = [_root_key(raw, known, path) for raw in targets]
        for key in dict.fromkeys(keys):
            _remove_root(conn, key, known, report)
        conn.commit()
        report.documents = doc_count(conn)
    except sqlite3.Error as exc:
        raise db_error(path, exc, "update") from None
    finally:
        conn.close()
    return report


def _root_key(raw: str | os.PathLike[str], known: dict[str, str], path: Path) -> str:
    """The indexed root a given path names; ConfigError when it is not indexed."""
    given = Path(raw).expanduser()
    options = [shown(given.resolve()), shown(os.path.abspath(given))]
    key = next((k for k in options if k in known), None)
    if key is None:
        listed = "perplexed index --list" + index_option(path)
        raise ConfigError(f"{shown(raw)} is not indexed in {path} (`{listed}` shows what is)")
    return key


def _remove_root(conn: sqlite3.Connection, key: str, known: dict[str, str], report: IndexReport) -> None:
    """Drop the root ``key`` and its documents, but those another root in ``known`` covers."""
    conn.execute("DELETE FROM roots WHERE path = ?", (key,))
    copy_roots(conn)
    del known[key]
    rows = conn.execute(f"SELECT id, path FROM docs WHERE {UNDER}", under(key)).fetchall()
    for doc_id, doc_path in rows:
        if any(doc_path == other or (kind == "folder" and inside(doc_path, other)) for other, kind in known.items()):
            continue
        delete_doc(conn, doc_id)
        report.removed.append(doc_path)
    kept = len(rows) - sum(1 for _, p in rows if p in report.removed)
    if kept:
        report.notes.append(f"{kept} documents under {key} stay: another indexed folder covers them")


def reset_index(index: IndexPath = None) -> int:
    """Delete the index file (an empty index afterwards); returns how many documents it held (0 if unknown).

    Refuses (ConfigError) a file that is not a perplexed index; a damaged index is deleted.
    """
    path = resolve_index(index)
    if not path.exists():
        return 0
    if not path.is_file():
        raise ConfigError(f"the local index path {path} is not a file")
    check_header(path)
    documents = 0
    try:
        conn = open_ro(path)
        try:
            if schema_version(conn, path) is not None:
                documents = doc_count(conn)
        finally:
            conn.close()
    except sqlite3.Error:  # damaged: delete it all the same
        pass
    try:
        unlink_all(path, ("-journal", "-wal", "-shm", ""))
    except OSError as exc:
        raise ConfigError(f"cannot delete the local index {exc.filename}: {exc.strerror or exc}") from None
    return documents


def _stored_roots(path: Path) -> list[tuple[str, str, bool]] | None:
    """The roots recorded in the file at ``path``, read as far as it allows; None when unreadable."""
    try:
        conn = open_ro(path)
    except sqlite3.Error:
        return None
    try:
        return read_roots(conn)
    finally:
        conn.close()


def rebuild_index(
    index: IndexPath = None,
    paths: PathsArg = (),
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
    extra = as_paths(paths, "paths")
    path = resolve_index(index)
    if path.exists() and not path.is_file():
        raise ConfigError(f"the local index path {path} exists and is not a file")
    check_header(path)
    groups = _rebuild_groups(path, extra, follow_links)
    fresh = path.with_name(path.name + ".rebuild")
    unlink_all(fresh, ("", "-journal", "-wal", "-shm"))
    report = IndexReport(index=path)
    conn = connect_for_write(fresh, report)
    try:
        for follow, targets in groups.items():
            build(conn, list(dict.fromkeys(targets)), report, progress, follow)
    except sqlite3.Error as exc:
        conn.close()
        raise db_error(fresh, exc, "write") from None
    except BaseException:
        conn.close()
        os.unlink(fresh)
        raise
    conn.close()
    unlink_all(path, ("-journal", "-wal", "-shm"))  # the old file's journal must never be applied to the new one
    os.replace(fresh, path)
    report.notes.append(
        f"rebuilt {path} from {len(report.roots)} folder{'s' if len(report.roots) != 1 else ''}"
        + (f"; not found and left out: {', '.join(report.missing_roots)}" if report.missing_roots else "")
    )
    return report


def _rebuild_groups(
    path: Path, extra: list[str | os.PathLike[str]], follow_links: bool | None
) -> dict[bool, list[str | os.PathLike[str]]]:
    """The folders to rebuild ``path`` from, grouped by whether links are followed in them."""
    roots = _stored_roots(path) if path.exists() else []
    if roots is None and not extra:
        raise ConfigError(
            f"the folders indexed into {path} cannot be read from it; give them: "
            f"`perplexed index --rebuild FOLDER [FOLDER ...]{index_option(path)}`"
        )
    if not roots and not extra:
        raise ConfigError(f"nothing to rebuild: no folders are indexed in {path} ({hint(path)})")
    groups: dict[bool, list[str | os.PathLike[str]]] = {}
    for root, _kind, follow in roots or []:
        groups.setdefault(follow if follow_links is None else follow_links, []).append(root)
    for raw in extra:
        groups.setdefault(bool(follow_links), []).append(raw)
    return groups
