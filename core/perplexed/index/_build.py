"""Building and updating an index: :func:`build_index`.

Unchanged files are skipped by size and modification time (then by content hash), changed files are re-read,
and files deleted from an indexed folder are dropped. A bad file or a missing folder is reported in the
:class:`IndexReport` and never stops the run. A file's changes (its row and its full-text row) are always
committed together, and deleted files are dropped before any file is read, so an interrupted run leaves a
consistent index that the next run brings up to date.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perplexed._errors import ConfigError
from perplexed.extract._doctext import (
    EXTRACTOR_VERSION,
    Document,
    DocumentError,
    cjk_terms,
    extract,
    kind_of,
)
from perplexed.index._db import connect_for_write, db_error
from perplexed.index._location import IndexPath, PathsArg, as_paths, resolve_index, shown, unlink_all
from perplexed.index._report import FileProblem, IndexReport, ProgressCallback
from perplexed.index._schema import copy_roots, count_under, delete_doc, doc_count, prefix_range, set_meta
from perplexed.index._walk import UNSUPPORTED, Candidate, left_out, read, walk

#: files larger than this are reported and skipped (documents, not data dumps)
MAX_FILE_BYTES = 16 * 1024 * 1024
#: PDFs carry images and fonts: they may be larger
MAX_PDF_BYTES = 64 * 1024 * 1024
_COMMIT_EVERY = 200

_Work = tuple[Path, str, str, list[Candidate]]  # root, its key, "folder" or "file", its files


def build_index(
    paths: PathsArg,
    index: IndexPath = None,
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
    targets = as_paths(paths, "paths")
    index_path = resolve_index(index)
    report = IndexReport(index=index_path)
    made = _missing_parts(index_path)
    conn = connect_for_write(index_path, report)
    failed = False  # an interrupted run keeps what it indexed: the next run completes it
    try:
        build(conn, targets, report, progress, follow_links)
        failed = bool(report.missing_roots) and not report.documents
    except sqlite3.Error as exc:
        raise db_error(index_path, exc, "update") from None
    finally:
        conn.close()
        if failed and made:  # a run that indexed nothing leaves no index file (or folder) it created
            _remove_created(index_path, made)
            report.notes.append(f"nothing was indexed, so no index was created at {shown(index_path)}")
    return report


def _missing_parts(path: Path) -> list[Path]:
    """``path`` and its missing parent folders, innermost first, when ``path`` does not exist yet; else []."""
    if os.path.lexists(path):
        return []
    missing = [path]
    for parent in path.absolute().parents:
        if os.path.lexists(parent):
            break
        missing.append(parent)
    return missing


def _remove_created(index_path: Path, made: list[Path]) -> None:
    unlink_all(index_path, ("", "-journal", "-wal", "-shm"))
    for folder in made[1:]:
        try:
            folder.rmdir()
        except OSError:  # not empty (something else was put there) or already gone
            break


def build(
    conn: sqlite3.Connection,
    targets: list[str | os.PathLike[str]],
    report: IndexReport,
    progress: ProgressCallback | None,
    follow_links: bool,
) -> None:
    """Index ``targets`` (folders and files) into the open index, committing as it goes."""
    work = [w for raw in targets if (w := _plan(conn, raw, report, follow_links)) is not None]
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
        copy_roots(conn)
        keyed = [(candidate, shown(candidate.path)) for candidate in files]
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
    set_meta(conn, "updated_at", datetime.now(UTC).isoformat())
    conn.commit()
    report.documents = doc_count(conn)


def _plan(conn: sqlite3.Connection, raw: str | os.PathLike[str], report: IndexReport, follow_links: bool) -> _Work | None:
    """What indexing the given path means: a folder's files, or one file; None (reported) when it cannot be."""
    given = shown(raw)
    root = Path(raw).expanduser()
    if not root.exists():
        reason = _not_found(conn, given, shown(root.resolve()))
    else:
        root = root.resolve()
        if root.is_dir():
            return root, shown(root), "folder", walk(root, report, follow_links)
        if not root.is_file():
            reason = "not a file or folder"
        elif (why := left_out(root.name)) is None:
            return root, shown(root), "file", [Candidate(root, root, nofollow=False)]
        elif why == UNSUPPORTED:
            reason = f"{why} (Markdown, text, HTML, reStructuredText and PDF files are indexed)"
        else:
            reason = why
    report.errors.append(FileProblem(given, reason))
    report.missing_roots.append(given)
    return None


