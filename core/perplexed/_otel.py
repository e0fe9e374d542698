"""The OpenTelemetry bridge: GenAI semantic-convention attributes on perplexed's spans, ``execute_tool`` spans for
the tool surfaces, and two metrics (issue 38).

Nothing here imports OpenTelemetry unless a tracer or meter provider is in use (see
:func:`perplexed.telemetry.span`): without the ``otel`` extra, every helper is a cheap no-op.

The conventions (``open-telemetry/semantic-conventions-genai``) are in *development* status; the names used:

* retrieval: span ``retrieval {gen_ai.data_source.id}``, ``gen_ai.operation.name = "retrieval"``,
  ``gen_ai.data_source.id``, ``error.type``; opt-in ``gen_ai.retrieval.query.text``;
* tools: span ``execute_tool {gen_ai.tool.name}``, ``gen_ai.operation.name = "execute_tool"``,
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``; opt-in ``gen_ai.tool.call.arguments``;
* MCP: ``mcp.method.name``;
* metrics: ``gen_ai.client.operation.duration`` (histogram, seconds) and ``perplexed.cost`` (counter, USD).

Content (query text, tool arguments) is recorded only with ``configure(trace_content=True)`` or the
conventions' opt-in variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``true``, ``span_only``
or ``span_and_event``).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from perplexed import telemetry

__all__ = [
    "CONTENT_ENV",
    "annotate_attempt",
    "attempt_span",
    "content_on",
    "record_metrics",
    "set_trace_content",
    "tool_span",
]

# operation -> gen_ai.operation.name of its provider attempts (search follows the retrieval convention)
OPERATION_NAMES = {"search": "retrieval", "fetch": "fetch", "answer": "answer"}
CONTENT_ENV = telemetry.CONTENT_ENV
content_on = telemetry.content_on
set_trace_content = telemetry.set_trace_content
tool_span = telemetry.tool_span


def chain_attributes(op_name: str, subject_key: str, subject: str, providers: str) -> dict[str, Any]:
    """The attributes of a chain call's span (``perplexed.search`` ...): the subject only when opted in."""
    attributes: dict[str, Any] = {"perplexed.providers": providers, "perplexed.operation": op_name}
    if content_on():
        attributes[f"perplexed.{subject_key}"] = subject
        if op_name == "search":
            attributes["gen_ai.retrieval.query.text"] = subject
    return attributes


def chain_span(op: Any, strategy: str | None) -> contextlib.AbstractContextManager[Any]:
    """A chain call's span (``perplexed.search``, ``perplexed.fetch``, ...); nothing is built when tracing is
    off."""
    if telemetry._get_tracer() is None:
        return telemetry._NO_SPAN
    attributes = chain_attributes(op.name, op.subject_key, op.subject, ",".join(p.label for p in op.members))
    if strategy is not None:
        attributes["perplexed.strategy"] = strategy
    return telemetry.span(f"perplexed.{op.name}", attributes)


def attempt_span(op_name: str, label: str, budget_ms: int) -> contextlib.AbstractContextManager[Any]:
    """A provider attempt's span: ``retrieval {provider}`` for a search (``fetch {provider}``, ...)."""
    if telemetry._get_tracer() is None:
        return telemetry._NO_SPAN
    operation = OPERATION_NAMES.get(op_name, op_name)
    return telemetry.span(f"{operation} {label}", {
        "gen_ai.operation.name": operation,
        "gen_ai.data_source.id": label,
        "perplexed.provider": label,
        "perplexed.budget_ms": budget_ms,
    }, kind="client")


def annotate_attempt(span: Any, attempt: Any, results: int | None) -> None:
    """An attempt's outcome on its span: ``perplexed.*`` and, on failure, ``error.type`` (the reason); one
    ``set_attributes`` call (the SDK takes its lock once)."""
    outcome = attempt.outcome.value
    attrs: dict[str, Any] = {
        "perplexed.outcome": outcome,
        "perplexed.cost": attempt.cost,
        "perplexed.duration_ms": attempt.duration_ms,
        "perplexed.billable": attempt.billable,
        "perplexed.cached": attempt.cached,
    }
    if results is not None:
        attrs["perplexed.results"] = results
    if attempt.reason:
        attrs["perplexed.reason"] = attempt.reason
    if attempt.error:
        attrs["perplexed.error"] = attempt.error
    if outcome in ("error", "timeout"):
        attrs["error.type"] = attempt.reason or outcome
    span.set_attributes(attrs)


# -- metrics --------------------------------------------------------------------------------------------------

_meters: list[Any] = []  # [provider, histogram, counter] once built for a provider
_metrics_api: Any = None
_metrics_checked = False


def _instruments() -> tuple[Any, Any] | None:
    """The duration histogram and the cost counter, or None when no SDK meter provider is set in code (or the
    ``otel`` extra is missing: the import is tried once)."""
    global _metrics_api, _metrics_checked
    if not _metrics_checked:
        if "opentelemetry.metrics._internal" not in sys.modules:  # no meter provider can be set yet: no import
            return None
        _metrics_checked = True
        try:
            from opentelemetry.metrics import _internal as metrics_internal
        except ImportError:
            _metrics_api = None
        else:
            _metrics_api = metrics_internal
    if _metrics_api is None:
        return None
    provider = getattr(_metrics_api, "_METER_PROVIDER", None)
    if provider is None:
        return None
    if _meters and _meters[0] is provider:
        return _meters[1], _meters[2]
    meter = provider.get_meter("perplexed")
    duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s",
                                      description="Duration of perplexed provider attempts")
    cost = meter.create_counter("perplexed.cost", unit="USD", description="What perplexed's provider calls cost")
    _meters[:] = [provider, duration, cost]
    return duration, cost


def record_metrics(op_name: str, attempt: Any) -> None:
    """One attempt's duration and cost, by provider (never raises)."""
    if _metrics_checked and _metrics_api is None:  # no OpenTelemetry: nothing to do, at once
        return
    try:
        instruments = _instruments()
        if instruments is None:
            return
        duration, cost = instruments
        attrs = {"gen_ai.operation.name": OPERATION_NAMES.get(op_name, op_name),
                 "gen_ai.data_source.id": attempt.provider, "perplexed.outcome": attempt.outcome.value}
        if attempt.outcome.value in ("error", "timeout"):
            attrs["error.type"] = attempt.reason or attempt.outcome.value
        duration.record(attempt.duration_ms / 1000.0, attrs)
        if attempt.cost > 0:
            cost.add(attempt.cost, {"gen_ai.data_source.id": attempt.provider,
                                    "gen_ai.operation.name": attrs["gen_ai.operation.name"]})
    except Exception:  # telemetry never breaks a search
        telemetry.logger.debug("recording metrics failed", exc_info=True)
