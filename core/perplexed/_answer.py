"""Grounded answers: search with a provider chain, then have the Agent API answer from the hits, citing them.

    ans = perplexed.answer("What are typical zoning setbacks?", provider=["searxng", "ceramic"], preset="fast")
    ans.text        # the answer, with inline [n] markers
    ans.sources     # the hits given to the model, numbered 1..N (hit.id == n)
    ans.citations   # the resolved markers: n, span, hit
    ans.search      # the chain's Result (answering provider, attempts, cost)
    ans.response    # the Agent API response (id, model, usage)
    ans.cost        # search cost + Agent API cost (also ans.search_cost, ans.agent_cost)

Two grounding modes:

1. ``provider=<spec or chain>`` (default: the settings chain). The chain runs with the same options as
   :func:`perplexed.search`; its hits are given to the model as numbered sources in ``input``, with an
   instruction (``instructions``) to cite them as ``[n]``. The model must not search by itself: with a
   preset/effort/profile ``max_tool_calls: 0`` is sent, with a bare model no tools are
   (:data:`perplexed._grounding.SEARCH_OFF`). ``[n]`` maps to our hit ids.
2. ``provider="perplexity-agent"``: the Agent API searches by itself with the ``web_search`` tool carrying
   the same filters; ``[n]`` maps to the ids of its ``search_results``, which become :attr:`Answer.sources`;
   :attr:`Answer.search` is ``None`` and the cost is ``usage.cost.total_cost``.

:func:`aanswer` and :func:`astream_answer` are the implementation; :func:`answer` and
:func:`stream_answer` run them on perplexed's portal loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, computed_field

from . import _portal, telemetry
from ._errors import ConfigError, InvalidRequest, PerplexedError, StreamError, UpstreamError
from ._grounding import (
    AGENT_CITATION_INSTRUCTION,
    AGENT_PROVIDER,
    CITATION_INSTRUCTION,
    DEFAULT_MAX_SOURCE_CHARS,
    NO_SOURCES_INSTRUCTION,
    build_input,
    first_by_id,
    pack_sources,
    search_off,
    web_search_tool,
)
from ._models import Attempt, Hit, Result
from ._options import ChainOptions, SearchOptions, clean_query, split_options
from .agent import AgentClient, AgentRequest, AsyncAgentClient, Response, build_request
from .agent._client import ENV_API_KEY
from .chain import Search, prepare, run
from .citations import Citations, format_footnotes, parse_citations
from .providers import parse_published

__all__ = [
    "AGENT_PROVIDER",
    "ANSWER_EVENT",
    "DEFAULT_PRESET",
    "Answer",
    "AnswerCitation",
    "NoSourcesError",
    "UnmatchedMarker",
    "aanswer",
    "answer",
    "astream_answer",
    "stream_answer",
]

logger = logging.getLogger("perplexed.answer")

#: Telemetry event of the Agent API call: measurements ``duration_ms``, ``cost``; metadata ``model``,
#: ``response_id``.
ANSWER_EVENT = ("perplexed", "answer", "agent")

#: What runs the request when the caller names no ``preset``, ``effort``, ``model`` or ``models``.
DEFAULT_PRESET = "fast"

OnEmpty = Literal["raise", "answer"]
AttemptCallback = Callable[[Attempt], None]

# Request fields answer() sets itself: a caller cannot override them through agent_options.
_RESERVED = frozenset({"input", "stream", "background"})
_SELECTORS = ("preset", "effort", "model", "models", "profile")


class NoSourcesError(UpstreamError):
    """The search answered but found nothing to ground an answer in (``reason == "no_sources"``).

    Raised by :func:`answer` with ``on_empty="raise"`` (the default) before the model is called; carries
    the search attempts (and their cost). Pass ``on_empty="answer"`` to answer without sources instead.
    """


class AnswerCitation(BaseModel):
    """One resolved ``[n]`` marker: the number ``n``, where it is (``text[span[0]:span[1]]`` is ``marker``)
    and the :class:`~perplexed.Hit` it cites (``hit.id == n``). A marker citing several numbers (``[1, 2]``)
    gives one citation per number, sharing the span."""

    model_config = ConfigDict(frozen=True)

    n: int
    span: tuple[int, int]
    marker: str
    hit: Hit

    @property
    def number(self) -> int:
        """Same as :attr:`n`."""
        return self.n

    @property
    def start(self) -> int:
        """Start of the marker in the answer text."""
        return self.span[0]

    @property
    def end(self) -> int:
        """End of the marker in the answer text."""
        return self.span[1]

    @property
    def source(self) -> Hit:
        """Same as :attr:`hit`."""
        return self.hit

    @property
    def url(self) -> str:
        """The cited hit's URL."""
        return self.hit.url

    @property
    def title(self) -> str:
        """The cited hit's title."""
        return self.hit.title


