"""as_provider: a LangChain retriever as a perplexed chain member (corrective RAG: local first, then the web).

A vector store here is langchain-core's ``InMemoryVectorStore`` with ``DeterministicFakeEmbedding``: the
same text always embeds to the same vector, and different texts to unrelated ones. So a query that is a
stored text scores 1.0 and any other query scores near 0: with a score threshold, the local retriever
answers the first and comes back empty for the second, and the chain moves on to the web.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import perplexed
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_perplexed import PerplexedRetriever, RetrieverProvider, as_provider, document_to_hit
from lc_support import QUERY, mock_searxng, searxng_results
from perplexed.providers import CallableProvider

KB = [
    Document(
        page_content="Our setback policy: 20 feet from the front lot line.",
        metadata={"source": "https://intranet.example/policies/setbacks", "title": "Setback policy"},
    ),
    Document(
        page_content="Variance requests go to the zoning board every second Tuesday.",
        metadata={"url": "https://intranet.example/variance", "name": "Variance process", "published": "2025-06-01"},
    ),
    Document(page_content="Internal note without a source.", metadata={"author": "ops"}),
]


class ScoredInMemoryVectorStore(InMemoryVectorStore):
    """InMemoryVectorStore with relevance scores (cosine similarity mapped to 0..1), so a score threshold
    works as it does on Chroma, FAISS, PGVector, ... (langchain-core's in-memory store defines none)."""

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda similarity: (1.0 + similarity) / 2.0


@pytest.fixture
def store() -> InMemoryVectorStore:
    vectorstore = ScoredInMemoryVectorStore(DeterministicFakeEmbedding(size=256))
    vectorstore.add_documents(KB, ids=["policy", "variance", "note"])
    return vectorstore


def local_retriever(store: InMemoryVectorStore, threshold: float = 0.9) -> BaseRetriever:
    return store.as_retriever(search_type="similarity_score_threshold", search_kwargs={"score_threshold": threshold})


def test_as_provider_is_a_callable_provider(store: InMemoryVectorStore) -> None:
    provider = as_provider(local_retriever(store))

    assert isinstance(provider, CallableProvider) and isinstance(provider, RetrieverProvider)
    assert provider.label == "ScoredInMemoryVectorStore"
    assert as_provider(local_retriever(store), name="kb").label == "kb"
    assert provider.price() == 0.0 and as_provider(local_retriever(store), cost=0.001).price() == 0.001
    assert "ScoredInMemoryVectorStore" in repr(provider)


def test_local_knowledge_answers_first(store: InMemoryVectorStore) -> None:
    web = mock_searxng(searxng_results(3), name="web")
    retriever = PerplexedRetriever(provider=[as_provider(local_retriever(store), name="kb"), web])

    docs = retriever.invoke(KB[0].page_content)

    assert len(docs) == 1
    doc = docs[0]
    assert doc.page_content == KB[0].page_content
    assert doc.metadata["url"] == doc.metadata["source"] == "https://intranet.example/policies/setbacks"
    assert doc.metadata["title"] == "Setback policy"
    assert doc.metadata["provider"] == doc.metadata["answered_by"] == "kb"
    assert [a["provider"] for a in doc.metadata["attempts"]] == ["kb"]  # the web was never asked


def test_web_only_when_local_comes_back_empty(store: InMemoryVectorStore, searxng_env: Any) -> None:
    retriever = PerplexedRetriever(provider=[as_provider(local_retriever(store), name="kb"), "searxng"], k=3)

    docs = retriever.invoke(QUERY)

    assert len(docs) == 3
    assert docs[0].metadata["answered_by"] == "searxng"
    assert [(a["provider"], a["outcome"]) for a in docs[0].metadata["attempts"]] == [("kb", "empty"), ("searxng", "ok")]


async def test_corrective_rag_async(store: InMemoryVectorStore, searxng_env: Any) -> None:
    retriever = PerplexedRetriever(provider=[as_provider(local_retriever(store), name="kb"), "searxng"], k=3)

    local, web = await asyncio.gather(retriever.ainvoke(KB[1].page_content), retriever.ainvoke(QUERY))

    assert [d.metadata["answered_by"] for d in local] == ["kb"]
    assert local[0].metadata["url"] == "https://intranet.example/variance"
    assert local[0].metadata["title"] == "Variance process"
    assert local[0].metadata["published"] == "2025-06-01"
    assert {d.metadata["answered_by"] for d in web} == {"searxng"}


def test_with_the_core_directly(store: InMemoryVectorStore) -> None:
    web = mock_searxng(searxng_results(2), name="web")
    chain = [as_provider(local_retriever(store), name="kb"), web]

    local = perplexed.search(KB[2].page_content, provider=chain)
    fallback = perplexed.search("something else entirely", provider=chain)

    assert local.provider == "kb" and len(local.hits) == 1
    # no source/url in metadata: a stable id from the vector store's document id
    assert local.hits[0].url == "langchain://kb/note"
    assert local.hits[0].raw == {"author": "ops"}
    assert fallback.provider == "web"
    assert [(a.provider, a.outcome.value) for a in fallback.attempts] == [("kb", "empty"), ("web", "ok")]


def test_max_results_reaches_a_vector_store_retriever(store: InMemoryVectorStore) -> None:
    everything = store.as_retriever(search_kwargs={"k": 10})  # plain similarity: always its top k

    assert len(perplexed.search("q", provider=as_provider(everything), max_results=2).hits) == 2
    assert len(perplexed.search("q", provider=as_provider(everything), max_results=3).hits) == 3


class Keywords(BaseRetriever):
    """A retriever with no per-call arguments (like BM25): it always returns its matches."""

    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [d for d in self.docs if query.lower() in d.page_content.lower()]


class Broken(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        raise ConnectionError("vector database unreachable")


def test_any_retriever_sync_only_and_without_kwargs() -> None:
    keywords = Keywords(docs=[Document(page_content=f"zoning doc {i}") for i in range(5)])

    result = perplexed.search("zoning", provider=as_provider(keywords), max_results=2)

    assert result.provider == "Keywords" and len(result.hits) == 2  # capped by the chain
    assert [h.id for h in result.hits] == [1, 2]
    assert all(h.url.startswith("langchain://Keywords/") for h in result.hits)
    # the text-hash id is stable across calls
    again = perplexed.search("zoning", provider=as_provider(keywords), max_results=2)
    assert [h.url for h in again.hits] == [h.url for h in result.hits]


def test_a_failing_retriever_is_an_error_attempt_and_the_chain_moves_on() -> None:
    web = mock_searxng(searxng_results(2), name="web")

    result = perplexed.search("q", provider=[as_provider(Broken(), name="vdb"), web])

    assert result.provider == "web"
    first = result.attempts[0]
    assert first.provider == "vdb" and first.outcome.value == "error"
    assert "vector database unreachable" in (first.error or "")


def test_document_to_hit_mapping() -> None:
    doc = Document(
        page_content="x" * 1000,
        metadata={"link": "https://l.example/", "title": "L", "relevance_score": 0.42, "date": "2024-02-03"},
        id="abc",
    )

    hit = document_to_hit(doc, "kb")

    assert hit.url == "https://l.example/" and hit.title == "L" and hit.score == 0.42
    assert hit.published is not None and hit.published.isoformat() == "2024-02-03"
    assert hit.content == "x" * 1000 and len(hit.snippet) <= 500
    assert document_to_hit(Document(page_content="y", id="abc"), "kb").url == "langchain://kb/abc"


class RunTracker(BaseCallbackHandler):
    def __init__(self) -> None:
        self.retriever_runs: list[tuple[Any, Any, str]] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: Any, parent_run_id: Any = None, **kw: Any) -> None:
        self.retriever_runs.append((run_id, parent_run_id, kw.get("name") or ""))


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_wrapped_retriever_is_a_child_run(store: InMemoryVectorStore, mode: str) -> None:
    tracker = RunTracker()
    retriever = PerplexedRetriever(provider=[as_provider(local_retriever(store), name="kb")])
    config = {"callbacks": [tracker]}

    if mode == "sync":
        await asyncio.to_thread(retriever.invoke, KB[0].page_content, config)
    else:
        await retriever.ainvoke(KB[0].page_content, config)

    (outer_id, outer_parent, outer_name), (_, inner_parent, _) = tracker.retriever_runs
    assert outer_name == "PerplexedRetriever" and outer_parent is None
    assert inner_parent == outer_id  # nested under the perplexed run in traces


# -- cache identity (issue 22 point 1): two tenants' retrievers never share cached answers ----------------------


def _tenant_store(text: str, source: str) -> InMemoryVectorStore:
    vectorstore = ScoredInMemoryVectorStore(DeterministicFakeEmbedding(size=256))
    vectorstore.add_documents([Document(page_content=text, metadata={"source": source})])
    return vectorstore


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_two_tenants_vector_stores_never_share_cached_hits(mode: str, tmp_path: Any) -> None:
    from perplexed.store import SQLiteStore

    perplexed.configure(store=SQLiteStore(tmp_path / "state.db"))
    a = as_provider(_tenant_store("tenant A's secret plan", "https://a.example/plan").as_retriever())
    b = as_provider(_tenant_store("tenant B's own notes", "https://b.example/notes").as_retriever())
    assert a.label == b.label == "ScoredInMemoryVectorStore"  # the default label: the store's class

    async def search(provider: Any) -> perplexed.Result:
        if mode == "sync":
            return await asyncio.to_thread(perplexed.search, "plan", provider, cache_ttl_s=600)
        return await perplexed.asearch("plan", provider, cache_ttl_s=600)

    first = await search(a)
    second = await search(b)
    assert [h.url for h in first.hits] == ["https://a.example/plan"]
    assert [h.url for h in second.hits] == ["https://b.example/notes"] and not second.attempts[0].cached
    assert (await search(a)).attempts[0].cached
    assert (await search(as_provider(a.retriever))).attempts[0].cached  # the same retriever object: shared
    shared_a = as_provider(a.retriever, cache_key="kb-v1")
    shared_b = as_provider(b.retriever, cache_key="kb-v1")  # the user's promise: interchangeable
    await search(shared_a)
    assert [h.url for h in (await search(shared_b)).hits] == ["https://a.example/plan"]
