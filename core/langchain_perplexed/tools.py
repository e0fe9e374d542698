"""LangChain tools over :func:`perplexed.search`: a numbered result list for the model, Documents as artifact."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

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
    telemetry,
)
from perplexed.catalogue import ANSWER, WEB_SEARCH, AgentTool, narrowed
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ._answer import AnswerConfig, format_answer, source_documents
from ._config import ProviderCredentials, SearchConfig
from ._documents import NO_RESULTS, format_hits, result_documents
from ._portable import CatalogueArguments, input_model
from ._run import arun_core, run_core
from ._run import call_id as _call_id

if TYPE_CHECKING:
    from perplexed.integration import AnswerPlan

__all__ = [
    "PerplexedAnswerInput",
    "PerplexedAnswerTool",
    "PerplexedSearchInput",
    "PerplexedSearchTool",
    "tool_error",
]

#: The tool's description, as the catalogue declares it (the same on MCP and LlamaIndex).
SEARCH_DESCRIPTION = WEB_SEARCH.description

PerplexedSearchInput = input_model("PerplexedSearchInput", WEB_SEARCH, "Arguments of the ``perplexed_search`` tool "
                                   "(generated from the core's tool catalogue).")


def _call_kwargs(config: SearchConfig, default_max: int, **arguments: Any) -> dict[str, Any]:
    """Core kwargs for a tool call (the model's checked arguments, by name): the tool's settings, narrowed (never
    widened) by the model's arguments, as the catalogue's :func:`perplexed.catalogue.narrowed` says."""
    settings = {"include_domains": config.include_domains, "exclude_domains": config.exclude_domains}
    overrides = narrowed(settings, arguments)
    return config.core_kwargs(overrides.pop("max_results", None) or default_max, overrides)


#: What a model may pass, per argument, in the words of the error it gets when it passes something else.
ALLOWED = {argument.name: argument.allowed for argument in WEB_SEARCH.arguments}


def arguments_error(problems: list[tuple[str, Any]]) -> ToolException:
    """A :class:`ToolException` the model can act on: each bad argument, its value and what is allowed."""
    parts = [
        f"{name}={value!r} is not allowed (use {ALLOWED[name]})" if name in ALLOWED else f"{name}: {value}"
        for name, value in problems
    ]
    return ToolException("Invalid arguments: " + "; ".join(parts) + ". Call the tool again with allowed values.")


class _ModelArguments(CatalogueArguments):
    """Tool arguments a model got wrong (a misspelt name, a number out of range, an unknown recency) raise a
    :class:`ToolException` in the catalogue's words, saying what is allowed, never a pydantic
    ``ValidationError``: with ``handle_tool_error=True`` the model reads it and can retry."""


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

    catalogue: ClassVar[AgentTool] = WEB_SEARCH
    name: str = WEB_SEARCH.name
    description: str = WEB_SEARCH.description
    args_schema: type[BaseModel] = PerplexedSearchInput
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    max_results: int = Field(default=5, ge=1, le=100, validation_alias=AliasChoices("max_results", "k"))
    """Results per search unless the model asks for another number (``k=`` is accepted)."""

    # The model's arguments are those of ``args_schema`` (validated there), passed by name.

    def _run(
        self, query: str, run_manager: CallbackManagerForToolRun | None = None, **arguments: Any
    ) -> tuple[str, list[Document]]:
        with telemetry.tool_span(self.name, {"query": query}, call_id=_call_id(run_manager)):
            kwargs = _call_kwargs(self, self.max_results, **arguments)
            try:
                result = run_core(perplexed.search, run_manager, query, **kwargs)
            except (UpstreamError, InvalidRequest) as exc:
                raise tool_error(exc) from exc
            return format_hits(result.hits), result_documents(result, flat=self.flat_metadata)

    async def _arun(
        self, query: str, run_manager: AsyncCallbackManagerForToolRun | None = None, **arguments: Any
    ) -> tuple[str, list[Document]]:
        with telemetry.tool_span(self.name, {"query": query}, call_id=_call_id(run_manager)):
            kwargs = _call_kwargs(self, self.max_results, **arguments)
            try:
                result = await arun_core(perplexed.asearch, run_manager, query, **kwargs)
            except (UpstreamError, InvalidRequest) as exc:
                raise tool_error(exc) from exc
            return format_hits(result.hits), result_documents(result, flat=self.flat_metadata)


#: The tool's description, as the catalogue declares it (the same on MCP and LlamaIndex).
ANSWER_DESCRIPTION = ANSWER.description

PerplexedAnswerInput = input_model("PerplexedAnswerInput", ANSWER, "Arguments of the ``perplexed_answer`` tool "
                                   "(generated from the core's tool catalogue).")


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

    catalogue: ClassVar[AgentTool] = ANSWER
    name: str = ANSWER.name
    description: str = ANSWER.description
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
        with telemetry.tool_span(self.name, {"query": query}, call_id=_call_id(run_manager)):
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
        with telemetry.tool_span(self.name, {"query": query}, call_id=_call_id(run_manager)):
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
