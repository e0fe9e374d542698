"""LangChain retrievers over :func:`perplexed.search` (web search through a provider fallback chain)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import perplexed
import perplexed.integration
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import AliasChoices, ConfigDict, Field

from ._answer import AnswerConfig, answer_documents
from ._config import ProviderCredentials, SearchConfig
from ._documents import result_documents
from ._run import arun_core, run_core

if TYPE_CHECKING:
    from perplexed.integration import AnswerPlan

__all__ = ["PerplexedAnswerRetriever", "PerplexedRetriever"]

# invoke() keyword arguments that are LangChain's, not search options
_LANGCHAIN_KWARGS = ("verbose",)


def _search_kwargs(config: SearchConfig, k: int, overrides: dict[str, Any]) -> dict[str, Any]:
    """Core kwargs from the configuration and per-call ``overrides`` (``k`` or ``max_results`` is the count)."""
    overrides = {key: value for key, value in overrides.items() if key not in _LANGCHAIN_KWARGS}
    count = overrides.pop("k", None)
    if count is None:
        count = overrides.pop("max_results", None)
    else:
        overrides.pop("max_results", None)
    return config.core_kwargs(k if count is None else count, overrides)


class PerplexedRetriever(ProviderCredentials, SearchConfig, BaseRetriever):
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

    ``api_key=`` / ``base_url=`` configure the one provider ``provider`` names
    (``PerplexedRetriever(provider="tavily", api_key="tvly-...")``); a single provider without a key (argument
    or environment) fails here, naming the variable to set, and a chain warns once about members that cannot
    run. ``search_kwargs={"k": 3}`` is ``k=3``.

    Every field can be overridden per call through ``invoke(query, **overrides)``: ``k`` (or
    ``max_results``), ``provider``, the chain options, the search options and the chain members' own
    options; any other keyword is an :class:`perplexed.InvalidRequest` naming the closest valid one
    (``invoke(q, max_result=2)``: "did you mean 'max_results'?").

    Documents: ``page_content`` is the hit's content, else its snippet; ``metadata`` has ``id`` (the hit's
    ``n``), ``title``, ``url``, ``source`` (= url), ``published`` (ISO date, absent when unknown),
    ``score``, ``provider``, and the chain's ``answered_by``, ``cost`` and ``attempts``. With
    ``flat_metadata=True`` only scalar values are kept.

    Errors are typed and raised: :class:`perplexed.UpstreamError` (``reason="all_providers_failed"``,
    with every attempt) when no provider answered; :class:`perplexed.InvalidRequest` for bad input. An
    empty answer is ``[]``. Every provider attempt is dispatched to the run's callback handlers as the
    custom event ``perplexed_attempt``.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    k: int = Field(default=10, ge=1, le=100, validation_alias=AliasChoices("k", "max_results"))
    """How many Documents to return at most (the search's ``max_results``; ``max_results=`` is accepted)."""

    fetch_content: int | bool | None = None
    """Fetch the top N hits' pages (``True``: every hit): their ``page_content`` is the page's content
    (:func:`perplexed.fetch`), the fetches' cost is in ``metadata["cost"]``. See docs/fetch.md."""

    fetch_provider: Any = None
    """The fetch chain for ``fetch_content`` (default ``["http"]``)."""

    allow_private: bool | list[str] | None = None
    """With ``fetch_content``: allow private addresses (``True``) or these networks (CIDR list)."""

    fetch_options: dict[str, Any] | None = None
    """Other fetch options for ``fetch_content`` (``max_chars``, ``respect_robots``, ...)."""

    def model_post_init(self, context: Any) -> None:
        if self.fetch_content or self.fetch_provider is not None or self.allow_private or self.fetch_options:
            options = {k: v for k, v in self._fetch_kwargs().items() if k not in ("fetch_content", "fetch_provider")}
            perplexed.integration.check_fetch_content(self.fetch_content, self.fetch_provider, **options)

    def _fetch_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {**(self.fetch_options or {})}
        if self.allow_private is not None:
            kwargs["allow_private"] = self.allow_private
        if self.fetch_content:
            kwargs["fetch_content"] = self.fetch_content
            if self.fetch_provider is not None:
                kwargs["fetch_provider"] = self.fetch_provider
        return kwargs

    def _kwargs(self, overrides: dict[str, Any]) -> dict[str, Any]:
        return {**self._fetch_kwargs(), **_search_kwargs(self, self.k, overrides)}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        result = run_core(perplexed.search, run_manager, query, **self._kwargs(kwargs))
        return result_documents(result, flat=self.flat_metadata)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        result = await arun_core(perplexed.asearch, run_manager, query, **self._kwargs(kwargs))
        return result_documents(result, flat=self.flat_metadata)


class PerplexedAnswerRetriever(AnswerConfig, SearchConfig, BaseRetriever):
    """A grounded answer as a LangChain retriever: :func:`perplexed.answer` (search, then the Agent API
    answers from the hits with inline ``[n]`` citations).

    Setup::

        from langchain_perplexed import PerplexedAnswerRetriever

        retriever = PerplexedAnswerRetriever(provider=["searxng", "tavily"], k=5, preset="fast")
        answer, *sources = retriever.invoke("What are typical zoning setbacks?")
        answer.page_content            # "Setbacks are ... [1][3]."
        answer.metadata["citations"]   # [{"n": 1, "url": ..., "title": ...}, ...]
        sources[0].metadata["id"]      # 1: every [n] resolves to the source with metadata["id"] == n

    It returns the answer Document first (``metadata["type"] == "answer"``, with ``citations``, ``cost``
    (search + Agent API), ``attempts``, ``response_id``, ``model``), then one Document per source
    (``metadata["type"] == "source"``, ``metadata["id"] == n``, the search retriever's metadata). ``k`` is the
    number of sources, so a call returns up to ``k + 1`` Documents. ``provider="perplexity-agent"`` lets the
    Agent API search by itself.

    Fields are those of :class:`PerplexedRetriever` plus the Agent API settings of ``answer()`` (``client``,
    ``api_key``, ``base_url``, ``preset``, ``effort``, ``model``, ``instructions``, ...); all can be
    overridden per call (``invoke(q, k=3, preset="low")``). When the search finds nothing the result is
    ``[]`` and the model is not called (``on_empty="answer"`` answers without sources instead). Errors are
    typed and raised (:class:`perplexed.UpstreamError`, Agent API errors such as
    :class:`perplexed.agent.RateLimitError`). Search attempts are dispatched as ``perplexed_attempt`` custom
    events and the Agent API call as ``perplexed_answer``.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    k: int = Field(default=5, ge=1, le=100, validation_alias=AliasChoices("k", "max_results"))
    """How many sources to search for and give the model (the answer Document comes on top;
    ``max_results=`` is accepted)."""

    def _plan(self, query: str, overrides: dict[str, Any]) -> AnswerPlan:
        agent, rest = self.answer_kwargs(overrides)
        return self.answer_plan(query, _search_kwargs(self, self.k, rest), agent)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        try:
            result = run_core(perplexed.answer, run_manager, self._plan(query, kwargs))
        except perplexed.NoSourcesError:
            return []
        return answer_documents(result, flat=self.flat_metadata)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        try:
            result = await arun_core(perplexed.aanswer, run_manager, self._plan(query, kwargs))
        except perplexed.NoSourcesError:
            return []
        return answer_documents(result, flat=self.flat_metadata)
