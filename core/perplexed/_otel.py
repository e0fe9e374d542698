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
* the Agent API call (the inference client convention): span ``chat {gen_ai.request.model}``, kind CLIENT,
  ``gen_ai.operation.name = "chat"``, ``gen_ai.provider.name = "perplexity"``, ``gen_ai.request.model``,
  ``gen_ai.response.model``, ``gen_ai.response.id``, ``gen_ai.usage.input_tokens``,
  ``gen_ai.usage.output_tokens``, ``error.type``; opt-in ``gen_ai.input.messages``,
  ``gen_ai.system_instructions``, ``gen_ai.output.messages``;
* metrics: ``gen_ai.client.operation.duration`` (histogram, seconds) and ``perplexed.cost`` (counter, USD).

Content (query text, tool arguments, what the Agent API is sent and answers) is recorded only with ``configure(trace_content=True)`` or the
conventions' opt-in variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``true``, ``span_only``
or ``span_and_event``).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from perplexed import telemetry

__all__ = [
    "AGENT_PROVIDER_NAME",
    "CONTENT_ENV",
    "annotate_attempt",
    "attempt_span",
    "chat_done",
    "chat_failed",
    "chat_span",
    "close_chat_span",
    "content_on",
    "open_chat_span",
    "record_chat_metrics",
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
    tracer = telemetry._get_tracer()
    if tracer is None:
        return telemetry._NO_SPAN
    attributes = chain_attributes(op.name, op.subject_key, op.subject, ",".join([p.label for p in op.members]))
    if strategy is not None:
        attributes["perplexed.strategy"] = strategy
    return telemetry._started(tracer, _CHAIN_NAMES.get(op.name) or f"perplexed.{op.name}", attributes, False)


_CHAIN_NAMES = {"search": "perplexed.search", "fetch": "perplexed.fetch", "answer": "perplexed.answer"}
# (operation, provider, budget_ms) -> the attempt span's name and start attributes, built once (the SDK copies
# the attributes into the span); bounded: cleared when it grows past _ATTEMPT_CACHE_MAX
_attempt_starts: dict[tuple[str, str, int], tuple[str, dict[str, Any]]] = {}
_ATTEMPT_CACHE_MAX = 1024


def attempt_span(op_name: str, label: str, budget_ms: int) -> contextlib.AbstractContextManager[Any]:
    """A provider attempt's span: ``retrieval {provider}`` for a search (``fetch {provider}``, ...)."""
    tracer = telemetry._get_tracer()
    if tracer is None:
        return telemetry._NO_SPAN
    key = (op_name, label, budget_ms)
    start = _attempt_starts.get(key)
    if start is None:
        operation = OPERATION_NAMES.get(op_name, op_name)
        start = (f"{operation} {label}", {
            "gen_ai.operation.name": operation,
            "gen_ai.data_source.id": label,
            "perplexed.provider": label,
            "perplexed.budget_ms": budget_ms,
        })
        if len(_attempt_starts) >= _ATTEMPT_CACHE_MAX:
            _attempt_starts.clear()
        _attempt_starts[key] = start
    return telemetry._started(tracer, start[0], start[1], True)


def annotate_attempt(span: Any, attempt: Any, results: int | None) -> None:
    """An attempt's outcome on its span: ``perplexed.*`` and, on failure, ``error.type`` (the reason); one
    ``set_attributes`` call (the SDK takes its lock once); nothing when the span is not recorded (sampled out)."""
    if not span.is_recording():
        return
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

_meters: list[Any] = []  # [provider, duration, cost, tokens] once built for a provider
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
                                      description="Duration of perplexed provider attempts and Agent API calls")
    cost = meter.create_counter("perplexed.cost", unit="USD", description="What perplexed's provider calls cost")
    tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}",
                                    description="Tokens of the Agent API calls, by gen_ai.token.type")
    _meters[:] = [provider, duration, cost, tokens]
    return duration, cost


# (operation, provider, outcome, error.type) -> the duration's and the cost's attributes, built once: the SDK
# keeps a reference to them for its aggregation, so they are never changed after they are built; bounded
_metric_attributes: dict[tuple[str, str, str, str | None], tuple[dict[str, Any], dict[str, Any]]] = {}


