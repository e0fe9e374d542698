"""PerplexedRetriever: nodes, metadata, scores, sync/async parity, the event loop, options and errors."""

from __future__ import annotations

import asyncio
import uuid

import perplexed
import pytest
from llama_fakes import WEB_HITS, aweb, broken, nothing, slow_web, web
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index_perplexed import PerplexedRetriever
from llama_index_perplexed._nodes import (  # private: node ids and score normalisation are tested directly
    node_id_for_url,
    score_hits,
)
from perplexed import Hit, SearchOptions
from testkit.loopback import Json, LoopbackServer, searxng_json

BOOKKEEPING = {"attempts", "cost", "answered_by"}


def test_is_a_llamaindex_retriever() -> None:
    assert BaseRetriever in PerplexedRetriever.__mro__
    # a real _aretrieve, not the inherited one that runs _retrieve on the event loop
    assert PerplexedRetriever._aretrieve is not BaseRetriever._aretrieve


def test_nodes_carry_text_ids_and_metadata() -> None:
    retriever = PerplexedRetriever([broken, web])
    nodes = retriever.retrieve("alpha")

    assert [type(n) for n in nodes] == [NodeWithScore] * 3
    assert all(isinstance(n.node, TextNode) for n in nodes)
    first, second, third = (n.node for n in nodes)
    # text = content when the provider gave it, else the snippet
    assert first.text == "alpha full text"
    assert second.text == "beta snippet"
    # stable id from the url
    assert first.node_id == str(uuid.uuid5(uuid.NAMESPACE_URL, "https://web.example/a"))
    assert first.node_id == node_id_for_url("https://web.example/a")

    meta = third.metadata
    assert set(meta) == {"id", "title", "url", "published", "score", "provider", "answered_by", "cost", "attempts"}
    assert list(meta)[:3] == ["id", "title", "url"]
    assert meta["id"] == 3
    assert meta["title"] == "Web C"
    assert meta["url"] == "https://web.example/c"
    assert meta["published"] == "2024-05-01"
    assert meta["provider"] == "web"
    assert meta["answered_by"] == "web"
    assert meta["cost"] == 0.0
    assert [a["provider"] for a in meta["attempts"]] == ["broken", "web"]
    assert [a["outcome"] for a in meta["attempts"]] == ["error", "ok"]
    assert set(meta["attempts"][0]) == {"provider", "outcome", "cost", "duration_ms"}
    assert "published" not in first.metadata  # absent when unknown, as in the LangChain adapter


def test_bookkeeping_keys_are_hidden_from_llm_and_embeddings() -> None:
    node = PerplexedRetriever(web).retrieve("alpha")[0].node
    assert BOOKKEEPING <= set(node.excluded_llm_metadata_keys)
    assert BOOKKEEPING <= set(node.excluded_embed_metadata_keys)

    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        content = node.get_content(metadata_mode=mode)
        assert "url: https://web.example/a" in content
        assert "title: Web A" in content
        assert "alpha full text" in content
        for key in BOOKKEEPING:
            assert f"{key}:" not in content
    # the caller still has them
    assert node.get_content(metadata_mode=MetadataMode.ALL).count("attempts:") == 1


def test_node_ids_are_stable_across_calls_and_providers() -> None:
    def other(query: str, options: SearchOptions) -> list[Hit]:
        return [Hit(url="https://web.example/b", title="Same page, other provider")]

    ids_a = [n.node.node_id for n in PerplexedRetriever(web).retrieve("q")]
    ids_b = [n.node.node_id for n in PerplexedRetriever(web).retrieve("another query")]
    ids_c = [n.node.node_id for n in PerplexedRetriever(other).retrieve("q")]
    assert ids_a == ids_b
    assert len(set(ids_a)) == 3
    assert ids_c == [ids_a[1]]


