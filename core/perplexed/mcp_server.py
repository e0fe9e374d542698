"""perplexed as a Model Context Protocol server: ``perplexed mcp`` (extra ``mcp``: the official ``mcp`` SDK).

One server in front of the fallback chain, for any agent whose tool list is assembled from MCP servers
(Claude Desktop, Cursor, VS Code, LangChain's and LlamaIndex's MCP adapters, ...)::

    from perplexed.mcp_server import create_server

    server = create_server(provider=["local", "searxng", "tavily"], budget_usd=0.01)
    server.run()                      # stdio; or serve_http(server, port=8000) for streamable HTTP

Tools (their names are a contract; each is declared once, with its description, argument schema and error
texts, in :mod:`perplexed.tools._catalogue`, which the LangChain and LlamaIndex tools are built from too):

``web_search(query, max_results=5, include_domains=None, exclude_domains=None, recency=None)``
    the search chain; text for the model (numbered hits) plus ``structuredContent`` (hits, provider, cost,
    cached, attempts, truncated, next_index) that validates against the declared ``outputSchema``.
``web_fetch(url, max_chars=8000, start_index=0)``
    the fetch chain (present when :func:`perplexed.fetch` exists in this version).
``answer(query, max_results=5, include_domains=None, exclude_domains=None, recency=None)``
    a grounded answer (``question``, the argument's former name, is still accepted) with ``[n]`` citations, with progress notifications for clients that send a progress
    token; absent (and said so in the server's instructions) when no Agent API key is configured.

Bad arguments (an unknown or misspelt name: "did you mean 'query'?") and failed chains come back as tool results
with ``isError`` and a message a model can act on, never a traceback or a key. Lists sent as JSON strings and numbers sent as strings are accepted.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict

from perplexed import telemetry
from perplexed._errors import ConfigError, InvalidRequest, PerplexedError, install_hint, redact
from perplexed._logs import get_logger
from perplexed._models import Attempt, Hit, Result
from perplexed.mcp._http import MAX_BODY_BYTES, http_app, serve_http
from perplexed.mcp._http import allowed_hosts as _allowed_hosts  # noqa: F401 - the name the transport's tests use
from perplexed.mcp._status import describe_members, failure_text
from perplexed.tools._catalogue import (
    ANSWER,
    WEB_FETCH,
    WEB_SEARCH,
    AgentTool,
    format_answer,
    format_hits,
    narrowed,
)

__all__ = [
    "DEFAULT_MAX_CHARS",
    "MAX_BODY_BYTES",
    "AnswerOutput",
    "AttemptOutput",
    "FetchOutput",
    "HitOutput",
    "SearchOutput",
    "create_server",
    "http_app",
    "serve_http",
    "startup_line",
    "stdio_server",
]

#: Each text result is cut to this many characters (``truncated`` / ``next_index`` say where).
DEFAULT_MAX_CHARS = 8000
MAX_RESULTS = WEB_SEARCH.argument("max_results").maximum
SNIPPET_CHARS = 1000
RECENCY = WEB_SEARCH.argument("recency").choices
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
SERVER_NAME = "perplexed"
#: The environment variable that makes ``perplexed mcp`` serve stdio with the ``mcp`` SDK's server (``1``).
SDK_SWITCH = "PERPLEXED_MCP_SDK"


# --- output models (the declared outputSchema of each tool) ----------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AttemptOutput(_Out):
    """One attempt of the chain, as a tool result shows it."""

    provider: str
    outcome: str
    reason: str | None
    duration_ms: int
    cost: float
    cached: bool


class HitOutput(_Out):
    """One search hit: ``id`` is what ``[n]`` points at."""

    id: int
    title: str
    url: str
    snippet: str
    provider: str


class SearchOutput(_Out):
    """``web_search``'s structured result."""

    hits: list[HitOutput]
    provider: str | None
    cost: float
    cached: bool
    attempts: list[AttemptOutput]
    truncated: bool
    next_index: int | None


