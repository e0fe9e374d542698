"""LlamaIndex over :func:`perplexed.fetch`: :class:`PerplexedReader` (web pages as Documents through a chain of
fetch providers) and the text the ``perplexed_fetch`` tool gives the model."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import perplexed
import perplexed.integration
from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document
from perplexed import InvalidRequest, Page, UpstreamError

from ._config import with_fetch_settings
from .events import reporting

__all__ = ["PerplexedReader", "page_document"]

#: The arguments of ``load_data``/``aload_data`` besides the fetch options.
_CALL_ARGS = ("urls", "continue_on_failure")


def page_document(page: Page) -> Document:
    """A :class:`perplexed.Page` as a LlamaIndex Document (``text`` = content, ``metadata`` =
    :meth:`perplexed.Page.metadata`; the bookkeeping keys are kept out of what the embeddings and the LLM see)."""
    hidden = ["attempts", "cost", "provider", "truncated", "total_chars", "next_index", "final_url", "status"]
    return Document(text=page.content, metadata=page.metadata(), excluded_embed_metadata_keys=hidden,
                    excluded_llm_metadata_keys=hidden)


class PerplexedReader(BaseReader):
    """Web pages as LlamaIndex Documents through a chain of fetch providers (:func:`perplexed.fetch_many`).

    Setup::

        from llama_index_perplexed import PerplexedReader

        reader = PerplexedReader(provider=["http", "jina"], max_chars=50_000)
        documents = reader.load_data(["https://example.com/a", "https://example.com/b"])
        documents = await reader.aload_data(urls)

    ``provider`` and ``**options`` are :func:`perplexed.fetch`'s (``format``, ``max_chars``, ``min_chars``,
    ``allow_private``, ``respect_robots``, ``deadline_ms``, ...), validated here. A URL that cannot be fetched
    raises its :class:`perplexed.UpstreamError` (attempts and cost included) after the others were fetched;
    ``continue_on_failure=True`` (per reader or per call) skips it instead.
    """

    @with_fetch_settings
    def __init__(self, provider: Any = None, *, concurrency: int = 8, continue_on_failure: bool = False,
                 **options: Any) -> None:
        self.provider = provider
        self.concurrency = concurrency
        self.continue_on_failure = continue_on_failure
        self.options = options
        perplexed.integration.prepare_fetch("https://example.com/", provider, **options)

    def _call(self, urls: str | Sequence[str] | None, options: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        """The URLs and the fetch options of one call (the reader's, overridden by the call's), checked:
        a misspelt argument gets "did you mean" like everywhere else."""
        for name in options:
            near = difflib.get_close_matches(name.lower(), _CALL_ARGS, n=1, cutoff=0.75)
            if near or (urls is None and name.lower().rstrip("s") in ("url", "link", "page", "document")):
                right = near[0] if near else "urls"
                raise InvalidRequest(f"unknown argument {name!r}: did you mean {right!r}?", param=name)
        if urls is None:
            raise InvalidRequest("urls is required: give a URL or a list of URLs", param="urls")
        items = [urls] if isinstance(urls, str) else list(urls)
        if not items:
            raise InvalidRequest("urls is empty: give at least one URL", param="urls")
        merged = {**self.options, **options}
        perplexed.integration.prepare_fetch(items[0], self.provider, **merged)  # unknown options: "did you mean", before any fetch
        return items, merged

    def _documents(self, results: list[Page | UpstreamError], continue_on_failure: bool | None) -> list[Document]:
        skip = self.continue_on_failure if continue_on_failure is None else continue_on_failure
        failures = [r for r in results if not isinstance(r, Page)]
        if failures and not skip:
            raise failures[0]
        return [page_document(r) for r in results if isinstance(r, Page)]

    def load_data(self, urls: str | Sequence[str] | None = None, continue_on_failure: bool | None = None,
                  **options: Any) -> list[Document]:
        """The pages as Documents; ``**options`` override the reader's fetch options for this call."""
        items, merged = self._call(urls, options)
        with reporting("fetch") as report:  # one usage event for the pages of this call
            results = perplexed.fetch_many(items, self.provider, self.concurrency, **merged)
            report(results)
        return self._documents(results, continue_on_failure)

    async def aload_data(self, urls: str | Sequence[str] | None = None, continue_on_failure: bool | None = None,
                         **options: Any) -> list[Document]:
        """:meth:`load_data`, async."""
        items, merged = self._call(urls, options)
        with reporting("fetch") as report:
            results = await perplexed.afetch_many(items, self.provider, self.concurrency, **merged)
            report(results)
        return self._documents(results, continue_on_failure)