def test_retrieve_and_aretrieve_agree() -> None:
    sync_nodes = PerplexedRetriever([nothing, web]).retrieve("alpha")

    async def go() -> list[NodeWithScore]:
        return await PerplexedRetriever([nothing, aweb]).aretrieve("alpha")

    async_nodes = asyncio.run(go())

    def view(nodes: list[NodeWithScore]) -> list[tuple]:
        return [
            (n.node.node_id, n.node.text, n.score, {k: v for k, v in n.node.metadata.items() if k not in BOOKKEEPING})
            for n in nodes
        ]

    sync_view = view(sync_nodes)
    async_view = view(async_nodes)
    # same pages, texts, scores and metadata; only the provider label (function name) differs
    assert [v[:3] for v in sync_view] == [v[:3] for v in async_view]
    assert [{**v[3], "provider": None} for v in sync_view] == [{**v[3], "provider": None} for v in async_view]
    assert [a["outcome"] for a in sync_nodes[0].node.metadata["attempts"]] == ["empty", "ok"]
    assert [a["outcome"] for a in async_nodes[0].node.metadata["attempts"]] == ["empty", "ok"]


async def test_retrieve_accepts_a_query_bundle() -> None:
    retriever = PerplexedRetriever(aweb)
    nodes = await retriever.aretrieve(QueryBundle("alpha"))
    assert [n.node.metadata["url"] for n in nodes] == [h["url"] for h in WEB_HITS]


async def _ticks_during(coro_factory, interval: float = 0.01) -> tuple[object, int]:
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            await asyncio.sleep(interval)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)  # let the ticker start
    try:
        result = await coro_factory()
    finally:
        stop.set()
        await task
    return result, ticks


async def test_aretrieve_does_not_block_the_event_loop(loopback: LoopbackServer) -> None:
    loopback.route("/search", Json(searxng_json(3, prefix="https://loop.example/"), delay=0.4))
    retriever = PerplexedRetriever({"name": "searxng", "base_url": loopback.url}, max_results=2)

    nodes, ticks = await _ticks_during(lambda: retriever.aretrieve("slow query"))

    assert len(loopback.requests) == 1
    assert loopback.requests[0].query["q"] == ["slow query"]
    assert [n.node.metadata["url"] for n in nodes] == ["https://loop.example/1", "https://loop.example/2"]
    assert [n.score for n in nodes] == [1.0, 2 / 3]  # SearXNG scores 3.0, 2.0: divided by the largest
    # 0.4 s of waiting on a 10 ms ticker: a blocked loop would give 0 ticks
    assert ticks >= 10


