"""One event stream for everything perplexed does, plus OpenTelemetry spans when the ``otel`` extra is present.

Events are ``(event, measurements, metadata)`` triples, in the style of Erlang's ``telemetry``::

    def handler(event: tuple[str, ...], measurements: dict, metadata: dict) -> None: ...
    handle = perplexed.telemetry.attach(handler)
    ...
    perplexed.telemetry.detach(handle)

Events emitted:

- ``("perplexed", "search", "attempt")``: measurements ``duration_ms``, ``cost``; metadata ``provider``,
  ``outcome``, ``billable``, ``error``, ``detail``, ``query``.
- ``("perplexed", "answer", "agent")``: measurements ``duration_ms``, ``cost``; metadata ``model``,
  ``response_id``.

A handler that raises is logged and never breaks a search. Framework adapters (LangChain callbacks, the
LlamaIndex dispatcher) subscribe here instead of being called from the engine.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from perplexed._logs import get_logger

__all__ = ["CONTENT_ENV", "Handler", "attach", "content_on", "detach", "emit", "listening", "scoped",
           "set_trace_content", "span", "tool_span"]

logger = get_logger("perplexed.telemetry")

Handler = Callable[[tuple[str, ...], dict[str, Any], dict[str, Any]], None]

_handlers: dict[int, Handler] = {}
_ids = itertools.count(1)
# Handlers attached for the current context only (e.g. one LangChain run): they see just the events emitted
# inside that context, also when several runs interleave on one event loop.
_scoped: contextvars.ContextVar[tuple[Handler, ...]] = contextvars.ContextVar("perplexed_scoped", default=())


def attach(handler: Handler) -> int:
    """Register ``handler`` for every event, process-wide; returns a handle for :func:`detach`."""
    handle = next(_ids)
    _handlers[handle] = handler
    return handle


def detach(handle: int) -> None:
    """Unregister the handler behind ``handle`` (unknown handles are ignored)."""
    _handlers.pop(handle, None)


@contextlib.contextmanager
def scoped(handler: Handler) -> Iterator[None]:
    """Within this block (and the tasks it starts), also send events to ``handler``."""
    token = _scoped.set((*_scoped.get(), handler))
    try:
        yield
    finally:
        _scoped.reset(token)


def listening() -> bool:
    """Whether any handler would receive an event emitted now (lets emitters skip building one)."""
    return bool(_handlers) or bool(_scoped.get())


def emit(event: tuple[str, ...], measurements: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
    """Send an event to every attached handler; handler errors are logged, never raised."""
    handlers = (*_handlers.values(), *_scoped.get())
    if not handlers:
        return
    for handler in handlers:
        try:
            handler(event, dict(measurements), dict(metadata))
        except Exception:
            logger.exception("perplexed telemetry handler %r raised; ignored", handler)


_tracer: Any = None
_trace_api: Any = None
_context_api: Any = None
_inactive: tuple[type, ...] = ()
_env_provider = False
_otel_checked = False
_MISSING = object()


def _get_tracer() -> Any:
    """perplexed's tracer, or None when spans would record nothing.

    Without ``opentelemetry-api``, or while no SDK tracer provider is installed (the API's proxy or no-op
    provider), spans are skipped entirely: they would be non-recording, and entering one costs more than a
    whole search's engine overhead. The check runs on every call, so installing a provider later works.
    """
    global _tracer, _trace_api, _context_api, _inactive, _env_provider, _otel_checked
    if not _otel_checked:
        # nothing can have installed a tracer provider while opentelemetry.trace is not even imported (and its
        # variable is unset): no import of the API (~6 ms) for a process that does not trace
        if "opentelemetry.trace" not in sys.modules and not (_env_read[0] if _env_read else _env_set()):
            return None
        _otel_checked = True
        try:
            from opentelemetry import context, trace
        except ImportError:  # the otel extra is not installed: spans are no-ops
            _trace_api = None
        else:
            _trace_api, _context_api = trace, context
            _inactive = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
            _env_provider = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
            _tracer = trace.get_tracer("perplexed")
    if _trace_api is None:
        return None
    # trace.get_tracer_provider() looks the environment up on every call (microseconds per span); the
    # module global it reads is None until a provider is set in code or configured by that variable
    provider = getattr(_trace_api, "_TRACER_PROVIDER", _MISSING)
    if provider is None and not _env_provider:
        return None
    if provider is None or provider is _MISSING:
        provider = _trace_api.get_tracer_provider()
    if isinstance(provider, _inactive):
        return None
    return _tracer


_env_read: list[bool] = []


def _env_set() -> bool:
    """Whether ``OTEL_PYTHON_TRACER_PROVIDER`` is set (read once, as the check above reads it once)."""
    if not _env_read:
        _env_read.append("OTEL_PYTHON_TRACER_PROVIDER" in os.environ)
    return _env_read[0]


_NO_SPAN: contextlib.AbstractContextManager[Any] = contextlib.nullcontext(None)


def _tracing() -> bool:
    """Whether spans record anything now (an OpenTelemetry SDK tracer provider is installed): the engine
    builds span attributes only then."""
    return _get_tracer() is not None


def span(name: str, attributes: Mapping[str, Any] | None = None,
         kind: str | None = None) -> contextlib.AbstractContextManager[Any]:
    """A context manager for an OpenTelemetry span named ``name``; entering it gives the span, or None
    when tracing is off (no ``opentelemetry-api``, or no tracer provider installed). ``kind``: ``"client"``
    for a call to another service (default: internal)."""
    tracer = _get_tracer()
    if tracer is None:
        return _NO_SPAN
    clean = {k: v for k, v in (attributes or {}).items() if v is not None}
    return _started(tracer, name, clean, kind == "client")


def _started(tracer: Any, name: str, attributes: Mapping[str, Any], client: bool) -> _Current:
    """A span started now with ``attributes`` (clean: no None values; the SDK copies them, so a cached dict
    may be passed), made current while the block runs."""
    if client:
        return _Current(tracer.start_span(name, attributes=attributes, kind=_trace_api.SpanKind.CLIENT))
    return _Current(tracer.start_span(name, attributes=attributes))


class _Current:
    """``with`` block for a started span: current (its context attached) inside the block, ended at its end; an
    exception that leaves the block is recorded on it with an ERROR status, as ``start_as_current_span`` does.
    A plain class instead of the API's two generator-based context managers: about 10 us less per span."""

    __slots__ = ("span", "token")

    def __init__(self, span: Any) -> None:
        self.span = span
        self.token: Any = None

    def __enter__(self) -> Any:
        self.token = _context_api.attach(_trace_api.set_span_in_context(self.span))
        return self.span

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        span = self.span
        try:
            _context_api.detach(self.token)
            # like the API's use_span: Exception only (a cancellation is not an error)
            if isinstance(exc, Exception) and span.is_recording():
                span.record_exception(exc)
                span.set_status(_trace_api.Status(_trace_api.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        finally:
            span.end()


# -- content opt-in and tool spans (issue 38; the GenAI conventions, development status) --------------------

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CONTENT_VALUES = frozenset({"true", "1", "span_only", "span_and_event"})

_trace_content: bool | None = None


def set_trace_content(value: bool | None) -> None:
    """``configure(trace_content=...)``: True records query text and tool arguments; None = the environment."""
    global _trace_content
    _trace_content = value


def content_on() -> bool:
    """Whether content (query text, tool arguments) may go on spans: opted in, never by default."""
    if _trace_content is not None:
        return _trace_content
    return os.environ.get(CONTENT_ENV, "").strip().lower() in _CONTENT_VALUES


@contextlib.contextmanager
def tool_span(name: str, arguments: Mapping[str, Any] | None = None, *, call_id: str | None = None,
              description: str | None = None, mcp_method: str | None = None) -> Iterator[Any]:
    """An ``execute_tool {name}`` span around a tool call (LangChain, LlamaIndex, the MCP server); the
    arguments only when content is opted in. ``mcp_method`` adds ``mcp.method.name`` (``tools/call``)."""
    if _get_tracer() is None:
        yield None
        return
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                  "gen_ai.tool.type": "function"}
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    if description:
        attributes["gen_ai.tool.description"] = description[:500]
    if mcp_method:
        attributes["mcp.method.name"] = mcp_method
    if arguments is not None and content_on():
        try:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(dict(arguments), default=str)
        except Exception:
            pass
    with span(f"execute_tool {name}", attributes) as current:
        try:
            yield current
        except BaseException as exc:
            if current is not None:
                current.set_attribute("error.type", type(exc).__name__)
            raise
