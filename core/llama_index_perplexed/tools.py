"""``PerplexedToolSpec``: ``perplexed_search`` and ``perplexed_answer`` tools for LlamaIndex agents.

No ``from __future__ import annotations`` here: LlamaIndex reads the tools' parameter annotations (the
described ``query``) at run time.
"""


import copy
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import perplexed
import perplexed.integration
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from llama_index.core.tools.utils import create_schema_from_function
from perplexed import InvalidRequest, Result, telemetry
from perplexed.catalogue import (
    ANSWER,
    WEB_FETCH,
    WEB_SEARCH,
    AgentTool,
    format_answer,
    format_hits,
    narrowed,
    tool_named,
)
from pydantic import Field, SecretStr

from ._config import SETTINGS, SearchConfig, answer_configs, named_settings, with_settings
from ._portable import PortableToolMetadata
from .events import dispatching, reporting

__all__ = ["PerplexedToolSpec"]

dispatcher = get_dispatcher(__name__)

#: Characters of page content per ``perplexed_fetch`` call unless the model asks for another number.
DEFAULT_FETCH_CHARS = 8000

Run = Callable[[Any, dict[str, Any]], Any]

if TYPE_CHECKING:  # perplexed.answer() and its Answer load on first use (the Agent API client)
    pass


def _tool_function(tool: AgentTool, fn_name: str, run: Run) -> Callable[..., Any]:
    """The spec's function of a catalogue tool: named, typed and described as the catalogue declares it (its
    ``__signature__``: ``(self, query: str, max_results: int | None = None, ...)``; its docstring: the tool's
    description). A model's misspelt, missing or bad argument is answered in the catalogue's words ("unknown
    argument 'qury': did you mean 'query'?"), an :class:`perplexed.InvalidRequest` which an
    agent shows the model (not Python's TypeError), before any search or fetch. ``run(self, arguments)`` gets
    the checked arguments."""
    names = list(tool.argument_names)
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for argument in tool.arguments:
        parameters.append(inspect.Parameter(
            argument.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=inspect.Parameter.empty if argument.required else None,
            annotation=Annotated[argument.python_type, Field(description=argument.description)],
        ))

    def checked(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(names):
            raise InvalidRequest(f"{tool.name} takes at most {len(names)} arguments ({', '.join(names)})")
        return tool.parse({**dict(zip(names, args, strict=False)), **kwargs}, tool.name)

    if inspect.iscoroutinefunction(run):
        async def function(self: Any, *args: Any, **kwargs: Any) -> Any:
            return await run(self, checked(args, kwargs))
    else:
        def function(self: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            return run(self, checked(args, kwargs))

    function.__name__ = function.__qualname__ = fn_name
    function.__doc__ = tool.description
    function.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    function.__annotations__ = {p.name: p.annotation for p in parameters[1:]} | {"return": str}
    return function


class PerplexedToolSpec(BaseToolSpec):
    """Web search and grounded answers as LlamaIndex agent tools: ``spec.to_tool_list()`` gives the tools
    ``perplexed_search`` and ``perplexed_answer`` (prefixed, so they do not collide with an agent's other
    tools), each with a sync and an async function and a described ``query`` parameter.

    - ``perplexed_search(query)``: the hits of a perplexed provider chain as a numbered list
      (``[n] title — url`` and the snippet);
    - ``perplexed_answer(query)``: a grounded answer (:func:`perplexed.answer`) with its ``[n]`` markers,
      followed by the numbered sources.

    Takes the options of :class:`~llama_index_perplexed.PerplexedRetriever` (``provider``, ``max_results`` /
    ``similarity_top_k``, chain and search options) and of
    :class:`~llama_index_perplexed.PerplexedQueryEngine` (``client``, ``async_client``, ``preset``,
    ``model``, ...). Failures raise perplexed's typed errors (never an error string as a result); each
    provider attempt is dispatched as a :class:`~llama_index_perplexed.PerplexedAttemptEvent`. The methods
    ``search``/``asearch``/``answer``/``aanswer`` are the same functions under their short names.
    """

    spec_functions = [("perplexed_search", "aperplexed_search"), ("perplexed_answer", "aperplexed_answer"),
                      ("perplexed_fetch", "aperplexed_fetch")]

    @with_settings
    def __init__(
        self,
        provider: Any = None,
        *,
        max_results: int | None = None,
        similarity_top_k: int | None = None,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        fetch_provider: Any = None,
        allow_private: Any = None,
        fetch_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        settings = {"max_results": max_results, "similarity_top_k": similarity_top_k, "api_key": api_key,
                    "base_url": base_url, **named_settings(options)}
        self._search, self._answer = answer_configs("PerplexedToolSpec", provider, settings,
                                                      {k: v for k, v in options.items() if k not in SETTINGS})
        # perplexed_fetch: the fetch chain and its options (a private address only with allow_private)
        self._fetch_provider = fetch_provider
        self._fetch_options = {"max_chars": DEFAULT_FETCH_CHARS, **(fetch_options or {})}
        if allow_private is not None:
            self._fetch_options["allow_private"] = allow_private
        perplexed.integration.prepare_fetch("https://example.com/", fetch_provider, **self._fetch_options)

    def __repr__(self) -> str:
        settings = ", ".join(p for p in (self._search.describe(), self._answer.describe()) if p)
        names = ", ".join(repr(f if isinstance(f, str) else f[0]) for f in self.spec_functions)
        return f"PerplexedToolSpec({settings}; tools: {names})"

    def get_metadata_from_fn_name(self, fn_name: str, spec_functions: Any = None) -> Any:
        """The tool's name, its description and the JSON schema of its arguments, as the catalogue declares them
        (the same as the MCP server's and LangChain's tools show: portable, a closed object, no ``anyOf`` with
        ``null``, what strict tool callers accept)."""
        func = getattr(self, fn_name)
        tool = tool_named(fn_name.removeprefix("a") if fn_name.startswith("aperplexed_") else fn_name)
        return PortableToolMetadata(name=fn_name, description=tool.description,
                                    fn_schema=create_schema_from_function(fn_name, func), catalogue=tool)

    # The tools: declared once in the core's catalogue (perplexed.catalogue), with the MCP server's and LangChain's.

    def _search_kwargs(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The configured search, narrowed (never widened) by the model's checked arguments."""
        kwargs = self._search.search_kwargs()
        return {**kwargs, **narrowed(kwargs, arguments)}

    @dispatcher.span
    def _run_search(self, arguments: dict[str, Any]) -> str:
        with telemetry.tool_span("perplexed_search", arguments):
            with dispatching(), reporting("search") as report:
                result: Result = perplexed.search(arguments["query"], **self._search_kwargs(arguments))
                report(result)
            return format_hits(result.hits)

    @dispatcher.span
    async def _arun_search(self, arguments: dict[str, Any]) -> str:
        with telemetry.tool_span("perplexed_search", arguments):
            with dispatching(), reporting("search") as report:
                result: Result = await perplexed.asearch(arguments["query"], **self._search_kwargs(arguments))
                report(result)
            return format_hits(result.hits)

    def _answer_search(self, arguments: dict[str, Any]) -> SearchConfig:
        if len(arguments) == 1:
            return self._search
        narrowed_search = copy.copy(self._search)
        overrides = narrowed(self._search.search_kwargs(), arguments)
        if "max_results" in overrides:
            narrowed_search.max_results = overrides.pop("max_results")
        narrowed_search.options = {**self._search.options, **overrides}
        return narrowed_search

    @dispatcher.span
    def _run_answer(self, arguments: dict[str, Any]) -> str:
        with telemetry.tool_span("perplexed_answer", arguments):
            with dispatching():
                plan = self._answer.plan(arguments["query"], self._answer_search(arguments), prefer_async=False)
                with reporting("answer") as report:
                    ans = perplexed.answer(plan)
                    report(ans)
            return format_answer(ans)

    @dispatcher.span
    async def _arun_answer(self, arguments: dict[str, Any]) -> str:
        with telemetry.tool_span("perplexed_answer", arguments):
            with dispatching():
                plan = self._answer.plan(arguments["query"], self._answer_search(arguments), prefer_async=True)
                with reporting("answer") as report:
                    ans = await perplexed.aanswer(plan)
                    report(ans)
            return format_answer(ans)

    def _fetch_kwargs(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return {**self._fetch_options, **{k: v for k, v in arguments.items() if k != "url"}}

    @dispatcher.span
    def _run_fetch(self, arguments: dict[str, Any]) -> str:
        with telemetry.tool_span("perplexed_fetch", arguments):
            with dispatching(), reporting("fetch") as report:
                page = perplexed.fetch(arguments["url"], self._fetch_provider, **self._fetch_kwargs(arguments))
                report(page)
            return page.for_model()

    @dispatcher.span
    async def _arun_fetch(self, arguments: dict[str, Any]) -> str:
        with telemetry.tool_span("perplexed_fetch", arguments):
            with dispatching(), reporting("fetch") as report:
                page = await perplexed.afetch(arguments["url"], self._fetch_provider, **self._fetch_kwargs(arguments))
                report(page)
            return page.for_model()

    perplexed_search = _tool_function(WEB_SEARCH, "perplexed_search", _run_search)
    aperplexed_search = _tool_function(WEB_SEARCH, "aperplexed_search", _arun_search)
    perplexed_answer = _tool_function(ANSWER, "perplexed_answer", _run_answer)
    aperplexed_answer = _tool_function(ANSWER, "aperplexed_answer", _arun_answer)
    perplexed_fetch = _tool_function(WEB_FETCH, "perplexed_fetch", _run_fetch)
    aperplexed_fetch = _tool_function(WEB_FETCH, "aperplexed_fetch", _arun_fetch)

    search = perplexed_search
    asearch = aperplexed_search
    answer = perplexed_answer
    aanswer = aperplexed_answer
