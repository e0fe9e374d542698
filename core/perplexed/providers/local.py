"""Local: full-text search over your own documents, embedded (SQLite FTS5 from the standard library). Free.

Build the index with ``perplexed index PATH`` (or :func:`build_index`); then ``provider="local"`` (or
``Local(index=...)``) searches it with BM25 ranking. Each hit has the document's title (first heading, else
the file name), a ``file://`` URL (with ``#page=N`` for a PDF, the page also in ``raw["page"]``), a
snippet around the matched terms, and the document's text as ``content``. Documents with the same content
(the same folder indexed through two paths, a second clone) give one hit, the others listed in
``raw["duplicates"]``. The index is ``$PERPLEXED_LOCAL_INDEX``, else ``.perplexed/index.db`` in the nearest
``.perplexed/`` folder from the working folder upward, else one in the user data folder (:func:`locate_index`
says which and why; :func:`default_index_path`). :func:`list_index`, :func:`remove_from_index`, :func:`rebuild_index`,
:func:`reset_index` and :func:`check_index` manage it (``perplexed index --list`` and friends).

The query runs in a worker thread on its own SQLite connection; when the chain's budget runs out the query
is interrupted, so a timeout really stops the work.
"""

from __future__ import annotations

import asyncio
import math
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from perplexed._errors import ConfigError, ProviderError
from perplexed._models import Hit, ProviderAnswer
from perplexed.index import (
    FileProblem,
    IndexLocation,
    IndexReport,
    Interrupt,
    Row,
    default_index_path,
    locate_index,
    query_index,
)
from perplexed.policy._options import SearchOptions
from perplexed.providers._base import CallableProvider
from perplexed.providers._common import date_window

if TYPE_CHECKING:  # imported on first use (__getattr__): a search reads the index, it does not build or manage it
    from perplexed.index import (
        IndexCheck,
        IndexListing,
        build_index,
        check_index,
        list_index,
        rebuild_index,
        remove_from_index,
        reset_index,
    )

__all__ = [
    "FileProblem",
    "IndexCheck",
    "IndexListing",
    "IndexLocation",
    "IndexReport",
    "Local",
    "build_index",
    "check_index",
    "default_index_path",
    "list_index",
    "locate_index",
    "rebuild_index",
    "remove_from_index",
    "reset_index",
]


class Local(CallableProvider):
    """Search a local full-text index of Markdown, text, HTML, reStructuredText and PDF documents.

    ``index``: the index file (default :func:`locate_index`'s, read at call time: ``$PERPLEXED_LOCAL_INDEX``,
    else ``.perplexed/index.db`` in the nearest ``.perplexed/`` folder from the working folder upward, else
    ``local-index.sqlite3`` in the user data folder). ``content_chars``: how much of each document to return as
    ``Hit.content`` (0 for none). ``snippet_tokens``: snippet length in words. ``time_limit``: seconds before
    a query is stopped even when called outside a chain. Supports ``published_after``, ``published_before``
    and ``recency`` against the files' modification dates. An absent or empty index is a
    :class:`~perplexed.ConfigError` that says to run ``perplexed index PATH``.
    """

    name = "local"
    default_price = 0.0
    url_schemes = frozenset({"file"})
    native_options: ClassVar[frozenset[str]] = frozenset({"recency", "published_after", "published_before"})
    extra_options: ClassVar[tuple[str, ...]] = ()  # none: an unknown call-time keyword is an error

    def __init__(
        self,
        index: str | os.PathLike[str] | None = None,
        *,
        content_chars: int = 20_000,
        snippet_tokens: int = 32,
        time_limit: float = 30.0,
        name: str | None = None,
        cost: float | None = None,
        **options: Any,
    ) -> None:
        super().__init__(name=name, cost=cost, **options)
        if isinstance(content_chars, bool) or not isinstance(content_chars, int) or content_chars < 0:
            raise ConfigError(f"content_chars must be a non-negative integer, got {content_chars!r}")
        if isinstance(snippet_tokens, bool) or not isinstance(snippet_tokens, int) or snippet_tokens < 1:
            raise ConfigError(f"snippet_tokens must be a positive integer, got {snippet_tokens!r}")
        self._index = None if index is None else Path(index).expanduser()
        self.content_chars = content_chars
        self.snippet_tokens = snippet_tokens
        if isinstance(time_limit, bool) or not isinstance(time_limit, int | float) or not 0 <= time_limit < math.inf:
            raise ConfigError(f"time_limit must be a finite number of seconds >= 0, got {time_limit!r}")
        self.time_limit = float(time_limit)

    def __repr__(self) -> str:
        return f"Local(name={self.label!r}, index={str(self.index_path)!r})"

    __str__ = __repr__

    @property
    def index_path(self) -> Path:
        """The index file this provider reads (the constructor's ``index``, else :func:`default_index_path`)."""
        return self._index if self._index is not None else default_index_path()

    @property
    def configured(self) -> bool:
        """Whether the index exists and holds at least one document."""
        try:
            from perplexed.index import index_stats

            return index_stats(self.index_path).documents > 0
        except ConfigError:
            return False

    def search(self, query: str, options: SearchOptions) -> ProviderAnswer:
        """Search the index (blocking; the engine calls :meth:`asearch`, which runs this in a thread)."""
        return self._search(query, options, None)

    async def asearch(self, query: str, options: SearchOptions) -> ProviderAnswer:
        """Search the index in a worker thread; cancelling the await interrupts the SQLite query."""
        interrupt = Interrupt()
        try:
            return await asyncio.to_thread(self._search, query, options, interrupt)
        except asyncio.CancelledError:
            interrupt.cancel()
            raise

    def _search(self, query: str, options: SearchOptions, interrupt: Interrupt | None) -> ProviderAnswer:
        self.log_ignored(options)
        after, before = date_window(options)
        try:
            rows = query_index(
                self.index_path,
                query,
                limit=options.max_results,
                after=after,
                before=before,
                snippet_tokens=self.snippet_tokens,
                time_limit=self.time_limit,
                interrupt=interrupt,
            )
        except TimeoutError as exc:
            raise ProviderError("timeout", str(exc), provider=self.label) from None
        except InterruptedError as exc:
            raise ProviderError("cancelled", str(exc), provider=self.label) from None
        except sqlite3.Error as exc:
            raise ProviderError("upstream", f"local index {self.index_path}: {exc}", provider=self.label) from None
        return ProviderAnswer(hits=[self._hit(row) for row in rows])

    def _hit(self, row: Row) -> Hit:
        raw: dict[str, Any] = {"path": row.path, "kind": row.kind, "bm25": row.bm25, "matches": list(row.matches)}
        url = row.url
        if row.page is not None:  # a PDF: the page the snippet is on (PDF viewers open file.pdf#page=N there)
            raw["page"] = row.page
            url = f"{url}#page={row.page}"
        if row.duplicates:
            raw["duplicates"] = list(row.duplicates)
        return Hit(
            title=row.title,
            url=url,
            snippet=row.snippet,
            content=row.text[: self.content_chars] if self.content_chars else None,
            published=row.modified,
            score=-row.bm25,
            provider=self.label,
            raw=raw,
        )


_LAZY = frozenset(("IndexCheck", "IndexListing", "build_index", "check_index", "list_index", "rebuild_index",
                   "remove_from_index", "reset_index"))


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import perplexed.index

        value = globals()[name] = getattr(perplexed.index, name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
