"""The search options shared by the retriever, the query engine and the tool spec (validated up front), and
the answer options of the query engine and the tool spec (handed to :func:`perplexed.prepare_answer`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

# the search engine, the answer plan and the provider registry load when a component is built (issue 35: cold start)
import perplexed.integration
from perplexed import ChainOptions, ConfigError, InvalidRequest, SearchOptions
from perplexed.catalogue import OPTIONS, option
from pydantic import SecretStr

if TYPE_CHECKING:
    from perplexed.integration import AnswerPlan

__all__ = ["FETCH_SETTINGS", "SETTINGS", "AnswerConfig", "SearchConfig", "answer_configs", "named_settings", "split_answer_options",
           "with_fetch_settings", "with_settings"]


#: The chain and search options the components take as named, typed keywords (``max_results`` aside): the
#: core's option catalogue, so a new option cannot be forgotten here.
SETTINGS = (*(o.name for o in OPTIONS if o.group == "chain"),
            *(o.name for o in OPTIONS if o.group == "search" and o.name != "max_results"))

F = TypeVar("F", bound=Callable[..., Any])


def named_settings(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The chain and search options among a constructor's ``arguments`` (its ``locals()``, or its ``**options``)
    that were given."""
    return {name: arguments[name] for name in SETTINGS if arguments.get(name) is not None}


def with_settings(init: F, names: tuple[str, ...] = SETTINGS) -> F:
    """A component's ``__init__`` with the catalogue's options ``names`` (default: the chain and search options)
    as named, typed keyword parameters (``inspect.signature`` and ``typing.get_type_hints`` show them:
    ``deadline_ms: int | None = None``, ...), each declared once in the core (``perplexed.catalogue.OPTIONS``).
    The function itself takes them in its ``**options``."""
    signature = inspect.signature(init)
    params = list(signature.parameters.values())
    rest = params.pop() if params and params[-1].kind is inspect.Parameter.VAR_KEYWORD else None
    taken = {p.name for p in params}
    added = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=o.annotation | None)
             for name in names if name not in taken for o in [option(name)]]
    init.__signature__ = signature.replace(parameters=[*params, *added, *([rest] if rest else [])])  # type: ignore[attr-defined]
    init.__annotations__ = {**init.__annotations__, **{p.name: p.annotation for p in added}}
    return init


#: The options of a fetch as the reader takes them: the fetch options, and how its chain runs.
FETCH_SETTINGS = (*(o.name for o in OPTIONS if o.group == "fetch"), *(o.name for o in OPTIONS if o.fetch))


def with_fetch_settings(init: F) -> F:
    """:func:`with_settings` for a fetching component: the fetch options and the fetch chain's."""
    return with_settings(init, FETCH_SETTINGS)


class SearchConfig:
    """The options of a perplexed search, validated by the core when a component is built.

    ``provider`` is any perplexed provider spec (name, dict, Provider, function, or a list = a chain; ``None``
    = the default chain; with ``answer_mode``, also ``"perplexity-agent"``, the Agent API searching by itself).
    ``similarity_top_k`` is LlamaIndex's name for ``max_results``. The chain options (``provider_timeout_ms``,
    ``deadline_ms``, ``fallback_on``, and the strategy and quality floor: ``strategy``, ``hedge_after_ms``,
    ``merge_providers``, ``min_hits``, ``accept``, see ``docs/strategies.md``; the memory across calls:
    ``cache_ttl_s``, ``cache_single_flight``, ``budget_usd``, see ``docs/production.md``) and the search options
    are keywords. Bad values raise :class:`perplexed.InvalidRequest` / :class:`perplexed.ConfigError` here, not at
    the first query; an unknown option names the closest valid one.

    ``api_key`` / ``base_url`` configure the one provider ``provider`` names (a missing key fails here, naming
    the variable to set; a chain warns once about the members that cannot run). In the ``perplexity-agent``
    mode the Agent API is what searches: they are kept in :attr:`agent_credentials` for its client.
    ``owner`` names the component in those messages.
    """

    def __init__(
        self,
        provider: Any = None,
        *,
        max_results: int | None = None,
        similarity_top_k: int | None = None,
        answer_mode: bool = False,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        owner: str = "perplexed",
        **options: Any,
    ) -> None:
        if similarity_top_k is not None:
            if max_results is not None and max_results != similarity_top_k:
                raise InvalidRequest(
                    "max_results and similarity_top_k are the same option; pass one of them",
                    param="similarity_top_k",
                )
            max_results = similarity_top_k
        options = {k: v for k, v in options.items() if v is not None}
        from perplexed.engine import chain
        from perplexed.integration import AnswerPlan
        from perplexed.providers import with_credentials

        agent_mode = answer_mode and AnswerPlan.is_agent_mode(provider)
        if agent_mode:
            chain_kw = {k: v for k, v in options.items() if k in ChainOptions.model_fields}
            ChainOptions.build(**chain_kw)  # no chain runs; prepare_answer() checks the rest per query
            SearchOptions.build(max_results=max_results, **{k: v for k, v in options.items() if k not in chain_kw})
        elif provider is not None or options or max_results is not None:
            also = ("similarity_top_k", "api_key", "base_url", *(AnswerPlan.ARGUMENTS if answer_mode else ()))
            chain.check_options(provider, suggest=also, max_results=max_results, **options)
        self.agent_credentials: dict[str, Any] = {}
        if agent_mode:
            self.agent_credentials = {k: v for k, v in (("api_key", api_key), ("base_url", base_url)) if v is not None}
        elif provider is not None or api_key is not None or base_url is not None:  # options first, then keys
            provider = with_credentials(provider, api_key=api_key, base_url=base_url, owner=owner)
        self.provider = provider
        self.max_results = max_results
        self.options = options

    def search_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`perplexed.search` / :func:`perplexed.asearch` (``None`` = default)."""
        return {"provider": self.provider, "max_results": self.max_results, **self.options}

    def describe(self) -> str:
        """``provider=..., max_results=...`` for the components' reprs (no credential is shown)."""
        from perplexed.providers import describe

        parts = [f"provider={describe(self.provider)!r}"]
        if self.max_results is not None:
            parts.append(f"max_results={self.max_results}")
        parts += [f"{k}={v!r}" for k, v in self.options.items() if k != "provider"]
        return ", ".join(parts)


