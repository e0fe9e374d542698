"""LangChain tools over :func:`perplexed.search`: a numbered result list for the model, Documents as artifact."""

from __future__ import annotations

from typing import Any, Literal

import perplexed
from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.documents import Document
from langchain_core.tools import BaseTool, ToolException
from perplexed import InvalidRequest, UpstreamError
from pydantic import BaseModel, Field

from ._config import SearchConfig
from ._documents import format_hits, result_documents
from ._run import arun_core, run_core

__all__ = ["PerplexedSearchInput", "PerplexedSearchTool", "tool_error"]

SEARCH_DESCRIPTION = (
    "Search the web. Returns a numbered list of results, each as '[n] title — url' followed by a snippet. "
    "Use it for recent events, facts you are not sure of, and anything that needs a source; cite the "
    "results you use by their [n]. Send a short, specific keyword query (2-10 words), one topic per call."
)


class PerplexedSearchInput(BaseModel):
    """Arguments of the ``perplexed_search`` tool."""

    query: str = Field(
        description="The search query: a few specific keywords, e.g. 'EU AI Act general-purpose AI obligations'."
    )
    max_results: int | None = Field(
        default=None, ge=1, le=20, description="How many results to return (default: the tool's setting)."
    )
    include_domains: list[str] | None = Field(
        default=None,
        description="Only return results from these domains, e.g. ['nature.com', 'arxiv.org'].",
    )
    exclude_domains: list[str] | None = Field(
        default=None, description="Never return results from these domains, e.g. ['pinterest.com']."
    )
    recency: Literal["day", "week", "month", "year"] | None = Field(
        default=None, description="Only results published within the last day, week, month or year."
    )


def tool_error(exc: UpstreamError | InvalidRequest, what: str = "Web search") -> ToolException:
    """A :class:`ToolException` for a core error: every failed provider with its error, or the bad input."""
    if isinstance(exc, UpstreamError) and exc.attempts:
        parts = []
        for attempt in exc.attempts:
            part = f"{attempt.provider}: {attempt.outcome.value}"
            if attempt.error:
                part += f" ({attempt.error})"
            parts.append(part)
        names = ", ".join(dict.fromkeys(a.provider for a in exc.attempts))
        return ToolException(f"{what} failed: no provider answered ({names}). " + "; ".join(parts) + ".")
    if isinstance(exc, InvalidRequest):
        return ToolException(f"{what} failed: invalid input: {exc}")
    return ToolException(f"{what} failed: {exc}")


class PerplexedSearchTool(SearchConfig, BaseTool):
    """Web search as a LangChain tool (``perplexed_search``), with ``response_format="content_and_artifact"``.

    Setup::

        from langchain_perplexed import PerplexedSearchTool

        tool = PerplexedSearchTool(provider=["searxng", "tavily"], max_results=5)
        model_with_tools = chat_model.bind_tools([tool])

    The model sees a compact numbered list (``[n] title — url`` then the snippet); the ``ToolMessage``'s
    ``artifact`` is the list of Documents (same metadata as :class:`~langchain_perplexed.PerplexedRetriever`,
    ``metadata["id"] == n``). An empty answer is ``"No results."`` with an empty artifact.

    The model may pass ``max_results``, ``include_domains``, ``exclude_domains`` and ``recency``. The tool's
    own domain settings are a policy the model can narrow but not widen: its ``exclude_domains`` always
    apply (merged with the model's), and when the tool has ``include_domains`` the model's are ignored.

    When no provider answers, the tool raises :class:`~langchain_core.tools.ToolException` naming every
    failed provider and its error (``handle_tool_error=True`` turns it into the tool's output instead);
    invalid arguments from the model raise ``ToolException`` too. The core error is the exception's
    ``__cause__`` (with its ``attempts`` and ``cost``).
    """

    name: str = "perplexed_search"
    description: str = SEARCH_DESCRIPTION
    args_schema: type[BaseModel] = PerplexedSearchInput
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    max_results: int = Field(default=5, ge=1, le=100)
    """Results per search unless the model asks for another number."""

    def _call_kwargs(
        self,
        max_results: int | None,
        include_domains: list[str] | None,
        exclude_domains: list[str] | None,
        recency: str | None,
    ) -> dict[str, Any]:
        overrides: dict[str, Any] = {}
        if include_domains and not self.include_domains:
            overrides["include_domains"] = include_domains
        if exclude_domains:
            overrides["exclude_domains"] = list(dict.fromkeys([*(self.exclude_domains or ()), *exclude_domains]))
        if recency is not None:
            overrides["recency"] = recency
        return self.core_kwargs(max_results or self.max_results, overrides)

    def _run(
        self,
        query: str,
        max_results: int | None = None,
        include_domains: list[str] | None = None,
        exclude_domains: list[str] | None = None,
        recency: Literal["day", "week", "month", "year"] | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, list[Document]]:
        kwargs = self._call_kwargs(max_results, include_domains, exclude_domains, recency)
        try:
            result = run_core(perplexed.search, run_manager, query, **kwargs)
        except (UpstreamError, InvalidRequest) as exc:
            raise tool_error(exc) from exc
        return format_hits(result.hits), result_documents(result, flat=self.flat_metadata)

    async def _arun(
        self,
        query: str,
        max_results: int | None = None,
        include_domains: list[str] | None = None,
        exclude_domains: list[str] | None = None,
        recency: Literal["day", "week", "month", "year"] | None = None,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
    ) -> tuple[str, list[Document]]:
        kwargs = self._call_kwargs(max_results, include_domains, exclude_domains, recency)
        try:
            result = await arun_core(perplexed.asearch, run_manager, query, **kwargs)
        except (UpstreamError, InvalidRequest) as exc:
            raise tool_error(exc) from exc
        return format_hits(result.hits), result_documents(result, flat=self.flat_metadata)