class FetchOutput(_Out):
    """``web_fetch``'s structured result: the page's fields, what it cost, where the next slice starts."""

    url: str
    final_url: str | None
    title: str | None
    content: str
    format: str
    published: str | None
    language: str | None
    content_type: str | None
    status: int | None
    provider: str | None
    total_chars: int
    attempts: list[AttemptOutput]
    cost: float
    truncated: bool
    next_index: int | None


class AnswerOutput(_Out):
    """``answer``'s structured result: the text with ``[n]`` markers and the hits they point at."""

    text: str
    sources: list[HitOutput]
    cost: float
    attempts: list[AttemptOutput]
    truncated: bool
    next_index: int | None


# --- arguments: declared once in perplexed.tools._catalogue (lenient in what they accept, precise in what they say) --


def _arguments(tool: AgentTool, given: Mapping[str, Any]) -> dict[str, Any]:
    """A model's arguments to ``tool`` as the catalogue checks them (an unknown or misspelt name, a missing or bad
    value: :class:`InvalidRequest` with the text the model reads, the same as on the adapters' tools)."""
    if tool is ANSWER and "question" in given and "query" not in given:  # the name answer's argument had before
        given = {("query" if k == "question" else k): v for k, v in given.items()}
    return tool.parse(given, tool.mcp_name)


# --- what the model reads ---------------------------------------------------------------------------------


def _attempts(attempts: Iterable[Attempt]) -> list[AttemptOutput]:
    return [
        AttemptOutput(provider=a.provider, outcome=a.outcome.value, reason=a.reason, duration_ms=a.duration_ms,
                      cost=a.cost, cached=a.cached)
        for a in attempts
    ]


def _hit(hit: Hit) -> HitOutput:
    snippet = " ".join((hit.snippet or "").split())
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 1] + "…"
    return HitOutput(id=hit.id, title=hit.title, url=hit.url, snippet=snippet, provider=hit.provider)


def _cut(text: str, max_chars: int, start: int = 0) -> tuple[str, bool, int | None]:
    """``text[start:start+max_chars]``, whether text remains after it, and where the next slice starts."""
    end = start + max_chars
    if end >= len(text):
        return text[start:], False, None
    return text[start:end], True, end


def _attempt_line(attempts: Sequence[AttemptOutput]) -> str:
    parts = []
    for a in attempts:
        state = "cached" if a.cached else a.outcome
        parts.append(f"{a.provider} {state}" + (f" ({a.reason})" if a.reason and not a.cached else ""))
    return "Attempts: " + "; ".join(parts) if parts else ""


def search_text(out: SearchOutput, query: str, hits: Sequence[Hit] = ()) -> str:
    """The numbered hits as a model reads them (:func:`perplexed.tools._catalogue.format_hits`: ``[n] Title — URL``, then
    the snippet), after a line saying which provider answered and what it cost, and before the attempts."""
    if not out.hits:
        lines = [f"No results for {query!r}."]
    else:
        lines = [f"{len(out.hits)} result{'s' if len(out.hits) != 1 else ''} for {query!r} "
                 f"(from {out.provider}, cost ${out.cost:.4f}{', cached' if out.cached else ''}):", "",
                 format_hits(hits, SNIPPET_CHARS), ""]
    line = _attempt_line(out.attempts)
    if line:
        lines.append(line)
    return "\n".join(lines).strip()


def _failure_message(exc: PerplexedError) -> str:
    """What a model reads when the call failed: what happened, per provider, and whether retrying can help
    (the server's configuration: its operator must fix it; a failure that passes: retry later)."""
    return failure_text(exc)


# --- the tools ----------------------------------------------------------------------------------------------


#: The tools' argument schemas: the catalogue's (:mod:`perplexed.tools._catalogue`), the same on every surface.
WEB_SEARCH_SCHEMA: dict[str, Any] = WEB_SEARCH.input_schema()
WEB_FETCH_SCHEMA: dict[str, Any] = WEB_FETCH.input_schema()
ANSWER_SCHEMA: dict[str, Any] = ANSWER.input_schema()


