"""Any LangChain retriever as a perplexed chain member (:func:`as_provider`).

A corrective-RAG chain searches your own knowledge first and the web only when it comes back empty::

    local = vectorstore.as_retriever(
        search_type="similarity_score_threshold", search_kwargs={"score_threshold": 0.75}
    )
    retriever = PerplexedRetriever(provider=[as_provider(local, name="kb"), "searxng", "perplexity"])

(A plain similarity retriever always returns its top k, however far; a score threshold is what lets it
come back empty so the chain moves on.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStoreRetriever
from perplexed import Hit, ProviderAnswer, SearchOptions
from perplexed.providers import CallableProvider, parse_published

__all__ = ["RetrieverProvider", "as_provider", "document_to_hit"]

_URL_KEYS = ("source", "url", "link")
_TITLE_KEYS = ("title", "name")
_DATE_KEYS = ("published", "published_date", "date", "last_updated")
_SCORE_KEYS = ("score", "relevance_score", "similarity")
SNIPPET_CHARS = 500


def _first_str(metadata: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _score(metadata: Mapping[str, Any]) -> float | None:
    for key in _SCORE_KEYS:
        value = metadata.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def document_id_url(name: str, document: Document) -> str:
    """``langchain://<name>/<id>``: the Document's own ``id`` when it has one, else a hash of its text."""
    key = document.id or hashlib.sha256(document.page_content.encode("utf-8", "replace")).hexdigest()[:16]
    return f"langchain://{name}/{key}"


def document_to_hit(document: Document, provider: str) -> Hit:
    """A Document as a :class:`perplexed.Hit`.

    ``url`` is metadata ``source`` / ``url`` / ``link``, else a stable ``langchain://<provider>/<id>``;
    ``title`` is metadata ``title`` / ``name``; ``content`` is the page content (``snippet`` its start);
    ``published`` and ``score`` come from metadata when present; ``raw`` keeps the whole metadata.
    """
    metadata = document.metadata or {}
    text = document.page_content or ""
    snippet = " ".join(text.split())
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 1].rstrip() + "…"
    published = None
    for key in _DATE_KEYS:
        if metadata.get(key) is not None:
            published = parse_published(metadata[key])
            if published is not None:
                break
    return Hit(
        title=_first_str(metadata, _TITLE_KEYS) or "",
        url=_first_str(metadata, _URL_KEYS) or document_id_url(provider, document),
        snippet=snippet,
        content=text or None,
        published=published,
        score=_score(metadata),
        provider=provider,
        raw=dict(metadata),
    )


def _default_name(retriever: BaseRetriever) -> str:
    if isinstance(retriever, VectorStoreRetriever):
        return type(retriever.vectorstore).__name__
    return retriever.name or type(retriever).__name__


class RetrieverProvider(CallableProvider):
    """A perplexed provider that asks a LangChain retriever (``ainvoke``; ``invoke`` from sync code).

    The chain's ``max_results`` is passed as ``num_results_arg`` (default ``k``) to retrievers that accept
    per-call keyword arguments (``VectorStoreRetriever`` does); the chain caps the hits at ``max_results``
    either way. Domain filters apply to the Documents' ``source``/``url`` like to web hits. A retriever that
    raises is an ``error`` attempt and the chain moves on.
    """

    name = "langchain"
    url_schemes = frozenset({"langchain"})  # langchain://<name>/<id> for Documents without a source URL

    def __init__(
        self,
        retriever: BaseRetriever,
        *,
        name: str | None = None,
        cost: float | None = None,
        num_results_arg: str | None = "k",
        cache_key: str | None = None,
    ) -> None:
        super().__init__(name=name or _default_name(retriever), cost=cost, cache_key=cache_key)
        self.retriever = retriever
        self.num_results_arg = num_results_arg

    @property
    def _cache_subject(self) -> object:
        return self.retriever  # cached answers belong to this retriever object, not to a name or a class

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.label!r}, retriever={type(self.retriever).__name__})"

    __str__ = __repr__

    def _invoke_kwargs(self, options: SearchOptions) -> dict[str, Any]:
        if self.num_results_arg and getattr(self.retriever, "_expects_other_args", False):
            return {self.num_results_arg: options.max_results}
        return {}

    def _answer(self, documents: Sequence[Document]) -> ProviderAnswer:
        return ProviderAnswer(hits=[document_to_hit(doc, self.label) for doc in documents])

    def search(self, query: str, options: SearchOptions) -> ProviderAnswer:
        """Call ``retriever.invoke`` and turn its Documents into hits."""
        return self._answer(self.retriever.invoke(query, **self._invoke_kwargs(options)))

    async def asearch(self, query: str, options: SearchOptions) -> ProviderAnswer:
        """Await ``retriever.ainvoke`` and turn its Documents into hits."""
        return self._answer(await self.retriever.ainvoke(query, **self._invoke_kwargs(options)))


def as_provider(
    retriever: BaseRetriever,
    *,
    name: str | None = None,
    cost: float | None = None,
    num_results_arg: str | None = "k",
    cache_key: str | None = None,
) -> RetrieverProvider:
    """Turn any LangChain retriever (a vector store, BM25, ...) into a perplexed chain member.

    ``name`` labels its attempts (default: the vector store's class, else the retriever's name); ``cost``
    is USD per call (default 0). With ``cache_ttl_s``, its cached answers belong to this retriever object
    in this process (two retrievers never share them, whatever their names); ``cache_key`` shares them
    across processes instead: your promise that every retriever given that key answers alike. Use it
    anywhere a provider spec goes::

        perplexed.search(q, provider=[as_provider(vectorstore.as_retriever(...)), "searxng"])
        PerplexedRetriever(provider=[as_provider(bm25, name="kb"), "searxng", "perplexity"])

    A Document becomes a hit with ``url`` from metadata ``source``/``url`` (else a stable
    ``langchain://<name>/<document id or text hash>``), ``title`` from ``title``/``name``, and its page
    content as ``content``.
    """
    return RetrieverProvider(retriever, name=name, cost=cost, num_results_arg=num_results_arg, cache_key=cache_key)
