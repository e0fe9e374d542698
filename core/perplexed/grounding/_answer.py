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
   (:data:`perplexed.grounding._grounding.SEARCH_OFF`). ``[n]`` maps to our hit ids.
2. ``provider="perplexity-agent"``: the Agent API searches by itself with the ``web_search`` tool carrying
   the same filters; ``[n]`` maps to the ids of its ``search_results``, which become :attr:`Answer.sources`;
   :attr:`Answer.search` is ``None`` and the cost is ``usage.cost.total_cost``.

:func:`perplexed.integration.prepare_answer` validates the arguments into a frozen :class:`~perplexed.integration.AnswerPlan`
(``perplexed.grounding._answer_plan``); every entry point runs one (``answer(plan)``), building it from its arguments
when given a query. :func:`aanswer` and :func:`astream_answer` are the implementation; :func:`answer` and
:func:`stream_answer` run them on perplexed's portal loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, computed_field

from perplexed import _otel, telemetry
from perplexed._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    InvalidRequest,
    NoSourcesError,
    PerplexedError,
    StreamError,
)
from perplexed._logs import get_logger
from perplexed._models import Hit, Result, Usage
from perplexed.agent import AgentRequest, AsyncAgentClient, Response
from perplexed.agent._request import build_request
from perplexed.citations import Citations, format_footnotes, parse_citations
from perplexed.engine import _governance, _usage
from perplexed.engine.chain import run
from perplexed.grounding._answer_plan import DEFAULT_PRESET, AnswerPlan, prepare_answer
from perplexed.grounding._grounding import (
    AGENT_CITATION_INSTRUCTION,
    AGENT_PROVIDER,
    CITATION_INSTRUCTION,
    NO_SOURCES_INSTRUCTION,
    build_input,
    first_by_id,
    pack_sources,
)
from perplexed.grounding._verify import Verification, verify_answer
from perplexed.net import _portal
from perplexed.operations._search import with_pages
from perplexed.policy._failures import classify_exception
from perplexed.policy._policy import Purse
from perplexed.providers import parse_published

__all__ = [
    "AGENT_PROVIDER",
    "ANSWER_EVENT",
    "DEFAULT_PRESET",
    "Answer",
    "AnswerCitation",
    "AnswerPlan",
    "NoSourcesError",
    "UnmatchedMarker",
    "aanswer",
    "answer",
    "astream_answer",
    "prepare_answer",
    "stream_answer",
]

logger = get_logger("perplexed.answer")

#: Telemetry event of the Agent API call: measurements ``duration_ms``, ``cost``; metadata ``model``,
#: ``response_id``.
ANSWER_EVENT = ("perplexed", "answer", "agent")


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
    included). ``verification`` is the citation check (:func:`perplexed.verify`) when asked for with
    ``verify=True``, else ``None``.
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
    verification: Verification | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost(self) -> float:
        """Total USD cost: the search's plus the Agent API's."""
        return float(self.search_cost + self.agent_cost)

    @property
    def usage(self) -> Usage:
        """This answer's usage: its search's (pages fetched for it included; none in ``perplexity-agent``
        mode) and its Agent API call (billable when it cost something)."""
        agent = Usage(calls=1, billable_calls=1 if self.agent_cost > 0 else 0, cost_usd=float(self.agent_cost))
        return agent if self.search is None else Usage.total([self.search.usage, agent])

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
            **({} if self.verification is None else {"verification": self.verification.model_dump(mode="json")}),
        }

    def __str__(self) -> str:
        return self.text


# --- running ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Grounded:
    result: Result | None
    sources: list[Hit]
    request: AgentRequest


