"""as_provider: LlamaIndex retrievers (an in-memory VectorStoreIndex with MockEmbedding) as chain members."""

from __future__ import annotations

import asyncio
import time
from datetime import date

import perplexed
import pytest
from llama_fakes import WEB_HITS, aweb, web
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
from llama_index_perplexed import PerplexedRetriever, RetrieverProvider, as_provider
from llama_index_perplexed.provider import node_to_hit  # private: the node-to-hit mapping is not exported
from perplexed.providers import CallableProvider

EMBED = MockEmbedding(embed_dim=8)

DOCS = [
    TextNode(
        id_="setbacks",
        text="Front setbacks in zone R-2 are 6 metres.",
        metadata={"title": "Zoning handbook", "url": "https://intranet.example/zoning#setbacks", "topic": "zoning"},
    ),
    TextNode(
        id_="variance",
        text="A variance needs a hearing before the board.",
        metadata={"file_name": "variance.md", "topic": "zoning", "last_modified_date": "2025-02-03"},
    ),
]


def local_index(nodes: list[TextNode] | None = None) -> VectorStoreIndex:
    return VectorStoreIndex(nodes=[n.model_copy() for n in (DOCS if nodes is None else nodes)], embed_model=EMBED)


def test_as_provider_is_a_callable_provider() -> None:
    provider = as_provider(local_index().as_retriever(), name="docs")
    assert isinstance(provider, RetrieverProvider)
    assert isinstance(provider, CallableProvider)
    assert provider.label == "docs"
    assert provider.is_async
    assert provider.price() == 0.0
    assert as_provider(local_index().as_retriever()).label == "llamaindex"
    assert "docs" in repr(provider)


def test_as_provider_rejects_a_non_retriever() -> None:
    with pytest.raises(perplexed.ConfigError, match="BaseRetriever"):
        as_provider(object())  # type: ignore[arg-type]


def test_local_knowledge_answers_first_and_the_web_is_not_called() -> None:
    calls: list[str] = []

    def web_spy(query, options):
        calls.append(query)
        return web(query, options)

    result = perplexed.search(
        "setbacks", provider=[as_provider(local_index().as_retriever(similarity_top_k=2), name="docs"), web_spy]
    )
    assert result.provider == "docs"
    assert calls == []
    assert [a.provider for a in result.attempts] == ["docs"]
    assert {h.raw["node_id"] for h in result.hits} == {"setbacks", "variance"}
    assert [h.id for h in result.hits] == [1, 2]


async def test_empty_local_index_falls_back_to_the_web() -> None:
    empty = as_provider(local_index([]).as_retriever(), name="docs")
    result = await perplexed.asearch("setbacks", provider=[empty, aweb])
    assert [(a.provider, a.outcome.value) for a in result.attempts] == [("docs", "empty"), ("aweb", "ok")]
    assert result.provider == "aweb"
    assert [h.url for h in result.hits] == [h["url"] for h in WEB_HITS]


def test_filtered_retriever_with_no_match_falls_back_to_the_web() -> None:
    filters = MetadataFilters(filters=[MetadataFilter(key="topic", value="astronomy")])
    docs = as_provider(local_index().as_retriever(filters=filters), name="docs")
    nodes = PerplexedRetriever([docs, web]).retrieve("what is a nebula")
    assert [n.node.metadata["provider"] for n in nodes] == ["web"] * 3
    assert [a["outcome"] for a in nodes[0].node.metadata["attempts"]] == ["empty", "ok"]


def test_node_to_hit_mapping() -> None:
    nodes = local_index().as_retriever(similarity_top_k=2).retrieve("zoning")
    hits = {n.node.node_id: node_to_hit(n, "docs") for n in nodes}

    with_url = hits["setbacks"]
    assert with_url.url == "https://intranet.example/zoning#setbacks"
    assert with_url.title == "Zoning handbook"
    assert with_url.content == "Front setbacks in zone R-2 are 6 metres."
    assert with_url.snippet == with_url.content
    assert with_url.provider == "docs"
    assert with_url.score == pytest.approx(nodes[0].score)
    assert with_url.raw["metadata"]["topic"] == "zoning"

    no_url = hits["variance"]
    assert no_url.url == "llamaindex://docs/variance"
    assert no_url.title == "variance.md"
    assert no_url.published == date(2025, 2, 3)


