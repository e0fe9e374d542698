"""``as_provider``: any LlamaIndex retriever as a member of a perplexed chain (local knowledge first)."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore
from perplexed import ConfigError, Hit, ProviderAnswer, SearchOptions
from perplexed.providers import CallableProvider, parse_published

__all__ = ["RetrieverProvider", "as_provider"]

#: Metadata keys that may carry a node's URL, in order of preference.
URL_KEYS = ("url", "source_url", "link", "source")
#: Metadata keys that may carry a node's title, in order of preference.
TITLE_KEYS = ("title", "file_name", "document_title")
#: Metadata keys that may carry a node's publication date, in order of preference.
DATE_KEYS = ("published", "published_date", "date", "last_modified_date", "creation_date")
SNIPPET_CHARS = 300


def _first(metadata: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = metadata.get(key)
        if value not in (None, ""):
            return value
    return None


def node_to_hit(item: NodeWithScore, provider: str) -> Hit:
    """One retrieved node as a perplexed :class:`~perplexed.Hit`.

    - ``url``: the node's ``url`` / ``source_url`` / ``link`` / ``source`` metadata when it is a URL, else
      ``llamaindex://<provider>/<node_id>`` (a hit needs a URL: it is what citations and dedupe key on);
    - ``title``: ``title`` / ``file_name`` / ``document_title`` metadata;
    - ``content``: the node's text (without metadata); ``snippet``: its first 300 characters;
    - ``published``: ``published`` / ``published_date`` / ``date`` / ``last_modified_date`` /
      ``creation_date`` metadata when it parses as a date;
    - ``score``: the retriever's score; ``raw``: ``node_id`` and the node's metadata.
    """
    node = item.node
    metadata = dict(node.metadata or {})
    url = _first(metadata, URL_KEYS)
    if not (isinstance(url, str) and "://" in url):
        url = f"llamaindex://{provider}/{node.node_id}"
    text = node.get_content(metadata_mode=MetadataMode.NONE).strip()
    snippet = text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1].rstrip() + "…"
    title = _first(metadata, TITLE_KEYS)
    return Hit(
        url=url,
        title=str(title) if title is not None else "",
        snippet=snippet,
        content=text or None,
        published=parse_published(_first(metadata, DATE_KEYS)),
        score=item.score,
        provider=provider,
        raw={"node_id": node.node_id, "metadata": metadata},
    )


def _has_native_aretrieve(retriever: BaseRetriever) -> bool:
    """Whether the retriever implements ``_aretrieve`` (the default one runs ``_retrieve`` on the loop)."""
    return type(retriever)._aretrieve is not BaseRetriever._aretrieve


class RetrieverProvider(CallableProvider):
    """A perplexed chain member that asks a LlamaIndex retriever.

    Its async path awaits ``retriever.aretrieve`` when the retriever implements ``_aretrieve`` natively;
    a sync-only retriever (whose inherited ``aretrieve`` would block the event loop) runs ``retrieve`` in a
    worker thread instead. No nodes is an ``empty`` answer, so the chain moves on to the next provider
    (with the default ``fallback_on``). The retriever's own top-k decides how many nodes it returns; the
    chain then caps them at ``max_results``. Calls cost ``cost`` USD (default 0).
    """

    name = "llamaindex"
    url_schemes = frozenset({"llamaindex"})  # llamaindex://<name>/<node id> for nodes without a URL

    def __init__(
        self, retriever: BaseRetriever, *, name: str | None = None, cost: float | None = None,
        cache_key: str | None = None,
    ) -> None:
        if not isinstance(retriever, BaseRetriever):
            raise ConfigError(
                f"as_provider needs a LlamaIndex BaseRetriever, got {type(retriever).__name__}"
            )
        super().__init__(name=name, cost=cost, cache_key=cache_key)
        self.retriever = retriever

    @property
    def _cache_subject(self) -> object:
        return self.retriever  # cached answers belong to this retriever object, not to a name or a class

    def __repr__(self) -> str:
        return f"RetrieverProvider(name={self.label!r}, retriever={type(self.retriever).__name__})"

    __str__ = __repr__

    def _answer(self, nodes: list[NodeWithScore]) -> ProviderAnswer:
        return ProviderAnswer(hits=[node_to_hit(item, self.label) for item in nodes])

    def search(self, query: str, options: SearchOptions) -> ProviderAnswer:
        """Retrieve synchronously."""
        return self._answer(self.retriever.retrieve(query))

    async def asearch(self, query: str, options: SearchOptions) -> ProviderAnswer:
        """Retrieve without blocking the event loop."""
        if _has_native_aretrieve(self.retriever):
            nodes = await self.retriever.aretrieve(query)
        else:
            nodes = await asyncio.to_thread(self.retriever.retrieve, query)
        return self._answer(nodes)


def as_provider(
    retriever: BaseRetriever, name: str | None = None, *, cost: float | None = None, cache_key: str | None = None
) -> RetrieverProvider:
    """Turn any LlamaIndex retriever into a perplexed chain member.

    ``provider=[as_provider(index.as_retriever(), name="docs"), "searxng", "perplexity"]`` searches your own
    documents first and goes to the web only when they come back empty. ``name`` labels the attempts
    (default ``"llamaindex"``); ``cost`` is the USD price per call (default 0). With ``cache_ttl_s``, its cached
    answers belong to this retriever object in this process (two retrievers never share them, whatever their
    names); ``cache_key`` shares them across processes instead: your promise that every retriever given that
    key answers alike. See :class:`RetrieverProvider` and :func:`node_to_hit`.
    """
    return RetrieverProvider(retriever, name=name, cost=cost, cache_key=cache_key)
