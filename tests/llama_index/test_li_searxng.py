"""The LlamaIndex adapter against the real local SearXNG started by the test run (testkit.searxng)."""

from __future__ import annotations

import asyncio

import httpx
import perplexed
import pytest
from llama_agent import LoopbackAgentAPI
from llama_fakes import aweb
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import MetadataMode, TextNode
from llama_index_perplexed import (
    PerplexedAttemptEvent,
    PerplexedQueryEngine,
    PerplexedRetriever,
    PerplexedToolSpec,
    as_provider,
)
from llama_index_perplexed._nodes import node_id_for_url  # private: node ids are derived from the URL
from perplexed.providers import SearXNG
from testkit.hits import searxng_json
from testkit.searxng import CORPUS, JSON_ENGINE, SQLITE_ENGINE, SearxngServer

pytestmark = pytest.mark.integration

NO_MATCH = "quokka"  # in no corpus document: only the upstream can answer


def spec(server: SearxngServer, **options: object) -> dict[str, object]:
    return {"name": "searxng", "base_url": server.base_url, **options}


def corpus_urls(word: str) -> set[str]:
    return {d.url for d in CORPUS if word in (d.title + " " + d.content).lower()}


def test_retrieve_from_the_local_corpus(searxng: SearxngServer) -> None:
    retriever = PerplexedRetriever(spec(searxng, engines=SQLITE_ENGINE))
    nodes = retriever.retrieve("zoning")

    assert {n.node.metadata["url"] for n in nodes} == corpus_urls("zoning")
    by_url = {d.url: d for d in CORPUS}
    for n in nodes:
        doc = by_url[n.node.metadata["url"]]
        assert n.node.metadata["title"] == doc.title
        assert n.node.text == doc.content
        assert n.node.node_id == node_id_for_url(doc.url)
        assert n.node.metadata["provider"] == n.node.metadata["answered_by"] == "searxng"
        assert 0 < (n.score or 0) <= 1
        assert "attempts" not in n.node.get_content(metadata_mode=MetadataMode.LLM)
    assert [n.node.metadata["id"] for n in nodes] == list(range(1, len(nodes) + 1))
    assert searxng.upstream.requests == 0


async def test_retrieve_and_aretrieve_agree() -> None:
    # a deterministic upstream (SearXNG's JSON on an httpx.MockTransport): a real SearXNG merges its engines in
    # arrival order and, on a loaded machine, may drop a slow engine from one of two searches (the real server
    # is covered by the other tests of this file, one search each)
    body = searxng_json(5, prefix="https://docs.example.org/page")
    provider = SearXNG(base_url="http://searxng.mock", transport=httpx.MockTransport(lambda r: httpx.Response(200, json=body)))
    retriever = PerplexedRetriever(provider, max_results=5)
    sync_nodes = await asyncio.to_thread(retriever.retrieve, "python httpx")
    async_nodes = await retriever.aretrieve("python httpx")
    assert [n.node.node_id for n in async_nodes] == [n.node.node_id for n in sync_nodes]
    assert [n.node.text for n in async_nodes] == [n.node.text for n in sync_nodes]
    assert [n.score for n in async_nodes] == [n.score for n in sync_nodes]
    assert [n.node.metadata["url"] for n in async_nodes] == [f"https://docs.example.org/page{i}" for i in range(1, 6)]


async def test_aretrieve_does_not_block_while_searxng_waits_on_a_slow_upstream(searxng: SearxngServer) -> None:
    searxng.upstream.set_mode("slow", delay=0.5)
    retriever = PerplexedRetriever(spec(searxng))
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    nodes = await retriever.aretrieve(NO_MATCH)
    done.set()
    await task
    assert [n.node.metadata["url"] for n in nodes] == [
        f"https://upstream.example/{NO_MATCH}",
        f"https://upstream.example/{NO_MATCH}/more",
    ]
    assert ticks >= 20  # 0.5 s of upstream delay on a 10 ms ticker


