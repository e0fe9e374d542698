"""LlamaIndex over :func:`perplexed.fetch`: :class:`PerplexedReader` (web pages as Documents through a chain of
fetch providers) and the text the ``perplexed_fetch`` tool gives the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import perplexed
from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document
from perplexed import InvalidRequest, Page, UpstreamError

__all__ = ["PerplexedReader", "format_page", "page_document"]


def page_document(page: Page) -> Document:
    """A :class:`perplexed.Page` as a LlamaIndex Document (``text`` = content; metadata ``source``, ``final_url``,
    ``title``, ``provider``, ``cost``, ``published``, ``truncated``, ``total_chars``, ``next_index``; the
    attempts are kept out of the text the embeddings and the LLM see)."""
    metadata: dict[str, Any] = {
        "source": page.url,
        "final_url": page.final_url,
        "title": page.title,
        "provider": page.provider,
        "cost": page.cost,
        "truncated": page.truncated,
        "total_chars": page.total_chars,
        "attempts": [a.summary() for a in page.attempts],
    }
    for name in ("language", "content_type", "next_index"):
        value = getattr(page, name)
        if value is not None:
            metadata[name] = value
    if page.published is not None:
        metadata["published"] = page.published.isoformat()
    hidden = ["attempts", "cost", "provider", "truncated", "total_chars", "next_index", "final_url"]
    return Document(text=page.content, metadata=metadata, excluded_embed_metadata_keys=hidden,
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


def format_page(page: Page) -> str:
    """What the ``perplexed_fetch`` tool returns: title, URL, content, and the ``start_index`` of the next
    slice when the content was cut."""
    head = f"{page.title}\nURL: {page.final_url}\n\n" if page.title else f"URL: {page.final_url}\n\n"
    text = head + page.content
    if page.truncated and page.next_index is not None:
        text += (f"\n\n[Content cut: {page.total_chars - page.next_index} more characters. "
                 f"Call again with start_index={page.next_index} to read on.]")
    return text
