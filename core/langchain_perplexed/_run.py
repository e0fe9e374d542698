"""Running the core from a LangChain run: child-run context and the attempt events. Sync and async twins."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import perplexed.integration
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.runnables.config import patch_config, set_config_context
from perplexed import Attempt, telemetry

from ._events import AsyncAttemptEvents, AsyncRunManager, SyncAttemptEvents, SyncRunManager, has_handlers

__all__ = ["arun_core", "call_id", "run_core"]

T = TypeVar("T")


def run_core(
    fn: Callable[..., T],
    run_manager: SyncRunManager | None,
    /,
    *args: Any,
    **kwargs: Any,
) -> T:
    """Call a sync core function (``perplexed.search``, or ``perplexed.answer`` of a plan) inside
    ``run_manager``'s run.

    Attempts go to the run's handlers as ``perplexed_attempt`` events (an answer's Agent API call as
    ``perplexed_answer``). For a retriever run, LangChain
    components the core calls (a retriever wrapped by :func:`~langchain_perplexed.as_provider`) become child
    runs of it (a tool run sets that context itself).
    """
    events = SyncAttemptEvents(run_manager)
    if not events.forwards:  # no handler to call: nothing to forward (a sync search may then run in the
        result = fn(*args, **kwargs)  # caller's thread, see perplexed's sync API)
        events.usage(result)
        return result
    args, call_kwargs = _with_events(events, args, kwargs)
    with telemetry.scoped(events.telemetry):
        if isinstance(run_manager, CallbackManagerForRetrieverRun) and has_handlers(run_manager):
            with set_config_context(patch_config(None, callbacks=run_manager.get_child())) as context:
                result = context.run(fn, *args, **call_kwargs)
        else:
            result = fn(*args, **call_kwargs)
    events.usage(result)
    return result


async def arun_core(
    fn: Callable[..., Awaitable[T]],
    run_manager: AsyncRunManager | None,
    /,
    *args: Any,
    **kwargs: Any,
) -> T:
    """Await an async core function (``perplexed.asearch``, ``perplexed.aanswer``) inside the run; see
    :func:`run_core`. Every attempt event has reached the handlers when this returns or raises."""
    events = AsyncAttemptEvents(run_manager)
    args, call_kwargs = _with_events(events, args, kwargs)
    try:
        with telemetry.scoped(events.telemetry):
            if isinstance(run_manager, AsyncCallbackManagerForRetrieverRun) and has_handlers(run_manager):
                with set_config_context(patch_config(None, callbacks=run_manager.get_child())) as context:
                    result: T = await asyncio.create_task(fn(*args, **call_kwargs), context=context)  # type: ignore[arg-type]
            else:
                result = await fn(*args, **call_kwargs)
        events.usage(result)
        return result
    finally:
        await events.flush()


def _with_events(
    events: Callable[[Attempt], None], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with ``events`` chained before the caller's ``on_attempt``: on the plan when
    the call runs an :class:`perplexed.AnswerPlan`, else as the ``on_attempt`` keyword."""
    if args and isinstance(args[0], perplexed.integration.AnswerPlan):
        plan = args[0]
        return (plan.with_callback(_chain(events, plan.on_attempt)), *args[1:]), kwargs
    return args, {**kwargs, "on_attempt": _chain(events, kwargs.get("on_attempt"))}


def _chain(
    first: Callable[[Attempt], None], second: Callable[[Attempt], None] | None
) -> Callable[[Attempt], None]:
    if second is None:
        return first

    def both(attempt: Attempt) -> None:
        first(attempt)
        second(attempt)

    return both


def call_id(run_manager: Any) -> str | None:
    """The LangChain run's id, for an ``execute_tool`` span's ``gen_ai.tool.call.id`` (None outside a run)."""
    run_id = getattr(run_manager, "run_id", None)
    return None if run_id is None else str(run_id)