def _search_options(settings: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """The server's search options with a model's checked arguments over them (narrowing the domain settings,
    never widening them; ``max_results`` 5 unless the model asked for another number)."""
    return {**settings, "max_results": 5, **narrowed(settings, args)}


class _Chain:
    """The chain the server runs: provider specs and options fixed at start, as ``perplexed search`` takes them."""

    def __init__(self, provider: Any, fetch_provider: Any, options: Mapping[str, Any], max_chars: int,
                 answer_options: Mapping[str, Any], fetch_options: Mapping[str, Any]) -> None:
        self.provider = provider
        self.fetch_provider = fetch_provider
        #: file:// URLs (indexed documents) only where the server's chain has the local provider
        self.local_files = _chain_has_local(provider) or (fetch_provider is not None and _fetch_names_local(fetch_provider))
        self.extra_fetch_options = dict(fetch_options)
        self.options = dict(options)
        self.max_chars = max_chars
        self.answer_options = dict(answer_options)

    async def web_search(self, arguments: Mapping[str, Any]) -> Any:
        from perplexed.engine import chain

        try:
            args = _arguments(WEB_SEARCH, arguments)
            text_query = args["query"]
            options = _search_options(self.options, args)
            result: Result = await chain.asearch(text_query, self.provider, **options)
        except PerplexedError as exc:
            return _error(_failure_message(exc))
        attempts = _attempts(result.attempts)
        cached = any(a.cached and a.outcome == "ok" for a in attempts)
        out = SearchOutput(hits=[_hit(h) for h in result.hits], provider=result.provider, cost=result.cost,
                           cached=cached, attempts=attempts, truncated=False, next_index=None)
        text, truncated, next_index = _cut(search_text(out, text_query, result.hits), self.max_chars)
        out = out.model_copy(update={"truncated": truncated, "next_index": next_index})
        return _result(text, out)

    async def web_fetch(self, arguments: Mapping[str, Any]) -> Any:
        import perplexed

        try:
            args = _arguments(WEB_FETCH, arguments)
            target = args["url"].strip()
            limit = min(args.get("max_chars", DEFAULT_MAX_CHARS), self.max_chars)
            start = args.get("start_index", 0)
            chain_spec = self.fetch_provider
            if target[:7].lower() == "file://":
                if not self.local_files:
                    return _error("web_fetch reads http and https URLs; file:// URLs are read only when the "
                                  "server's chain has the local provider, and this one has none")
                chain_spec = ["local"]  # an indexed document, from the local index only
            page = await perplexed.afetch(target, chain_spec, max_chars=limit, start_index=start,
                                          **self.fetch_options())
        except PerplexedError as exc:
            return _error(_failure_message(exc))
        published = getattr(page, "published", None)
        out = FetchOutput(
            url=page.url, final_url=page.final_url, title=page.title, content=page.content, format=page.format,
            published=published.isoformat() if published is not None else None, language=page.language,
            content_type=page.content_type, status=page.status, provider=page.provider,
            total_chars=page.total_chars, attempts=_attempts(page.attempts), cost=page.cost,
            truncated=page.truncated, next_index=page.next_index,
        )
        return _result(page.for_model(), out)  # the text every surface's fetch tool returns

    def fetch_options(self) -> dict[str, Any]:
        """The governance and time options the fetch chain shares with search (not the search-only ones)."""
        shared = ("provider_timeout_ms", "deadline_ms", "cache_ttl_s", "budget_usd")
        return {**{k: v for k, v in self.options.items() if k in shared}, **self.extra_fetch_options}

    async def answer(self, ctx: Any, arguments: Mapping[str, Any]) -> Any:
        import perplexed

        chars = 0
        try:
            args = _arguments(ANSWER, arguments)
            text_question = args["query"]
            options = {**_search_options(self.options, args), **self.answer_options}
            final: Any = None
            await _progress(ctx, 0, "searching")
            async for item in perplexed.astream_answer(text_question, self.provider, **options):
                if isinstance(item, str):
                    chars += len(item)
                    await _progress(ctx, chars, "writing the answer")
                else:
                    final = item
        except PerplexedError as exc:
            return _error(_failure_message(exc))
        if final is None:
            return _error("The answer stream ended without an answer; try again.")
        sources = [_hit(h) for h in final.sources]
        attempts = _attempts(final.search.attempts if final.search is not None else [])
        body = str(final.text)
        text, truncated, next_index = _cut(format_answer(final), self.max_chars)  # the catalogue's text
        out = AnswerOutput(text=body, sources=sources, cost=final.cost, attempts=attempts, truncated=truncated,
                           next_index=next_index)
        return _result(text, out)


async def _progress(ctx: Any, progress: float, message: str) -> None:
    """A progress notification, for clients that sent a progress token (others get none)."""
    try:
        await ctx.report_progress(progress, None, message)
    except Exception:  # a client gone or without a token: progress is best effort
        return


def _result(text: str, structured: BaseModel) -> dict[str, Any]:
    """A tool's result in its wire form (``CallToolResult``'s JSON): the SDK server validates it into the SDK's
    model (:func:`_sdk_result`), the stdio loop (:mod:`perplexed.mcp._stdio`) sends it as it is."""
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured.model_dump(mode="json"),
            "isError": False}


