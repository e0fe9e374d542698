"""The adapters build their Documents / nodes per result with the attempts summarised once (issue 35): the
result must be what the per-hit functions build, field for field, and no two Documents (nodes) may share a
mutable metadata value. The LlamaIndex usage event is still dispatched when a handler listens."""

from __future__ import annotations

import datetime

import pytest
from perplexed import Attempt, Hit, Outcome, Page, Result

langchain_documents = pytest.importorskip("langchain_core.documents")
pytest.importorskip("llama_index.core")

from langchain_core.documents import Document  # noqa: E402
from langchain_perplexed._documents import (  # noqa: E402  # private: the per-hit builder is the reference
    flatten_metadata,
    hit_metadata,
    result_documents,
)
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402
from llama_index.core.instrumentation.event_handlers import BaseEventHandler  # noqa: E402
from llama_index.core.schema import NodeWithScore, TextNode  # noqa: E402
from llama_index_perplexed import PerplexedRetriever, PerplexedUsageEvent  # noqa: E402
from llama_index_perplexed._nodes import (  # noqa: E402  # private: the per-hit builder is the reference
    hit_to_node,
    result_to_nodes,
    score_hits,
)


def _result() -> Result:
    """Hits with every optional field set on some and missing (None / empty) on others."""
    hits = [
        Hit(id=1, title="Full", url="https://a.example/1", snippet="s1", content="the whole page", score=0.8,
            provider="exa", published=datetime.date(2024, 5, 1), raw={"author": "  Ann  "},
            sources=[{"provider": "exa", "rank": 1}, {"provider": "brave", "rank": 3}],
            page=Page(url="https://a.example/1", final_url="https://a.example/1", content="x", page_type="article")),
        Hit(id=2, title="", url="https://b.example/2", snippet="only a snippet", provider="exa"),
        Hit(id=3, title="Blank author", url="https://c.example/3", snippet="s3", score=12.5, provider="exa",
            raw={"author": "   "}, page=Page(url="https://c.example/3", final_url="https://c.example/3")),
    ]
    attempts = [
        Attempt(provider="brave", outcome=Outcome.TIMEOUT, cost=0.0, duration_ms=800, error="timed out"),
        Attempt(provider="exa", outcome=Outcome.OK, cost=0.005, duration_ms=120, billable=True),
    ]
    return Result(query="q", provider="exa", hits=hits, attempts=attempts)


@pytest.mark.parametrize("flat", [False, True])
def test_langchain_documents_equal_the_per_hit_ones(flat: bool) -> None:
    result = _result()
    documents = result_documents(result, flat=flat)
    assert len(documents) == len(result.hits)
    for hit, document in zip(result.hits, documents, strict=True):
        metadata = hit_metadata(hit, answered_by="exa", cost=result.cost, attempts=result.attempts)
        reference = Document(page_content=hit.text, metadata=flatten_metadata(metadata) if flat else metadata)
        assert type(document) is Document
        assert document == reference
        assert document.model_dump() == reference.model_dump()
        assert document.model_fields_set == reference.model_fields_set
        assert list(document.metadata) == list(reference.metadata)  # the same key order
        assert document.id is None and document.type == "Document"
    first = documents[0].metadata
    assert first["page_type"] == "article" and first["author"] == "Ann" and first["published"] == "2024-05-01"
    assert "page_type" not in documents[2].metadata and "author" not in documents[2].metadata
    assert "published" not in documents[1].metadata
    if not flat:
        assert first["attempts"] == [a.summary() for a in result.attempts]
        first["attempts"][0]["cost"] = 99.0  # a Document's metadata is its own
        first["attempts"].append({})
        assert documents[1].metadata["attempts"] == [a.summary() for a in result.attempts]


def test_llama_index_nodes_equal_the_per_hit_ones() -> None:
    result = _result()
    nodes = result_to_nodes(result)
    scores = score_hits(result.hits)
    assert len(nodes) == len(result.hits)
    for hit, score, node in zip(result.hits, scores, nodes, strict=True):
        reference = hit_to_node(hit, score, result)
        assert type(node) is NodeWithScore and type(node.node) is TextNode
        assert node == reference
        assert node.node.model_dump() == reference.node.model_dump()
        assert node.node.id_ == reference.node.id_ and node.node.hash == reference.node.hash
        assert list(node.node.metadata) == list(reference.node.metadata)
        assert node.score == reference.score
    first = nodes[0].node
    assert first.metadata["page_type"] == "article" and first.metadata["author"] == "Ann"
    assert "published" not in nodes[1].node.metadata and "page_type" not in nodes[2].node.metadata
    first.metadata["attempts"][0]["cost"] = 99.0  # a node's metadata is its own
    first.excluded_llm_metadata_keys.append("title")
    second = nodes[1].node
    assert second.metadata["attempts"] == [a.summary() for a in result.attempts]
    assert "title" not in second.excluded_llm_metadata_keys


class _Recorder(BaseEventHandler):
    events: list = []

    @classmethod
    def class_name(cls) -> str:
        return "Recorder"

    def handle(self, event, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.events.append(event)


def test_the_usage_event_reaches_a_handler_and_is_skipped_without_one() -> None:
    result = _result()
    retriever = PerplexedRetriever(lambda query, options: list(result.hits))
    assert len(retriever.retrieve("q")) == 3  # no handler: nothing to see, the call still works
    recorder = _Recorder(events=[])
    root = get_dispatcher()
    root.add_event_handler(recorder)
    try:
        assert len(retriever.retrieve("q")) == 3
    finally:
        root.event_handlers.remove(recorder)
    usage = [event for event in recorder.events if isinstance(event, PerplexedUsageEvent)]
    assert len(usage) == 1 and usage[0].operation == "search" and usage[0].calls == 1 and not usage[0].failed
