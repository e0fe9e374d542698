"""``PerplexedToolSpec``: ``perplexed_search`` and ``perplexed_answer`` tools for LlamaIndex agents.

No ``from __future__ import annotations`` here: LlamaIndex reads the tools' parameter annotations (the
described ``query``) at run time.
"""


import functools
import inspect
from collections.abc import Callable, Sequence
from datetime import date
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import perplexed
import perplexed.integration
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from llama_index.core.tools.utils import create_schema_from_function
from perplexed import Hit, InvalidRequest, Result
from perplexed.citations import format_footnotes
from pydantic import Field, SecretStr

from ._config import answer_configs, named_settings
from ._portable import PortableToolMetadata
from .events import dispatching

__all__ = ["PerplexedToolSpec"]

dispatcher = get_dispatcher(__name__)

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:  # perplexed.answer() and its Answer load on first use (the Agent API client)
    from perplexed import Answer


def _named(fn: F) -> F:
    """A tool function that answers a model's misspelt or missing argument in words: "unknown argument
    'qury': did you mean 'query'?" (an :class:`perplexed.InvalidRequest`, which an agent shows the model), not
    Python's TypeError. Its signature, and so the tool's schema, stays the function's own."""
    signature = inspect.signature(fn)
    tool = fn.__name__.removeprefix("a") if fn.__name__.startswith("aperplexed_") else fn.__name__  # the tool's name
    names = [name for name in signature.parameters if name != "self"]
    required = [name for name, p in signature.parameters.items() if name != "self" and p.default is p.empty]

    def check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        perplexed.chain.check_names(kwargs, names, what=f"argument of {tool} ({', '.join(names)})")
        given = set(names[: len(args)]) | set(kwargs)
        for name in required:
            if name not in given:
                raise InvalidRequest(f"{tool} needs the argument {name!r}", param=name)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def checked_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            check(args, kwargs)
            return await fn(self, *args, **kwargs)

        return checked_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        check(args, kwargs)
        return fn(self, *args, **kwargs)

    return checked  # type: ignore[return-value]

NO_RESULTS = "No results."
SNIPPET_CHARS = 400  # per hit, in the text the search tool returns to the model