def _chain_has_local(spec: Any) -> bool:
    from perplexed.operations._fetch_plan import chain_has_local

    return chain_has_local(spec)


def _fetch_names_local(spec: Any) -> bool:
    from perplexed.operations._fetch_plan import without_local

    return without_local(spec)[1]


def _error(message: str) -> dict[str, Any]:
    """An ``isError`` tool result in its wire form, its text redacted."""
    return {"content": [{"type": "text", "text": redact(message)}], "isError": True}


def _sdk_result(result: Mapping[str, Any]) -> Any:
    """A wire-form tool result as the SDK's ``CallToolResult`` (what the SDK server's tools return)."""
    from mcp_types import CallToolResult

    return CallToolResult.model_validate(dict(result), by_name=False)


# --- arguments of any size and shape: a sentence saying what to send, never a traceback ----------------------


#: The longest text each argument may be (others: :data:`MAX_ARGUMENT_CHARS`), and what to send instead.
_ARGUMENT_LIMITS: dict[str, tuple[int, str]] = {
    "query": (4000, "a search query in plain words, at most 4000 characters"),
    "question": (4000, "a question in plain words, at most 4000 characters"),
    "url": (8192, "one http(s) URL, at most 8192 characters"),
    "include_domains": (10_000, 'a flat list of at most 100 domain names such as ["example.com"]'),
    "exclude_domains": (10_000, 'a flat list of at most 100 domain names such as ["example.com"]'),
}
MAX_ARGUMENT_CHARS = 10_000
MAX_ARGUMENT_ITEMS = 100
MAX_ARGUMENT_NESTING = 2

log = get_logger("perplexed.mcp")


def _nesting(value: Any) -> tuple[int, int]:
    """How deep ``value`` nests (a list of strings: 1; a string holding JSON counts its brackets), and its
    largest number of items; stops counting past the limits."""
    deepest, items = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and deepest <= MAX_ARGUMENT_NESTING and items <= MAX_ARGUMENT_ITEMS:
        item, depth = stack.pop()
        if isinstance(item, str):
            level = 0
            for ch in item.lstrip()[:MAX_ARGUMENT_CHARS] if item.lstrip()[:1] in ("[", "{") else "":
                level += 1 if ch in "[{" else -1 if ch in "]}" else 0
                deepest = max(deepest, depth + level)
                if deepest > MAX_ARGUMENT_NESTING:
                    break
        elif isinstance(item, list | dict):
            children = list(item.values()) if isinstance(item, dict) else item
            deepest, items = max(deepest, depth + 1), max(items, len(children))
            stack.extend((child, depth + 1) for child in children[: MAX_ARGUMENT_ITEMS + 1])
    return deepest, items


def _argument_problem(arguments: Mapping[str, Any]) -> str | None:
    """Why an argument is too large or nests too deeply to be read, in a sentence saying what to send."""
    for name, value in arguments.items():
        if name == "ctx" or value is None or isinstance(value, bool | int | float):
            continue
        limit, what = _ARGUMENT_LIMITS.get(name, (MAX_ARGUMENT_CHARS, "a short value as the tool's schema says"))
        depth, items = _nesting(value)
        if isinstance(value, str) and len(value) > limit:
            return f"{name} is {len(value):,} characters long; send {what}."
        if depth > MAX_ARGUMENT_NESTING:
            return f"{name} is nested more than {MAX_ARGUMENT_NESTING} levels deep; send {what}."
        if items > MAX_ARGUMENT_ITEMS:
            return f"{name} has more than {MAX_ARGUMENT_ITEMS} items; send {what}."
        if not isinstance(value, str) and len(json.dumps(value, default=str)) > limit:
            return f"{name} is more than {limit:,} characters long; send {what}."
    return None