async def _ground(plan: AnswerPlan, budget: _Budget) -> _Grounded:
    """Run the search (chain mode) and build the Agent API request. The search and its page fetches end by the
    answer's deadline (``budget.at``; without ``deadline_ms``, the search's own from now) and share one
    ``budget_usd``."""
    if plan.search is None:
        instructions = AGENT_CITATION_INSTRUCTION if plan.instructions is None else plan.instructions
        request = build_request(None, {**plan.params, "input": plan.query, "instructions": instructions})
        return _Grounded(None, [], request)
    chain = plan.search.chain
    deadline = budget.at if budget.at is not None else asyncio.get_running_loop().time() + chain.deadline_ms / 1000
    purse = Purse(chain.budget_usd)
    result = await run(plan.search, on_attempt=plan.on_attempt, deadline=deadline, purse=purse)
    if plan.fetch is not None:  # fetch_content=N: ground on the top hits' page content
        result = await with_pages(result, plan.fetch, deadline, purse)
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
    if result is not None and (result.attempts or result.fetches):
        paid = [*result.attempts, *result.fetches]  # the page fetches of fetch_content too
        exc.attempts = [*paid, *(a for a in exc.attempts if a not in paid)]


def _emit(plan: AnswerPlan, started: float, response: Response | None, span: Any) -> None:
    duration_ms = int((time.perf_counter() - started) * 1000)
    cost = float(response.cost or 0.0) if response is not None else 0.0
    model = (response.model if response is not None else None) or plan.label
    response_id = (response.id or None) if response is not None else None
    telemetry.emit(ANSWER_EVENT, {"duration_ms": duration_ms, "cost": cost}, {"model": model, "response_id": response_id})
    if cost > 0:  # perplexed.spend() reports the Agent API's cost too (never raises, never blocks)
        _governance.record_spend(AGENT_PROVIDER, cost)
    _usage.note_agent(cost, duration_ms, ok=response is not None and response.status != "failed", tag=_tag(plan),
                      provider=AGENT_PROVIDER)
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


