"""Grounded answers over a provider chain: the request the model receives, citation mapping, costs, errors.

The Agent API is :class:`FakeAgentAPI` (httpx.MockTransport, no socket); providers are plain functions.
"""

from __future__ import annotations

import json
from typing import Any

import perplexed
import pytest
from perplexed import (
    Answer,
    AnswerCitation,
    Attempt,
    Hit,
    InvalidRequest,
    NoSourcesError,
    PerplexedError,
    UpstreamError,
    telemetry,
)
from perplexed.agent import RateLimitError, ResponseFailedError
from perplexed.grounding._grounding import (  # private: the instructions sent are compared with their source
    CITATION_INSTRUCTION,
    NO_SOURCES_INSTRUCTION,
)
from test_answer_fakes import (
    ANSWER_TEXT,
    FAKE_KEY,
    MODEL,
    ZONING_HITS,
    FakeAgentAPI,
    failing_provider,
    ok,
    provider,
    response_json,
    status,
)

QUERY = "What are typical zoning setbacks?"


@pytest.fixture
def api() -> FakeAgentAPI:
    return FakeAgentAPI()


# --- the request the model receives ---------------------------------------------------------------------


async def test_request_numbers_the_hits_and_turns_search_off_with_a_preset(api: FakeAgentAPI) -> None:
    ans = await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client(), preset="fast", max_results=8)
    body = api.body
    assert api.paths == ["/v1/agent"]
    assert api.headers[0]["authorization"] == f"Bearer {FAKE_KEY}"
    assert body["preset"] == "fast"
    assert body["max_tool_calls"] == 0  # preset tools stay attached whatever `tools` says
    assert "tools" not in body
    assert "stream" not in body
    assert body["instructions"] == CITATION_INSTRUCTION
    text = body["input"]
    assert isinstance(text, str)
    for n, hit in enumerate(ZONING_HITS, start=1):
        assert f"[{n}] {hit.title}\nURL: {hit.url}\n{hit.snippet}" in text
    assert text.index("[1]") < text.index("[2]") < text.index("[3]") < text.index(f"Question: {QUERY}")
    assert [h.id for h in ans.sources] == [1, 2, 3]
    assert [h.url for h in ans.sources] == [h.url for h in ZONING_HITS]


async def test_a_bare_model_gets_no_tools_and_no_max_tool_calls(api: FakeAgentAPI) -> None:
    await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client(), model="openai/gpt-5.1")
    body = api.body
    assert body["model"] == "openai/gpt-5.1"
    assert "tools" not in body and "max_tool_calls" not in body and "preset" not in body


async def test_effort_also_turns_search_off(api: FakeAgentAPI) -> None:
    await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client(), effort="low")
    assert api.body["effort"] == "low" and api.body["max_tool_calls"] == 0


async def test_default_is_the_fast_preset(api: FakeAgentAPI) -> None:
    await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client())
    assert api.body["preset"] == "fast" and api.body["max_tool_calls"] == 0


async def test_agent_options_pass_through_and_instructions_replace_the_default(api: FakeAgentAPI) -> None:
    await perplexed.aanswer(
        QUERY,
        provider=provider(),
        client=api.async_client(),
        model="anthropic/claude-sonnet-4-5",
        max_output_tokens=700,
        reasoning="low",
        instructions="Answer in French. Cite as [n].",
        agent_options={"temperature": 0.2, "language_preference": "fr"},
    )
    body = api.body
    assert body["model"] == "anthropic/claude-sonnet-4-5"
    assert body["max_output_tokens"] == 700
    assert body["reasoning"] == {"effort": "low"}
    assert body["instructions"] == "Answer in French. Cite as [n]."
    assert body["temperature"] == 0.2 and body["language_preference"] == "fr"


async def test_a_search_tool_in_agent_options_is_refused_before_any_call(api: FakeAgentAPI) -> None:
    calls: list[str] = []
    with pytest.raises(InvalidRequest) as info:
        await perplexed.aanswer(
            QUERY,
            provider=provider(calls=calls),
            client=api.async_client(),
            model="openai/gpt-5.1",
            agent_options={"tools": [{"type": "web_search"}]},
        )
    assert info.value.param == "tools"
    assert calls == [] and api.requests == []


