"""Rule 8: every provider call runs in an OpenTelemetry span ``retrieval {provider}`` inside a
``perplexed.search`` span, and every attempt emits ``("perplexed", "search", "attempt")`` with measurements
``duration_ms``, ``cost`` and metadata ``provider``, ``outcome``, ``billable``. Handlers come and go with
``perplexed.telemetry.attach`` / ``detach``; a handler that raises never breaks a search.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from perplexed import Outcome, UpstreamError, telemetry
from perplexed.providers import FunctionProvider, SearXNG
from testkit.loopback import Hang, Json, LoopbackServer, SearchAPI, Status, searxng_json

Event = tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]
ATTEMPT_EVENT = ("perplexed", "search", "attempt")  # the event name that docs/production.md documents

_EXPORTER = InMemorySpanExporter()
_installed = False


def _install_exporter() -> None:
    """Send every span to our in-memory exporter: through the global SDK provider if a test module already
    installed one (the global provider can be set once per process), else through a new one."""
    global _installed
    if _installed:
        return
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    _installed = True


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _install_exporter()
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
def events() -> Iterator[list[Event]]:
    """Every event emitted during the test, collected by an attached handler."""
    seen: list[Event] = []
    handle = telemetry.attach(lambda event, measurements, metadata: seen.append((event, measurements, metadata)))
    yield seen
    telemetry.detach(handle)


@pytest.fixture
def upstream(loopback: LoopbackServer) -> LoopbackServer:
    loopback.route("/ok/search", Json(searxng_json(2)))
    loopback.route("/empty/search", Json(searxng_json(0)))
    loopback.route("/fail/search", Status(500, "boom"))
    loopback.route("/hang/search", Hang())
    return loopback


def sx(server: LoopbackServer, path: str, **kw: Any) -> SearXNG:
    return SearXNG(base_url=f"{server.url}/{path}", name=path, **kw)


def attempt_events(seen: list[Event]) -> list[Event]:
    return [e for e in seen if e[0] == ATTEMPT_EVENT]


# --- events -------------------------------------------------------------------------------------------------


async def test_every_attempt_emits_an_event(api: SearchAPI, upstream: LoopbackServer, events: list[Event]) -> None:
    result = await api(
        "zoning", [sx(upstream, "fail"), sx(upstream, "empty", cost=0.01), sx(upstream, "ok", cost=0.002)]
    )

    emitted = attempt_events(events)
    assert [e[0] for e in emitted] == [("perplexed", "search", "attempt")] * 3
    assert [(m["provider"], m["outcome"], m["billable"]) for _, _, m in emitted] == [
        ("fail", "error", False),
        ("empty", "empty", True),
        ("ok", "ok", True),
    ]
    for (_, measurements, metadata), attempt in zip(emitted, result.attempts, strict=True):
        assert set(measurements) == {"duration_ms", "cost"}
        assert measurements == {"duration_ms": attempt.duration_ms, "cost": attempt.cost}
        assert isinstance(measurements["duration_ms"], int)
        assert metadata["error"] == attempt.error
        assert metadata["query"] == "zoning"
    assert emitted[0][2]["error"] is not None and "HTTP 500" in emitted[0][2]["error"]


async def test_timeouts_and_deadlines_emit_events_too(
    api: SearchAPI, upstream: LoopbackServer, events: list[Event]
) -> None:
    with pytest.raises(UpstreamError):
        await api("zoning", [sx(upstream, "hang"), sx(upstream, "ok")], deadline_ms=150)

    assert [(m["provider"], m["outcome"]) for _, _, m in attempt_events(events)] == [
        ("hang", "timeout"),
        ("ok", "deadline"),
    ]


async def test_detach_stops_the_events(api: SearchAPI, upstream: LoopbackServer) -> None:
    seen: list[Event] = []
    handle = telemetry.attach(lambda *event: seen.append(event))  # type: ignore[arg-type]
    await api("zoning", sx(upstream, "ok"))
    telemetry.detach(handle)
    await api("zoning", sx(upstream, "ok"))
    telemetry.detach(handle)  # detaching twice is harmless
    telemetry.detach(10**9)  # and so is an unknown handle

    assert len(attempt_events(seen)) == 1


async def test_a_raising_handler_never_breaks_a_search(
    api: SearchAPI, upstream: LoopbackServer, events: list[Event], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(event: tuple[str, ...], measurements: dict[str, Any], metadata: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    handle = telemetry.attach(broken)
    try:
        with caplog.at_level(logging.ERROR, logger="perplexed.telemetry"):
            result = await api("zoning", [sx(upstream, "fail"), sx(upstream, "ok")])
    finally:
        telemetry.detach(handle)

    assert result.provider == "ok"
    assert len(attempt_events(events)) == 2  # the other handler still got every event
    assert any("handler bug" in (r.exc_text or "") or "raised" in r.getMessage() for r in caplog.records)


async def test_a_handler_that_mutates_its_arguments_does_not_affect_others(
    api: SearchAPI, upstream: LoopbackServer, events: list[Event]
) -> None:
    def vandal(event: tuple[str, ...], measurements: dict[str, Any], metadata: dict[str, Any]) -> None:
        measurements.clear()
        metadata["provider"] = "vandalised"

    handle = telemetry.attach(vandal)
    try:
        await api("zoning", sx(upstream, "ok"))
    finally:
        telemetry.detach(handle)

    (_, measurements, metadata) = attempt_events(events)[0]
    assert metadata["provider"] == "ok" and "duration_ms" in measurements


async def test_scoped_handlers_see_only_their_own_searches(upstream: LoopbackServer) -> None:
    import perplexed

    seen_a: list[str] = []
    seen_b: list[str] = []

    async def run(query: str, sink: list[str]) -> None:
        with telemetry.scoped(lambda event, m, meta: sink.append(meta["query"])):
            await perplexed.asearch(query, [sx(upstream, "fail"), sx(upstream, "ok")])

    await asyncio.gather(run("alpha", seen_a), run("beta", seen_b))

    assert seen_a == ["alpha", "alpha"]
    assert seen_b == ["beta", "beta"]


async def test_on_attempt_sees_each_attempt_as_it_ends_and_may_raise(
    api: SearchAPI, upstream: LoopbackServer
) -> None:
    import perplexed

    seen: list[tuple[str, Outcome]] = []

    def callback(attempt: perplexed.Attempt) -> None:
        seen.append((attempt.provider, attempt.outcome))
        raise ValueError("callback bug")

    result = await api("zoning", [sx(upstream, "fail"), sx(upstream, "ok")], on_attempt=callback)

    assert result.provider == "ok"
    assert seen == [("fail", Outcome.ERROR), ("ok", Outcome.OK)]


# --- spans ------------------------------------------------------------------------------------------------------


def by_name(finished: tuple[ReadableSpan, ...] | list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


async def test_each_provider_call_is_a_span_inside_the_search_span(
    api: SearchAPI, upstream: LoopbackServer, spans: InMemorySpanExporter
) -> None:
    await api("zoning", [sx(upstream, "fail"), sx(upstream, "empty", cost=0.01), sx(upstream, "ok")])

    finished = spans.get_finished_spans()
    (chain_span,) = by_name(finished, "perplexed.search")
    calls = [s for s in finished if s.name.startswith("retrieval ")]  # the GenAI retrieval convention (issue 38)
    assert [c.name for c in calls] == ["retrieval fail", "retrieval empty", "retrieval ok"]
    assert [c.attributes["perplexed.provider"] for c in calls] == ["fail", "empty", "ok"]  # type: ignore[index]
    assert [c.attributes["perplexed.outcome"] for c in calls] == ["error", "empty", "ok"]  # type: ignore[index]
    for call in calls:
        assert call.parent is not None
        assert call.parent.span_id == chain_span.context.span_id
        assert call.context.trace_id == chain_span.context.trace_id
    assert calls[1].attributes["perplexed.cost"] == 0.01  # type: ignore[index]
    assert "HTTP 500" in str(calls[0].attributes["perplexed.error"])  # type: ignore[index]
    attrs = chain_span.attributes or {}
    assert "perplexed.query" not in attrs  # query text only with trace_content=True (issue 38)
    assert attrs["perplexed.providers"] == "fail,empty,ok"
    assert attrs["perplexed.answered_by"] == "ok"
    assert attrs["perplexed.attempts"] == 3
    assert attrs["perplexed.cost"] == 0.01


async def test_providers_skipped_by_the_deadline_have_no_span(
    api: SearchAPI, upstream: LoopbackServer, spans: InMemorySpanExporter
) -> None:
    with pytest.raises(UpstreamError):
        await api("zoning", [sx(upstream, "hang"), sx(upstream, "ok")], deadline_ms=150)

    finished = spans.get_finished_spans()
    calls = by_name(finished, "retrieval hang")
    assert [c.attributes["perplexed.provider"] for c in calls] == ["hang"]  # type: ignore[index]
    assert calls[0].attributes["perplexed.outcome"] == "timeout"  # type: ignore[index]
    (chain_span,) = by_name(finished, "perplexed.search")
    assert chain_span.status.status_code is StatusCode.ERROR  # all_providers_failed propagated through it


async def test_the_search_span_is_a_child_of_the_callers_span(
    api: SearchAPI, upstream: LoopbackServer, spans: InMemorySpanExporter
) -> None:
    """The caller's context reaches the engine, also through the sync API's portal thread."""
    tracer = trace.get_tracer("tests")
    with tracer.start_as_current_span("caller") as caller:
        await api("zoning", sx(upstream, "ok"))

    (chain_span,) = by_name(spans.get_finished_spans(), "perplexed.search")
    assert chain_span.parent is not None
    assert chain_span.parent.span_id == caller.get_span_context().span_id


def test_without_an_sdk_provider_spans_are_skipped_and_a_late_provider_is_picked_up(tmp_path: Path) -> None:
    script = tmp_path / "late.py"
    script.write_text(
        textwrap.dedent(
            """
            import perplexed
            from perplexed import telemetry
            from perplexed.providers import FunctionProvider
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

            hit = FunctionProvider(lambda q, o: [{"url": "https://a.example/"}], name="fn")
            with telemetry.span("x") as before:
                pass
            perplexed.search("q", hit)
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            perplexed.search("q", hit)
            print(before is None, sorted(s.name for s in exporter.get_finished_spans()))
            """
        )
    )
    core = Path(__file__).resolve().parents[1] / "core"
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(core)}
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True ['perplexed.search', 'retrieval fn']"


async def test_function_provider_calls_are_spans_too(api: SearchAPI, spans: InMemorySpanExporter) -> None:
    async def fn(query: str, options: Any) -> list[dict[str, str]]:
        return [{"url": "https://a.example/"}]

    await api("zoning", FunctionProvider(fn))

    calls = by_name(spans.get_finished_spans(), "retrieval fn")
    assert [(c.attributes or {}).get("perplexed.provider") for c in calls] == ["fn"]
