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

The modules, one concern each: ``_location`` (where the index lives, paths as text), ``_schema`` (the
tables and shared queries), ``_migrate`` (upgrades in place), ``_db`` (opening, integrity, typed errors),
``_report`` (what a run reports), ``_walk`` (finding and reading files), ``_build`` (indexing),
``_manage`` (list, remove, rebuild, reset), ``_check`` (check_index, index_stats), ``_terms`` (free text to
FTS5) and ``_query`` (searching, snippets, PDF pages). Document text extraction is in ``perplexed.extract._doctext``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perplexed.index._location import (
    INDEX_ENV,
    INDEX_FILENAME,
    PROJECT_DIR,
    PROJECT_INDEX,
    IndexLocation,
    default_index_path,
    find_project_dir,
    locate_index,
    platform_data_dir,
    user_data_dir,
)
from perplexed.index._query import TITLE_WEIGHT, Interrupt, Row, query_index
from perplexed.index._report import FileProblem, IndexReport, ProgressCallback
from perplexed.index._schema import SCHEMA_VERSION
from perplexed.index._terms import STOPWORDS, fts_query

if TYPE_CHECKING:  # imported on first use (_LAZY): a search reads the index, it does not build or manage it
    from perplexed.index._build import MAX_FILE_BYTES, MAX_PDF_BYTES, build_index
    from perplexed.index._check import IndexCheck, IndexStats, check_index, index_problem, index_stats
    from perplexed.index._manage import (
        IndexedFolder,
        IndexListing,
        list_index,
        rebuild_index,
        remove_from_index,
        reset_index,
    )

__all__ = [
    "INDEX_ENV",
    "INDEX_FILENAME",
    "MAX_FILE_BYTES",
    "MAX_PDF_BYTES",
    "PROJECT_DIR",
    "PROJECT_INDEX",
    "SCHEMA_VERSION",
    "STOPWORDS",
    "TITLE_WEIGHT",
    "FileProblem",
    "IndexCheck",
    "IndexListing",
    "IndexLocation",
    "IndexReport",
    "IndexStats",
    "IndexedFolder",
    "Interrupt",
    "ProgressCallback",
    "Row",
    "build_index",
    "check_index",
    "default_index_path",
    "find_project_dir",
    "fts_query",
    "index_problem",
    "index_stats",
    "list_index",
    "locate_index",
    "platform_data_dir",
    "query_index",
    "rebuild_index",
    "remove_from_index",
    "reset_index",
    "user_data_dir",
]

#: name -> the module that defines it, imported on first use (building pulls in document extraction; issue 35)
_LAZY = {
    **dict.fromkeys(("MAX_FILE_BYTES", "MAX_PDF_BYTES", "build_index"), "perplexed.index._build"),
    **dict.fromkeys(("IndexCheck", "IndexStats", "check_index", "index_problem", "index_stats"),
                    "perplexed.index._check"),
    **dict.fromkeys(("IndexedFolder", "IndexListing", "list_index", "rebuild_index", "remove_from_index",
                     "reset_index"), "perplexed.index._manage"),
}


def __getattr__(name: str) -> Any:
    import importlib

    module_name = _LAZY.get(name)
    if module_name is not None:
        value = globals()[name] = getattr(importlib.import_module(module_name), name)
        return value
    if name.startswith("_") and not name.startswith("__"):  # a submodule not imported yet (index._build)
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
