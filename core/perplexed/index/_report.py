"""What an indexing run reports: :class:`IndexReport` and its :class:`FileProblem` entries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perplexed.index._location import shown

ProgressCallback = Callable[[int, int, str], None]
"""``progress(done, total, path)``: called after each candidate file is handled."""


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
            "roots": [shown(r) for r in self.roots],
            "added": self.added,
            "updated": self.updated,
            "unchanged": len(self.unchanged),
            "removed": self.removed,
            "skipped": [{"path": p.path, "reason": p.reason} for p in self.skipped],
            "errors": [{"path": p.path, "reason": p.reason} for p in self.errors],
            "notes": self.notes,
            "documents": self.documents,
        }
