"""Finding the files to index: walking folders (hidden files, links in and out, loops) and single files,
and reading a file safely (at most a size limit, no link swapped in between the checks and the read)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from perplexed.extract._doctext import PDF_HINT, DocumentError, kind_of, pdf_supported
from perplexed.index._location import inside, shown
from perplexed.index._report import FileProblem, IndexReport

_OUTSIDE = "symbolic link leading out of the indexed folder (not followed; use --follow-links to index it)"
UNSUPPORTED = "unsupported file type"
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True)
class Candidate:
    path: Path  # the file as found in the folder (its key and URL)
    target: Path  # what to open: the file, or for a link inside the folder, the file it leads to
    nofollow: bool  # open without following a link (the file was checked not to be one)


def left_out(name: str, pdf: bool | None = None) -> str | None:
    """Why a file of this name is not indexed (unsupported type, PDF without the extra); None: it is.

    ``pdf``: whether PDFs are supported, when already known.
    """
    kind = kind_of(name)
    if kind is None:
        return UNSUPPORTED
    if kind == "pdf" and not (pdf_supported() if pdf is None else pdf):
        return f"PDF: {PDF_HINT}"
    return None


def walk(root: Path, report: IndexReport, follow_links: bool) -> list[Candidate]:
    """Candidate files under ``root`` (sorted; hidden files and folders are left out).

    Without ``follow_links``, a link (to a file or a folder) that leads out of ``root`` is left out and
    reported in ``skipped``; links to folders are not descended (their files are found at their own place).
    """
    found: list[Candidate] = []
    real_root = os.path.realpath(root)
    seen_dirs: set[str] = set()
    pdf = pdf_supported()

    def onerror(exc: OSError) -> None:
        where = shown(exc.filename) if exc.filename else shown(root)
        report.errors.append(FileProblem(where, f"cannot read folder: {exc.strerror or exc}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=follow_links):
        if follow_links:  # a link back up would loop forever
            real = os.path.realpath(dirpath)
            if real in seen_dirs:
                dirnames[:] = []
                continue
            seen_dirs.add(real)
        dirnames[:] = _folders(dirpath, dirnames, real_root, report, follow_links)
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            reason = left_out(name, pdf)
            if reason is not None:
                report.skipped.append(FileProblem(shown(path), reason))
                continue
            candidate = _candidate(path, real_root, follow_links)
            if candidate is None:
                report.skipped.append(FileProblem(shown(path), _OUTSIDE))
            else:
                found.append(candidate)
    return found


def _folders(dirpath: str, dirnames: list[str], real_root: str, report: IndexReport, follow_links: bool) -> list[str]:
    """The sub-folders to descend (sorted, not hidden); links out of the folder are reported."""
    kept = []
    for d in sorted(dirnames):
        if d.startswith("."):
            continue
        full = os.path.join(dirpath, d)
        if not follow_links and os.path.islink(full) and not inside(os.path.realpath(full), real_root):
            report.skipped.append(FileProblem(shown(full), _OUTSIDE))
        kept.append(d)
    return kept


def _candidate(path: Path, real_root: str, follow_links: bool) -> Candidate | None:
    """How to open ``path``; None for a link leading out of the folder (not followed)."""
    if follow_links:
        return Candidate(path, path, nofollow=False)
    if os.path.islink(path) and os.path.exists(path):  # a broken link is reported as unreadable
        target = os.path.realpath(path)
        if not inside(target, real_root):
            return None
        return Candidate(path, Path(target), nofollow=True)
    return Candidate(path, path, nofollow=True)


def read(candidate: Candidate, limit: int) -> tuple[bytes, os.stat_result]:
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
