"""The search options shared by the retriever, the query engine and the tool spec (validated up front)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perplexed import ChainOptions, InvalidRequest, SearchOptions
from perplexed._grounding import AGENT_PROVIDER, DEFAULT_MAX_SOURCE_CHARS
from perplexed._strategies import check_floor
from perplexed.providers import resolve

__all__ = ["SearchConfig"]


class SearchConfig:
    """The options of a perplexed search, validated by the core when a component is built.

    ``provider`` is any perplexed provider spec (name, dict, Provider, function, or a list = a chain; ``None``
    = the default chain; with ``answer_mode``, also ``"perplexity-agent"``, the Agent API searching by itself).
    ``similarity_top_k`` is LlamaIndex's name for ``max_results``. ``strategy``, ``hedge_after_ms``,
    ``merge_providers``, ``min_hits`` and ``accept`` are the chain's strategy and quality floor (see
    ``docs/strategies.md``). ``cache_ttl_s``, ``cache_single_flight`` and ``budget_usd`` are the chain's
    memory across calls (``docs/production.md``). Bad values raise
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
        strategy: str | None = None,
        hedge_after_ms: int | str | None = None,
        merge_providers: int | None = None,
        min_hits: int | None = None,
        accept: Callable[..., Any] | None = None,
        cache_ttl_s: float | None = None,
        cache_single_flight: bool | None = None,
        budget_usd: float | None = None,
        answer_mode: bool = False,
        **options: Any,
    ) -> None:
        if similarity_top_k is not None:
            if max_results is not None and max_results != similarity_top_k:
                raise InvalidRequest(
                    "max_results and similarity_top_k are the same option; pass one of them",
                    param="similarity_top_k",
                )
            max_results = similarity_top_k
        # strategies and the quality floor (docs/strategies.md)
        self.strategy_options = {
            "strategy": strategy, "hedge_after_ms": hedge_after_ms, "merge_providers": merge_providers,
            "min_hits": min_hits, "accept": accept,
        }
        # memory across calls: cache, single flight, per-call budget (docs/production.md)
        self.governance_options = {
            "cache_ttl_s": cache_ttl_s, "cache_single_flight": cache_single_flight, "budget_usd": budget_usd,
        }
        ChainOptions.build(provider_timeout_ms=provider_timeout_ms, deadline_ms=deadline_ms, fallback_on=fallback_on,
                           **self.strategy_options, **self.governance_options)
        check_floor(min_hits, SearchOptions.build(max_results=max_results, **options).max_results)
        agent_mode = answer_mode and isinstance(provider, str) and provider.strip().lower() == AGENT_PROVIDER
        if provider is not None and not agent_mode:
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
            **{k: v for k, v in self.strategy_options.items() if v is not None},
            **{k: v for k, v in self.governance_options.items() if v is not None},
            **self.options,
        }


#: The options of :func:`perplexed.answer` that are not search options.
ANSWER_OPTION_NAMES = (
    "preset",
    "effort",
    "model",
    "models",
    "instructions",
    "max_output_tokens",
    "reasoning",
    "agent_options",
    "max_source_chars",
    "on_empty",
    "strip_unmatched",
)


class AnswerConfig:
    """The Agent API side of :func:`perplexed.answer`: the clients and the answer options.

    ``client`` is a :class:`perplexed.agent.AgentClient` (used by the sync path, and its ``async_client`` by
    the async path); ``async_client`` an :class:`perplexed.agent.AsyncAgentClient` (used by the async path,
    and by the sync one when no ``client`` is given). With neither, one ``AgentClient`` is built from the
    settings (``PERPLEXITY_API_KEY``, ``PERPLEXITY_BASE_URL``; the key is read at the first call).
    ``options`` are :data:`ANSWER_OPTION_NAMES` (``None`` values are left to ``answer()``'s defaults, except
    ``max_source_chars=None``, which means no cap). They are checked by ``answer()`` when a query runs, before
    any search.
    """

    def __init__(
        self,
        client: Any = None,
        async_client: Any = None,
        *,
        max_source_chars: int | None = DEFAULT_MAX_SOURCE_CHARS,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - set(ANSWER_OPTION_NAMES))
        if unknown:  # pragma: no cover - callers split options by name first
            raise InvalidRequest(f"unknown answer option(s): {', '.join(unknown)}", param=unknown[0])
        if client is None and async_client is None:
            from perplexed.agent import AgentClient

            client = AgentClient()
        self.client = client
        self.async_client = async_client
        self.options = {k: v for k, v in options.items() if v is not None}
        self.options["max_source_chars"] = max_source_chars  # None is meaningful here: no cap

    def sync_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`perplexed.answer` / :func:`perplexed.stream_answer`."""
        return {"client": self.client if self.client is not None else self.async_client, **self.options}

    def async_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`perplexed.aanswer` / :func:`perplexed.astream_answer`."""
        return {"client": self.async_client if self.async_client is not None else self.client, **self.options}