def _shorten(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def format_hits(hits: Sequence[Hit]) -> str:
    """What the ``search`` tool returns: per hit ``[n] title — url`` and its snippet, blank-line separated
    (``"No results."`` when there are none)."""
    if not hits:
        return NO_RESULTS
    blocks = []
    for hit in hits:
        line = format_footnotes([hit], numbers=[hit.id])
        snippet = _shorten(hit.snippet or hit.content or "")
        blocks.append(f"{line}\n{snippet}" if snippet else line)
    return "\n\n".join(blocks)


def format_answer(ans: "Answer") -> str:
    """What the ``answer`` tool returns: the answer text with its ``[n]`` markers, then ``Sources:`` and one
    ``[n] title — url`` line per source, numbered as the markers (and with ``verify=True`` the citation
    check: :meth:`perplexed.Verification.report`)."""
    sources = sorted(ans.sources, key=lambda h: h.id)
    if not sources:
        return ans.text
    text = f"{ans.text}\n\nSources:\n{format_footnotes(sources, numbers=[h.id for h in sources])}"
    if ans.verification is not None:  # PerplexedToolSpec(verify=True): the sentences their sources do not support
        text += f"\n\nCitation check:\n{ans.verification.report()}"
    return text


Query = Annotated[str, Field(description="The search query or question, in plain words, e.g. 'typical residential zoning setbacks'.")]
Url = Annotated[str, Field(description="The page's http(s) URL, e.g. 'https://example.com/article'.")]
MaxChars = Annotated[int, Field(description="How many characters of content to return (0: the tool's default, 8000).")]
StartIndex = Annotated[int, Field(description="Where the content starts (0: the beginning; the start_index a cut reply gave, to read on).")]


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

    def __init__(
        self,
        provider: Any = None,
        *,
        max_results: int | None = None,
        similarity_top_k: int | None = None,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        provider_timeout_ms: int | None = None,
        deadline_ms: int | None = None,
        fallback_on: str | Sequence[str] | None = None,
        cache_ttl_s: float | None = None,
        cache_single_flight: bool | None = None,
        budget_usd: float | None = None,
        strategy: Literal["sequential", "hedged", "merge"] | None = None,
        hedge_after_ms: int | Literal["auto"] | None = None,
        merge_providers: int | None = None,
        min_hits: int | None = None,
        accept: Callable[[Result], bool | str | None] | None = None,
        include_domains: Sequence[str] | None = None,
        exclude_domains: Sequence[str] | None = None,
        recency: Literal["day", "week", "month", "year"] | None = None,
        published_after: date | str | None = None,
        published_before: date | str | None = None,
        language: str | None = None,
        country: str | None = None,
        safe_search: Literal["off", "moderate", "strict"] | None = None,
        fetch_provider: Any = None,
        allow_private: Any = None,
        fetch_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        settings = {"max_results": max_results, "similarity_top_k": similarity_top_k, "api_key": api_key,
                    "base_url": base_url, **named_settings(locals())}
        self._search, self._answer = answer_configs("PerplexedToolSpec", provider, settings, options)
        # perplexed_fetch: the fetch chain and its options (a private address only with allow_private)
        self._fetch_provider = fetch_provider
        self._fetch_options = {"max_chars": 8000, **(fetch_options or {})}
        if allow_private is not None:
            self._fetch_options["allow_private"] = allow_private
        perplexed.integration.prepare_fetch("https://example.com/", fetch_provider, **self._fetch_options)

    def __repr__(self) -> str:
        settings = ", ".join(p for p in (self._search.describe(), self._answer.describe()) if p)
        names = ", ".join(repr(f if isinstance(f, str) else f[0]) for f in self.spec_functions)
        return f"PerplexedToolSpec({settings}; tools: {names})"

    def get_metadata_from_fn_name(self, fn_name: str, spec_functions: Any = None) -> Any:
        """The tool's name, its description in plain words (the function's docstring) and the JSON schema of its
        arguments, portable (a closed object, no ``anyOf`` with ``null``: what strict tool callers accept)."""
        func = getattr(self, fn_name)
        description = " ".join((func.__doc__ or "").split())
        return PortableToolMetadata(name=fn_name, description=description,
                                    fn_schema=create_schema_from_function(fn_name, func))

    # The docstrings below are the tools' descriptions: they are written for the model.

    @_named
    @dispatcher.span
    def perplexed_search(self, query: Query) -> str:
        """Search the web for the query. Returns numbered results, each as "[n] title — url" followed by a
        snippet. Use it for recent events, facts you are not sure of and anything that needs a source; cite
        the results you use by their [n]."""
        with dispatching():
            result: Result = perplexed.search(query, **self._search.search_kwargs())
        return format_hits(result.hits)

    @_named
    @dispatcher.span
    async def aperplexed_search(self, query: Query) -> str:
        """Search the web for the query. Returns numbered results, each as "[n] title — url" followed by a
        snippet. Use it for recent events, facts you are not sure of and anything that needs a source; cite
        the results you use by their [n]."""
        with dispatching():
            result: Result = await perplexed.asearch(query, **self._search.search_kwargs())
        return format_hits(result.hits)

    @_named
    @dispatcher.span
    def perplexed_answer(self, query: Query) -> str:
        """Answer the question in the query from web sources. Returns the answer with [n] citation markers,
        then the numbered sources ("[n] title — url") they refer to."""
        with dispatching():
            ans = perplexed.answer(self._answer.plan(query, self._search, prefer_async=False))
        return format_answer(ans)

    @_named
    @dispatcher.span
    async def aperplexed_answer(self, query: Query) -> str:
        """Answer the question in the query from web sources. Returns the answer with [n] citation markers,
        then the numbered sources ("[n] title — url") they refer to."""
        with dispatching():
            ans = await perplexed.aanswer(self._answer.plan(query, self._search, prefer_async=True))
        return format_answer(ans)

    def _fetch_kwargs(self, max_chars: int, start_index: int) -> dict[str, Any]:
        kwargs = dict(self._fetch_options)
        if max_chars:
            kwargs["max_chars"] = max_chars
        if start_index:
            kwargs["start_index"] = start_index
        return kwargs

    @_named
    @dispatcher.span
    def perplexed_fetch(self, url: Url, max_chars: MaxChars = 0, start_index: StartIndex = 0) -> str:
        """Read the web page at the URL. Returns its title, URL and main content as Markdown; a long page comes
        in slices, and the reply then ends with the start_index to pass to read the next slice."""
        with dispatching():
            page = perplexed.fetch(url, self._fetch_provider, **self._fetch_kwargs(max_chars, start_index))
        return page.for_model()

    @_named
    @dispatcher.span
    async def aperplexed_fetch(self, url: Url, max_chars: MaxChars = 0, start_index: StartIndex = 0) -> str:
        """Read the web page at the URL. Returns its title, URL and main content as Markdown; a long page comes
        in slices, and the reply then ends with the start_index to pass to read the next slice."""
        with dispatching():
            page = await perplexed.afetch(url, self._fetch_provider, **self._fetch_kwargs(max_chars, start_index))
        return page.for_model()

    search = perplexed_search
    asearch = aperplexed_search
    answer = perplexed_answer
    aanswer = aperplexed_answer