def _guarded(fn: Callable[..., Awaitable[Any]], name: str) -> Callable[..., Awaitable[Any]]:
    """``fn`` as the SDK calls it: arguments too large or too deeply nested get an ``isError`` sentence saying
    what to send, and anything ``fn`` raises is one line in the log and an ``isError`` result, never a
    traceback."""

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        given = kwargs.get("arguments")  # the catalogue's tools take the model's arguments as one mapping
        problem = _argument_problem(given if isinstance(given, Mapping) else kwargs)
        if problem is not None:
            return _error(problem)
        try:
            return await fn(*args, **kwargs)
        except (RecursionError, MemoryError, ValueError, TypeError) as exc:
            log.warning("perplexed mcp: %s could not read its arguments (%s)", name, type(exc).__name__)
            return _error(f"{name} could not read its arguments; send them as the tool's schema describes "
                          "(short strings, a flat list of domains).")
        except Exception as exc:
            log.error("perplexed mcp: %s failed: %s: %s", name, type(exc).__name__, redact(str(exc))[:300])
            return _error(f"{name} failed inside the server ({type(exc).__name__}); this is not about the "
                          "request and retrying will probably not help.")

    return call


#: ``perplexed.agent``'s key variable (tests/test_cold_start.py checks they agree)
_AGENT_KEY_ENV = "PERPLEXITY_API_KEY"
_NO_AGENT_KEY = f"no Perplexity Agent API key is configured (set {_AGENT_KEY_ENV} where the server runs)"


def _answer_unavailable(provider: Any, answer_options: Mapping[str, Any]) -> str | None:
    """Why ``answer`` cannot run with this configuration (no Agent API key, ...), or None when it can."""
    if not answer_options and not os.environ.get(_AGENT_KEY_ENV, "").strip():
        # What prepare_answer() says below, without importing the Agent API client (issue 35: a third of the
        # stdio server's start-up): with no answer options its only other checks are the chain's, which
        # _prepare() has run, and then the key, which it reads from this variable when no client is given.
        return _NO_AGENT_KEY
    import perplexed.integration

    try:
        perplexed.integration.prepare_answer("a question", provider, **answer_options)
    except ConfigError as exc:
        if _AGENT_KEY_ENV in str(exc):
            return _NO_AGENT_KEY
        return str(exc)
    except InvalidRequest:
        return None  # a problem of the arguments: each call says it
    return None


def _has_fetch() -> bool:
    """Whether this version has :func:`perplexed.fetch` (without importing it: the fetch chain loads httpx)."""
    import perplexed

    return "afetch" in perplexed.__all__


INSTRUCTIONS = (
    "Web search through a fallback chain of providers (free first, paid last): web_search finds pages and "
    "returns numbered hits with titles, URLs and snippets; {fetch}{answer}Every result says which provider "
    "answered, what it cost and whether it came from the cache. Results are cut at {max_chars} characters; "
    "truncated and next_index say where."
)