async def test_bad_agent_options_fail_before_the_search_is_paid_for(api: FakeAgentAPI) -> None:
    calls: list[str] = []
    with pytest.raises(InvalidRequest):
        await perplexed.aanswer(QUERY, provider=provider(calls=calls), client=api.async_client(), reasoning="bogus")
    with pytest.raises(InvalidRequest) as info:
        await perplexed.aanswer(QUERY, provider=provider(calls=calls), client=api.async_client(), on_empty="ignore")  # type: ignore[arg-type]
    assert info.value.param == "on_empty"
    with pytest.raises(InvalidRequest):
        await perplexed.aanswer("   ", provider=provider(calls=calls), client=api.async_client())
    with pytest.raises(InvalidRequest):
        await perplexed.aanswer(QUERY, provider=provider(calls=calls), client=api.async_client(), agent_options={"stream": True})
    assert calls == [] and api.requests == []


# --- citations ---------------------------------------------------------------------------------------------


async def test_markers_map_to_our_hit_ids(api: FakeAgentAPI) -> None:
    ans = await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client())
    assert isinstance(ans, Answer)
    assert ans.text == ANSWER_TEXT
    assert [c.n for c in ans.citations] == [1, 2]
    for c in ans.citations:
        assert isinstance(c, AnswerCitation)
        assert c.hit.id == c.n
        assert ans.text[c.span[0] : c.span[1]] == f"[{c.n}]" == c.marker
        assert c.hit is ans.sources[c.n - 1]
    assert ans.citations[1].url == "https://docs.example.org/residential-setbacks"
    assert ans.unmatched == []
    assert [h.id for h in ans.cited] == [1, 2]
    assert "[2] Residential zoning setback requirements — https://docs.example.org/residential-setbacks" in ans.footnotes()


async def test_unmatched_markers_are_listed_and_can_be_stripped() -> None:
    text = "Front setbacks are 20 feet [2][7]. Rear yards vary [9]. See also [1, 8]."
    api = FakeAgentAPI(reply=ok(response_json(text)))
    ans = await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client())
    assert ans.text == text
    assert ans.unmatched == [7, 9, 8]
    assert ans.unmatched[0].span == (text.index("[7]"), text.index("[7]") + 3)
    assert [c.n for c in ans.citations] == [2, 1]

    api = FakeAgentAPI(reply=ok(response_json(text)))
    stripped = await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client(), strip_unmatched=True)
    assert stripped.text == "Front setbacks are 20 feet [2]. Rear yards vary. See also [1]."
    assert stripped.unmatched == [7, 9, 8]
    assert [(c.n, stripped.text[c.span[0] : c.span[1]]) for c in stripped.citations] == [(2, "[2]"), (1, "[1]")]
    assert stripped.response.output_text == text  # the raw text stays on the response


# --- costs -------------------------------------------------------------------------------------------------


async def test_cost_is_search_plus_agent(api: FakeAgentAPI) -> None:
    chain = [failing_provider("first"), provider(cost=0.005, name="paid")]
    ans = await perplexed.aanswer(QUERY, provider=chain, client=api.async_client())
    assert ans.search is not None
    assert ans.search.provider == "paid"
    assert [a.provider for a in ans.search.attempts] == ["first", "paid"]
    assert ans.search_cost == pytest.approx(0.005)
    assert ans.agent_cost == pytest.approx(0.0042)
    assert ans.cost == pytest.approx(0.0092)
    assert ans.response.id == "resp_test_1" and ans.response.model == MODEL
    assert ans.response.usage is not None and ans.response.usage.input_tokens == 812


async def test_a_response_without_usage_cost_counts_zero() -> None:
    api = FakeAgentAPI(reply=ok(response_json(cost=None)))
    ans = await perplexed.aanswer(QUERY, provider=provider(cost=0.001), client=api.async_client())
    assert ans.agent_cost == 0.0 and ans.cost == pytest.approx(0.001)


# --- error paths -------------------------------------------------------------------------------------------


async def test_all_providers_failed_raises_with_attempts_and_never_calls_the_model(api: FakeAgentAPI) -> None:
    with pytest.raises(UpstreamError) as info:
        await perplexed.aanswer(QUERY, provider=[failing_provider("a"), failing_provider("b")], client=api.async_client())
    assert info.value.reason == "all_providers_failed"
    assert [a.provider for a in info.value.attempts] == ["a", "b"]
    assert api.requests == []


