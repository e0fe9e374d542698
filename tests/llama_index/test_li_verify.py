"""LlamaIndex: PerplexedQueryEngine(verify=True) puts the verification JSON under response.metadata["verification"];
perplexed.verify takes the nodes a perplexed retriever returned."""

from __future__ import annotations

import json

import perplexed
from llama_index_perplexed import PerplexedQueryEngine, PerplexedRetriever
from perplexed.providers import FunctionProvider
from test_answer_fakes import ANSWER_TEXT, FakeAgentAPI, provider
from testkit.hits import ZONING_HITS

QUERY = "What are typical zoning setbacks?"
HITS = [h.model_copy(update={"id": i}) for i, h in enumerate(ZONING_HITS, start=1)]


def test_query_engine_verify_puts_the_json_in_the_response_metadata() -> None:
    api = FakeAgentAPI()
    engine = PerplexedQueryEngine(provider=provider(), client=api.client(), verify=True)
    response = engine.query(QUERY)
    data = response.metadata["verification"]
    assert json.loads(json.dumps(data)) == data
    assert data == perplexed.verify(ANSWER_TEXT, HITS).model_dump(mode="json")
    assert response.metadata["answer"].verification is not None
    plain = PerplexedQueryEngine(provider=provider(), client=api.client()).query(QUERY)
    assert "verification" not in plain.metadata


async def test_async_and_streaming_query_engine_verify() -> None:
    api = FakeAgentAPI()
    engine = PerplexedQueryEngine(provider=provider(), client=api.client(), verify=True)
    response = await engine.aquery(QUERY)
    assert response.metadata["verification"]["citation_recall"] == 1.0
    streaming = PerplexedQueryEngine(provider=provider(), client=api.client(), verify=True, streaming=True)
    stream = streaming.query(QUERY)
    text = "".join(stream.response_gen)
    assert text == ANSWER_TEXT and stream.metadata["verification"]["citation_recall"] == 1.0


def test_verify_takes_retriever_nodes() -> None:
    nodes = PerplexedRetriever(provider=FunctionProvider(lambda query, options: HITS, name="web")).retrieve("q")
    assert len(nodes) == len(HITS)
    text = "Front setbacks of 20 to 25 feet are typical [2]. Side setbacks are 50 feet [2]."
    v = perplexed.verify(text, nodes)
    assert [s.label for s in v.sentences] == ["supported", "unsupported"]
    assert v == perplexed.verify(text, HITS)
    assert perplexed.verify(text, [n.node for n in nodes]) == v


def test_tool_spec_with_verify_reports_the_check_to_the_agent() -> None:
    from llama_index_perplexed import PerplexedToolSpec

    api = FakeAgentAPI()
    spec = PerplexedToolSpec(provider=provider(), client=api.client(), verify=True)
    content = spec.perplexed_answer(QUERY)
    assert content.endswith(
        "Citation check:\n✓ every claim is supported by its citations\n"
        "citation recall 1.00, citation precision 1.00 (lexical checker)"
    )
