"""perplexed as a Model Context Protocol server: ``perplexed mcp`` (extra ``mcp``: the official ``mcp`` SDK).

One server in front of the fallback chain, for any agent whose tool list is assembled from MCP servers
(Claude Desktop, Cursor, VS Code, LangChain's and LlamaIndex's MCP adapters, ...)::

    from perplexed.mcp_server import create_server

    server = create_server(provider=["local", "searxng", "tavily"], budget_usd=0.01)
    server.run()                      # stdio; or serve_http(server, port=8000) for streamable HTTP

Tools (their names are a contract):

``web_search(query, max_results=5, include_domains=None, exclude_domains=None, recency=None)``
    the search chain; text for the model (numbered hits) plus ``structuredContent`` (hits, provider, cost,
    cached, attempts, truncated, next_index) that validates against the declared ``outputSchema``.
``web_fetch(url, max_chars=8000, start_index=0)``
    the fetch chain (present when :func:`perplexed.fetch` exists in this version).
``answer(question, ...)``
    a grounded answer with ``[n]`` citations, with progress notifications for clients that send a progress
    token; absent (and said so in the server's instructions) when no Agent API key is configured.

Bad arguments and failed chains come back as tool results with ``isError`` and a message a model can act on,
never a traceback or a key. Lists sent as JSON strings and numbers sent as strings are accepted.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict

from . import telemetry
from ._errors import ConfigError, InvalidRequest, PerplexedError, UpstreamError, install_hint, redact
from ._models import Attempt, Hit, Result
from ._toolschema import portable_schema

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
]

#: Each text result is cut to this many characters (``truncated`` / ``next_index`` say where).
DEFAULT_MAX_CHARS = 8000
#: Request bodies larger than this get 413 on streamable HTTP.
MAX_BODY_BYTES = 1024 * 1024
MAX_RESULTS = 20
SNIPPET_CHARS = 1000
RECENCY = ("day", "week", "month", "year")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
SERVER_NAME = "perplexed"


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


# --- arguments: lenient in what they accept, precise in what they say ------------------------------------


def _int_arg(name: str, value: Any, low: int, high: int | None = None) -> int:
    allowed = f"a whole number from {low} to {high}" if high is not None else f"a whole number, at least {low}"
    number: Any = value
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise InvalidRequest(f"{name} must be {allowed}; got {value!r}", param=name) from None
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise InvalidRequest(f"{name} must be {allowed}; got {value!r}", param=name)
    if isinstance(number, float):
        if not math.isfinite(number) or number != int(number):
            raise InvalidRequest(f"{name} must be {allowed}; got {value!r}", param=name)
        number = int(number)
    if number < low or (high is not None and number > high):
        raise InvalidRequest(f"{name} must be {allowed}; got {number}", param=name)
    return int(number)


def _list_arg(name: str, value: Any) -> list[str] | None:
    """A list of strings; also a JSON-encoded list, a comma-separated string or a single string."""
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise InvalidRequest(
                    f"{name} must be a list of domains such as [\"example.com\"]; got {value!r}", param=name
                ) from None
        else:
            value = [part for part in (p.strip() for p in text.split(",")) if part]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidRequest(f"{name} must be a list of domains such as [\"example.com\"]; got {value!r}", param=name)
    return [item for item in value if item.strip()] or None


def _choice_arg(name: str, value: Any, choices: Sequence[str]) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().lower() in choices:
        return value.strip().lower()
    allowed = ", ".join(repr(c) for c in choices)
    raise InvalidRequest(f"{name} must be one of {allowed} (or left out); got {value!r}", param=name)


def _text_arg(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(f"{name} must be a non-empty string; got {value!r}", param=name)
    return value


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


def search_text(out: SearchOutput, query: str) -> str:
    """The numbered hits as a model reads them: ``[n] Title — URL``, then the snippet."""
    if not out.hits:
        lines = [f"No results for {query!r}."]
    else:
        lines = [f"{len(out.hits)} result{'s' if len(out.hits) != 1 else ''} for {query!r} "
                 f"(from {out.provider}, cost ${out.cost:.4f}{', cached' if out.cached else ''}):", ""]
        for hit in out.hits:
            lines.append(f"[{hit.id}] {hit.title or hit.url} — {hit.url}")
            if hit.snippet:
                lines.append(hit.snippet)
            lines.append("")
    line = _attempt_line(out.attempts)
    if line:
        lines.append(line)
    return "\n".join(lines).strip()


def _failure_message(exc: PerplexedError) -> str:
    """What a model reads when the chain failed: what happened, per provider, and what to do."""
    attempts: list[Attempt] = list(getattr(exc, "attempts", None) or [])
    if isinstance(exc, UpstreamError) and attempts:
        parts = []
        for a in attempts:
            why = a.error or a.reason or a.outcome.value
            parts.append(f"{a.provider}: {a.outcome.value}" + (f" ({why})" if why != a.outcome.value else ""))
        return ("Every provider in the chain failed; nothing was found. " + "; ".join(parts)
                + ". Try again later, or rephrase the query.")
    if isinstance(exc, InvalidRequest) and exc.param is not None and exc.reason is None:
        return str(exc)  # a tool argument: the message says what to send instead
    if isinstance(exc, InvalidRequest | ConfigError):
        return f"The request was not accepted: {exc}"
    return f"The call failed: {exc}"


# --- the tools ----------------------------------------------------------------------------------------------


WEB_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to search the web for, in plain words."},
        "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": 5,
                        "description": f"How many hits to return, 1 to {MAX_RESULTS} (default 5)."},
        "include_domains": {"type": "array", "items": {"type": "string"},
                            "description": "Only return hits from these domains, e.g. [\"example.com\"]."},
        "exclude_domains": {"type": "array", "items": {"type": "string"},
                            "description": "Never return hits from these domains."},
        "recency": {"type": "string", "enum": list(RECENCY),
                    "description": "Only hits published in the last day, week, month or year."},
    },
    "required": ["query"],
    "additionalProperties": False,
}

WEB_FETCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "The http(s) URL of the page to read (e.g. a search hit's url)."},
        "max_chars": {"type": "integer", "minimum": 1, "maximum": 100_000, "default": DEFAULT_MAX_CHARS,
                      "description": "Most characters of page text to return (default 8000)."},
        "start_index": {"type": "integer", "minimum": 0, "default": 0,
                        "description": "Where to start in the page text: pass the previous result's next_index "
                        "to read on."},
    },
    "required": ["url"],
    "additionalProperties": False,
}

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question to answer from web sources."},
        "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": 5,
                        "description": f"How many search hits to ground the answer in, 1 to {MAX_RESULTS}."},
        "include_domains": WEB_SEARCH_SCHEMA["properties"]["include_domains"],
        "exclude_domains": WEB_SEARCH_SCHEMA["properties"]["exclude_domains"],
        "recency": WEB_SEARCH_SCHEMA["properties"]["recency"],
    },
    "required": ["question"],
    "additionalProperties": False,
}


def _search_options(args: Mapping[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {"max_results": _int_arg("max_results", args.get("max_results", 5), 1, MAX_RESULTS)}
    for name in ("include_domains", "exclude_domains"):
        domains = _list_arg(name, args.get(name))
        if domains is not None:
            options[name] = domains
    recency = _choice_arg("recency", args.get("recency"), RECENCY)
    if recency is not None:
        options["recency"] = recency
    return options


class _Chain:
    """The chain the server runs: provider specs and options fixed at start, as ``perplexed search`` takes them."""

    def __init__(self, provider: Any, fetch_provider: Any, options: Mapping[str, Any], max_chars: int,
                 answer_options: Mapping[str, Any], fetch_options: Mapping[str, Any]) -> None:
        self.provider = provider
        self.fetch_provider = fetch_provider
        self.extra_fetch_options = dict(fetch_options)
        self.options = dict(options)
        self.max_chars = max_chars
        self.answer_options = dict(answer_options)

    async def web_search(self, query: Any = None, max_results: Any = 5, include_domains: Any = None,
                         exclude_domains: Any = None, recency: Any = None) -> Any:
        from . import chain

        args = {"max_results": max_results, "include_domains": include_domains,
                "exclude_domains": exclude_domains, "recency": recency}
        try:
            text_query = _text_arg("query", query)
            options = {**self.options, **_search_options(args)}
            result: Result = await chain.asearch(text_query, self.provider, **options)
        except PerplexedError as exc:
            return _error(_failure_message(exc))
        attempts = _attempts(result.attempts)
        cached = any(a.cached and a.outcome == "ok" for a in attempts)
        out = SearchOutput(hits=[_hit(h) for h in result.hits], provider=result.provider, cost=result.cost,
                           cached=cached, attempts=attempts, truncated=False, next_index=None)
        text, truncated, next_index = _cut(search_text(out, text_query), self.max_chars)
        out = out.model_copy(update={"truncated": truncated, "next_index": next_index})
        return _result(text, out)

    async def web_fetch(self, url: Any = None, max_chars: Any = DEFAULT_MAX_CHARS, start_index: Any = 0) -> Any:
        import perplexed

        try:
            target = _text_arg("url", url).strip()
            limit = min(_int_arg("max_chars", max_chars, 1, 100_000), self.max_chars)
            start = _int_arg("start_index", start_index, 0)
            page = await perplexed.afetch(target, self.fetch_provider, max_chars=limit, start_index=start,
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
        head = f"{page.title or page.final_url or page.url} — {page.final_url or page.url}"
        tail = (f"\n\n[Cut at character {page.next_index} of {page.total_chars}: call web_fetch again with "
                f"start_index={page.next_index} to read on.]" if page.truncated else "")
        return _result(f"{head}\n\n{page.content}{tail}", out)

    def fetch_options(self) -> dict[str, Any]:
        """The governance and time options the fetch chain shares with search (not the search-only ones)."""
        shared = ("provider_timeout_ms", "deadline_ms", "cache_ttl_s", "budget_usd")
        return {**{k: v for k, v in self.options.items() if k in shared}, **self.extra_fetch_options}

    async def answer(self, ctx: Any, question: Any = None, max_results: Any = 5, include_domains: Any = None,
                     exclude_domains: Any = None, recency: Any = None) -> Any:
        import perplexed

        args = {"max_results": max_results, "include_domains": include_domains,
                "exclude_domains": exclude_domains, "recency": recency}
        chars = 0
        try:
            text_question = _text_arg("question", question)
            options = {**self.options, **self.answer_options, **_search_options(args)}
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
        lines = [body, ""]
        for hit in final.cited:
            lines.append(f"[{hit.id}] {hit.title or hit.url} — {hit.url}")
        text, truncated, next_index = _cut("\n".join(lines).strip(), self.max_chars)
        out = AnswerOutput(text=body, sources=sources, cost=final.cost, attempts=attempts, truncated=truncated,
                           next_index=next_index)
        return _result(text, out)


async def _progress(ctx: Any, progress: float, message: str) -> None:
    """A progress notification, for clients that sent a progress token (others get none)."""
    try:
        await ctx.report_progress(progress, None, message)
    except Exception:  # a client gone or without a token: progress is best effort
        return


def _result(text: str, structured: BaseModel) -> Any:
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured.model_dump(mode="json"))


def _error(message: str) -> Any:
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=redact(message))], is_error=True)


def _answer_unavailable(provider: Any, answer_options: Mapping[str, Any]) -> str | None:
    """Why ``answer`` cannot run with this configuration (no Agent API key, ...), or None when it can."""
    import perplexed

    try:
        perplexed.prepare_answer("a question", provider, **answer_options)
    except ConfigError as exc:
        if "PERPLEXITY_API_KEY" in str(exc):
            return "no Perplexity Agent API key is configured (set PERPLEXITY_API_KEY where the server runs)"
        return str(exc)
    except InvalidRequest:
        return None  # a problem of the arguments: each call says it
    return None


def _has_fetch() -> bool:
    import perplexed

    return callable(getattr(perplexed, "afetch", None))


INSTRUCTIONS = (
    "Web search through a fallback chain of providers (free first, paid last): web_search finds pages and "
    "returns numbered hits with titles, URLs and snippets; {fetch}{answer}Every result says which provider "
    "answered, what it cost and whether it came from the cache. Results are cut at {max_chars} characters; "
    "truncated and next_index say where."
)


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
        from mcp_types import CallToolResult, ToolAnnotations
    except ImportError:
        raise ConfigError(f"perplexed mcp needs the 'mcp' extra: {install_hint('mcp')}") from None
    from . import chain

    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 100:
        raise InvalidRequest(f"max_chars must be a whole number >= 100, got {max_chars!r}", param="max_chars")
    chain.prepare("check", provider, **options)  # every option and provider checked before serving
    extra = dict(answer_options or {})
    state = _Chain(provider, fetch_provider, options, max_chars, extra, dict(fetch_options or {}))
    if _has_fetch():
        from ._fetch import prepare_fetch

        prepare_fetch("https://example.com/", fetch_provider, **state.fetch_options())  # checked now too
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=True, destructive_hint=False,
                                idempotent_hint=True)
    tools: list[Any] = []

    def add(fn: Callable[..., Awaitable[Any]], name: str, title: str, description: str,
            schema: dict[str, Any], output: type[BaseModel], *, context: bool = False) -> None:
        # real objects, not the strings of this module's postponed annotations (the SDK resolves them)
        fn.__annotations__ = {**{p: Any for p in schema["properties"]},
                              **({"ctx": Context} if context else {}),
                              "return": Annotated[CallToolResult, output]}
        tool = Tool.from_function(fn, name=name, title=title, description=description, annotations=read_only,
                                  context_kwarg="ctx" if context else None)
        tool.parameters = portable_schema(json.loads(json.dumps(schema)))
        tools.append(tool)

    async def web_search(query: Any = None, max_results: Any = 5, include_domains: Any = None,
                         exclude_domains: Any = None, recency: Any = None) -> CallToolResult:
        with telemetry.tool_span("web_search", {"query": query, "max_results": max_results}, mcp_method="tools/call"):
            return await state.web_search(query, max_results, include_domains, exclude_domains, recency)  # type: ignore[no-any-return]

    add(web_search, "web_search", "Web search",
        "Search the web through a chain of providers (free ones first; the next is tried when one fails or "
        "finds nothing). Returns numbered hits [n] with title, URL and snippet, plus which provider answered, "
        "what the search cost in USD (often $0: free providers and cached answers cost nothing) and every "
        f"attempt. max_results: 1 to {MAX_RESULTS}; include_domains/exclude_domains: lists of domains; "
        "recency: day, week, month or year. Use web_fetch to read a hit's page.",
        WEB_SEARCH_SCHEMA, SearchOutput)
    notes = []
    if _has_fetch():

        async def web_fetch(url: Any = None, max_chars: Any = DEFAULT_MAX_CHARS, start_index: Any = 0) -> CallToolResult:
            with telemetry.tool_span("web_fetch", {"url": url, "start_index": start_index}, mcp_method="tools/call"):
                return await state.web_fetch(url, max_chars, start_index)  # type: ignore[no-any-return]

        add(web_fetch, "web_fetch", "Read a web page",
            "Fetch a web page (http or https) and return its main text as Markdown, through a chain of "
            "extractors (a direct fetch first, which is free; paid services only when configured). Long pages "
            "are cut at max_chars characters: when truncated is true, call again with start_index=next_index "
            "to read on. Private and internal addresses are refused. Says what it cost in USD.",
            WEB_FETCH_SCHEMA, FetchOutput)
        notes.append("web_fetch reads a page's text (paged with start_index). ")
    unavailable = _answer_unavailable(provider, extra)
    if unavailable is None:

        async def answer(ctx: Context, question: Any = None, max_results: Any = 5, include_domains: Any = None,
                         exclude_domains: Any = None, recency: Any = None) -> CallToolResult:
            with telemetry.tool_span("answer", {"question": question}, mcp_method="tools/call"):
                return await state.answer(ctx, question, max_results, include_domains,  # type: ignore[no-any-return]
                                          exclude_domains, recency)

        add(answer, "answer", "Answer with cited sources",
            "Answer a question from web sources: searches the chain, then writes an answer with the Perplexity "
            "Agent API whose [n] markers point at the numbered sources returned with it. Costs the search plus "
            "the Agent API call (usually a few cents; the result says how much). Sends progress notifications "
            "while it writes.", ANSWER_SCHEMA, AnswerOutput, context=True)
        notes.append("answer writes a grounded answer with [n] citations. ")
    fetch_note = notes[0] if notes and notes[0].startswith("web_fetch") else ""
    answer_note = ("answer writes a grounded answer with [n] citations. " if unavailable is None else
                   f"The answer tool is not available: {unavailable}. ")
    instructions = INSTRUCTIONS.format(fetch=fetch_note, answer=answer_note, max_chars=max_chars)
    from . import __version__

    return MCPServer(SERVER_NAME, title="perplexed web search", version=__version__, instructions=instructions,
                     tools=tools, log_level="WARNING")


# --- streamable HTTP, safe by default -----------------------------------------------------------------------


def _is_loopback(host: str) -> bool:
    if host.strip("[]") in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _allowed_hosts(host: str, port: int) -> set[str]:
    names = {host.strip("[]")}
    if _is_loopback(host):
        names |= {"localhost", "127.0.0.1", "::1"}
    hosts = set()
    for name in names:
        shown = f"[{name}]" if ":" in name else name
        hosts.add(f"{shown}:{port}".lower())
        if port == 80:  # a client may leave the default port out of Host
            hosts.add(shown.lower())
    return hosts


class _Guard:
    """ASGI middleware: Host and Origin checks (DNS rebinding), the bearer token, the request-body cap."""

    def __init__(self, app: Any, *, hosts: set[str], origins: set[str], token: str | None, max_body: int) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins
        self.token = token.encode() if token else None
        self.max_body = max_body

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "").strip().lower()
        if host not in self.hosts:
            await _plain(send, 403, "Forbidden: the Host header does not name this server")
            return
        origin = headers.get("origin")
        if origin is not None and origin.strip().lower().rstrip("/") not in self.origins:
            await _plain(send, 403, "Forbidden: Origin not allowed (start the server with --allow-origin ORIGIN)")
            return
        if self.token is not None:
            auth = headers.get("authorization", "")
            scheme, _, value = auth.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token):
                await _plain(send, 401, "Unauthorized: send Authorization: Bearer <token>",
                             extra=[(b"www-authenticate", b'Bearer realm="perplexed"')])
                return
        declared = headers.get("content-length")
        if declared is not None:
            try:
                if int(declared) > self.max_body:
                    await _plain(send, 413, "Request body too large")
                    return
            except ValueError:
                await _plain(send, 400, "Bad Content-Length")
                return
        # a body without Content-Length (chunked) is capped by the SDK's own limit, set to the same size
        await self.app(scope, receive, send)


async def _plain(send: Any, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


def _check_exposure(host: str, token: str | None) -> None:
    if not _is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to serve on {host}, a non-loopback address, without a token: pass --token "
            "(or set PERPLEXED_MCP_TOKEN), or bind to 127.0.0.1"
        )


def http_app(server: Any, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
             allow_origins: Sequence[str] = ()) -> Any:
    """The ASGI app serving ``server`` over streamable HTTP (stateless) at ``/mcp``, guarded.

    ``Host`` must name the bound host and port (also ``localhost``/``127.0.0.1`` when bound to loopback);
    an ``Origin``, when sent, must be one of those or in ``allow_origins``; with ``token`` every request needs
    ``Authorization: Bearer <token>``; bodies over 1 MiB get 413. A non-loopback ``host`` needs a token.
    """
    _check_exposure(host, token)
    from mcp.server.transport_security import TransportSecuritySettings

    app = server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, max_request_body_size=MAX_BODY_BYTES,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False), host=host,
    )
    hosts = _allowed_hosts(host, port)
    origins = {f"http://{h}" for h in hosts} | {f"https://{h}" for h in hosts}
    origins |= {o.strip().lower().rstrip("/") for o in allow_origins if o.strip()}
    return _Guard(app, hosts=hosts, origins=origins, token=token, max_body=MAX_BODY_BYTES)


def serve_http(server: Any, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
               allow_origins: Sequence[str] = (), ready: Callable[[int], None] | None = None) -> None:
    """Serve ``server`` over streamable HTTP until interrupted (uvicorn). ``port=0`` picks a free port."""
    import socket

    import anyio
    import uvicorn

    _check_exposure(host, token)
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    app = http_app(server, host=host, port=bound, token=token, allow_origins=allow_origins)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    runner = uvicorn.Server(config)
    if ready is not None:
        ready(bound)

    async def main() -> None:
        await runner.serve(sockets=[sock])

    anyio.run(main)


Transport = Literal["stdio", "http"]