def test_long_node_text_gets_a_short_snippet_and_full_content() -> None:
    text = "word " * 200
    hit = node_to_hit(NodeWithScore(node=TextNode(id_="long", text=text), score=0.5), "docs")
    assert hit.content == text.strip()
    assert len(hit.snippet) <= 300
    assert hit.snippet.endswith("…")


def test_local_hits_become_nodes_with_their_own_scores_and_metadata() -> None:
    retriever = PerplexedRetriever([as_provider(local_index().as_retriever(similarity_top_k=2), name="docs"), web])
    nodes = retriever.retrieve("zoning setbacks")
    assert {n.node.metadata["answered_by"] for n in nodes} == {"docs"}
    urls = {n.node.metadata["url"] for n in nodes}
    assert urls == {"https://intranet.example/zoning#setbacks", "llamaindex://docs/variance"}
    assert all(0 < n.score <= 1 for n in nodes)


class SlowSyncRetriever(BaseRetriever):
    """A retriever with only a blocking _retrieve (like many third-party retrievers)."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        time.sleep(0.3)
        return [NodeWithScore(node=TextNode(id_="s", text="sync text", metadata={"url": "https://sync.example/"}), score=2.0)]


async def test_a_sync_only_retriever_does_not_block_the_loop() -> None:
    provider = as_provider(SlowSyncRetriever(), name="sync")
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    result = await perplexed.asearch("q", provider=provider)
    done.set()
    await task
    assert [h.url for h in result.hits] == ["https://sync.example/"]
    assert ticks >= 10  # the inherited aretrieve would have run time.sleep on the loop


async def test_a_slow_local_retriever_is_cut_off_by_the_timeout_and_the_web_answers() -> None:
    result = await perplexed.asearch("q", provider=[as_provider(SlowSyncRetriever(), name="sync"), aweb], provider_timeout_ms=50)
    assert [(a.provider, a.outcome.value) for a in result.attempts] == [("sync", "timeout"), ("aweb", "ok")]


def test_a_failing_retriever_is_an_error_attempt() -> None:
    class Broken(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            raise RuntimeError("index unavailable")

    result = perplexed.search("q", provider=[as_provider(Broken(), name="broken"), web])
    first = result.attempts[0]
    assert (first.provider, first.outcome.value) == ("broken", "error")
    assert "index unavailable" in (first.error or "")
    assert result.provider == "web"


def test_max_results_caps_local_hits() -> None:
    result = perplexed.search("zoning", provider=as_provider(local_index().as_retriever(similarity_top_k=2)), max_results=1)
    assert len(result.hits) == 1


# -- cache identity (issue 22 point 1): two tenants' retrievers never share cached answers ----------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_two_tenants_retrievers_never_share_cached_hits(mode: str, tmp_path: object) -> None:
    from pathlib import Path

    from perplexed.store import SQLiteStore

    perplexed.configure(store=SQLiteStore(Path(str(tmp_path)) / "state.db"))
    tenant_a = [TextNode(id_="a", text="Tenant A's plan.", metadata={"url": "https://a.example/plan"})]
    tenant_b = [TextNode(id_="b", text="Tenant B's notes.", metadata={"url": "https://b.example/notes"})]
    a = as_provider(local_index(tenant_a).as_retriever())
    b = as_provider(local_index(tenant_b).as_retriever())
    assert a.label == b.label == "llamaindex"

    async def search(provider: RetrieverProvider) -> perplexed.Result:
        if mode == "sync":
            return await asyncio.to_thread(perplexed.search, "plan", provider, cache_ttl_s=600)
        return await perplexed.asearch("plan", provider, cache_ttl_s=600)

    first = await search(a)
    second = await search(b)
    assert [h.url for h in first.hits] == ["https://a.example/plan"]
    assert [h.url for h in second.hits] == ["https://b.example/notes"] and not second.attempts[0].cached
    assert (await search(as_provider(a.retriever))).attempts[0].cached  # the same retriever object: shared
    await search(as_provider(a.retriever, cache_key="docs-v1"))
    shared = await search(as_provider(b.retriever, cache_key="docs-v1"))  # the user's promise
    assert shared.attempts[0].cached and [h.url for h in shared.hits] == ["https://a.example/plan"]