def split_answer_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(answer options of :func:`perplexed.prepare_answer`, the search options)."""
    answer = {k: v for k, v in options.items() if k in perplexed.integration.AnswerPlan.ARGUMENTS}
    return answer, {k: v for k, v in options.items() if k not in answer}


class AnswerConfig:
    """The Agent API side of :func:`perplexed.answer`: the clients and the answer options.

    ``api_key`` / ``base_url`` build the client when none is given (the ``perplexity-agent`` mode, where the
    Agent API is what searches: see :attr:`SearchConfig.agent_credentials`).

    ``client`` is a :class:`perplexed.agent.AgentClient` (used by the sync path, and its ``async_client`` by
    the async path); ``async_client`` an :class:`perplexed.agent.AsyncAgentClient` (used by the async path,
    and by the sync one when no ``client`` is given). With neither, one ``AgentClient`` is built from the
    settings (``PERPLEXITY_API_KEY``, ``PERPLEXITY_BASE_URL``; the key is read at the first call).
    ``options`` are the other answer arguments of :func:`perplexed.prepare_answer` (``preset``, ``model``,
    ``max_source_chars``, ...); they are checked by ``prepare_answer()`` when a query runs, before any search.
    """

    def __init__(
        self,
        client: Any = None,
        async_client: Any = None,
        *,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - set(perplexed.integration.AnswerPlan.ARGUMENTS))
        if unknown:  # pragma: no cover - callers split options by name first
            raise InvalidRequest(f"unknown answer option(s): {', '.join(unknown)}", param=unknown[0])
        if client is None and async_client is None:
            from perplexed.agent import AgentClient

            client = AgentClient(api_key=api_key, base_url=base_url)
        elif api_key is not None or base_url is not None:
            raise InvalidRequest(
                "api_key/base_url with provider='perplexity-agent' build the Agent API client: pass them to "
                "the client you give instead (AgentClient(api_key=..., base_url=...))",
                param="api_key" if api_key is not None else "base_url",
            )
        self.client = client
        self.async_client = async_client
        self.options = dict(options)

    def plan(self, query: str, search: SearchConfig, *, prefer_async: bool) -> AnswerPlan:
        """The :class:`perplexed.AnswerPlan` of one query."""
        first, second = (self.async_client, self.client) if prefer_async else (self.client, self.async_client)
        client = first if first is not None else second
        return perplexed.integration.prepare_answer(query, **search.search_kwargs(), client=client, **self.options)

    def describe(self) -> str:
        """The answer options for the components' reprs."""
        return ", ".join(f"{k}={v!r}" for k, v in self.options.items() if k != "on_attempt")


def answer_configs(
    owner: str, provider: Any, settings: Mapping[str, Any], options: Mapping[str, Any]
) -> tuple[SearchConfig, AnswerConfig]:
    """The search and answer configurations of an answering component (the query engine, the tool spec):
    ``settings`` are its named keywords (``max_results``, ``api_key``, the chain and search options),
    ``options`` the rest (answer options, the chain members' own options)."""
    answer_options, search_options = split_answer_options(options)
    try:
        search = SearchConfig(provider, answer_mode=True, owner=owner, **settings, **search_options)
    except ConfigError as exc:
        if settings.get("api_key") is None:
            raise
        raise ConfigError(
            f"{exc}. api_key= here is the search provider's key; the Agent API that answers reads "
            "PERPLEXITY_API_KEY, or pass client=AgentClient(api_key=...)"
        ) from None
    return search, AnswerConfig(**search.agent_credentials, **answer_options)