class _ToolDef:
    """One tool as both servers serve it: its catalogue entry, its output model and the guarded call
    (``await call(ctx, arguments=...)``: a wire-form result, never an exception)."""

    def __init__(self, spec: AgentTool, output: type[BaseModel], call: Callable[..., Awaitable[Any]],
                 context: bool) -> None:
        self.spec = spec
        self.output = output
        self.call = call
        self.context = context

    def listed(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it (the SDK server's listing, keys as on the wire)."""
        return {"name": self.spec.mcp_name, "title": self.spec.title, "description": self.spec.description,
                "inputSchema": self.spec.input_schema(), "outputSchema": self.output.model_json_schema(),
                "annotations": dict(READ_ONLY)}


#: Every tool's annotations (wire form): it reads, reaches the open web, changes nothing, may be repeated.
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": True}


class _Prepared:
    """What both servers are made of: the tools, the instructions, the start-up summary."""

    def __init__(self, tools: list[_ToolDef], instructions: str, summary: str) -> None:
        self.tools = tools
        self.instructions = instructions
        self.summary = summary


def _prepare(provider: Any, fetch_provider: Any, max_chars: int, answer_options: Mapping[str, Any] | None,
             fetch_options: Mapping[str, Any] | None, options: Mapping[str, Any]) -> _Prepared:
    """Check the options and the chain (nothing on the network), and build the tools both servers serve."""
    from perplexed.engine import chain

    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 100:
        raise InvalidRequest(f"max_chars must be a whole number >= 100, got {max_chars!r}", param="max_chars")
    prepared = chain.prepare("check", provider, **options)  # every option and provider checked before serving
    extra = dict(answer_options or {})
    state = _Chain(provider, fetch_provider, options, max_chars, extra, dict(fetch_options or {}))
    fetchers: list[Any] = []
    if _has_fetch():
        from perplexed.operations._fetch_plan import prepare_fetch  # the check only: no HTTP client yet

        fetchers = prepare_fetch("https://example.com/", fetch_provider, **state.fetch_options()).providers
    tools: list[_ToolDef] = []

    async def web_search(arguments: Any = None) -> Any:
        with telemetry.tool_span("web_search", arguments if isinstance(arguments, dict) else None, mcp_method="tools/call"):
            return await state.web_search(arguments or {})

    tools.append(_ToolDef(WEB_SEARCH, SearchOutput, web_search, False))
    notes = []
    if _has_fetch():

        async def web_fetch(arguments: Any = None) -> Any:
            with telemetry.tool_span("web_fetch", arguments if isinstance(arguments, dict) else None, mcp_method="tools/call"):
                return await state.web_fetch(arguments or {})

        tools.append(_ToolDef(WEB_FETCH, FetchOutput, web_fetch, False))
        notes.append("web_fetch reads a page's text (paged with start_index). ")
    unavailable = _answer_unavailable(provider, extra)
    if unavailable is None:

        async def answer(ctx: Any, arguments: Any = None) -> Any:
            with telemetry.tool_span("answer", arguments if isinstance(arguments, dict) else None, mcp_method="tools/call"):
                return await state.answer(ctx, arguments or {})

        tools.append(_ToolDef(ANSWER, AnswerOutput, answer, True))
        notes.append("answer writes a grounded answer with [n] citations. ")
    fetch_note = notes[0] if notes and notes[0].startswith("web_fetch") else ""
    answer_note = ("answer writes a grounded answer with [n] citations. " if unavailable is None else
                   f"The answer tool is not available: {unavailable}. ")
    instructions = INSTRUCTIONS.format(fetch=fetch_note, answer=answer_note, max_chars=max_chars)
    answer_state = "answer offered" if unavailable is None else f"answer not offered: {unavailable}"
    fetch_state = f"web_fetch: {describe_members(fetchers)}; " if _has_fetch() else ""
    # what the start-up line says about this server (startup_line): worked out now, nothing on the network
    summary = f"search: {describe_members(prepared.providers)}; {fetch_state}{answer_state}"
    return _Prepared(tools, instructions, summary)


def create_server(
    provider: Any = None,
    *,
    fetch_provider: Any = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    answer_options: Mapping[str, Any] | None = None,
    fetch_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> Any:
    """An MCP server (``mcp.server.mcpserver.MCPServer``) whose tools run this chain.

    ``provider`` and ``options`` are those of :func:`perplexed.search` (the chain, ``budget_usd``,
    ``cache_ttl_s``, ``deadline_ms``, ...), checked now; ``fetch_provider`` is the chain of ``web_fetch``;
    ``max_chars`` caps each text result; ``answer_options`` go to :func:`perplexed.answer` only (``preset``,
    ``client``), ``fetch_options`` to :func:`perplexed.fetch` only (``allow_private``, ``respect_robots``,
    ``format``). Raises :class:`~perplexed.ConfigError` when the ``mcp`` extra is missing.
    """
    try:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.server.mcpserver.tools import Tool
        from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
        from mcp_types import CallToolResult, ToolAnnotations
    except ImportError:
        raise ConfigError(f"perplexed mcp needs the 'mcp' extra: {install_hint('mcp')}") from None
    built = _prepare(provider, fetch_provider, max_chars, answer_options, fetch_options, options)
    read_only = ToolAnnotations.model_validate(READ_ONLY, by_name=False)
    tools: list[Any] = []

    class AllArguments(FuncMetadata):
        """The arguments as the model sent them, to the catalogue's check (the SDK's own model would drop a
        misspelt name without a word)."""

        def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
            return {"arguments": dict(arguments_to_validate or {})}

    def add(tool_def: _ToolDef) -> None:
        spec, call = tool_def.spec, _guarded(tool_def.call, tool_def.spec.mcp_name)
        if tool_def.context:
            async def fn(ctx: Any, arguments: Any = None) -> Any:
                return _sdk_result(await call(ctx, arguments=arguments))
        else:
            async def fn(arguments: Any = None) -> Any:  # type: ignore[misc]
                return _sdk_result(await call(arguments=arguments))
        # real objects, not the strings of this module's postponed annotations (the SDK resolves them)
        fn.__annotations__ = {"arguments": Any, **({"ctx": Context} if tool_def.context else {}),
                              "return": Annotated[CallToolResult, tool_def.output]}
        fn.__name__ = fn.__qualname__ = spec.mcp_name
        tool = Tool.from_function(fn, name=spec.mcp_name, title=spec.title, description=spec.description,
                                  annotations=read_only, context_kwarg="ctx" if tool_def.context else None)
        tool.fn_metadata = AllArguments(**{name: getattr(tool.fn_metadata, name)
                                           for name in type(tool.fn_metadata).model_fields})
        tool.parameters = spec.input_schema()
        tools.append(tool)

    for tool_def in built.tools:
        add(tool_def)
    from perplexed import __version__

    server = MCPServer(SERVER_NAME, title="perplexed web search", version=__version__,
                       instructions=built.instructions, tools=tools, log_level="WARNING")
    server.perplexed_summary = built.summary  # type: ignore[attr-defined]
    return server


def stdio_server(
    provider: Any = None,
    *,
    fetch_provider: Any = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    answer_options: Mapping[str, Any] | None = None,
    fetch_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> Any:
    """The same server as :func:`create_server` (same tools, checks, texts and answers) for stdio only, served
    by :mod:`perplexed.mcp._stdio` without importing the ``mcp`` SDK (what ``perplexed mcp`` runs on stdio: it
    starts in a fraction of the SDK's time). ``.run("stdio")`` serves stdin/stdout until EOF.

    ``PERPLEXED_MCP_SDK=1`` in the environment (the escape hatch) returns :func:`create_server`'s SDK server
    instead, which serves stdio the same way through the ``mcp`` SDK."""
    from perplexed import __version__
    from perplexed.mcp._stdio import StdioServer, StdioTool

    if os.environ.get(SDK_SWITCH, "").strip().lower() in ("1", "true", "yes", "on"):
        return create_server(provider, fetch_provider=fetch_provider, max_chars=max_chars,
                             answer_options=answer_options, fetch_options=fetch_options, **options)
    built = _prepare(provider, fetch_provider, max_chars, answer_options, fetch_options, options)
    tools = [StdioTool(d.spec.mcp_name, d.listed, _guarded(d.call, d.spec.mcp_name), d.context)
             for d in built.tools]
    server = StdioServer(SERVER_NAME, title="perplexed web search", version=__version__,
                         instructions=built.instructions, tools=tools)
    server.perplexed_summary = built.summary  # type: ignore[attr-defined]
    return server


def startup_line(server: Any, where: str, authentication: str) -> str:
    """The one line ``perplexed mcp`` writes to stderr at start: where it serves, its chain (the index it uses
    and its document count, each member that cannot run and why), its fetch chain, whether ``answer`` is
    offered, and its authentication. Nothing in it waits on the network."""
    summary = getattr(server, "perplexed_summary", "")
    return f"perplexed: MCP server on {where}; {summary}; authentication: {authentication}"


Transport = Literal["stdio", "http"]