def _metric_attrs(op_name: str, attempt: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    outcome = attempt.outcome.value
    error = attempt.reason or outcome if outcome in ("error", "timeout") else None
    key = (op_name, attempt.provider, outcome, error)
    found = _metric_attributes.get(key)
    if found is None:
        operation = OPERATION_NAMES.get(op_name, op_name)
        duration = {"gen_ai.operation.name": operation, "gen_ai.data_source.id": attempt.provider,
                    "perplexed.outcome": outcome}
        if error is not None:
            duration["error.type"] = error
        found = (duration, {"gen_ai.data_source.id": attempt.provider, "gen_ai.operation.name": operation})
        if len(_metric_attributes) >= _ATTEMPT_CACHE_MAX:
            _metric_attributes.clear()
        _metric_attributes[key] = found
    return found


def record_metrics(op_name: str, attempt: Any) -> None:
    """One attempt's duration and cost, by provider (never raises)."""
    if _metrics_api is None if _metrics_checked else "opentelemetry.metrics._internal" not in sys.modules:
        return  # no OpenTelemetry, or no meter provider can have been set yet (_instruments()'s first tests)
    try:
        instruments = _instruments()
        if instruments is None:
            return
        duration, cost = instruments
        duration_attrs, cost_attrs = _metric_attrs(op_name, attempt)
        duration.record(attempt.duration_ms / 1000.0, duration_attrs)
        if attempt.cost > 0:
            cost.add(attempt.cost, cost_attrs)
    except Exception:  # telemetry never breaks a search
        telemetry.logger.debug("recording metrics failed", exc_info=True)


# -- the Agent API call: a GenAI inference client span (``chat {gen_ai.request.model}``) ----------------------

AGENT_PROVIDER_NAME = "perplexity"  # gen_ai.provider.name: a value the conventions define
_servers: dict[str, tuple[str | None, int | None]] = {}  # base URL -> (server.address, server.port)
_FINISH = {"completed": "stop", "failed": "error", "cancelled": "error"}
_INCOMPLETE = {"max_output_tokens": "length"}


def _server(base_url: str | None) -> tuple[str | None, int | None]:
    if not base_url:
        return None, None
    found = _servers.get(base_url)
    if found is None:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(base_url)
            port = parts.port or (443 if parts.scheme == "https" else 80 if parts.scheme == "http" else None)
            found = (parts.hostname, port)
        except ValueError:
            found = (None, None)
        if len(_servers) >= _ATTEMPT_CACHE_MAX:
            _servers.clear()
        _servers[base_url] = found
    return found


def _text_parts(content: Any) -> list[dict[str, Any]]:
    """An input item's content as GenAI message parts (text parts; anything else by its type only)."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append({"type": "text", "content": part["text"]})
        elif isinstance(part, dict):
            parts.append({"type": str(part.get("type") or "generic")})
    return parts


def _input_messages(body_input: Any) -> list[dict[str, Any]]:
    """The request's ``input`` in the conventions' ``gen_ai.input.messages`` shape."""
    if isinstance(body_input, str):
        return [{"role": "user", "parts": _text_parts(body_input)}]
    messages = []
    for item in body_input if isinstance(body_input, list) else ():
        if isinstance(item, dict):
            messages.append({"role": str(item.get("role") or "user"),
                             "parts": _text_parts(item.get("content", item.get("text", "")))})
    return messages


def chat_start(request: Any, base_url: str | None) -> tuple[str, dict[str, Any]]:
    """The name and start attributes of an Agent API call's span (the GenAI inference client span):
    ``chat {gen_ai.request.model}`` (``chat`` when a preset chooses the model); the input and the instructions
    only when content is opted in."""
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": AGENT_PROVIDER_NAME}
    model = None
    if request is not None:
        model = request.model or (request.models[0] if request.models else None)
        if model:
            attrs["gen_ai.request.model"] = model
        if request.preset:
            attrs["perplexed.preset"] = request.preset
        for key, value in (("gen_ai.request.max_tokens", request.max_output_tokens),
                           ("gen_ai.request.temperature", request.temperature),
                           ("gen_ai.request.top_p", request.top_p),
                           ("gen_ai.request.previous_response.id", request.previous_response_id)):
            if value is not None:
                attrs[key] = value
        if request.stream:
            attrs["gen_ai.request.stream"] = True
        if content_on():
            import json

            try:
                attrs["gen_ai.input.messages"] = json.dumps(_input_messages(request.to_body().get("input")))
                if request.instructions:
                    attrs["gen_ai.system_instructions"] = json.dumps(
                        [{"type": "text", "content": request.instructions}])
            except Exception:  # content is best effort: never fails a call
                telemetry.logger.debug("recording the Agent API input failed", exc_info=True)
    address, port = _server(base_url)
    if address:
        attrs["server.address"] = address
        if port:
            attrs["server.port"] = port
    return (f"chat {model}" if model else "chat"), attrs


def chat_response(response: Any) -> dict[str, Any]:
    """What an Agent API response adds to its span: id, model, token usage, finish reason, cost; the answer's
    text only when content is opted in."""
    attrs: dict[str, Any] = {}
    if response is None:
        return attrs
    if response.id:
        attrs["gen_ai.response.id"] = response.id
    if response.model:
        attrs["gen_ai.response.model"] = response.model
    usage = response.usage
    if usage is not None:
        if usage.input_tokens is not None:
            attrs["gen_ai.usage.input_tokens"] = usage.input_tokens
        if usage.output_tokens is not None:
            attrs["gen_ai.usage.output_tokens"] = usage.output_tokens
        cached = (usage.input_tokens_details or {}).get("cache_read_input_tokens")
        if isinstance(cached, int) and cached > 0:
            attrs["gen_ai.usage.cache_read.input_tokens"] = cached
    status = response.status
    finish = None
    if status:
        attrs["perplexed.status"] = status
        if status == "incomplete":
            details = getattr(response, "incomplete_details", None)
            reason = getattr(details, "reason", None) or "incomplete"
            finish = _INCOMPLETE.get(reason, reason)
        else:
            finish = _FINISH.get(status)
        if finish:
            attrs["gen_ai.response.finish_reasons"] = (finish,)
    cost = response.cost
    if cost is not None:
        attrs["perplexed.cost"] = float(cost)
    if content_on():
        import json

        try:
            message: dict[str, Any] = {"role": "assistant", "parts": _text_parts(response.output_text or "")}
            if finish:
                message["finish_reason"] = finish
            attrs["gen_ai.output.messages"] = json.dumps([message])
        except Exception:
            telemetry.logger.debug("recording the Agent API output failed", exc_info=True)
    return attrs


def chat_span(request: Any, base_url: str | None) -> contextlib.AbstractContextManager[Any]:
    """The span of one Agent API call (``create``), current while it runs (kind CLIENT); None when tracing
    is off. The caller finishes it with :func:`chat_done` or :func:`chat_failed`."""
    tracer = telemetry._get_tracer()
    if tracer is None:
        return telemetry._NO_SPAN
    name, attrs = chat_start(request, base_url)
    return telemetry._started(tracer, name, attrs, True)


def open_chat_span(request: Any, base_url: str | None) -> Any:
    """A stream's span: started now under the current span, never made current (a stream is read across
    ``await``s and ``yield``s of its caller); :func:`close_chat_span` ends it. None when tracing is off."""
    tracer = telemetry._get_tracer()
    if tracer is None:
        return None
    name, attrs = chat_start(request, base_url)
    return tracer.start_span(name, attributes=attrs, kind=telemetry._trace_api.SpanKind.CLIENT)


def chat_done(span: Any, response: Any) -> None:
    if span is not None and span.is_recording():
        span.set_attributes(chat_response(response))


def chat_failed(span: Any, exc: BaseException) -> None:
    """A failed call: ``error.type`` (the exception's class: ``RateLimitError``, ``APITimeoutError``,
    ``ResponseFailedError``, ...) and what a failed response still says (its usage, its id)."""
    if span is None or not span.is_recording():
        return
    attrs = chat_response(getattr(exc, "response", None))
    attrs["error.type"] = type(exc).__name__
    span.set_attributes(attrs)


def close_chat_span(span: Any, response: Any, exc: BaseException | None) -> None:
    """End a stream's span: the response's attributes, or the failure (``error.type``, an ERROR status)."""
    if span is None:
        return
    try:
        if exc is None:
            chat_done(span, response)
        elif isinstance(exc, GeneratorExit):  # the reader stopped early: not an error of the call
            chat_done(span, response)
            if response is None and span.is_recording():
                span.set_attribute("perplexed.closed_early", True)
        else:
            chat_failed(span, exc)
            if isinstance(exc, Exception):
                span.record_exception(exc)
                span.set_status(telemetry._trace_api.Status(telemetry._trace_api.StatusCode.ERROR,
                                                            f"{type(exc).__name__}: {exc}"))
    finally:
        span.end()


def record_chat_metrics(seconds: float, request: Any, response: Any, exc: BaseException | None) -> None:
    """An Agent API call's metrics (never raises): its duration (``gen_ai.client.operation.duration``), its
    tokens (``gen_ai.client.token.usage``, ``gen_ai.token.type`` ``input``/``output``) and its cost
    (``perplexed.cost``), by ``gen_ai.provider.name="perplexity"`` and the models."""
    if _metrics_checked and _metrics_api is None:
        return
    try:
        if _instruments() is None:
            return
        duration, cost, tokens = _meters[1], _meters[2], _meters[3]
        if response is None and exc is not None:
            response = getattr(exc, "response", None)
        attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": AGENT_PROVIDER_NAME}
        model = (request.model or (request.models[0] if request.models else None)) if request is not None else None
        if model:
            attrs["gen_ai.request.model"] = model
        if response is not None and response.model:
            attrs["gen_ai.response.model"] = response.model
        if exc is not None:
            attrs["error.type"] = type(exc).__name__
        duration.record(seconds, attrs)
        usage = response.usage if response is not None else None
        if usage is not None:
            for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
                if count is not None:
                    tokens.record(count, {**attrs, "gen_ai.token.type": kind})
        spent = response.cost if response is not None else None
        if spent:
            cost.add(float(spent), {"gen_ai.provider.name": AGENT_PROVIDER_NAME, "gen_ai.operation.name": "chat"})
    except Exception:  # telemetry never breaks a call
        telemetry.logger.debug("recording the Agent API metrics failed", exc_info=True)