async def test_no_hits_raises_no_sources_with_the_search_attempts(api: FakeAgentAPI) -> None:
    with pytest.raises(NoSourcesError) as info:
        await perplexed.aanswer(QUERY, provider=provider([], cost=0.002, name="paid"), client=api.async_client())
    err = info.value
    assert isinstance(err, UpstreamError) and isinstance(err, PerplexedError)
    assert err.reason == "no_sources"
    assert "no sources" in str(err) and "on_empty='answer'" in str(err)
    assert [a.provider for a in err.attempts] == ["paid"]
    assert err.cost == pytest.approx(0.002)  # the empty answer still billed
    assert api.requests == []


async def test_on_empty_answer_answers_without_sources() -> None:
    api = FakeAgentAPI(reply=ok(response_json("I found no sources for this; setbacks vary by city.")))
    ans = await perplexed.aanswer(QUERY, provider=provider([]), client=api.async_client(), on_empty="answer")
    assert ans.sources == [] and ans.citations == []
    assert ans.search is not None and ans.search.hits == []
    body = api.body
    assert body["instructions"] == NO_SOURCES_INSTRUCTION
    assert "No sources were found" in body["input"] and body["max_tool_calls"] == 0


async def test_agent_429_keeps_the_search_attempts_and_cost() -> None:
    api = FakeAgentAPI(reply=status(429, "request_rate_limit_exceeded", "slow down", {"retry-after": "3"}))
    with pytest.raises(RateLimitError) as info:
        await perplexed.aanswer(QUERY, provider=provider(cost=0.004, name="paid"), client=api.async_client())
    err = info.value
    assert err.status == 429 and err.retry_after == 3.0
    assert [a.provider for a in err.attempts] == ["paid"]
    assert err.cost == pytest.approx(0.004)
    assert len(api.requests) == 1


async def test_failed_status_keeps_the_search_attempts_and_cost() -> None:
    failed = response_json(
        "", status="failed", cost=0.0007, error={"message": "upstream model error", "code": "internal_error", "type": "internal_error"}
    )
    api = FakeAgentAPI(reply=ok(failed))
    with pytest.raises(ResponseFailedError) as info:
        await perplexed.aanswer(QUERY, provider=provider(cost=0.004, name="paid"), client=api.async_client())
    err = info.value
    assert "upstream model error" in str(err)
    assert err.attempts[0].provider == "paid"
    assert err.cost == pytest.approx(0.004 + 0.0007)  # search + what the failed run billed
    assert err.response is not None and err.response.id == "resp_test_1"


# --- token budget ------------------------------------------------------------------------------------------


async def test_markdown_pages_cannot_blow_the_context(api: FakeAgentAPI) -> None:
    pages = [
        Hit(title="Short", url="https://a.example/short", snippet="Setbacks are 20 feet."),
        Hit(title="Huge page", url="https://b.example/huge", snippet="s", content="# Zoning\n\n" + "setback rules " * 20_000),
        Hit(title="Big page", url="https://c.example/big", snippet="s", content="## Yards\n\n" + "side yard " * 5_000),
    ]
    ans = await perplexed.aanswer(QUERY, provider=provider(pages), client=api.async_client(), max_source_chars=6000)
    body_input = api.body["input"]
    assert len(body_input) < 6000 + 600  # the sources' text plus titles, URLs and the question
    assert [h.id for h in ans.sources] == [1, 2, 3]
    assert [h.url for h in ans.sources] == [p.url for p in pages]
    assert ans.sources[0].text == "Setbacks are 20 feet."
    assert sum(len(h.text) for h in ans.sources) <= 6000
    assert all(f"[{n}] " in body_input for n in (1, 2, 3))
    assert ans.search is not None and ans.search.hits[1].content == pages[1].content  # the full hits stay on the result


async def test_default_budget_is_24000_characters(api: FakeAgentAPI) -> None:
    pages = [Hit(title=f"P{i}", url=f"https://e.example/{i}", content="x" * 50_000) for i in range(4)]
    ans = await perplexed.aanswer(QUERY, provider=provider(pages), client=api.async_client())
    assert sum(len(h.text) for h in ans.sources) <= 24_000
    assert len(api.body["input"]) < 25_000


# --- callbacks, telemetry ---------------------------------------------------------------------------------


async def test_on_attempt_is_forwarded(api: FakeAgentAPI) -> None:
    seen: list[Attempt] = []
    await perplexed.aanswer(
        QUERY, provider=[failing_provider("a"), provider(name="b")], client=api.async_client(), on_attempt=seen.append
    )
    assert [(a.provider, a.outcome.value) for a in seen] == [("a", "error"), ("b", "ok")]


