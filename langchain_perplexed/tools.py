"""LangChain tools over :func:`perplexed.search`: a numbered result list for the model, Documents as artifact."""

from __future__ import annotations

from typing import Any, Literal

import perplexed
from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.documents import Document
from langchain_core.tools import BaseTool, ToolException
from perplexed import (
    APIError,
    ConfigError,
    InvalidRequest,
    PerplexedError,
    UpstreamError,
)
from perplexed.integration import AnswerPlan
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from ._answer import AnswerConfig, format_answer, source_documents
from ._config import KnownNames, ProviderCredentials, SearchConfig
from ._documents import NO_RESULTS, format_hits, result_documents
from ._portable import PORTABLE, PortableToolSchema
from ._run import arun_core, run_core

__all__ = [
    "PerplexedAnswerInput",
    "PerplexedAnswerTool",
    "PerplexedSearchInput",
    "PerplexedSearchTool",
    "tool_error",
]

SEARCH_DESCRIPTION = (
    "Search the web. Returns a numbered list of results, each as '[n] title — url' followed by a snippet. "
    "Use it for recent events, facts you are not sure of, and anything that needs a source; cite the "
    "results you use by their [n]. Send a short, specific keyword query (2-10 words), one topic per call."
)


class PerplexedSearchInput(KnownNames):
    """Arguments of the ``perplexed_search`` tool."""

    # the schema a model sees is in the subset strict tool callers accept (no anyOf with null, closed object)
    model_config = PORTABLE

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


def _call_kwargs(
    config: SearchConfig,
    default_max: int,
    *,
    max_results: int | None = None,
    include_domains: list[str] | None = None,
    exclude_domains: list[str] | None = None,
    recency: str | None = None,
) -> dict[str, Any]:
    """Core kwargs for a tool call (the model's arguments, by name): the tool's settings, narrowed (never
    widened) by the model's arguments."""
    overrides: dict[str, Any] = {}
    if include_domains and not config.include_domains:
        overrides["include_domains"] = include_domains
    if exclude_domains:
        overrides["exclude_domains"] = list(dict.fromkeys([*(config.exclude_domains or ()), *exclude_domains]))
    if recency is not None:
        overrides["recency"] = recency
    return config.core_kwargs(max_results or default_max, overrides)


#: What a model may pass, per argument, in the words of the error it gets when it passes something else.
ALLOWED = {
    "query": "a non-empty query string (at most 4000 characters)",
    "max_results": "a whole number from 1 to 20",
    "include_domains": "a list of domain names such as 'nature.com' or 'example.com/docs'",
    "exclude_domains": "a list of domain names such as 'pinterest.com'",
    "recency": "one of 'day', 'week', 'month', 'year'",
}


def arguments_error(problems: list[tuple[str, Any]]) -> ToolException:
    """A :class:`ToolException` the model can act on: each bad argument, its value and what is allowed."""
    parts = [
        f"{name}={value!r} is not allowed (use {ALLOWED[name]})" if name in ALLOWED else f"{name}: {value}"
        for name, value in problems
    ]
    return ToolException("Invalid arguments: " + "; ".join(parts) + ". Call the tool again with allowed values.")


class _ModelArguments(PortableToolSchema):
    """Tool arguments a model got wrong (a number out of range, an unknown recency, a bad domain) raise a
    :class:`ToolException` saying what is allowed, never a pydantic ``ValidationError``: with
    ``handle_tool_error=True`` the model reads it and can retry."""

    def _parse_input(self, tool_input: str | dict[str, Any], tool_call_id: str | None) -> Any:
        try:
            return super()._parse_input(tool_input, tool_call_id)  # type: ignore[misc]
        except ValidationError as exc:
            problems = []
            for error in exc.errors():
                name = str(error["loc"][0]) if error.get("loc") else "arguments"
                problems.append((name, error.get("input") if name in ALLOWED else error["msg"]))
            raise arguments_error(problems) from exc


def tool_error(exc: PerplexedError, what: str = "Web search") -> ToolException:
    """A :class:`ToolException` for a core error: every failed provider with its error, the Agent API's
    error, or the bad input."""
    if isinstance(exc, UpstreamError) and exc.attempts:
        parts = []
        for attempt in exc.attempts:
            part = f"{attempt.provider}: {attempt.outcome.value}"
            if attempt.error:
                part += f" ({attempt.error})"
            parts.append(part)
        names = ", ".join(dict.fromkeys(a.provider for a in exc.attempts))
        return ToolException(f"{what} failed: no provider answered ({names}). " + "; ".join(parts) + ".")
    if isinstance(exc, APIError):
        return ToolException(f"{what} failed: the Perplexity Agent API answered {type(exc).__name__}: {exc}")
    if isinstance(exc, InvalidRequest):
        param = getattr(exc, "param", None)
        if param in ALLOWED:
            return ToolException(f"{what} failed: invalid input: {exc} (allowed: {ALLOWED[param]})")
        return ToolException(f"{what} failed: invalid input: {exc}")
    return ToolException(f"{what} failed: {exc}")


