"""LlamaIndex instrumentation events for perplexed's chain attempts and Agent API calls.

perplexed's core emits one telemetry stream (:mod:`perplexed.telemetry`). While a perplexed LlamaIndex
component runs (a retriever, the query engine, a tool), :func:`dispatching` subscribes to that stream for the
current context only and re-dispatches each event through the LlamaIndex dispatcher, so any
``BaseEventHandler`` added with ``llama_index.core.instrumentation.get_dispatcher().add_event_handler(h)``
sees:

- :class:`PerplexedAttemptEvent`: one per provider attempt of a search chain (also the search that a grounded
  answer runs first);
- :class:`PerplexedAgentEvent`: one per Agent API call made by a grounded answer.

Events carry the ``span_id`` of the LlamaIndex span they happened in (e.g. ``PerplexedRetriever.aretrieve``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.events import BaseEvent
from perplexed import telemetry

__all__ = ["PerplexedAgentEvent", "PerplexedAttemptEvent", "dispatching"]

dispatcher = get_dispatcher(__name__)

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
        with telemetry.scoped(_forward):
            yield
    finally:
        _active.reset(token)
