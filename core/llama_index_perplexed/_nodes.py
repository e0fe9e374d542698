"""perplexed hits ↔ LlamaIndex nodes. Pure functions: no search, no I/O."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.schema import NodeWithScore, TextNode
from perplexed import Hit, Result

if TYPE_CHECKING:
    from perplexed import Answer

__all__ = [
    "BOOKKEEPING_KEYS",
    "answer_metadata",
    "answer_source_nodes",
    "hit_metadata",
    "hit_to_node",
    "node_id_for_url",
    "result_to_nodes",
    "score_hits",
]

#: Metadata keys kept on every node for the caller but hidden from the LLM and from embeddings.
BOOKKEEPING_KEYS = ("attempts", "cost", "answered_by")


def node_id_for_url(url: str) -> str:
    """A node id that is a pure function of the URL (a UUID5 in the URL namespace).

    The same page gets the same id in every retrieval and from every provider, so LlamaIndex's dedupe by
    ``node_id`` (and any docstore keyed on it) sees it once. Remembered for the URLs seen last (a pure
    function: a retrieval's nodes cost no hashing for a URL seen before).
    """
    node_id = _NODE_IDS.get(url)
    if node_id is None:
        if len(_NODE_IDS) >= 4096:
            _NODE_IDS.clear()
        node_id = _NODE_IDS[url] = str(uuid.uuid5(uuid.NAMESPACE_URL, url.strip()))
    return node_id


_NODE_IDS: dict[str, str] = {}


def _usable(score: float | None) -> float | None:
    if score is None or isinstance(score, bool) or not math.isfinite(score):
        return None
    return float(score)


def score_hits(hits: Sequence[Hit]) -> list[float]:
    """The ``NodeWithScore.score`` of each hit, in order.

    - a provider score in ``(0, 1]`` is used as is;
    - a provider score outside that range (BM25-like, or ``<= 0``) is divided by the largest score of the
      result, floored at 0, so the best hit scores 1.0;
    - a hit with no score (or when no score of the result is positive) scores ``1 / rank`` (rank = the hit's
      1-based ``id``, else its position).
    """
    scores = [_usable(h.score) for h in hits]
    largest = max((s for s in scores if s is not None), default=None)
    out: list[float] = []
    for position, (hit, score) in enumerate(zip(hits, scores, strict=True), start=1):
        if score is not None and 0.0 < score <= 1.0:
            out.append(score)
        elif score is not None and largest is not None and largest > 0:
            out.append(max(score, 0.0) / largest)
        else:
            out.append(1.0 / (hit.id if hit.id > 0 else position))
    return out


def hit_metadata(hit: Hit, result: Result | None = None, *, cost: float | None = None) -> dict[str, Any]:
    """The node metadata of one hit, as in the LangChain adapter.

    ``id`` (the 1-based number an ``[n]`` marker cites), ``title``, ``url``, ``published`` (ISO date; absent
    when unknown), ``author`` (when the provider reports one, e.g. Exa; absent otherwise), ``score`` (the provider's own, or ``None``), ``provider``, and the search's
    ``answered_by``, ``cost`` (USD, the whole chain run, the same on every node of a result) and
    ``attempts`` (``[{provider, outcome, cost, duration_ms}]``). ``cost``: ``result.cost`` computed already
    (the nodes of one result share it).
    """
    if result is None:
        return _metadata(hit, hit.provider, 0.0, [])
    return _metadata(hit, result.provider, result.cost if cost is None else cost, _summaries(result))


def _summaries(result: Result) -> list[dict[str, Any]]:
    return [a.summary() for a in result.attempts]


def _metadata(hit: Hit, answered_by: str | None, cost: float, summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`hit_metadata` with the attempts summarised once per result (``summaries``); every node still
    gets copies of its own (no list or dict is shared between two nodes)."""
    metadata: dict[str, Any] = {"id": hit.id, "title": hit.title, "url": hit.url}
    if hit.published is not None:
        metadata["published"] = hit.published.isoformat()
    author = hit.raw.get("author")
    if isinstance(author, str) and author.strip():
        metadata["author"] = author.strip()  # e.g. Exa's; absent when the provider reports none
    metadata["score"] = hit.score
    metadata["provider"] = hit.provider
    if hit.sources:  # a merged result: every provider that returned the hit, and its rank there
        metadata["sources"] = [dict(source) for source in hit.sources]
    page = hit.page
    if page is not None and page.page_type is not None:  # a fetched page (fetch_content): its type
        metadata["page_type"] = page.page_type
    metadata["answered_by"] = answered_by
    metadata["cost"] = cost
    metadata["attempts"] = [dict(summary) for summary in summaries]
    return metadata


def _node(hit: Hit, score: float | None, metadata: dict[str, Any]) -> NodeWithScore:
    node = TextNode(
        id_=node_id_for_url(hit.url),
        text=hit.text,
        metadata=metadata,
        excluded_llm_metadata_keys=list(BOOKKEEPING_KEYS),
        excluded_embed_metadata_keys=list(BOOKKEEPING_KEYS),
    )
    return NodeWithScore(node=node, score=score)


def hit_to_node(
    hit: Hit, score: float | None = None, result: Result | None = None, *, cost: float | None = None
) -> NodeWithScore:
    """One hit as a ``NodeWithScore`` of a ``TextNode`` (id from the URL, text = content or snippet)."""
    return _node(hit, score, hit_metadata(hit, result, cost=cost))


def result_to_nodes(result: Result) -> list[NodeWithScore]:
    """Every hit of a search result as a node, in the result's order, scored by :func:`score_hits`."""
    hits = result.hits
    scores = score_hits(hits)
    answered_by, cost = result.provider, result.cost  # once: cost is a computed sum over the attempts
    summaries = _summaries(result)  # once; each node gets copies of its own
    return [
        _node(hit, score, _metadata(hit, answered_by, cost, summaries))
        for hit, score in zip(hits, scores, strict=True)
    ]


def answer_source_nodes(ans: Answer) -> list[NodeWithScore]:
    """The sources of a grounded answer as nodes, in id order: ``[n]`` in the text is ``nodes[n-1]``.

    The nodes hold what the model was given (a source's text may have been cut to ``max_source_chars``; the
    untouched hits are in ``answer.search.hits``), with the metadata of :func:`hit_metadata`.
    """
    sources = sorted(ans.sources, key=lambda h: h.id)
    scores = score_hits(sources)
    search = ans.search
    if search is None:
        return [_node(hit, score, hit_metadata(hit)) for hit, score in zip(sources, scores, strict=True)]
    answered_by, cost, summaries = search.provider, search.cost, _summaries(search)
    return [
        _node(hit, score, _metadata(hit, answered_by, cost, summaries))
        for hit, score in zip(sources, scores, strict=True)
    ]


def answer_metadata(ans: Answer) -> dict[str, Any]:
    """``Response.metadata`` of a grounded answer.

    ``cost`` (USD, search + Agent API), ``search_cost``, ``agent_cost``, ``attempts`` (the search's,
    ``[{provider, outcome, cost, duration_ms}]``), ``answered_by`` (who found the sources), ``model``,
    ``response_id``, ``citations`` (``[{n, url, title}]`` per resolved marker), ``unmatched`` (cited numbers
    with no source) and ``answer`` (the :class:`perplexed.Answer` itself); with ``verify=True`` also
    ``verification`` (:class:`perplexed.Verification` as JSON).
    """
    metadata = {
        "cost": ans.cost,
        "search_cost": ans.search_cost,
        "agent_cost": ans.agent_cost,
        "attempts": [a.summary() for a in ans.search.attempts] if ans.search is not None else [],
        "answered_by": ans.provider,
        "model": ans.response.model,
        "response_id": ans.response.id,
        "citations": [{"n": c.n, "url": c.url, "title": c.title} for c in ans.citations],
        "unmatched": [int(n) for n in ans.unmatched],
        "answer": ans,
    }
    if ans.verification is not None:
        metadata["verification"] = ans.verification.model_dump(mode="json")
    return metadata
