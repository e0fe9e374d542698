"""The search options shared by the retriever, the query engine and the tool spec (validated up front)."""

from __future__ import annotations

from typing import Any

from perplexed import ChainOptions, InvalidRequest, SearchOptions
from perplexed.providers import resolve

__all__ = ["SearchConfig"]


class SearchConfig:
    """The options of a perplexed search, validated by the core when a component is built.

    ``provider`` is any perplexed provider spec (name, dict, Provider, function, or a list = a chain; ``None``
    = the default chain). ``similarity_top_k`` is LlamaIndex's name for ``max_results``. Bad values raise
    :class:`perplexed.InvalidRequest` / :class:`perplexed.ConfigError` here, not at the first query.
    """

    def __init__(
        self,
        provider: Any = None,
        *,
        max_results: int | None = None,
        similarity_top_k: int | None = None,
        provider_timeout_ms: int | None = None,
        deadline_ms: int | None = None,
        fallback_on: Any = None,
        **options: Any,
    ) -> None:
        if similarity_top_k is not None:
            if max_results is not None and max_results != similarity_top_k:
                raise InvalidRequest(
                    "max_results and similarity_top_k are the same option; pass one of them",
                    param="similarity_top_k",
                )
            max_results = similarity_top_k
        ChainOptions.build(provider_timeout_ms=provider_timeout_ms, deadline_ms=deadline_ms, fallback_on=fallback_on)
        SearchOptions.build(max_results=max_results, **options)
        if provider is not None:
            resolve(provider)
        self.provider = provider
        self.max_results = max_results
        self.provider_timeout_ms = provider_timeout_ms
        self.deadline_ms = deadline_ms
        self.fallback_on = fallback_on
        self.options = dict(options)

    def search_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`perplexed.search` / :func:`perplexed.asearch` (``None`` = default)."""
        return {
            "provider": self.provider,
            "max_results": self.max_results,
            "provider_timeout_ms": self.provider_timeout_ms,
            "deadline_ms": self.deadline_ms,
            "fallback_on": self.fallback_on,
            **self.options,
        }
