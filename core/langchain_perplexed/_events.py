"""Every provider attempt, as a LangChain custom event of the run that made it.

The core calls ``on_attempt(attempt)`` as each attempt ends; these callables forward it to the run's
callback handlers as the custom event ``perplexed_attempt`` (``on_custom_event`` in a handler,
``on_custom_event`` in ``astream_events``, an event on the run in LangSmith). The event carries ``provider``,
``outcome``, ``cost``, ``duration_ms``, ``billable`` and ``error``.

A grounded answer's Agent API call (the core's telemetry event ``("perplexed", "answer", "agent")``) is
forwarded the same way as the custom event ``perplexed_answer``: ``model``, ``response_id``, ``cost``,
``duration_ms``.

Sync runs: the core runs its I/O on its own loop thread, so the handlers are called from that thread, with
the caller's context. Async runs: the events are scheduled on the caller's loop as the attempts end and are
all delivered before the call returns or raises.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForRetrieverRun,
    AsyncCallbackManagerForToolRun,
    CallbackManager,
    CallbackManagerForRetrieverRun,
    CallbackManagerForToolRun,
)
from perplexed import Attempt

__all__ = [
    "ANSWER_EVENT",
    "ATTEMPT_EVENT",
    "AsyncAttemptEvents",
    "SyncAttemptEvents",
    "answer_event_data",
    "attempt_event_data",
    "has_handlers",
]

logger = logging.getLogger("langchain_perplexed")

#: The name of the custom event dispatched for every provider attempt.
ATTEMPT_EVENT = "perplexed_attempt"
#: The name of the custom event dispatched for the Agent API call of a grounded answer.
ANSWER_EVENT = "perplexed_answer"
#: The key of the call's usage on the run's metadata (issue 38): billable calls, cost, cache hits and what
#: they saved (the attempts' costs still go out as ``perplexed_attempt`` events).
USAGE_METADATA = "perplexed_usage"
# the core's telemetry event of that call
_CORE_ANSWER_EVENT = ("perplexed", "answer", "agent")

SyncRunManager = CallbackManagerForRetrieverRun | CallbackManagerForToolRun
AsyncRunManager = AsyncCallbackManagerForRetrieverRun | AsyncCallbackManagerForToolRun


def attempt_event_data(attempt: Attempt) -> dict[str, Any]:
    """The data of a ``perplexed_attempt`` event (JSON-serialisable)."""
    return {
        "provider": attempt.provider,
        "outcome": attempt.outcome.value,
        "cost": attempt.cost,
        "duration_ms": attempt.duration_ms,
        "billable": attempt.billable,
        "error": attempt.error,
    }


def has_handlers(run_manager: object) -> bool:
    """Whether ``run_manager`` is a real run manager with handlers (not ``None``, a no-op or a test mock)."""
    handlers = getattr(run_manager, "handlers", None)
    return isinstance(handlers, list) and bool(handlers)


def answer_event_data(measurements: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
    """The data of a ``perplexed_answer`` event (JSON-serialisable)."""
    return {
        "model": metadata.get("model"),
        "response_id": metadata.get("response_id"),
        "cost": measurements.get("cost", 0.0),
        "duration_ms": measurements.get("duration_ms", 0),
    }


class _AttemptEvents:
    """What the sync and async forwarders share: the run's callback manager and the event payloads.

    Subclasses say how an event reaches the handlers (:meth:`_dispatch`).
    """

    _manager_cls: type[CallbackManager] | type[AsyncCallbackManager]

    def __init__(self, run_manager: SyncRunManager | AsyncRunManager | None) -> None:
        self._manager: Any = None
        self._run_id = None
        self._metadata = getattr(run_manager, "metadata", None)  # the run's own (usage goes there)
        if run_manager is not None and has_handlers(run_manager):
            self._run_id = run_manager.run_id
            self._manager = self._manager_cls(
                handlers=run_manager.handlers,
                inheritable_handlers=run_manager.inheritable_handlers,
                parent_run_id=run_manager.parent_run_id,
                tags=run_manager.tags,
                inheritable_tags=run_manager.inheritable_tags,
                metadata=run_manager.metadata,
                inheritable_metadata=run_manager.inheritable_metadata,
            )

    @property
    def forwards(self) -> bool:
        """Whether the run has handlers to forward events to."""
        return self._manager is not None

    def __call__(self, attempt: Attempt) -> None:
        if self._manager is not None:
            self._dispatch(ATTEMPT_EVENT, attempt_event_data(attempt))

    def telemetry(self, event: tuple[str, ...], measurements: dict[str, Any], metadata: dict[str, Any]) -> None:
        """A :mod:`perplexed.telemetry` handler: forwards the Agent API call of an answer."""
        if self._manager is not None and event == _CORE_ANSWER_EVENT:
            self._dispatch(ANSWER_EVENT, answer_event_data(measurements, metadata))

    def usage(self, result: Any) -> None:
        """The call's usage (``Result.usage``, ``Page.usage``; an answer's search result's) on the run's
        metadata as ``perplexed_usage``. Never raises. A run with no handler has no one to read its metadata
        (LangChain gives each run a dict of its own): nothing is computed then."""
        if self._manager is None:
            return
        usage = getattr(result, "usage", None)
        if usage is None:
            usage = getattr(getattr(result, "result", None), "usage", None)
        if usage is None or not hasattr(usage, "model_dump"):
            return
        data = usage.model_dump()
        if isinstance(self._metadata, dict):
            self._metadata[USAGE_METADATA] = data

    def _dispatch(self, name: str, data: dict[str, Any]) -> None:
        raise NotImplementedError


class SyncAttemptEvents(_AttemptEvents):
    """``on_attempt`` for a sync run: dispatches each attempt at once through the run's handlers."""

    _manager_cls = CallbackManager

    def __init__(self, run_manager: SyncRunManager | None) -> None:
        super().__init__(run_manager)

    def _dispatch(self, name: str, data: dict[str, Any]) -> None:
        try:
            self._manager.on_custom_event(name, data, run_id=self._run_id)
        except Exception:  # a handler with raise_error=True must not break the search
            logger.exception("a callback handler raised on %s", name)


class AsyncAttemptEvents(_AttemptEvents):
    """``on_attempt`` for an async run: schedules each event on the running loop; :meth:`flush` awaits them."""

    _manager_cls = AsyncCallbackManager

    def __init__(self, run_manager: AsyncRunManager | None) -> None:
        super().__init__(run_manager)
        self._pending: list[asyncio.Future[Any]] = []

    def _dispatch(self, name: str, data: dict[str, Any]) -> None:
        coro = self._manager.on_custom_event(name, data, run_id=self._run_id)
        self._pending.append(asyncio.ensure_future(coro))

    async def flush(self) -> None:
        """Wait until every scheduled event has reached the handlers (handler errors are logged)."""
        pending, self._pending = self._pending, []
        for outcome in await asyncio.gather(*pending, return_exceptions=True):
            if isinstance(outcome, Exception):
                logger.error("a callback handler raised on a perplexed event: %r", outcome)