def _not_found(conn: sqlite3.Connection, given: str, key: str) -> str:
    row = conn.execute("SELECT kind FROM roots WHERE path = ?", (key,)).fetchone()
    if row is None:
        return "folder not found"
    count = count_under(conn, key)
    return (
        f"{'folder' if row[0] == 'folder' else 'file'} not found (indexed before: its {count} "
        f"document{'s' if count != 1 else ''} stay searchable until `perplexed index --remove {given}`)"
    )


def _index_file(conn: sqlite3.Connection, candidate: Candidate, key: str, report: IndexReport) -> None:
    row = conn.execute(
        "SELECT id, size, mtime_ns, sha256, extractor FROM docs WHERE path = ?", (key,)
    ).fetchone()
    try:
        loaded = _load(conn, candidate, row)
    except OSError as exc:
        problem = f"cannot read: {exc.strerror or exc}"
    except DocumentError as exc:
        problem = str(exc)
    else:
        if loaded is None:
            report.unchanged.append(key)
        else:
            _store(conn, candidate.path, key, row, *loaded, report)
        return
    # A file that cannot be indexed any more must not keep answering with its old text.
    if row is not None:
        delete_doc(conn, row[0])
        problem += " (its previous version was dropped from the index)"
    report.errors.append(FileProblem(key, problem))


def _load(
    conn: sqlite3.Connection, candidate: Candidate, row: Any
) -> tuple[Document, os.stat_result, str] | None:
    """The file's document, stat and content hash; None when it has not changed since ``row`` was indexed.
    Raises OSError or DocumentError for a file that cannot be indexed."""
    current = row is not None and row[4] == EXTRACTOR_VERSION  # else re-read: extraction has changed
    limit = MAX_PDF_BYTES if kind_of(candidate.path.name) == "pdf" else MAX_FILE_BYTES
    st = os.stat(candidate.target)
    if not stat.S_ISREG(st.st_mode):
        raise DocumentError("not a regular file")
    if st.st_size > limit:
        raise DocumentError(f"too large ({st.st_size // (1024 * 1024)} MB; the limit is "
                            f"{limit // (1024 * 1024)} MB)")
    if current and row[1] == st.st_size and row[2] == st.st_mtime_ns:
        return None
    data, st = read(candidate, limit)
    if len(data) > limit:
        raise DocumentError(f"too large (more than {limit // (1024 * 1024)} MB)")
    digest = hashlib.sha256(data).hexdigest()
    if current and row[3] == digest:  # touched, not changed
        conn.execute("UPDATE docs SET size = ?, mtime_ns = ? WHERE id = ?", (st.st_size, st.st_mtime_ns, row[0]))
        return None
    try:
        return extract(data, shown(candidate.path.name)), st, digest
    except DocumentError:
        raise
    except Exception as exc:  # a parser bug on a hostile file must not stop the run
        raise DocumentError(f"cannot extract its text ({type(exc).__name__}: {exc})") from None


def _store(
    conn: sqlite3.Connection,
    path: Path,
    key: str,
    row: Any,
    doc: Document,
    st: os.stat_result,
    digest: str,
    report: IndexReport,
) -> None:
    """Write the document's row and its full-text row (new, or replacing the old ones)."""
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


def _drop_deleted(conn: sqlite3.Connection, root: str, keep: set[str], report: IndexReport) -> None:
    low, high = prefix_range(root)
    rows = conn.execute("SELECT id, path FROM docs WHERE path >= ? AND path < ?", (low, high)).fetchall()
    for doc_id, path in rows:
        if path not in keep:
            delete_doc(conn, doc_id)
            report.removed.append(path)
