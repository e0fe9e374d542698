"""``PerplexedRetriever``: a LlamaIndex retriever over a perplexed search chain."""

from __future__ import annotations

from typing import Any

import perplexed
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.schema import NodeWithScore, QueryBundle
from perplexed import SearchOptions
from pydantic import SecretStr

from ._config import SearchConfig, with_settings
from ._nodes import result_to_nodes
from .events import dispatching, reporting

__all__ = ["PerplexedRetriever"]

dispatcher = get_dispatcher(__name__)


class PerplexedRetriever(BaseRetriever):
    """Retrieve web search hits through a perplexed provider chain, as scored LlamaIndex nodes.

    Takes the same options as :func:`perplexed.search`: ``provider`` (a name, a dict, a Provider, a function,
    or a list of them = a fallback chain; ``None`` = the default chain), ``max_results`` (alias
    ``similarity_top_k``), ``provider_timeout_ms``, ``deadline_ms``, ``fallback_on``, and any search option
    (``include_domains``, ``exclude_domains``, ``recency``, ``published_after``, ``published_before``,
    ``language``, ``country``, ``safe_search``, the chain members' own options). Options are validated
    here: an unknown one is a :class:`perplexed.InvalidRequest` naming the closest valid one.

    ``api_key=`` / ``base_url=`` configure the one provider ``provider`` names
    (``PerplexedRetriever("tavily", api_key="tvly-...")``); a single provider without a key (argument or
    environment) raises :class:`perplexed.ConfigError` here, naming the variable to set, and a chain warns
    once about the members that cannot run (the others run).

    Each hit becomes a ``NodeWithScore`` of a ``TextNode``:

    - ``id_`` is a UUID5 of the URL (stable across calls and providers);
    - ``text`` is the hit's content when the provider gave it, else its snippet;
    - ``metadata``: ``id`` (the 1-based number an answer's ``[n]`` uses), ``title``, ``url``, ``published``
      (ISO date or ``None``), ``score`` (the provider's own), ``provider``, and the bookkeeping keys
      ``answered_by``, ``cost`` (USD for the whole chain run) and ``attempts`` (one dict per provider
      attempt), which are listed in ``excluded_llm_metadata_keys`` and ``excluded_embed_metadata_keys``;
    - ``score``: the provider's score when it is in (0, 1]; scores outside that range are divided by the
      result's largest; no score gives ``1 / rank``.

    ``aretrieve`` awaits :func:`perplexed.asearch` (it never blocks the event loop). Both run inside
    LlamaIndex spans, and each provider attempt is dispatched as a
    :class:`~llama_index_perplexed.PerplexedAttemptEvent`. When no provider answers,
    :class:`perplexed.UpstreamError` (``reason="all_providers_failed"``, with ``attempts``) is raised; an
    answer that is empty everywhere is an empty list.
    """

    @with_settings
    def __init__(
        self,
        provider: Any = None,
        *,
        max_results: int | None = None,
        similarity_top_k: int | None = None,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **options: Any,
    ) -> None:
        self._config = SearchConfig(
            provider,
            max_results=max_results,
            similarity_top_k=similarity_top_k,
            api_key=api_key,
            base_url=base_url,
            owner="PerplexedRetriever",
            **options,
        )
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def __repr__(self) -> str:
        return f"PerplexedRetriever({self._config.describe()})"

    @property
    def provider(self) -> Any:
        """The provider spec searches go through."""
        return self._config.provider

    @property
    def max_results(self) -> int | None:
        """The maximum number of nodes per query (``None``: the core's default, 10). Settable."""
        return self._config.max_results

    @max_results.setter
    def max_results(self, value: int | None) -> None:
        SearchOptions.build(max_results=value)
        self._config.max_results = value

    @property
    def similarity_top_k(self) -> int | None:
        """LlamaIndex's name for :attr:`max_results` (settable too)."""
        return self._config.max_results

    @similarity_top_k.setter
    def similarity_top_k(self, value: int | None) -> None:
        self.max_results = value

    @property
    def search_kwargs(self) -> dict[str, Any]:
        """The keyword arguments every search is called with."""
        return self._config.search_kwargs()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with dispatching(), reporting("search") as report:
            result = perplexed.search(query_bundle.query_str, **self._config.search_kwargs())
            report(result)
        return result_to_nodes(result)

    @dispatcher.span
    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with dispatching(), reporting("search") as report:
            result = await perplexed.asearch(query_bundle.query_str, **self._config.search_kwargs())
            report(result)
        return result_to_nodes(result)