def _finish(plan: AnswerPlan, grounded: _Grounded, response: Response) -> Answer:
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
    ans = Answer(
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
    if plan.verify:  # offline and pure: the text against the sources the model was given
        ans.verification = verify_answer(ans)  # never loses the answer: unavailable on failure
    return ans


def _span_attributes(plan: AnswerPlan) -> dict[str, Any]:
    attributes = {
        "gen_ai.operation.name": "answer",  # perplexed's own operation (as "fetch"); the call inside is "chat"
        "perplexed.mode": "agent" if plan.search is None else "chain",
        "perplexed.agent": plan.label,
        "perplexed.operation": "answer",
    }
    if _otel.content_on():  # the question only when the user opted in (issue 38)
        attributes["perplexed.query"] = plan.query
    return attributes


def _tag(plan: AnswerPlan) -> str | None:
    return plan.search.chain.tag if plan.search is not None else None


def _annotate(span: Any, ans: Answer) -> None:
    if span is None:
        return
    span.set_attribute("perplexed.cost", ans.cost)
    span.set_attribute("perplexed.sources", len(ans.sources))
    span.set_attribute("perplexed.citations", len(ans.citations))
    if ans.provider:
        span.set_attribute("perplexed.answered_by", ans.provider)


class _Budget:
    """What is left of ``deadline_ms`` (the whole answer's budget), from the start of the run; no deadline:
    no bound beyond the search's own and the Agent API client's timeout."""

    def __init__(self, deadline_ms: int | None) -> None:
        self.deadline_ms = deadline_ms
        self.at: float | None = None
        if deadline_ms is not None:
            self.at = asyncio.get_running_loop().time() + deadline_ms / 1000

    def left(self) -> float | None:
        """Seconds left (``None``: unbounded). Raises :class:`~perplexed.APITimeoutError` when none is."""
        if self.at is None:
            return None
        left = self.at - asyncio.get_running_loop().time()
        if left <= 0.001:
            raise self.expired("ran out during the search: no time was left for the Agent API")
        return left

    def expired(self, what: str) -> APITimeoutError:
        return APITimeoutError(f"answer() deadline_ms={self.deadline_ms} {what}")

    def client_timeouts(self, client: Any, *, stream: bool) -> dict[str, float]:
        """The Agent API client's own timeouts, capped by what is left (a duck-typed client gets none: the
        budget still holds through :meth:`bound`)."""
        left = self.left()
        if left is None or not isinstance(client, AsyncAgentClient):
            return {}
        return {"timeout": left, "stream_timeout": left} if stream else {"timeout": left}

    def bound(self) -> asyncio.Timeout:
        """A timeout context ending at the deadline (``None``: never)."""
        return asyncio.timeout_at(self.at)


def _as_error(exc: Exception, budget: _Budget) -> PerplexedError:
    """Any failure of the Agent API call as a documented PerplexedError (so it can carry the attempts)."""
    if isinstance(exc, PerplexedError):
        return exc
    reason = classify_exception(exc).reason  # the failure map
    if isinstance(exc, TimeoutError):
        return budget.expired("passed while the Agent API was answering")
    if reason in ("connection", "timeout"):
        return APIConnectionError(f"the Agent API call failed: {type(exc).__name__}: {exc}")
    return APIError(f"the Agent API call failed unexpectedly: {type(exc).__name__}: {exc}")


async def _execute(plan: AnswerPlan, client: Any) -> Answer:
    budget = _Budget(plan.deadline_ms)
    with telemetry.span("perplexed.answer", _span_attributes(plan)) as answer_span:
        with _usage.operation("answer"):  # the ledger records this search under "answer"
            grounded = await _ground(plan, budget)
        started = time.perf_counter()
        with telemetry.span("perplexed.answer.agent", {"perplexed.agent": plan.label}) as agent_span:
            try:
                timeouts = budget.client_timeouts(client, stream=False)
                async with budget.bound():
                    response = await client.create(grounded.request, **timeouts)
            except Exception as exc:
                error = _as_error(exc, budget)
                _emit(plan, started, _failed_response(error), agent_span)
                _keep_attempts(error, grounded.result)
                if error is exc:
                    raise
                raise error from exc
            _emit(plan, started, response, agent_span)
        ans = _finish(plan, grounded, response)
        _annotate(answer_span, ans)
        return ans


async def _stream(plan: AnswerPlan, client: Any) -> AsyncIterator[str | Answer]:
    budget = _Budget(plan.deadline_ms)
    with telemetry.span("perplexed.answer", _span_attributes(plan)) as answer_span:
        with _usage.operation("answer"):  # the ledger records this search under "answer"
            grounded = await _ground(plan, budget)
        started = time.perf_counter()
        with telemetry.span("perplexed.answer.agent", {"perplexed.agent": plan.label}) as agent_span:
            stream: Any = None
            try:
                stream = client.stream(grounded.request, **budget.client_timeouts(client, stream=True))
                events = stream.__aiter__()
                while True:
                    async with budget.bound():  # each wait, never across a yield
                        try:
                            event = await events.__anext__()
                        except StopAsyncIteration:
                            break
                    if event.type == "response.output_text.delta":
                        delta = getattr(event, "delta", "")
                        if delta:
                            yield delta
                response = stream.response
                if not isinstance(response, Response):  # pragma: no cover - the client raises instead
                    raise StreamError("the stream ended without a final response", status=200)
            except Exception as exc:
                error = _as_error(exc, budget)
                _emit(plan, started, _failed_response(error) or getattr(stream, "response", None), agent_span)
                _keep_attempts(error, grounded.result)
                if error is exc:
                    raise
                raise error from exc
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    with contextlib.suppress(Exception):
                        await aclose()
            _emit(plan, started, response, agent_span)
        ans = _finish(plan, grounded, response)
        _annotate(answer_span, ans)
        yield ans


# --- public API ------------------------------------------------------------------------------------------


def _plan_of(query: str | AnswerPlan, provider: Any, options: dict[str, Any]) -> AnswerPlan:
    """The plan to run: ``query`` itself when it is one (nothing else may be given), else
    :func:`prepare_answer` of the arguments."""
    if isinstance(query, AnswerPlan):
        extra = ["provider"] if provider is not None else []
        extra += sorted(options)
        if extra:
            raise InvalidRequest(
                f"an AnswerPlan is complete: pass it alone (got {', '.join(extra)} too); "
                "prepare_answer() takes the options",
                param=extra[0],
            )
        return query
    return prepare_answer(query, provider, **options)


async def aanswer(query: str | AnswerPlan, provider: Any = None, **options: Any) -> Answer:
    """Answer ``query`` from web sources, citing them with ``[n]`` markers.

    Takes the arguments of :func:`perplexed.integration.prepare_answer` (``provider``, ``client``, ``preset``,
    ``deadline_ms``, the search options, ...), or an :class:`~perplexed.integration.AnswerPlan` it returned
    (``aanswer(plan)``). Prefers ``async_client`` over ``client`` when both are given.

    ``provider`` is a provider spec or chain as for :func:`perplexed.search`, or ``"perplexity-agent"`` to let
    the Agent API search by itself. ``deadline_ms``, when given, bounds the whole call (search, then the
    Agent API call with its timeout capped by what is left) within 50 ms; without it the search has its
    30 s and the Agent API its preset-sized timeout. ``max_source_chars`` (default 24000, ``None`` for no cap)
    caps the sources' text: the longest are cut first, none is dropped, numbering is stable.
    ``on_empty="raise"`` (default) raises :class:`NoSourcesError` when the search finds nothing;
    ``"answer"`` answers without sources. ``strip_unmatched=True`` removes markers without a source from
    the text (they stay listed in :attr:`Answer.unmatched`). ``verify=True`` checks the answer's citations
    against its sources (:func:`perplexed.verify`, offline) and attaches the result as
    :attr:`Answer.verification`.

    Raises :class:`~perplexed.UpstreamError` (``all_providers_failed``) without calling the model when no
    provider answered; every Agent API failure is a :class:`~perplexed.APIError` subclass
    (:class:`~perplexed.agent.RateLimitError`, :class:`~perplexed.agent.ResponseFailedError`,
    :class:`~perplexed.APITimeoutError`, ...) carrying the search attempts in ``.attempts`` (and their
    cost in ``.cost``).
    """
    plan = _plan_of(query, provider, options)
    return await _execute(plan, plan.async_client)


def answer(query: str | AnswerPlan, provider: Any = None, **options: Any) -> Answer:
    """Synchronous :func:`aanswer` (same arguments, or a plan: ``answer(prepare_answer(...))``).

    Runs the same coroutine on perplexed's portal loop, so budgets, cancellation and events are identical.
    """
    plan = _plan_of(query, provider, options)
    return _portal.run(_execute, plan, plan.client)


def astream_answer(query: str | AnswerPlan, provider: Any = None, **options: Any) -> AsyncIterator[str | Answer]:
    """Stream a grounded answer: ``async for chunk in astream_answer(...)``.

    Yields the answer's text deltas (``str``) as the model writes them, then the final :class:`Answer` as
    the last item. Same arguments (or plan) and errors as :func:`aanswer`; arguments are checked at call
    time, the search starts on the first iteration (and so does ``deadline_ms``'s budget). The deltas
    joined equal the non-stream text (before ``strip_unmatched``, which only applies to the final
    ``Answer.text``).
    """
    plan = _plan_of(query, provider, options)
    return _stream(plan, plan.async_client)


def stream_answer(query: str | AnswerPlan, provider: Any = None, **options: Any) -> Iterator[str | Answer]:
    """Synchronous :func:`astream_answer`: ``for chunk in stream_answer(...)`` gives text deltas, then the
    final :class:`Answer`. Closing the iterator early releases the connection."""
    plan = _plan_of(query, provider, options)
    return _portal.iterate(_stream(plan, plan.client))