class PerplexedSearchTool(_ModelArguments, ProviderCredentials, SearchConfig, BaseTool):
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
    invalid arguments from the model (``max_results=50``, ``recency="fortnight"``, a bad domain) raise a
    ``ToolException`` saying what is allowed. The core error is the exception's ``__cause__`` (with its
    ``attempts`` and ``cost``). ``api_key=`` / ``base_url=`` configure the one provider ``provider`` names,
    as on :class:`~langchain_perplexed.PerplexedRetriever`.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    name: str = "perplexed_search"
    description: str = SEARCH_DESCRIPTION
    args_schema: type[BaseModel] = PerplexedSearchInput
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    max_results: int = Field(default=5, ge=1, le=100, validation_alias=AliasChoices("max_results", "k"))
    """Results per search unless the model asks for another number (``k=`` is accepted)."""

    # The model's arguments are those of ``args_schema`` (validated there), passed by name.

    def _run(
        self, query: str, run_manager: CallbackManagerForToolRun | None = None, **arguments: Any
    ) -> tuple[str, list[Document]]:
        kwargs = _call_kwargs(self, self.max_results, **arguments)
        try:
            result = run_core(perplexed.search, run_manager, query, **kwargs)
        except (UpstreamError, InvalidRequest) as exc:
            raise tool_error(exc) from exc
        return format_hits(result.hits), result_documents(result, flat=self.flat_metadata)

    async def _arun(
        self, query: str, run_manager: AsyncCallbackManagerForToolRun | None = None, **arguments: Any
    ) -> tuple[str, list[Document]]:
        kwargs = _call_kwargs(self, self.max_results, **arguments)
        try:
            result = await arun_core(perplexed.asearch, run_manager, query, **kwargs)
        except (UpstreamError, InvalidRequest) as exc:
            raise tool_error(exc) from exc
        return format_hits(result.hits), result_documents(result, flat=self.flat_metadata)


ANSWER_DESCRIPTION = (
    "Answer a question from current web sources. Returns a short answer with inline citations like [1], "
    "followed by the numbered sources ('[n] title — url'). Use it for factual questions that need an "
    "up-to-date, sourced answer; keep the [n] citations when you quote it. Send the question in plain words."
)


class PerplexedAnswerInput(KnownNames):
    """Arguments of the ``perplexed_answer`` tool."""

    model_config = PORTABLE

    query: str = Field(description="The question to answer, e.g. 'What are typical residential zoning setbacks?'.")
    max_results: int | None = Field(
        default=None, ge=1, le=20, description="How many sources to ground the answer in (default: the tool's)."
    )
    include_domains: list[str] | None = Field(
        default=None, description="Only use sources from these domains, e.g. ['europa.eu']."
    )
    exclude_domains: list[str] | None = Field(
        default=None, description="Never use sources from these domains."
    )
    recency: Literal["day", "week", "month", "year"] | None = Field(
        default=None, description="Only sources published within the last day, week, month or year."
    )


class PerplexedAnswerTool(_ModelArguments, AnswerConfig, SearchConfig, BaseTool):
    """A grounded answer as a LangChain tool (``perplexed_answer``): :func:`perplexed.answer` searches with the
    provider chain, then the Agent API answers from the hits, citing them inline as ``[n]``.

    Setup::

        from langchain_perplexed import PerplexedAnswerTool

        tool = PerplexedAnswerTool(provider=["searxng", "tavily"], max_results=5, preset="fast")

    ``response_format="content_and_artifact"``: the content is the answer text followed by the numbered
    sources (``[n] title — url``); the artifact is one Document per source (``metadata["id"] == n``, so
    every marker resolves). It takes the same ``client=`` and Agent API settings as ``answer()``
    (``api_key``, ``base_url``, ``preset``, ``effort``, ``model``, ``instructions``, ...), and the search
    settings of :class:`PerplexedSearchTool` (with the same domain policy).

    When the search finds nothing the content is ``"No results."`` with an empty artifact and the model is
    not called (``on_empty="answer"`` answers without sources instead). A failed search (every provider
    failed), an Agent API error, or invalid arguments raise :class:`~langchain_core.tools.ToolException`
    naming what failed, with the typed core error as ``__cause__``; a configuration error (no API key)
    is raised as is. Search attempts are dispatched as ``perplexed_attempt`` custom events, the Agent API
    call as ``perplexed_answer``.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    name: str = "perplexed_answer"
    description: str = ANSWER_DESCRIPTION
    args_schema: type[BaseModel] = PerplexedAnswerInput
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    max_results: int = Field(default=5, ge=1, le=100, validation_alias=AliasChoices("max_results", "k"))
    """Sources per answer unless the model asks for another number (``k=`` is accepted)."""

    def _plan(self, query: str, arguments: dict[str, Any]) -> AnswerPlan:
        agent, _ = self.answer_kwargs({})
        search = _call_kwargs(self, self.max_results, **arguments)
        try:
            return self.answer_plan(query, search, agent)
        except InvalidRequest as exc:
            raise tool_error(exc, "Answer") from exc

    # The model's arguments are those of ``args_schema`` (validated there), passed by name.

    def _run(
        self, query: str, run_manager: CallbackManagerForToolRun | None = None, **arguments: Any
    ) -> tuple[str, list[Document]]:
        plan = self._plan(query, arguments)
        try:
            result = run_core(perplexed.answer, run_manager, plan)
        except perplexed.NoSourcesError:
            return NO_RESULTS, []
        except ConfigError:
            raise
        except PerplexedError as exc:
            raise tool_error(exc, "Answer") from exc
        return format_answer(result), source_documents(result, flat=self.flat_metadata)

    async def _arun(
        self, query: str, run_manager: AsyncCallbackManagerForToolRun | None = None, **arguments: Any
    ) -> tuple[str, list[Document]]:
        plan = self._plan(query, arguments)
        try:
            result = await arun_core(perplexed.aanswer, run_manager, plan)
        except perplexed.NoSourcesError:
            return NO_RESULTS, []
        except ConfigError:
            raise
        except PerplexedError as exc:
            raise tool_error(exc, "Answer") from exc
        return format_answer(result), source_documents(result, flat=self.flat_metadata)