class UnmatchedMarker(int):
    """A cited number with no source. It *is* the number (``9 in ans.unmatched``), and also knows where it
    was: :attr:`spans` in :attr:`Answer.response`'s ``output_text`` (the text before ``strip_unmatched``)."""

    spans: tuple[tuple[int, int], ...]

    def __new__(cls, n: int, spans: Sequence[tuple[int, int]] = ()) -> UnmatchedMarker:
        obj = super().__new__(cls, n)
        obj.spans = tuple(spans)
        return obj

    @property
    def n(self) -> int:
        """The number."""
        return int(self)

    @property
    def span(self) -> tuple[int, int] | None:
        """The span of its first occurrence."""
        return self.spans[0] if self.spans else None

    def __repr__(self) -> str:
        return f"UnmatchedMarker({int(self)}, spans={list(self.spans)!r})"


class Answer(BaseModel):
    """A grounded answer.

    ``text`` carries inline ``[n]`` markers; ``sources`` are the hits given to the model, numbered ``1..N``
    (their text possibly cut to ``max_source_chars``; the untouched hits are in ``search.hits``), or the
    Agent API's search results in ``perplexity-agent`` mode; ``citations`` the resolved markers and
    ``unmatched`` the numbers without a source. ``search`` is the chain's :class:`~perplexed.Result`
    (``None`` in ``perplexity-agent`` mode), ``response`` the Agent API response. ``cost`` is
    ``search_cost + agent_cost`` in USD (``agent_cost`` is the API's ``usage.cost.total_cost``, tool calls
    included).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    query: str
    text: str
    sources: list[Hit]
    citations: list[AnswerCitation]
    unmatched: list[UnmatchedMarker]
    search: Result | None
    response: Response
    search_cost: float = 0.0
    agent_cost: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost(self) -> float:
        """Total USD cost: the search's plus the Agent API's."""
        return float(self.search_cost + self.agent_cost)

    @property
    def provider(self) -> str | None:
        """Who found the sources: the chain's answering provider, or ``"perplexity-agent"``."""
        return AGENT_PROVIDER if self.search is None else self.search.provider

    @property
    def cited(self) -> list[Hit]:
        """The sources the text cites, each once, in order of first use."""
        return list({c.n: c.hit for c in self.citations}.values())

    def footnotes(self, *, style: Literal["plain", "markdown"] = "plain") -> str:
        """Footnote lines for the cited sources, numbered by their ids (matching the markers in ``text``)."""
        cited = self.cited
        return format_footnotes(cited, style=style, numbers=[h.id for h in cited])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (the CLI's ``--json``): text, citations, unmatched, sources, search, cost."""
        usage = self.response.usage
        return {
            "query": self.query,
            "text": self.text,
            "citations": [
                {"n": c.n, "span": list(c.span), "marker": c.marker, "url": c.url, "title": c.title}
                for c in self.citations
            ],
            "unmatched": [int(n) for n in self.unmatched],
            "sources": [h.model_dump(mode="json", exclude={"raw"}) for h in self.sources],
            "search": None
            if self.search is None
            else {
                "provider": self.search.provider,
                "attempts": [a.model_dump(mode="json") for a in self.search.attempts],
                "cost": self.search.cost,
            },
            "response": {
                "id": self.response.id,
                "model": self.response.model,
                "status": self.response.status,
                "usage": None if usage is None else usage.model_dump(mode="json", exclude_none=True),
            },
            "cost": self.cost,
            "search_cost": self.search_cost,
            "agent_cost": self.agent_cost,
        }

    def __str__(self) -> str:
        return self.text


# --- planning: every check before any call ----------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    query: str
    prepared: Search | None  # None: perplexity-agent mode
    params: dict[str, Any]  # Agent API request fields except input (and instructions, see below)
    instructions: str | None  # the caller's, or None for the default
    max_source_chars: int | None
    on_empty: OnEmpty
    strip_unmatched: bool
    on_attempt: AttemptCallback | None
    client: Any  # an AsyncAgentClient (or anything with its create/stream)

    @property
    def label(self) -> str:
        p = self.params
        return str(p.get("model") or p.get("effort") or p.get("preset") or (p.get("models") or [""])[0])


def _is_agent_mode(provider: Any) -> bool:
    spec = provider
    if spec is None:
        from ._settings import default_chain

        spec = default_chain()
    if isinstance(spec, str):
        names = [s.strip().lower() for s in spec.split(",") if s.strip()]
    elif isinstance(spec, list | tuple):
        names = [s.strip().lower() if isinstance(s, str) else "" for s in spec]
    else:
        return False
    if AGENT_PROVIDER not in names:
        return False
    if len(names) > 1:
        raise ConfigError(
            f"{AGENT_PROVIDER!r} cannot be part of a chain: it is a grounding mode of answer() in which the "
            "Agent API searches by itself; pass provider='perplexity-agent' alone"
        )
    return True


def _async_client(client: Any) -> Any:
    if client is None:
        # From the settings; the key is checked now so a missing one fails before the search is paid for.
        if not os.environ.get(ENV_API_KEY, "").strip():
            raise ConfigError(
                f"no Perplexity API key: set the {ENV_API_KEY} environment variable or pass client="
                "AgentClient(api_key=...) (AsyncAgentClient for the async API)"
            )
        return AsyncAgentClient()  # PERPLEXITY_API_KEY / PERPLEXITY_BASE_URL
    if isinstance(client, AgentClient):
        return client.async_client
    if isinstance(client, AsyncAgentClient):
        return client
    inner = getattr(client, "async_client", None)
    if inner is not None and callable(getattr(inner, "create", None)):
        return inner
    if callable(getattr(client, "create", None)) and callable(getattr(client, "stream", None)):
        return client  # duck-typed (a test double, an adapter's wrapper)
    raise InvalidRequest(
        f"client must be a perplexed.agent.AgentClient or AsyncAgentClient, not {type(client).__name__}",
        param="client",
    )


def _plan(
    query: object,
    provider: Any,
    *,
    client: Any,
    preset: str | None,
    effort: str | None,
    model: str | None,
    models: Sequence[str] | None,
    instructions: str | None,
    max_output_tokens: int | None,
    reasoning: Any,
    agent_options: Mapping[str, Any] | None,
    max_source_chars: int | None,
    on_empty: str,
    strip_unmatched: bool,
    on_attempt: AttemptCallback | None,
    chain_options: dict[str, Any],
) -> _Plan:
    cleaned = clean_query(query)
    if on_empty not in ("raise", "answer"):
        raise InvalidRequest(f"on_empty must be 'raise' or 'answer', got {on_empty!r}", param="on_empty")
    if max_source_chars is not None and (
        isinstance(max_source_chars, bool) or not isinstance(max_source_chars, int) or max_source_chars < 0
    ):
        raise InvalidRequest(
            f"max_source_chars must be a non-negative integer or None, got {max_source_chars!r}",
            param="max_source_chars",
        )
    if instructions is not None and not isinstance(instructions, str):
        raise InvalidRequest("instructions must be a string", param="instructions")

    agent_mode = _is_agent_mode(provider)
    prepared: Search | None = None
    if agent_mode:
        chain_kw, search_kw = split_options(dict(chain_options))
        ChainOptions.build(**chain_kw)  # validated; a chain does not run in this mode
        options = SearchOptions.build(**search_kw)
    else:
        prepared = prepare(cleaned, provider, **chain_options)
        options = prepared.options

    named = {
        "preset": preset,
        "effort": effort,
        "model": model,
        "models": None if models is None else list(models),
        "max_output_tokens": max_output_tokens,
        "reasoning": reasoning,
    }
    params: dict[str, Any] = {k: v for k, v in named.items() if v is not None}
    for key, value in dict(agent_options or {}).items():
        if key in _RESERVED or key == "instructions":
            hint = "pass instructions= directly" if key == "instructions" else "answer() sets it"
            raise InvalidRequest(f"agent_options cannot set {key!r} ({hint})", param=key)
        if key in params and value is not None and params[key] != value:
            raise InvalidRequest(f"{key} given both as an argument and in agent_options", param=key)
        if value is not None:
            params[key] = value
    if not any(params.get(k) for k in _SELECTORS):
        params["preset"] = DEFAULT_PRESET

    if agent_mode:
        own = [t for t in params.get("tools") or () if _tool_type(t) != "web_search"]
        mine = [t for t in params.get("tools") or () if _tool_type(t) == "web_search"]
        params["tools"] = [*(mine or [web_search_tool(options)]), *own]
    else:
        params.update(search_off(params))  # the one place that keeps the model from searching

    # Validate the request now, so a bad agent option fails before the search is paid for.
    build_request(None, {**params, "input": cleaned, "instructions": instructions or ""})
    return _Plan(
        query=cleaned,
        prepared=prepared,
        params=params,
        instructions=instructions,
        max_source_chars=max_source_chars,
        on_empty=on_empty,  # type: ignore[arg-type]
        strip_unmatched=bool(strip_unmatched),
        on_attempt=on_attempt,
        client=_async_client(client),
    )


_CHAIN_ARGS = ("provider_timeout_ms", "deadline_ms", "fallback_on", "max_results")


def _plan_call(args: dict[str, Any], *, prefer_async: bool) -> _Plan:
    """Build the plan from a public entry point's arguments (its ``locals()``, taken first thing).

    The four entry points share one signature; ``prefer_async`` says which of ``client`` / ``async_client``
    wins when both are given (``aanswer``/``astream_answer`` prefer the async one).
    """
    args = dict(args)
    client, async_client = args.pop("client"), args.pop("async_client")
    first, second = (async_client, client) if prefer_async else (client, async_client)
    chosen = first if first is not None else second
    chain_options = {k: args.pop(k) for k in _CHAIN_ARGS}
    chain_options.update(args.pop("options"))
    return _plan(args.pop("query"), args.pop("provider"), client=chosen, chain_options=chain_options, **args)


def _tool_type(tool: Any) -> Any:
    return tool.get("type") if isinstance(tool, Mapping) else getattr(tool, "type", None)


# --- running ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Grounded:
    result: Result | None
    sources: list[Hit]
    request: AgentRequest


async def _ground(plan: _Plan) -> _Grounded:
    """Run the search (chain mode) and build the Agent API request."""
    if plan.prepared is None:
        instructions = AGENT_CITATION_INSTRUCTION if plan.instructions is None else plan.instructions
        request = build_request(None, {**plan.params, "input": plan.query, "instructions": instructions})
        return _Grounded(None, [], request)
    result = await run(plan.prepared, on_attempt=plan.on_attempt)
    sources = pack_sources(result.hits, plan.max_source_chars)
    if not sources and plan.on_empty == "raise":
        tried = ", ".join(f"{a.provider}: {a.outcome.value}" for a in result.attempts) or "no provider"
        raise NoSourcesError(
            "no_sources",
            result.attempts,
            message=f"no sources: the search found no hits for {plan.query!r} ({tried}), so there is nothing "
            "to ground an answer in; pass on_empty='answer' to answer without sources",
        )
    default = CITATION_INSTRUCTION if sources else NO_SOURCES_INSTRUCTION
    instructions = default if plan.instructions is None else plan.instructions
    fields = {**plan.params, "input": build_input(plan.query, sources), "instructions": instructions}
    try:
        request = build_request(None, fields)
    except PerplexedError as exc:
        _keep_attempts(exc, result)
        raise
    return _Grounded(result, sources, request)


def _keep_attempts(exc: PerplexedError, result: Result | None) -> None:
    """Put the search attempts (and so their cost) in front of the error's own: nothing paid for is lost."""
    if result is not None and result.attempts:
        exc.attempts = [*result.attempts, *(a for a in exc.attempts if a not in result.attempts)]


def _emit(plan: _Plan, started: float, response: Response | None, span: Any) -> None:
    duration_ms = int((time.perf_counter() - started) * 1000)
    cost = float(response.cost or 0.0) if response is not None else 0.0
    model = (response.model if response is not None else None) or plan.label
    response_id = (response.id or None) if response is not None else None
    telemetry.emit(ANSWER_EVENT, {"duration_ms": duration_ms, "cost": cost}, {"model": model, "response_id": response_id})
    if span is not None:
        span.set_attribute("perplexed.model", model)
        span.set_attribute("perplexed.cost", cost)
        span.set_attribute("perplexed.duration_ms", duration_ms)
        if response_id:
            span.set_attribute("perplexed.response_id", response_id)


def _failed_response(exc: BaseException) -> Response | None:
    response = getattr(exc, "response", None)
    return response if isinstance(response, Response) else None


def _agent_sources(response: Response) -> list[Hit]:
    """The Agent API's search results as hits, ids kept (a repeated id keeps its first result)."""
    hits: list[Hit] = []
    for position, result in enumerate(response.search_results, start=1):
        rid = result.id if isinstance(result.id, int) and not isinstance(result.id, bool) else position
        hits.append(
            Hit(
                id=rid,
                url=result.url,
                title=result.title or "",
                snippet=result.snippet or "",
                published=parse_published(result.date),
                provider=AGENT_PROVIDER,
                raw=result.model_dump(mode="json", exclude_none=True),
            )
        )
    return first_by_id(hits)


def _strip(text: str, cites: Citations[Hit]) -> str:
    """``text`` without the numbers that have no source (a marker left empty goes with the spaces before it)."""
    known = {c.number for c in cites.matched}
    out: list[str] = []
    pos = 0
    for marker in cites.markers:
        kept = [n for n in marker.numbers if n in known]
        if len(kept) == len(marker.numbers):
            continue
        chunk = text[pos : marker.start]
        out.append(chunk if kept else chunk.rstrip(" \t"))
        if kept:
            out.append("[" + ", ".join(str(n) for n in kept) + "]")
        pos = marker.end
    out.append(text[pos:])
    return "".join(out)


def _finish(plan: _Plan, grounded: _Grounded, response: Response) -> Answer:
    text = response.output_text
    sources = grounded.sources if grounded.result is not None else _agent_sources(response)
    cites = parse_citations(text, sources)
    spans: dict[int, list[tuple[int, int]]] = {}
    for c in cites.unmatched:
        spans.setdefault(c.number, []).append((c.start, c.end))
    unmatched = [UnmatchedMarker(n, s) for n, s in spans.items()]
    if plan.strip_unmatched and unmatched:
        text = _strip(text, cites)
        cites = parse_citations(text, sources)
    citations = [
        AnswerCitation(n=c.number, span=(c.start, c.end), marker=c.marker, hit=c.source)
        for c in cites.matched
        if c.source is not None
    ]
    if unmatched:
        logger.debug("answer %s: markers without a source: %s", response.id, [int(n) for n in unmatched])
    return Answer(
        query=plan.query,
        text=text,
        sources=sources,
        citations=citations,
        unmatched=unmatched,
        search=grounded.result,
        response=response,
        search_cost=grounded.result.cost if grounded.result is not None else 0.0,
        agent_cost=float(response.cost or 0.0),
    )


def _span_attributes(plan: _Plan) -> dict[str, Any]:
    return {
        "perplexed.query": plan.query,
        "perplexed.mode": "agent" if plan.prepared is None else "chain",
        "perplexed.agent": plan.label,
    }


def _annotate(span: Any, ans: Answer) -> None:
    if span is None:
        return
    span.set_attribute("perplexed.cost", ans.cost)
    span.set_attribute("perplexed.sources", len(ans.sources))
    span.set_attribute("perplexed.citations", len(ans.citations))
    if ans.provider:
        span.set_attribute("perplexed.answered_by", ans.provider)


async def _execute(plan: _Plan) -> Answer:
    with telemetry.span("perplexed.answer", _span_attributes(plan)) as answer_span:
        grounded = await _ground(plan)
        started = time.perf_counter()
        with telemetry.span("perplexed.answer.agent", {"perplexed.agent": plan.label}) as agent_span:
            try:
                response = await plan.client.create(grounded.request)
            except PerplexedError as exc:
                _emit(plan, started, _failed_response(exc), agent_span)
                _keep_attempts(exc, grounded.result)
                raise
            _emit(plan, started, response, agent_span)
        ans = _finish(plan, grounded, response)
        _annotate(answer_span, ans)
        return ans


async def _stream(plan: _Plan) -> AsyncIterator[str | Answer]:
    with telemetry.span("perplexed.answer", _span_attributes(plan)) as answer_span:
        grounded = await _ground(plan)
        started = time.perf_counter()
        with telemetry.span("perplexed.answer.agent", {"perplexed.agent": plan.label}) as agent_span:
            stream = plan.client.stream(grounded.request)
            try:
                async for event in stream:
                    if event.type == "response.output_text.delta":
                        delta = getattr(event, "delta", "")
                        if delta:
                            yield delta
            except PerplexedError as exc:
                _emit(plan, started, _failed_response(exc) or getattr(stream, "response", None), agent_span)
                _keep_attempts(exc, grounded.result)
                raise
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    with contextlib.suppress(Exception):
                        await aclose()
            response = stream.response
            if not isinstance(response, Response):  # pragma: no cover - the client raises instead
                exc2 = StreamError("the stream ended without a final response", status=200)
                _keep_attempts(exc2, grounded.result)
                raise exc2
            _emit(plan, started, response, agent_span)
        ans = _finish(plan, grounded, response)
        _annotate(answer_span, ans)
        yield ans


# --- public API ------------------------------------------------------------------------------------------


async def aanswer(
    query: str,
    provider: Any = None,
    *,
    client: AsyncAgentClient | AgentClient | None = None,
    async_client: AsyncAgentClient | None = None,
    preset: str | None = None,
    effort: str | None = None,
    model: str | None = None,
    models: Sequence[str] | None = None,
    instructions: str | None = None,
    max_output_tokens: int | None = None,
    reasoning: Any = None,
    agent_options: Mapping[str, Any] | None = None,
    max_source_chars: int | None = DEFAULT_MAX_SOURCE_CHARS,
    on_empty: OnEmpty = "raise",
    strip_unmatched: bool = False,
    provider_timeout_ms: int | None = None,
    deadline_ms: int | None = None,
    fallback_on: Any = None,
    max_results: int | None = None,
    on_attempt: AttemptCallback | None = None,
    **options: Any,
) -> Answer:
    """Answer ``query`` from web sources, citing them with ``[n]`` markers.

    ``provider`` is a provider spec or chain as for :func:`perplexed.search` (default: the settings chain),
    or ``"perplexity-agent"`` to let the Agent API search by itself. Chain and search options
    (``provider_timeout_ms``, ``deadline_ms``, ``fallback_on``, ``max_results``, ``include_domains``,
    ``recency``, ... and provider-specific ``**options``) are those of :func:`perplexed.search`;
    ``on_attempt`` is called with each search :class:`~perplexed.Attempt`.

    The Agent API client is ``client`` (an :class:`~perplexed.agent.AsyncAgentClient`; ``async_client`` is
    an alias), else one built from ``PERPLEXITY_API_KEY`` / ``PERPLEXITY_BASE_URL``. ``preset``/``effort``
    (default ``preset="fast"``), ``model``/``models``, ``max_output_tokens`` and ``reasoning`` pass
    through, and so do other request fields in ``agent_options`` (e.g. ``{"temperature": 0}``).
    ``instructions`` replaces the default citation instruction.

    ``max_source_chars`` (default 24000, ``None`` for no cap) caps the sources' text: the longest are cut
    first, none is dropped, numbering is stable. ``on_empty="raise"`` (default) raises
    :class:`NoSourcesError` when the search finds nothing; ``"answer"`` answers without sources.
    ``strip_unmatched=True`` removes markers without a source from the text (they stay listed in
    :attr:`Answer.unmatched`).

    Raises :class:`~perplexed.UpstreamError` (``all_providers_failed``) without calling the model when no
    provider answered; Agent API errors (:class:`~perplexed.RateLimitError`,
    :class:`~perplexed.ResponseFailedError`, ...) carry the search attempts in ``.attempts`` (and their cost
    in ``.cost``).
    """
    plan = _plan_call(locals(), prefer_async=True)
    return await _execute(plan)


def answer(
    query: str,
    provider: Any = None,
    *,
    client: AgentClient | AsyncAgentClient | None = None,
    async_client: AsyncAgentClient | None = None,
    preset: str | None = None,
    effort: str | None = None,
    model: str | None = None,
    models: Sequence[str] | None = None,
    instructions: str | None = None,
    max_output_tokens: int | None = None,
    reasoning: Any = None,
    agent_options: Mapping[str, Any] | None = None,
    max_source_chars: int | None = DEFAULT_MAX_SOURCE_CHARS,
    on_empty: OnEmpty = "raise",
    strip_unmatched: bool = False,
    provider_timeout_ms: int | None = None,
    deadline_ms: int | None = None,
    fallback_on: Any = None,
    max_results: int | None = None,
    on_attempt: AttemptCallback | None = None,
    **options: Any,
) -> Answer:
    """Synchronous :func:`aanswer` (same arguments; ``client`` is an :class:`~perplexed.agent.AgentClient`).

    Runs the same coroutine on perplexed's portal loop, so budgets, cancellation and events are identical.
    """
    plan = _plan_call(locals(), prefer_async=False)
    return _portal.run(_execute, plan)


def astream_answer(
    query: str,
    provider: Any = None,
    *,
    client: AsyncAgentClient | AgentClient | None = None,
    async_client: AsyncAgentClient | None = None,
    preset: str | None = None,
    effort: str | None = None,
    model: str | None = None,
    models: Sequence[str] | None = None,
    instructions: str | None = None,
    max_output_tokens: int | None = None,
    reasoning: Any = None,
    agent_options: Mapping[str, Any] | None = None,
    max_source_chars: int | None = DEFAULT_MAX_SOURCE_CHARS,
    on_empty: OnEmpty = "raise",
    strip_unmatched: bool = False,
    provider_timeout_ms: int | None = None,
    deadline_ms: int | None = None,
    fallback_on: Any = None,
    max_results: int | None = None,
    on_attempt: AttemptCallback | None = None,
    **options: Any,
) -> AsyncIterator[str | Answer]:
    """Stream a grounded answer: ``async for chunk in astream_answer(...)``.

    Yields the answer's text deltas (``str``) as the model writes them, then the final :class:`Answer` as
    the last item. Same arguments and errors as :func:`aanswer`; arguments are checked at call time, the
    search starts on the first iteration. The deltas joined equal the non-stream text (before
    ``strip_unmatched``, which only applies to the final ``Answer.text``).
    """
    plan = _plan_call(locals(), prefer_async=True)
    return _stream(plan)


def stream_answer(
    query: str,
    provider: Any = None,
    *,
    client: AgentClient | AsyncAgentClient | None = None,
    async_client: AsyncAgentClient | None = None,
    preset: str | None = None,
    effort: str | None = None,
    model: str | None = None,
    models: Sequence[str] | None = None,
    instructions: str | None = None,
    max_output_tokens: int | None = None,
    reasoning: Any = None,
    agent_options: Mapping[str, Any] | None = None,
    max_source_chars: int | None = DEFAULT_MAX_SOURCE_CHARS,
    on_empty: OnEmpty = "raise",
    strip_unmatched: bool = False,
    provider_timeout_ms: int | None = None,
    deadline_ms: int | None = None,
    fallback_on: Any = None,
    max_results: int | None = None,
    on_attempt: AttemptCallback | None = None,
    **options: Any,
) -> Iterator[str | Answer]:
    """Synchronous :func:`astream_answer`: ``for chunk in stream_answer(...)`` gives text deltas, then the
    final :class:`Answer`. Closing the iterator early releases the connection."""
    plan = _plan_call(locals(), prefer_async=False)
    return _portal.iterate(_stream(plan))
