"""The Agent API call as a GenAI inference client span (issue 38): ``chat {gen_ai.request.model}``, kind CLIENT,
``gen_ai.operation.name="chat"``, ``gen_ai.provider.name="perplexity"``, the request and response models, the
token usage, ``error.type`` on failure; the input and the answer only with the content opt-in. Over a real
loopback socket (the SSE stand-in server), with the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import perplexed
import pytest
from agent_helpers import FAKE_KEY, cassette_body, cassette_events
from agent_sse_server import Reply, json_reply, serve
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from perplexed.agent import AgentClient, AsyncAgentClient, RateLimitError, ResponseFailedError

QUESTION = "private-question-about-the-eu-ai-act-7f3a"
MODEL = "openai/gpt-5.1"
_EXPORTER = InMemorySpanExporter()
_installed: list[bool] = []


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    if not _installed:
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            trace.set_tracer_provider(TracerProvider())
            provider = trace.get_tracer_provider()
        assert isinstance(provider, TracerProvider)
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        _installed.append(True)
    perplexed.reset()
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
    perplexed.reset()


def completed() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(cassette_body("create_completed"))
    return data


def frames(events: list[dict[str, Any]]) -> list[bytes]:
    return [("data: " + json.dumps(e) + "\n\n").encode() for e in events]


def chats(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == "chat" or s.name.startswith("chat ")]


def no_content(exporter: InMemorySpanExporter, *texts: str) -> None:
    for span in exporter.get_finished_spans():
        for value in (span.attributes or {}).values():
            for text in texts:
                assert text not in str(value), (span.name, value)


async def test_create_is_a_chat_client_span_with_models_and_token_usage(spans: InMemorySpanExporter) -> None:
    with serve(lambda req: json_reply(completed())) as server:
        client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url)
        response = await client.create(model=MODEL, input=QUESTION, instructions="Cite sources.",
                                       max_output_tokens=800)
    assert response.id == "resp_abc"
    (span,) = chats(spans)
    assert span.name == f"chat {MODEL}" and span.kind is SpanKind.CLIENT
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "perplexity"
    assert attrs["gen_ai.request.model"] == MODEL and attrs["gen_ai.response.model"] == MODEL
    assert attrs["gen_ai.request.max_tokens"] == 800
    assert attrs["gen_ai.response.id"] == "resp_abc"
    assert attrs["gen_ai.usage.input_tokens"] == 1234 and attrs["gen_ai.usage.output_tokens"] == 456
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["perplexed.cost"] == pytest.approx(0.0111)
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == server.port
    assert "error.type" not in attrs and span.status.status_code is not StatusCode.ERROR
    assert not any(k in attrs for k in ("gen_ai.input.messages", "gen_ai.output.messages",
                                        "gen_ai.system_instructions"))
    no_content(spans, QUESTION, "Cite sources", "EU AI Act's obligations")


async def test_content_only_with_the_opt_in(spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch) -> None:
    perplexed.configure(trace_content=True)
    with serve(lambda req: json_reply(completed())) as server:
        client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url)
        await client.create(preset="fast", input=QUESTION, instructions="Cite sources.")
    (span,) = chats(spans)
    assert span.name == "chat"  # a preset chooses the model: no request model to name
    attrs = dict(span.attributes or {})
    assert attrs["perplexed.preset"] == "fast" and "gen_ai.request.model" not in attrs
    assert json.loads(str(attrs["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    assert json.loads(str(attrs["gen_ai.system_instructions"])) == [{"type": "text", "content": "Cite sources."}]
    (message,) = json.loads(str(attrs["gen_ai.output.messages"]))
    assert message["role"] == "assistant" and message["finish_reason"] == "stop"
    assert message["parts"][0]["content"].startswith("The EU AI Act's obligations")
    perplexed.reset()  # the conventions' own variable opts in too
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
    spans.clear()
    with serve(lambda req: json_reply(completed())) as server:
        AgentClient(api_key=FAKE_KEY, base_url=server.url).create(preset="fast", input=QUESTION)
    (span,) = chats(spans)
    assert QUESTION in str((span.attributes or {})["gen_ai.input.messages"])


async def test_a_failed_call_has_error_type_and_retries_stay_in_one_span(spans: InMemorySpanExporter) -> None:
    limited = json_reply({"error": {"message": "slow down", "type": "rate_limit", "code": 429}}, 429)
    with serve(lambda req: limited) as server:
        client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url, max_retries=0)
        with pytest.raises(RateLimitError):
            await client.create(model=MODEL, input=QUESTION)
    (span,) = chats(spans)
    assert (span.attributes or {})["error.type"] == "RateLimitError"
    assert span.status.status_code is StatusCode.ERROR
    spans.clear()
    replies = [limited, json_reply(completed())]
    with serve(lambda req: replies.pop(0)) as server:
        client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url, max_retries=1, max_retry_after=0.01)
        await client.create(model=MODEL, input=QUESTION)
        assert len(server.requests) == 2
    (span,) = chats(spans)  # the logical operation: one span over both tries
    assert "error.type" not in (span.attributes or {}) and (span.attributes or {})["gen_ai.usage.input_tokens"] == 1234
    no_content(spans, QUESTION)


async def test_a_failed_response_keeps_its_usage_on_the_span(spans: InMemorySpanExporter) -> None:
    failed: dict[str, Any] = json.loads(cassette_body("create_incomplete"))
    with serve(lambda req: json_reply(failed)) as server:
        client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url)
        with pytest.raises(ResponseFailedError):
            await client.create(model=MODEL, input=QUESTION, max_output_tokens=5)
    (span,) = chats(spans)
    attrs = dict(span.attributes or {})
    assert attrs["error.type"] == "ResponseIncompleteError"  # a ResponseFailedError
    assert attrs["gen_ai.response.finish_reasons"] == ("length",)  # incomplete: max_output_tokens
    assert attrs["gen_ai.usage.output_tokens"] == 456 and attrs["gen_ai.response.id"] == "resp_inc"


async def test_a_stream_is_one_span_under_the_caller_never_the_current_one(spans: InMemorySpanExporter) -> None:
    events = cassette_events("stream_normal")
    tracer = trace.get_tracer("tests")
    with serve(lambda req: Reply(steps=frames(events))) as server:
        client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url)
        with tracer.start_as_current_span("caller") as caller:
            stream = client.stream(model=MODEL, input=QUESTION)
            async for event in stream:
                if event.type == "response.output_text.delta":
                    with tracer.start_as_current_span("reader"):  # the reader's own work between events
                        pass
    (span,) = chats(spans)
    attrs = dict(span.attributes or {})
    assert span.parent is not None and span.parent.span_id == caller.get_span_context().span_id
    assert attrs["gen_ai.request.stream"] is True and attrs["gen_ai.response.model"] == MODEL
    assert attrs["gen_ai.usage.input_tokens"] == 1234 and attrs["gen_ai.usage.output_tokens"] == 456
    readers = [s for s in spans.get_finished_spans() if s.name == "reader"]
    assert readers and all(r.parent is not None and r.parent.span_id == caller.get_span_context().span_id
                           for r in readers)
    no_content(spans, QUESTION)


async def test_a_failed_stream_ends_its_span_with_the_error(spans: InMemorySpanExporter) -> None:
    with serve(lambda req: Reply(steps=frames(cassette_events("stream_failed")))) as server:
        client = AsyncAgentClient(api_key=FAKE_KEY, base_url=server.url)
        with pytest.raises(ResponseFailedError):
            await client.create(model=MODEL, input=QUESTION, stream=True)
    (span,) = chats(spans)
    attrs = dict(span.attributes or {})
    assert attrs["error.type"] == "ResponseFailedError" and attrs["gen_ai.response.finish_reasons"] == ("error",)
    assert span.status.status_code is StatusCode.ERROR
    assert span.end_time is not None


def test_a_sync_call_is_a_child_of_the_callers_span(spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("tests")
    with serve(lambda req: json_reply(completed())) as server, tracer.start_as_current_span("caller") as caller:
        AgentClient(api_key=FAKE_KEY, base_url=server.url).create(model=MODEL, input=QUESTION)
    (span,) = chats(spans)
    assert span.parent is not None and span.parent.span_id == caller.get_span_context().span_id


def test_answer_spans_follow_the_conventions(spans: InMemorySpanExporter) -> None:
    """``perplexed.answer`` (operation ``answer``) holds the search and ``perplexed.answer.agent``, which holds
    the Agent API call's ``chat`` span; no question or answer text without the opt-in."""
    from perplexed.providers import FunctionProvider

    def hits(query: str, options: Any) -> list[dict[str, str]]:
        return [{"url": "https://a.example/1", "title": "A", "snippet": "Obligations apply from August 2025."}]

    with serve(lambda req: json_reply(completed())) as server:
        client = AgentClient(api_key=FAKE_KEY, base_url=server.url)
        perplexed.answer(QUESTION, provider=FunctionProvider(hits, name="fn"), client=client, model=MODEL)
    finished = {s.name: s for s in spans.get_finished_spans()}
    root, agent, chat = finished["perplexed.answer"], finished["perplexed.answer.agent"], finished[f"chat {MODEL}"]
    assert (root.attributes or {})["gen_ai.operation.name"] == "answer"
    assert agent.parent is not None and agent.parent.span_id == root.context.span_id
    assert chat.parent is not None and chat.parent.span_id == agent.context.span_id
    assert (chat.attributes or {})["gen_ai.usage.output_tokens"] == 456
    no_content(spans, QUESTION, "Obligations apply", "EU AI Act's obligations")


