"""LangChain retrievers over :func:`perplexed.search` (web search through a provider fallback chain)."""

from __future__ import annotations

from typing import Any

import perplexed
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from ._config import SearchConfig
from ._documents import result_documents
from ._run import arun_core, run_core

__all__ = ["PerplexedRetriever"]

# invoke() keyword arguments that are LangChain's, not search options
_LANGCHAIN_KWARGS = ("verbose",)


class PerplexedRetriever(SearchConfig, BaseRetriever):
    """Web search as a LangChain retriever: ``perplexed.search`` down a fallback chain of providers.

    Setup::

        from langchain_perplexed import PerplexedRetriever

        retriever = PerplexedRetriever(
            provider=["searxng", {"name": "tavily", "api_key": "tvly-..."}],  # free first, paid last
            k=5,
            provider_timeout_ms=8000,
            deadline_ms=20000,
            recency="month",
        )
        docs = retriever.invoke("zoning setbacks")
        docs = await retriever.ainvoke("zoning setbacks", k=3, include_domains=["gov"])

    Every field can be overridden per call through ``invoke(query, **overrides)``: ``k`` (or
    ``max_results``), ``provider``, the chain options and the search options; any other keyword is a
    provider-specific search option.

    Documents: ``page_content`` is the hit's content, else its snippet; ``metadata`` has ``id`` (the hit's
    ``n``), ``title``, ``url``, ``source`` (= url), ``published`` (ISO date, absent when unknown),
    ``score``, ``provider``, and the chain's ``answered_by``, ``cost`` and ``attempts``. With
    ``flat_metadata=True`` only scalar values are kept.

    Errors are typed and raised: :class:`perplexed.UpstreamError` (``reason="all_providers_failed"``,
    with every attempt) when no provider answered; :class:`perplexed.InvalidRequest` for bad input. An
    empty answer is ``[]``. Every provider attempt is dispatched to the run's callback handlers as the
    custom event ``perplexed_attempt``.
    """

    k: int = Field(default=10, ge=1, le=100)
    """How many Documents to return at most (the search's ``max_results``)."""

    def _core_kwargs(self, overrides: dict[str, Any]) -> dict[str, Any]:
        overrides = {k: v for k, v in overrides.items() if k not in _LANGCHAIN_KWARGS}
        k = overrides.pop("k", None)
        if k is None:
            k = overrides.pop("max_results", None)
        else:
            overrides.pop("max_results", None)
        return self.core_kwargs(self.k if k is None else k, overrides)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        result = run_core(perplexed.search, run_manager, query, **self._core_kwargs(kwargs))
        return result_documents(result, flat=self.flat_metadata)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        result = await arun_core(perplexed.asearch, run_manager, query, **self._core_kwargs(kwargs))
        return result_documents(result, flat=self.flat_metadata)