async def test_telemetry_event_of_the_agent_call(api: FakeAgentAPI) -> None:
    events: list[tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]] = []
    with telemetry.scoped(lambda e, m, md: events.append((e, m, md))):
        await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client())
    names = [e for e, _, _ in events]
    assert names == [("perplexed", "search", "attempt"), ("perplexed", "answer", "agent")]
    _, measurements, metadata = events[-1]
    assert set(measurements) == {"duration_ms", "cost"}
    assert measurements["cost"] == pytest.approx(0.0042) and measurements["duration_ms"] >= 0
    assert metadata == {"model": MODEL, "response_id": "resp_test_1"}


async def test_telemetry_event_on_an_agent_error() -> None:
    api = FakeAgentAPI(reply=status(429, "request_rate_limit_exceeded", "slow down"))
    events: list[tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]] = []
    with telemetry.scoped(lambda e, m, md: events.append((e, m, md))), pytest.raises(RateLimitError):
        await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client(), preset="fast")
    assert events[-1][0] == ("perplexed", "answer", "agent")
    assert events[-1][1]["cost"] == 0.0
    assert events[-1][2] == {"model": "fast", "response_id": None}


def test_answer_span_contains_the_search_and_the_agent_call(api: FakeAgentAPI) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        current.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        tp = TracerProvider()
        tp.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(tp)
    perplexed.answer(QUERY, provider=provider(), client=api.client())
    spans = {s.name: s for s in exporter.get_finished_spans()}
    root = spans["perplexed.answer"]
    assert spans["perplexed.search"].parent is not None
    assert spans["perplexed.search"].parent.span_id == root.context.span_id
    assert spans["perplexed.answer.agent"].parent is not None
    assert spans["perplexed.answer.agent"].parent.span_id == root.context.span_id
    assert spans["perplexed.answer.agent"].attributes["perplexed.response_id"] == "resp_test_1"
    assert root.attributes["perplexed.cost"] == pytest.approx(0.0042)
    exporter.clear()


# --- sync facade, output ------------------------------------------------------------------------------------


def test_sync_answer_with_an_agent_client(api: FakeAgentAPI) -> None:
    ans = perplexed.answer(QUERY, provider=provider(cost=0.001), client=api.client(), preset="fast", max_results=8)
    assert ans.text == ANSWER_TEXT and [c.n for c in ans.citations] == [1, 2]
    assert ans.cost == pytest.approx(0.0052)
    assert api.body["max_tool_calls"] == 0


def test_module_import_does_not_shadow_the_function(api: FakeAgentAPI) -> None:
    import perplexed.grounding._answer as module  # private: importing the module must not shadow perplexed.answer

    assert callable(perplexed.answer) and not isinstance(perplexed.answer, type(module))
    ans = perplexed.answer(QUERY, provider=provider(), client=api.client())
    assert isinstance(ans, module.Answer)
    assert str(ans) == ANSWER_TEXT


def test_settings_client_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)
    with pytest.raises(perplexed.ConfigError, match="PERPLEXITY_API_KEY"):
        perplexed.answer(QUERY, provider=provider())


async def test_to_dict_is_json_ready(api: FakeAgentAPI) -> None:
    ans = await perplexed.aanswer(QUERY, provider=provider(cost=0.001), client=api.async_client())
    data = ans.to_dict()
    json.dumps(data)
    assert {"text", "citations", "sources", "search", "cost"} <= set(data)
    assert data["citations"][0] == {
        "n": 1,
        "span": [ans.citations[0].span[0], ans.citations[0].span[1]],
        "marker": "[1]",
        "url": ZONING_HITS[0].url,
        "title": ZONING_HITS[0].title,
    }
    assert data["search"]["provider"] == "web"
    assert data["cost"] == pytest.approx(0.0052)
    assert data["response"]["id"] == "resp_test_1"
    dumped = ans.model_dump(mode="json")
    assert dumped["cost"] == pytest.approx(0.0052)
    json.dumps(dumped)


def test_a_missing_key_fails_before_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)
    calls: list[str] = []
    with pytest.raises(perplexed.ConfigError, match="PERPLEXITY_API_KEY"):
        perplexed.answer(QUERY, provider=provider(calls=calls))
    assert calls == []