async def test_a_failing_upstream_falls_back_and_every_attempt_is_an_event(searxng: SearxngServer, recorder) -> None:
    searxng.upstream.set_mode("500")
    retriever = PerplexedRetriever([spec(searxng), aweb])
    nodes = await retriever.aretrieve(NO_MATCH)

    assert nodes[0].node.metadata["answered_by"] == "aweb"
    attempts = nodes[0].node.metadata["attempts"]
    assert [(a["provider"], a["outcome"]) for a in attempts] == [("searxng", "empty"), ("aweb", "ok")]
    events = recorder.of(PerplexedAttemptEvent)
    assert [(e.provider, e.outcome) for e in events] == [("searxng", "empty"), ("aweb", "ok")]


def test_everything_failing_raises_with_the_attempts(searxng_no_json: SearxngServer) -> None:
    retriever = PerplexedRetriever([spec(searxng_no_json)])
    with pytest.raises(perplexed.UpstreamError) as info:
        retriever.retrieve("zoning")
    assert info.value.reason == "all_providers_failed"
    assert [(a.provider, a.outcome.value) for a in info.value.attempts] == [("searxng", "error")]
    assert "403" in str(info.value)


def test_local_index_first_then_searxng(searxng: SearxngServer) -> None:
    handbook = TextNode(
        id_="handbook",
        text="Our office handbook says setbacks are checked by the planning desk.",
        metadata={"title": "Office handbook"},
    )
    full = VectorStoreIndex(nodes=[handbook], embed_model=MockEmbedding(embed_dim=8))
    empty = VectorStoreIndex(nodes=[], embed_model=MockEmbedding(embed_dim=8))

    local_first = PerplexedRetriever([as_provider(full.as_retriever(), name="docs"), spec(searxng, engines=SQLITE_ENGINE)])
    nodes = local_first.retrieve("zoning")
    assert [n.node.metadata["url"] for n in nodes] == ["llamaindex://docs/handbook"]
    assert searxng.upstream.requests == 0

    web_next = PerplexedRetriever([as_provider(empty.as_retriever(), name="docs"), spec(searxng, engines=SQLITE_ENGINE)])
    nodes = web_next.retrieve("zoning")
    assert {n.node.metadata["url"] for n in nodes} == corpus_urls("zoning")
    assert [a["outcome"] for a in nodes[0].node.metadata["attempts"]] == ["empty", "ok"]


def test_query_engine_cites_searxng_hits(searxng: SearxngServer, agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine(spec(searxng, engines=SQLITE_ENGINE), client=agent_api.client())
    response = engine.query("zoning")
    assert response.metadata is not None and response.metadata["answered_by"] == "searxng"
    for n in (1, 2):
        node = response.source_nodes[n - 1].node
        assert node.metadata["id"] == n
        assert node.metadata["url"] in corpus_urls("zoning")
        assert f"{node.metadata['title']}" in (response.response or "")
        assert f"[{n}] {node.metadata['title']}" in agent_api.bodies[0]["input"]


async def test_streaming_query_engine_over_searxng(searxng: SearxngServer, agent_api: LoopbackAgentAPI) -> None:
    engine = PerplexedQueryEngine(
        spec(searxng, engines=JSON_ENGINE), async_client=agent_api.async_client(), streaming=True
    )
    response = await engine.aquery(NO_MATCH)
    final = await response.get_response()
    assert final.response == f"Upstream hit for {NO_MATCH} is the first source [1]. More about {NO_MATCH} comes second [2]."
    assert [n.node.metadata["url"] for n in final.source_nodes] == [
        f"https://upstream.example/{NO_MATCH}",
        f"https://upstream.example/{NO_MATCH}/more",
    ]


def test_search_tool_over_searxng(searxng: SearxngServer) -> None:
    tool = {t.metadata.name: t for t in PerplexedToolSpec(spec(searxng, engines=SQLITE_ENGINE)).to_tool_list()}["perplexed_search"]
    content = tool.call(query="zoning").content
    lines = [line for line in content.splitlines() if line.startswith("[")]
    assert len(lines) == len(corpus_urls("zoning"))
    for n, line in enumerate(lines, start=1):
        assert line.startswith(f"[{n}] ")
        assert line.split(" — ")[1] in corpus_urls("zoning")
