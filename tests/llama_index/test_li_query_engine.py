"""PerplexedQueryEngine against a loopback Agent API (and a synthesized cassette): citations ↔ source_nodes,
metadata, sync/async, streaming, clients, errors, events."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import perplexed
import pytest
import vcr
from llama_agent import AGENT_COST, FAKE_KEY, MODEL, LoopbackAgentAPI, deltas_of
from llama_fakes import WEB_HITS, aweb, broken, nothing, web
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import AsyncStreamingResponse, Response, StreamingResponse
from llama_index_perplexed import PerplexedAgentEvent, PerplexedAttemptEvent, PerplexedQueryEngine
from perplexed import Answer, NoSourcesError
from perplexed.agent import AgentClient, RateLimitError
from perplexed.providers import FunctionProvider

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes" / "synthesized" / "agent"
agent_vcr = vcr.VCR(
    cassette_library_dir=str(CASSETTES),
    record_mode="none",
    match_on=["method", "scheme", "host", "port", "path", "query"],
)
EXPECTED_TEXT = "Web A is the first source [1]. Web B comes second [2]."


def markers(text: str) -> list[int]:
    """The numbers cited by the ``[n]`` / ``[n, m]`` markers of ``text``, in order."""
    return [int(n) for group in re.findall(r"\[([\d,\s]+)\]", text) for n in re.findall(r"\d+", group)]


def assert_citations_point_at_source_nodes(response: Response) -> None:
    """Every [n] in the text is source_nodes[n-1], and the cited title is what the model wrote about."""
    cited = markers(response.response or "")
    assert cited
    for n in cited:
        node = response.source_nodes[n - 1].node
        assert node.metadata["id"] == n
    for sentence in (response.response or "").split(". "):
        for n in markers(sentence):
            assert response.source_nodes[n - 1].node.metadata["title"] in sentence


def test_is_a_llamaindex_query_engine(agent_api: LoopbackAgentAPI) -> None:
    assert BaseQueryEngine in PerplexedQueryEngine.__mro__
    engine = PerplexedQueryEngine(web, client=agent_api.client())
    assert engine.streaming is False


def test_query_returns_a_cited_response(agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine(web, client=agent_api.client())
    response = engine.query("what are the web hits?")

    assert isinstance(response, Response)
    assert response.response == EXPECTED_TEXT
    assert str(response) == EXPECTED_TEXT
    assert [n.node.metadata["id"] for n in response.source_nodes] == [1, 2, 3]
    assert [n.node.metadata["url"] for n in response.source_nodes] == [h["url"] for h in WEB_HITS]
    assert_citations_point_at_source_nodes(response)
    # the model was given those same numbered sources, and told to cite them
    body = agent_api.bodies[0]
    assert "[1] Web A" in body["input"] and "[3] Web C" in body["input"]
    assert "[1]" in body["instructions"]


def test_response_metadata_has_cost_and_attempts(agent_api: LoopbackAgentAPI) -> None:
    paid = FunctionProvider(web, name="paidweb", cost=0.001)
    engine = PerplexedQueryEngine([nothing, paid], client=agent_api.client())
    response = engine.query("what?")
    meta = response.metadata
    assert meta is not None
    assert meta["cost"] == pytest.approx(0.001 + AGENT_COST)
    assert meta["search_cost"] == pytest.approx(0.001)
    assert meta["agent_cost"] == pytest.approx(AGENT_COST)
    assert [(a["provider"], a["outcome"]) for a in meta["attempts"]] == [("nothing", "empty"), ("paidweb", "ok")]
    assert meta["answered_by"] == "paidweb"
    assert meta["model"] == MODEL
    assert meta["response_id"] == "resp_li_1"
    assert [c["n"] for c in meta["citations"]] == [1, 2]
    assert meta["unmatched"] == []
    assert isinstance(meta["answer"], Answer)
    # source nodes carry the retriever's metadata and hide the bookkeeping from the LLM
    node = response.source_nodes[0].node
    assert node.metadata["answered_by"] == "paidweb"
    assert {"attempts", "cost", "answered_by"} <= set(node.excluded_llm_metadata_keys)


async def test_aquery_matches_query(agent_api: LoopbackAgentAPI) -> None:
    sync_response = await asyncio.to_thread(PerplexedQueryEngine(web, client=agent_api.client()).query, "q")
    async_response = await PerplexedQueryEngine(aweb, async_client=agent_api.async_client()).aquery("q")
    assert isinstance(async_response, Response)
    assert async_response.response == sync_response.response == EXPECTED_TEXT
    assert [n.node.node_id for n in async_response.source_nodes] == [n.node.node_id for n in sync_response.source_nodes]
    assert [n.score for n in async_response.source_nodes] == [n.score for n in sync_response.source_nodes]
    assert_citations_point_at_source_nodes(async_response)


def test_agent_options_reach_the_request(agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine(
        web,
        client=agent_api.client(),
        model="openai/gpt-5.1",
        instructions="Answer tersely, citing [n].",
        max_output_tokens=300,
        agent_options={"temperature": 0},
        max_results=2,
    )
    engine.query("q")
    body = agent_api.bodies[0]
    assert body["model"] == "openai/gpt-5.1"
    assert body["instructions"] == "Answer tersely, citing [n]."
    assert body["max_output_tokens"] == 300
    assert body["temperature"] == 0
    assert "[2] Web B" in body["input"] and "[3]" not in body["input"]


def test_only_a_sync_client_serves_both_paths(agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine(web, client=agent_api.client())
    assert engine.query("q").response == EXPECTED_TEXT
    assert asyncio.run(engine.aquery("q")).response == EXPECTED_TEXT
    assert len(agent_api.bodies) == 2


def test_only_an_async_client_serves_both_paths(agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine(web, async_client=agent_api.async_client())
    assert engine.client is None
    assert engine.query("q").response == EXPECTED_TEXT
    assert asyncio.run(engine.aquery("q")).response == EXPECTED_TEXT
    assert len(agent_api.bodies) == 2


def test_clients_built_from_settings(agent_api: LoopbackAgentAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERPLEXITY_API_KEY", FAKE_KEY)
    monkeypatch.setenv("PERPLEXITY_BASE_URL", agent_api.base_url)
    engine = PerplexedQueryEngine(web)
    assert isinstance(engine.client, AgentClient)
    assert engine.client.base_url == agent_api.base_url
    assert engine.query("q").response == EXPECTED_TEXT
    assert asyncio.run(engine.aquery("q")).response == EXPECTED_TEXT


def test_streaming_query_returns_a_streaming_response(agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine(web, client=agent_api.client(), streaming=True)
    response = engine.query("q")

    assert isinstance(response, StreamingResponse)
    assert response.source_nodes == []  # filled when the stream ends
    chunks = list(response.response_gen)
    assert chunks == deltas_of(EXPECTED_TEXT)
    assert "".join(chunks) == EXPECTED_TEXT
    assert [n.node.metadata["id"] for n in response.source_nodes] == [1, 2, 3]
    assert response.metadata is not None and response.metadata["cost"] == pytest.approx(AGENT_COST)
    final = response.get_response()
    assert final.response == EXPECTED_TEXT
    assert_citations_point_at_source_nodes(final)
    assert agent_api.bodies[0]["stream"] is True


def test_streaming_deltas_arrive_while_the_answer_is_written(agent_api: LoopbackAgentAPI) -> None:
    import time

    agent_api.interval = 0.05  # the loopback API drips one SSE event every 50 ms
    response = PerplexedQueryEngine(web, client=agent_api.client(), streaming=True).query("q")
    arrivals = []
    for _ in response.response_gen:
        arrivals.append(time.monotonic())
    assert len(arrivals) == len(deltas_of(EXPECTED_TEXT))
    assert arrivals[-1] - arrivals[0] > 0.25  # spread over the transcript, not delivered at the end


async def test_async_streaming_returns_an_async_streaming_response(agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine(aweb, async_client=agent_api.async_client(), streaming=True)
    response = await engine.aquery("q")

    assert isinstance(response, AsyncStreamingResponse)
    chunks = [chunk async for chunk in response.async_response_gen()]
    assert "".join(chunks) == EXPECTED_TEXT
    assert len(chunks) == len(deltas_of(EXPECTED_TEXT))
    final = await response.get_response()
    assert final.response == EXPECTED_TEXT
    assert_citations_point_at_source_nodes(final)
    assert final.metadata is not None and final.metadata["answered_by"] == "aweb"


async def test_async_streaming_does_not_block_the_loop(agent_api: LoopbackAgentAPI) -> None:
    agent_api.interval = 0.03
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    response = await PerplexedQueryEngine(aweb, async_client=agent_api.async_client(), streaming=True).aquery("q")
    text = "".join([chunk async for chunk in response.async_response_gen()])
    done.set()
    await task
    assert text == EXPECTED_TEXT
    assert ticks >= 10


def test_streaming_search_errors_surface_at_query_time(agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine([broken], client=agent_api.client(), streaming=True)
    with pytest.raises(perplexed.UpstreamError) as info:
        engine.query("q")
    assert info.value.reason == "all_providers_failed"
    assert agent_api.bodies == []


async def test_async_streaming_search_errors_surface_at_query_time(agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine([broken], async_client=agent_api.async_client(), streaming=True)
    with pytest.raises(perplexed.UpstreamError):
        await engine.aquery("q")
    assert agent_api.bodies == []


def test_all_providers_failed_raises_before_the_model_is_called(agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine([broken, broken], client=agent_api.client())
    with pytest.raises(perplexed.UpstreamError) as info:
        engine.query("q")
    assert info.value.reason == "all_providers_failed"
    assert [a.provider for a in info.value.attempts] == ["broken", "broken"]
    assert agent_api.bodies == []


def test_no_sources_raises_no_sources_error(agent_api: LoopbackAgentAPI) -> None:
    with pytest.raises(NoSourcesError) as info:
        PerplexedQueryEngine([nothing], client=agent_api.client()).query("q")
    assert [a.outcome.value for a in info.value.attempts] == ["empty"]
    assert agent_api.bodies == []


def test_on_empty_answer_answers_without_sources(agent_api: LoopbackAgentAPI) -> None:
    agent_api.text = "No sources were found; from general knowledge: nothing to cite."
    response = PerplexedQueryEngine([nothing], client=agent_api.client(), on_empty="answer").query("q")
    assert response.source_nodes == []
    assert response.response == agent_api.text


def test_agent_api_errors_are_typed_and_keep_the_attempts(agent_api: LoopbackAgentAPI) -> None:
    agent_api.status = 429
    paid = FunctionProvider(web, name="paidweb", cost=0.002)
    with pytest.raises(RateLimitError) as info:
        PerplexedQueryEngine(paid, client=agent_api.client()).query("q")
    assert [a.provider for a in info.value.attempts] == ["paidweb"]
    assert info.value.cost == pytest.approx(0.002)


def test_bad_options_fail_at_construction() -> None:
    with pytest.raises(perplexed.InvalidRequest):
        PerplexedQueryEngine(web, max_results=3, similarity_top_k=5)
    with pytest.raises(perplexed.ConfigError):
        PerplexedQueryEngine("no-such-provider")


def test_events_reach_llamaindex_handlers(agent_api: LoopbackAgentAPI, recorder, spans) -> None:
    PerplexedQueryEngine([broken, web], client=agent_api.client()).query("q")
    attempts = recorder.of(PerplexedAttemptEvent)
    assert [(e.provider, e.outcome) for e in attempts] == [("broken", "error"), ("web", "ok")]
    agent = recorder.of(PerplexedAgentEvent)
    assert len(agent) == 1
    assert (agent[0].model, agent[0].response_id, agent[0].cost) == (MODEL, "resp_li_1", pytest.approx(AGENT_COST))
    query_spans = {s.id_ for s in spans.completed_spans if s.id_.startswith("PerplexedQueryEngine.")}
    assert {e.span_id for e in [*attempts, *agent]} <= query_spans


async def test_events_from_async_streaming(agent_api: LoopbackAgentAPI, recorder) -> None:
    engine = PerplexedQueryEngine([nothing, aweb], async_client=agent_api.async_client(), streaming=True)
    response = await engine.aquery("q")
    assert [e.outcome for e in recorder.of(PerplexedAttemptEvent)] == ["empty", "ok"]
    assert recorder.of(PerplexedAgentEvent) == []  # the Agent API call ends with the stream
    await response.get_response()
    assert len(recorder.of(PerplexedAgentEvent)) == 1


def test_events_from_sync_streaming(agent_api: LoopbackAgentAPI, recorder) -> None:
    response = PerplexedQueryEngine([nothing, web], client=agent_api.client(), streaming=True).query("q")
    response.get_response()
    assert [e.outcome for e in recorder.of(PerplexedAttemptEvent)] == ["empty", "ok"]
    assert len(recorder.of(PerplexedAgentEvent)) == 1


def test_perplexity_agent_mode_from_the_synthesized_cassette() -> None:
    """The Agent API searched by itself: its search results are the source nodes; [4] has no source."""
    with agent_vcr.use_cassette("create_completed.yaml"):
        engine = PerplexedQueryEngine("perplexity-agent", client=AgentClient(api_key=FAKE_KEY, max_retries=0))
        response = engine.query("What changed in the EU AI Act?")
    assert markers(response.response or "") == [1, 2, 1, 3, 4]
    assert [n.node.metadata["id"] for n in response.source_nodes] == [1, 2, 3]
    for n in (1, 2, 3):
        assert response.source_nodes[n - 1].node.metadata["provider"] == "perplexity-agent"
    assert response.source_nodes[0].node.metadata["url"].startswith("https://digital-strategy.ec.europa.eu/")
    meta = response.metadata or {}
    assert meta["unmatched"] == [4]
    assert meta["answered_by"] == "perplexity-agent"
    assert meta["cost"] == pytest.approx(0.0111)
    assert meta["attempts"] == []


def test_max_source_chars_caps_what_the_model_and_the_source_nodes_hold(agent_api: LoopbackAgentAPI) -> None:
    response = PerplexedQueryEngine(web, client=agent_api.client(), max_source_chars=30).query("q")
    texts = [n.node.text for n in response.source_nodes]
    assert sum(len(t) for t in texts) <= 30
    assert any(t.endswith("…") for t in texts)
    assert "alpha full text" not in agent_api.bodies[0]["input"]
    full = PerplexedQueryEngine(web, client=agent_api.client(), max_source_chars=None).query("q")
    assert full.source_nodes[0].node.text == "alpha full text"


def test_strip_unmatched_and_unmatched_markers(agent_api: LoopbackAgentAPI) -> None:
    agent_api.text = "Alpha is real [1] and this is not [9]."
    kept = PerplexedQueryEngine(web, client=agent_api.client()).query("q")
    assert kept.response == agent_api.text
    assert kept.metadata is not None and kept.metadata["unmatched"] == [9]
    stripped = PerplexedQueryEngine(web, client=agent_api.client(), strip_unmatched=True).query("q")
    assert stripped.response == "Alpha is real [1] and this is not."
    assert stripped.metadata is not None and stripped.metadata["unmatched"] == [9]
    assert stripped.source_nodes[0].node.metadata["id"] == 1
