"""Issue 38: traces in the OpenTelemetry GenAI conventions and the two metrics, with the SDK's in-memory
exporters: a chain call span with one ``retrieval {provider}`` child per attempt (sync and async, fallback,
hedged, merge), fetch spans, ``execute_tool {name}`` spans from the LangChain, LlamaIndex and MCP tools, and no
query text or tool arguments unless the user opts in."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import perplexed
import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from perplexed import Hit, UpstreamError
from perplexed.providers import FunctionProvider
from testkit.loopback import LoopbackServer, SearchAPI

QUERY = "private-question-about-zoning-4b1d"
_EXPORTER = InMemorySpanExporter()
_READER = InMemoryMetricReader()
_installed: list[bool] = []


def _install() -> None:
    if _installed:
        return
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))
    _installed.append(True)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _install()
    perplexed.reset()
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
    perplexed.reset()


def ok(query: str, options: Any) -> list[Hit]:
    return [Hit(url="https://a.example/1", title="A"), Hit(url="https://a.example/2", title="B")]


def broken(query: str, options: Any) -> list[Hit]:
    raise perplexed.ProviderError("server", "HTTP 500", status=500)


def slow(query: str, options: Any) -> list[Hit]:
    time.sleep(0.3)
    return [Hit(url="https://slow.example/1", title="S")]


def named(spans: InMemorySpanExporter, prefix: str) -> list[ReadableSpan]:
    return [s for s in spans.get_finished_spans() if s.name.startswith(prefix)]


def no_content(spans: InMemorySpanExporter, *texts: str) -> None:
    for span in spans.get_finished_spans():
        for value in (span.attributes or {}).values():
            for text in texts:
                assert text not in str(value), (span.name, value)


async def test_a_chain_call_is_a_span_with_one_retrieval_child_per_attempt(
    api: SearchAPI, spans: InMemorySpanExporter
) -> None:
    result = await api(QUERY, [FunctionProvider(broken, name="down", cost=0.0),
                               FunctionProvider(ok, name="up", cost=0.004)], tag="team")
    assert result.provider == "up"
    (chain,) = named(spans, "perplexed.search")
    children = named(spans, "retrieval ")
    assert [c.name for c in children] == ["retrieval down", "retrieval up"]
    for child in children:
        assert child.parent is not None and child.parent.span_id == chain.context.span_id
        assert child.kind is SpanKind.CLIENT
        attrs = child.attributes or {}
        assert attrs["gen_ai.operation.name"] == "retrieval"
        assert attrs["gen_ai.data_source.id"] == child.name.split(" ", 1)[1]
    down, up = (c.attributes or {} for c in children)
    assert down["error.type"] == "server" and down["perplexed.outcome"] == "error"
    assert down["perplexed.reason"] == "server" and down["perplexed.billable"] is False
    assert up["perplexed.outcome"] == "ok" and up["perplexed.results"] == 2 and "error.type" not in up
    assert up["perplexed.cost"] == pytest.approx(0.004) and up["perplexed.billable"] is True
    assert up["perplexed.cached"] is False
    assert (chain.attributes or {})["perplexed.results"] == 2
    no_content(spans, QUERY)


def test_a_cache_hit_is_a_retrieval_span_marked_cached(spans: InMemorySpanExporter) -> None:
    provider = FunctionProvider(ok, name="paid", cost=0.01)
    perplexed.search(QUERY, provider, cache_ttl_s=60)
    _EXPORTER.clear()
    perplexed.search(QUERY, provider, cache_ttl_s=60)
    (hit,) = named(spans, "retrieval ")
    assert (hit.attributes or {})["perplexed.cached"] is True
    assert (hit.attributes or {})["perplexed.billable"] is False


def test_all_providers_failed_spans_carry_error_type(spans: InMemorySpanExporter) -> None:
    with pytest.raises(UpstreamError):
        perplexed.search(QUERY, [FunctionProvider(broken, name="a"), FunctionProvider(broken, name="b")])
    assert [(s.attributes or {})["error.type"] for s in named(spans, "retrieval ")] == ["server", "server"]


def test_hedged_and_merged_strategies_have_a_child_per_attempt(spans: InMemorySpanExporter) -> None:
    perplexed.search(QUERY, [FunctionProvider(slow, name="slow"), FunctionProvider(ok, name="fast")],
                     strategy="hedged", hedge_after_ms=20)
    (chain,) = named(spans, "perplexed.search")
    children = {s.name: s for s in named(spans, "retrieval ")}
    assert set(children) == {"retrieval slow", "retrieval fast"}
    assert all(c.parent is not None and c.parent.span_id == chain.context.span_id for c in children.values())
    assert (children["retrieval fast"].attributes or {})["perplexed.outcome"] == "ok"
    _EXPORTER.clear()
    perplexed.search(QUERY, [FunctionProvider(ok, name="m1"), FunctionProvider(ok, name="m2")], strategy="merge")
    (chain,) = named(spans, "perplexed.search")
    assert sorted(s.name for s in named(spans, "retrieval ")) == ["retrieval m1", "retrieval m2"]
    assert (chain.attributes or {})["perplexed.answered_by"] == "m1,m2"


def test_query_text_only_with_trace_content(spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch) -> None:
    perplexed.search(QUERY, FunctionProvider(ok, name="fn"))
    no_content(spans, QUERY)
    perplexed.configure(trace_content=True)
    _EXPORTER.clear()
    perplexed.search(QUERY, FunctionProvider(ok, name="fn"))
    (chain,) = named(spans, "perplexed.search")
    assert (chain.attributes or {})["gen_ai.retrieval.query.text"] == QUERY
    perplexed.reset()
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    _EXPORTER.clear()
    perplexed.search(QUERY, FunctionProvider(ok, name="fn"))
    assert (named(spans, "perplexed.search")[0].attributes or {})["gen_ai.retrieval.query.text"] == QUERY
    with pytest.raises(perplexed.ConfigError):
        perplexed.configure(trace_content="yes")  # type: ignore[arg-type]


def test_fetch_attempts_are_spans_of_their_own(spans: InMemorySpanExporter, loopback: LoopbackServer) -> None:
    from testkit.loopback import Html

    loopback.route("/page", Html("<html><head><title>T</title></head><body><article><p>" + "text " * 80
                                 + "</p></article></body></html>"))
    perplexed.fetch(loopback.url + "/page", "http", allow_private=True)
    (chain,) = named(spans, "perplexed.fetch")
    (child,) = named(spans, "fetch http")
    assert child.parent is not None and child.parent.span_id == chain.context.span_id
    assert (child.attributes or {})["gen_ai.operation.name"] == "fetch"
    no_content(spans, "/page")


def test_metrics_duration_histogram_and_cost_counter_per_provider(spans: InMemorySpanExporter) -> None:
    perplexed.search(QUERY, FunctionProvider(ok, name="metered", cost=0.5))
    perplexed.search(QUERY, FunctionProvider(ok, name="metered", cost=0.5))
    data = _READER.get_metrics_data()
    points: dict[str, list[Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    durations = [p for p in points["gen_ai.client.operation.duration"]
                 if p.attributes.get("gen_ai.data_source.id") == "metered"]
    assert sum(p.count for p in durations) == 2
    costs = [p for p in points["perplexed.cost"] if p.attributes.get("gen_ai.data_source.id") == "metered"]
    assert sum(p.value for p in costs) == pytest.approx(1.0)


# -- the three tool surfaces ----------------------------------------------------------------------------------


def test_langchain_tool_is_an_execute_tool_span(spans: InMemorySpanExporter) -> None:
    from langchain_perplexed import PerplexedSearchTool

    tool = PerplexedSearchTool(provider=FunctionProvider(ok, name="fn"))
    tool.invoke(QUERY)
    (span,) = named(spans, "execute_tool ")
    attrs = span.attributes or {}
    assert span.name == "execute_tool perplexed_search"
    assert attrs["gen_ai.operation.name"] == "execute_tool" and attrs["gen_ai.tool.name"] == "perplexed_search"
    assert "gen_ai.tool.call.arguments" not in attrs
    (chain,) = named(spans, "perplexed.search")
    assert chain.parent is not None and chain.parent.span_id == span.context.span_id
    no_content(spans, QUERY)
    perplexed.configure(trace_content=True)
    _EXPORTER.clear()
    asyncio.run(tool.ainvoke(QUERY))
    (span,) = named(spans, "execute_tool ")
    assert QUERY in str((span.attributes or {})["gen_ai.tool.call.arguments"])


def test_llama_index_tool_is_an_execute_tool_span(spans: InMemorySpanExporter) -> None:
    from llama_index_perplexed import PerplexedToolSpec

    spec = PerplexedToolSpec(provider=FunctionProvider(ok, name="fn"))
    spec.perplexed_search(QUERY)
    asyncio.run(spec.aperplexed_search(QUERY))
    found = named(spans, "execute_tool ")
    assert [s.name for s in found] == ["execute_tool perplexed_search"] * 2
    for span in found:
        (chain,) = [c for c in named(spans, "perplexed.search") if c.parent and c.parent.span_id == span.context.span_id]
        assert chain is not None
    no_content(spans, QUERY)


async def test_mcp_tool_is_an_execute_tool_span_with_the_mcp_method(spans: InMemorySpanExporter) -> None:
    from mcp import Client
    from perplexed.mcp_server import create_server

    server = create_server(FunctionProvider(ok, name="fn"))
    async with Client(server) as client:
        result = await client.call_tool("web_search", {"query": QUERY})
    assert not result.is_error
    (span,) = named(spans, "execute_tool ")
    attrs = span.attributes or {}
    assert span.name == "execute_tool web_search"
    assert attrs["mcp.method.name"] == "tools/call" and attrs["gen_ai.tool.name"] == "web_search"
    no_content(spans, QUERY)
