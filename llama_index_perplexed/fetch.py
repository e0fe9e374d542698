"""LlamaIndex over :func:`perplexed.fetch`: :class:`PerplexedReader` (web pages as Documents through a chain of
fetch providers) and the text the ``perplexed_fetch`` tool gives the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import perplexed
from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document
from perplexed import InvalidRequest, Page, UpstreamError

__all__ = ["PerplexedReader", "page_document"]


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

    def __init__(self, provider: Any = None, *, concurrency: int = 8, continue_on_failure: bool = False,
                 **options: Any) -> None:
        self.provider = provider
        self.concurrency = concurrency
        self.continue_on_failure = continue_on_failure
        self.options = options
        perplexed.prepare_fetch("https://example.com/", provider, **options)

    def _urls(self, urls: str | Sequence[str]) -> list[str]:
        items = [urls] if isinstance(urls, str) else list(urls)
        if not items:
            raise InvalidRequest("urls is empty: give at least one URL", param="urls")
        return items

    def _documents(self, results: list[Page | UpstreamError], continue_on_failure: bool | None) -> list[Document]:
        skip = self.continue_on_failure if continue_on_failure is None else continue_on_failure
        failures = [r for r in results if not isinstance(r, Page)]
        if failures and not skip:
            raise failures[0]
        return [page_document(r) for r in results if isinstance(r, Page)]

    def load_data(self, urls: str | Sequence[str], continue_on_failure: bool | None = None) -> list[Document]:
        results = perplexed.fetch_many(self._urls(urls), self.provider, self.concurrency, **self.options)
        return self._documents(results, continue_on_failure)

    async def aload_data(self, urls: str | Sequence[str], continue_on_failure: bool | None = None) -> list[Document]:
        results = await perplexed.afetch_many(self._urls(urls), self.provider, self.concurrency, **self.options)
        return self._documents(results, continue_on_failure)