def test_agent_calls_record_duration_tokens_and_cost_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without any tracer: the duration histogram, the token histogram and the cost counter, by provider."""
    from opentelemetry.metrics import _internal as metrics_internal
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", MeterProvider(metric_readers=[reader]))
    limited = json_reply({"error": {"message": "slow down", "type": "rate_limit", "code": 429}}, 429)
    with serve(lambda req: json_reply(completed())) as server:
        client = AgentClient(api_key=FAKE_KEY, base_url=server.url, max_retries=0)
        client.create(model=MODEL, input=QUESTION)
        list(client.stream(model=MODEL, input=QUESTION))  # the stand-in answers a stream with a whole response
    with serve(lambda req: limited) as server, pytest.raises(RateLimitError):
        AgentClient(api_key=FAKE_KEY, base_url=server.url, max_retries=0).create(model=MODEL, input=QUESTION)
    points: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    durations = [p for p in points["gen_ai.client.operation.duration"]
                 if p.attributes.get("gen_ai.provider.name") == "perplexity"]
    assert sum(p.count for p in durations) == 3
    assert {p.attributes.get("error.type") for p in durations} == {None, "RateLimitError"}
    assert all(p.attributes["gen_ai.request.model"] == MODEL for p in durations)
    tokens = {p.attributes["gen_ai.token.type"]: p for p in points["gen_ai.client.token.usage"]}
    assert (tokens["input"].count, tokens["input"].sum) == (2, 2 * 1234)
    assert (tokens["output"].count, tokens["output"].sum) == (2, 2 * 456)
    (cost,) = [p for p in points["perplexed.cost"] if p.attributes.get("gen_ai.provider.name") == "perplexity"]
    assert cost.value == pytest.approx(2 * 0.0111)
