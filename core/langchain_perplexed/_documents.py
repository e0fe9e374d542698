"""perplexed results as LangChain Documents, and the text a model sees. No I/O, no search logic.

Document metadata is JSON-serialisable: ``id`` (the hit's ``n``, what an ``[n]`` marker cites), ``title``,
``url``, ``source`` (= url), ``published`` (ISO date; absent when unknown), ``author`` (when the provider
reports one, e.g. Exa; absent otherwise), ``score``, ``provider``, ``page_type`` (when the hit's page was fetched
and typed: ``article``, ``forum``, ...), and the
chain run's ``answered_by``, ``cost`` (USD, the whole run's total, the same on every Document of a result)
and ``attempts`` (``[{provider, outcome, cost, duration_ms}]``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from perplexed import Attempt, Hit, Result
from perplexed.catalogue import NO_RESULTS, format_hits

__all__ = [
    "NO_RESULTS",
    "attempts_summary",
    "flatten_metadata",
    "format_hits",
    "hit_metadata",
    "result_documents",
]

# the text a tool returns to the model is the core tool catalogue's (the same on MCP and LlamaIndex)


def attempts_summary(attempts: Iterable[Attempt]) -> list[dict[str, Any]]:
    """``[{provider, outcome, cost, duration_ms}]`` for each attempt, in order."""
    return [attempt.summary() for attempt in attempts]


def hit_metadata(
    hit: Hit,
    *,
    answered_by: str | None,
    cost: float,
    attempts: Sequence[Attempt],
) -> dict[str, Any]:
    """The metadata of the Document made from ``hit`` (see the module docstring)."""
    return _metadata(hit, answered_by, cost, attempts_summary(attempts))


def _metadata(hit: Hit, answered_by: str | None, cost: float, summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`hit_metadata` with the attempts summarised once per result (``summaries``); every Document still
    gets copies of its own (no list or dict is shared between two Documents)."""
    url = hit.url
    metadata: dict[str, Any] = {"id": hit.id, "title": hit.title, "url": url, "source": url}
    if hit.published is not None:
        metadata["published"] = hit.published.isoformat()
    author = hit.raw.get("author")
    if isinstance(author, str) and author.strip():
        metadata["author"] = author.strip()
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


def flatten_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Scalar values only: ``None`` is dropped, a list or dict becomes one compact JSON string."""
    flat: dict[str, Any] = {}
    for key, value in metadata.items():
        if value is None:
            continue
        if isinstance(value, str | int | float | bool):
            flat[key] = value
        else:
            flat[key] = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return flat


def hit_document(
    hit: Hit, *, answered_by: str | None, cost: float, attempts: Sequence[Attempt], flat: bool
) -> Document:
    """One Document: ``page_content`` is the hit's content, else its snippet."""
    return _document(hit, hit_metadata(hit, answered_by=answered_by, cost=cost, attempts=attempts), flat)


def _document(hit: Hit, metadata: dict[str, Any], flat: bool) -> Document:
    return Document(page_content=hit.text, metadata=flatten_metadata(metadata) if flat else metadata)


def result_documents(result: Result, *, flat: bool = False) -> list[Document]:
    """The Documents of a search result, in hit order (``metadata["id"]`` is 1..n)."""
    answered_by, cost = result.provider, result.cost  # once (cost is a computed sum)
    summaries = attempts_summary(result.attempts)  # once; each Document gets copies of its own
    return [_document(hit, _metadata(hit, answered_by, cost, summaries), flat) for hit in result.hits]
