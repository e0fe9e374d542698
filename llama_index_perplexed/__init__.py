"""LlamaIndex adapters for perplexed (``pip install "perplexed-search[llama-index]"``).

- :class:`PerplexedRetriever`: a ``BaseRetriever`` over a perplexed provider chain;
- :class:`PerplexedQueryEngine`: grounded answers (``perplexed.answer``) as LlamaIndex ``Response`` objects
  whose ``[n]`` markers point at ``source_nodes[n-1]``;
- :class:`PerplexedToolSpec`: ``search``, ``answer`` and ``fetch`` tools for LlamaIndex agents;
- :class:`PerplexedReader`: web pages' content as Documents through a chain of fetch providers;
- :func:`as_provider`: any LlamaIndex retriever as a member of a perplexed chain;
- :class:`PerplexedAttemptEvent` / :class:`PerplexedAgentEvent`: instrumentation events.

The adapters are thin: searching, budgets, fallback, cost and citations all live in ``perplexed``.
"""

from __future__ import annotations

from ._nodes import (
    BOOKKEEPING_KEYS,
    answer_metadata,
    answer_source_nodes,
    hit_metadata,
    hit_to_node,
    node_id_for_url,
    result_to_nodes,
    score_hits,
)
from .events import PerplexedAgentEvent, PerplexedAttemptEvent
from .fetch import PerplexedReader
from .provider import RetrieverProvider, as_provider, node_to_hit
from .query_engine import PerplexedQueryEngine, answer_to_response
from .retriever import PerplexedRetriever
from .tools import PerplexedToolSpec, format_answer, format_hits

__all__ = [
    "BOOKKEEPING_KEYS",
    "PerplexedAgentEvent",
    "PerplexedAttemptEvent",
    "PerplexedQueryEngine",
    "PerplexedReader",
    "PerplexedRetriever",
    "PerplexedToolSpec",
    "RetrieverProvider",
    "answer_metadata",
    "answer_source_nodes",
    "answer_to_response",
    "as_provider",
    "format_answer",
    "format_hits",
    "hit_metadata",
    "hit_to_node",
    "node_id_for_url",
    "node_to_hit",
    "result_to_nodes",
    "score_hits",
]
