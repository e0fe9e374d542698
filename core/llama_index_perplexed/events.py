"""LlamaIndex instrumentation events for perplexed's chain attempts and Agent API calls.

perplexed's core emits one telemetry stream (:mod:`perplexed.telemetry`). While a perplexed LlamaIndex
component runs (a retriever, the query engine, a tool), :func:`dispatching` subscribes to that stream for the
current context only and re-dispatches each event through the LlamaIndex dispatcher, so any
``BaseEventHandler`` added with ``llama_index.core.instrumentation.get_dispatcher().add_event_handler(h)``
sees:

- :class:`PerplexedAttemptEvent`: one per provider attempt of a search chain (also the search that a grounded
  answer runs first);
- :class:`PerplexedAgentEvent`: one per Agent API call made by a grounded answer;
- :class:`PerplexedUsageEvent`: one per call of a component (a retrieval, a query, a tool call, a reader's
  load), when it returns or fails: its usage (``Result.usage``: calls, billable calls, cost, cache hits and
  what they saved), dispatched by the component itself (:func:`reporting`).

Events carry the ``span_id`` of the LlamaIndex span they happened in (e.g. ``PerplexedRetriever.aretrieve``).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator
from typing import Any

from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import NullEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from perplexed import PerplexedError, Usage, telemetry

__all__ = ["PerplexedAgentEvent", "PerplexedAttemptEvent", "PerplexedUsageEvent", "dispatching", "reporting"]

dispatcher = get_dispatcher(__name__)
logger = logging.getLogger("llama_index_perplexed")

ATTEMPT_EVENT = ("perplexed", "search", "attempt")
AGENT_EVENT = ("perplexed", "answer", "agent")

# True while a dispatching() block is active in this context: nested perplexed components (a retriever used
# inside a tool, say) forward each event once, not once per level.
_active: contextvars.ContextVar[bool] = contextvars.ContextVar("llama_index_perplexed_dispatching", default=False)


class PerplexedAttemptEvent(BaseEvent):
    """One provider attempt of a perplexed search chain.

    ``outcome`` is ``"ok"``, ``"empty"``, ``"timeout"``, ``"deadline"`` or ``"error"``; ``cost`` is in USD;
    ``billable`` says whether the attempt was charged; ``error`` says why a failed attempt failed.
    """

    provider: str
    outcome: str
    cost: float = 0.0
    duration_ms: int = 0
    billable: bool = False
    error: str | None = None
    query: str | None = None

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "PerplexedAttemptEvent"


class PerplexedAgentEvent(BaseEvent):
    """One Perplexity Agent API call made by a grounded answer: its model, response id, cost and duration."""

    model: str | None = None
    response_id: str | None = None
    cost: float = 0.0
    duration_ms: int = 0

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "PerplexedAgentEvent"


class PerplexedUsageEvent(BaseEvent):
    """What one call of a perplexed LlamaIndex component used (issue 38): ``operation`` (``search``, ``fetch``
    or ``answer``), the provider ``calls`` that reached a provider (cache hits included), the
    ``billable_calls``, their ``cost_usd``, the ``cache_hits`` and what they saved (``saved_usd``, at list
    prices): ``Result.usage`` / ``Page.usage``. An answer's includes its Agent API call (one call, billable
    when it cost something); a reader's load sums its pages. ``failed`` is True when the call raised: what it
    used before failing (the error's attempts) is still counted."""

    operation: str
    calls: int = 0
    billable_calls: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0
    saved_usd: float = 0.0
    failed: bool = False

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "PerplexedUsageEvent"


def usage_of(outcome: Any) -> Usage:
    """The usage of a call's outcome: a ``Result`` or ``Page`` (its ``usage``), an ``Answer`` (its search's
    and its Agent API call), a list of them (a reader's pages, failures included), or an error (its
    attempts)."""
    if isinstance(outcome, list):
        return Usage.total([usage_of(item) for item in outcome])
    if isinstance(outcome, PerplexedError):
        return Usage.of(list(outcome.attempts), 0.0)
    usage = getattr(outcome, "usage", None)  # Result, Page and Answer each know theirs
    return usage if isinstance(usage, Usage) else Usage()


def _dispatch_usage(operation: str, outcome: Any, failed: bool) -> None:
    try:
        if not _observed():  # no handler would see it: build no event (dispatching to none is a no-op)
            return
        usage = usage_of(outcome)
        dispatcher.event(PerplexedUsageEvent(operation=operation, failed=failed, **usage.model_dump()))
    except Exception:  # an event handler's or a bookkeeping bug never fails the call
        logger.exception("dispatching perplexed's usage event failed; ignored")


@contextlib.contextmanager
def reporting(operation: str) -> Iterator[Callable[[Any], None]]:
    """Dispatch one :class:`PerplexedUsageEvent` for the call made in this block: ``report(outcome)`` with
    what it returned (a ``Result``, ``Page``, ``Answer`` or a list of pages); when a perplexed error leaves
    the block, the usage its attempts carry (``failed=True``)."""
    outcomes: list[Any] = []
    try:
        yield outcomes.append
    except PerplexedError as exc:
        _dispatch_usage(operation, exc, True)
        raise
    if outcomes:
        _dispatch_usage(operation, outcomes[-1], False)


def _forward(event: tuple[str, ...], measurements: dict[str, Any], metadata: dict[str, Any]) -> None:
    if event == ATTEMPT_EVENT:
        dispatcher.event(
            PerplexedAttemptEvent(
                provider=str(metadata.get("provider") or ""),
                outcome=str(metadata.get("outcome") or ""),
                cost=float(measurements.get("cost") or 0.0),
                duration_ms=int(measurements.get("duration_ms") or 0),
                billable=bool(metadata.get("billable")),
                error=metadata.get("error"),
                query=metadata.get("query"),
            )
        )
    elif event == AGENT_EVENT:
        dispatcher.event(
            PerplexedAgentEvent(
                model=metadata.get("model"),
                response_id=metadata.get("response_id"),
                cost=float(measurements.get("cost") or 0.0),
                duration_ms=int(measurements.get("duration_ms") or 0),
            )
        )


@contextlib.contextmanager
def dispatching() -> Iterator[None]:
    """Within this block, dispatch perplexed's telemetry events as LlamaIndex events (once, even nested)."""
    if _active.get():
        yield
        return
    token = _active.set(True)
    try:
        if _observed():
            with telemetry.scoped(_forward):
                yield
        else:  # no event handler to forward to: the core sees no listener (a sync search may then run in
            yield  # the caller's thread, see perplexed's sync API)
    finally:
        _active.reset(token)


def _observed() -> bool:
    """Whether an event dispatched here reaches a handler (other than LlamaIndex's ``NullEventHandler``)."""
    current: Any = dispatcher
    while current is not None:
        if any(not isinstance(h, NullEventHandler) for h in current.event_handlers):
            return True
        current = current.parent if current.propagate else None
    return False