async def test_control_the_inherited_aretrieve_would_block() -> None:
    """The reason for a real _aretrieve: a sync-only retriever blocks the loop (measured the same way)."""
    import time

    class SyncOnly(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            time.sleep(0.3)
            return []

    _, ticks = await _ticks_during(lambda: SyncOnly().aretrieve("q"))
    assert ticks <= 1


async def test_aretrieve_with_an_async_function_provider_is_concurrent() -> None:
    retriever = PerplexedRetriever(slow_web)
    loop = asyncio.get_running_loop()
    start = loop.time()
    results = await asyncio.gather(*(retriever.aretrieve(f"q{i}") for i in range(5)))
    elapsed = loop.time() - start
    assert all(len(r) == 3 for r in results)
    assert elapsed < 1.0  # five 0.3 s searches overlapped


def test_scores_own_in_unit_interval() -> None:
    def scored(query: str, options: SearchOptions) -> list[Hit]:
        return [Hit(url=f"https://s.example/{i}", score=s) for i, s in enumerate([0.9, 0.5, 1.0])]

    assert [n.score for n in PerplexedRetriever(scored).retrieve("q")] == [0.9, 0.5, 1.0]


def test_scores_outside_unit_interval_are_divided_by_the_largest() -> None:
    def bm25(query: str, options: SearchOptions) -> list[Hit]:
        return [Hit(url=f"https://s.example/{i}", score=s) for i, s in enumerate([12.0, 6.0, 3.0])]

    nodes = PerplexedRetriever(bm25).retrieve("q")
    assert [n.score for n in nodes] == [1.0, 0.5, 0.25]
    assert [n.node.metadata["score"] for n in nodes] == [12.0, 6.0, 3.0]  # the provider's own


def test_no_score_is_one_over_rank() -> None:
    nodes = PerplexedRetriever(web).retrieve("q")
    assert [n.score for n in nodes] == [1.0, 1 / 2, 1 / 3]
    assert all(n.node.metadata["score"] is None for n in nodes)


def test_score_rules_edge_cases() -> None:
    hits = [
        Hit(id=1, url="https://e.example/1", score=None),
        Hit(id=2, url="https://e.example/2", score=0.0),
        Hit(id=3, url="https://e.example/3", score=-2.0),
        Hit(id=4, url="https://e.example/4", score=4.0),
        Hit(id=5, url="https://e.example/5", score=0.25),
        Hit(id=6, url="https://e.example/6", score=float("nan")),
    ]
    assert score_hits(hits) == [1.0, 0.0, 0.0, 1.0, 0.25, 1 / 6]
    # no positive score anywhere: ranks
    negative = [Hit(id=1, url="https://n.example/1", score=-1.0), Hit(id=2, url="https://n.example/2", score=-3.0)]
    assert score_hits(negative) == [1.0, 0.5]
    assert score_hits([]) == []


def test_max_results_and_similarity_top_k() -> None:
    assert len(PerplexedRetriever(web, max_results=2).retrieve("q")) == 2
    retriever = PerplexedRetriever(web, similarity_top_k=1)
    assert retriever.max_results == retriever.similarity_top_k == 1
    assert len(retriever.retrieve("q")) == 1
    assert PerplexedRetriever(web, max_results=2, similarity_top_k=2).max_results == 2
    retriever.similarity_top_k = 2
    assert retriever.max_results == 2
    assert len(retriever.retrieve("q")) == 2
    with pytest.raises(perplexed.InvalidRequest):
        retriever.max_results = 0
    assert retriever.max_results == 2


def test_search_options_reach_the_providers() -> None:
    seen: list[SearchOptions] = []

    def spy(query: str, options: SearchOptions) -> list[Hit]:
        seen.append(options)
        return [Hit(url="https://keep.example/x"), Hit(url="https://drop.example/y")]

    retriever = PerplexedRetriever(
        spy, include_domains=["keep.example"], recency="week", language="en", custom_flag=True
    )
    nodes = retriever.retrieve("q")
    assert [n.node.metadata["url"] for n in nodes] == ["https://keep.example/x"]
    assert seen[0].recency == "week"
    assert seen[0].language == "en"
    assert seen[0].extra == {"custom_flag": True}


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"max_results": 0}, "max_results"),
        ({"similarity_top_k": 500}, "max_results"),
        ({"max_results": 3, "similarity_top_k": 4}, "similarity_top_k"),
        ({"recency": "fortnight"}, "recency"),
        ({"deadline_ms": -5}, "deadline_ms"),
        ({"fallback_on": ["sometimes"]}, "fallback_on"),
        ({"published_after": "last tuesday"}, "published_after"),
    ],
)
def test_bad_options_fail_at_construction(kwargs: dict, param: str) -> None:
    with pytest.raises(perplexed.InvalidRequest) as info:
        PerplexedRetriever(web, **kwargs)
    assert info.value.param == param


def test_unknown_provider_fails_at_construction() -> None:
    with pytest.raises(perplexed.ConfigError, match="unknown provider 'nope'"):
        PerplexedRetriever(["nope"])


def test_all_providers_failed_raises_with_attempts() -> None:
    retriever = PerplexedRetriever([broken, broken])
    with pytest.raises(perplexed.UpstreamError) as info:
        retriever.retrieve("q")
    assert info.value.reason == "all_providers_failed"
    assert [a.outcome.value for a in info.value.attempts] == ["error", "error"]
    assert "HTTP 503" in str(info.value)


async def test_all_providers_failed_raises_async() -> None:
    retriever = PerplexedRetriever([broken])
    with pytest.raises(perplexed.UpstreamError) as info:
        await retriever.aretrieve("q")
    assert len(info.value.attempts) == 1


def test_empty_everywhere_is_an_empty_list_not_an_error() -> None:
    assert PerplexedRetriever([nothing, nothing]).retrieve("q") == []


def test_bad_query_is_invalid_request() -> None:
    with pytest.raises(perplexed.InvalidRequest):
        PerplexedRetriever(web).retrieve("   ")


async def test_timeout_moves_on_to_the_next_provider() -> None:
    retriever = PerplexedRetriever([slow_web, aweb], provider_timeout_ms=50)
    nodes = await retriever.aretrieve("q")
    attempts = nodes[0].node.metadata["attempts"]
    assert [a["outcome"] for a in attempts] == ["timeout", "ok"]
    assert nodes[0].node.metadata["answered_by"] == "aweb"
