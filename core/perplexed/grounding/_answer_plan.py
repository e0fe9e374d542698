"""The answer plan: every check of :func:`perplexed.answer` before any call (mirrors ``chain.prepare``).

:func:`prepare_answer` validates the query, the grounding mode, the chain and search options, the Agent API
request and the client, and returns a frozen :class:`AnswerPlan`. ``answer``/``aanswer``/``stream_answer``/
``astream_answer`` run a plan (they build one from their arguments when given a query), and so do the
LangChain and LlamaIndex adapters and the CLI: the answer's arguments are spelled out once, here.

Whether a call is the ``perplexity-agent`` mode (the Agent API searches by itself) is decided in one place,
:meth:`AnswerPlan.is_agent_mode`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from perplexed._errors import ConfigError, InvalidRequest
from perplexed._models import Attempt
from perplexed.engine.chain import Search, prepare_with
from perplexed.grounding._grounding import (
    AGENT_PROVIDER,
    DEFAULT_MAX_SOURCE_CHARS,
    search_off,
    web_search_tool,
)
from perplexed.operations._search import FetchRequest, fetch_plan
from perplexed.policy._keywords import check_search_options
from perplexed.policy._options import ChainOptions, SearchOptions, clean_query, split_options
from perplexed.policy._settings import default_chain

if TYPE_CHECKING:  # the Agent API client is imported when a plan is made, not with `import perplexed.integration`
    from perplexed.agent import AgentClient, AsyncAgentClient

__all__ = ["DEFAULT_PRESET", "AnswerPlan", "prepare_answer"]

#: What runs the request when the caller names no ``preset``, ``effort``, ``model`` or ``models``.
DEFAULT_PRESET = "fast"

OnEmpty = Literal["raise", "answer"]
AttemptCallback = Callable[[Attempt], None]

# Request fields answer() sets itself: a caller cannot override them through agent_options.
_RESERVED = frozenset({"input", "stream", "background"})
_SELECTORS = ("preset", "effort", "model", "models", "profile")

#: The keyword arguments of :func:`prepare_answer` (and so of ``answer()``) that are not search options.
ANSWER_ARGUMENTS = (
    "client",
    "async_client",
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
    "verify",
    "on_attempt",
    "fetch_content",
    "fetch_provider",
)


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: it holds clients and callbacks
class AnswerPlan:
    """A validated grounded answer, ready to run: ``perplexed.answer(plan)`` (or ``aanswer``,
    ``stream_answer``, ``astream_answer``). Built by :func:`prepare_answer`; running it twice asks twice.

    ``search`` is the chain's prepared :class:`~perplexed.engine.chain.Search` (``None`` in ``perplexity-agent``
    mode, :attr:`agent_mode`); ``params`` the Agent API request fields (``input`` and ``instructions`` are
    added when the sources are known); ``deadline_ms`` the budget of the whole call when the caller gave
    one (search, then the Agent API call capped by what is left), else ``None`` (the chain's 30 s, then
    the preset-sized Agent API timeout).
    """

    #: The keyword arguments of :func:`prepare_answer` that are not search options (for the adapters).
    ARGUMENTS: ClassVar[tuple[str, ...]] = ANSWER_ARGUMENTS

    query: str
    search: Search | None
    params: Mapping[str, Any]
    instructions: str | None = None
    max_source_chars: int | None = DEFAULT_MAX_SOURCE_CHARS
    on_empty: OnEmpty = "raise"
    strip_unmatched: bool = False
    verify: bool = False
    """Check the answer's citations (:func:`perplexed.verify`) and attach it as ``Answer.verification``."""
    deadline_ms: int | None = None
    fetch: FetchRequest | None = None
    """``fetch_content``: (how many top hits, the fetch chain, fetch options); None when not fetching."""
    on_attempt: AttemptCallback | None = field(default=None, repr=False)
    client: Any = field(default=None, repr=False)
    """The Agent API client of the sync entry points (an AsyncAgentClient, or a duck-typed one)."""
    async_client: Any = field(default=None, repr=False)
    """The Agent API client of the async entry points."""

    @property
    def agent_mode(self) -> bool:
        """Whether the Agent API searches by itself (``provider="perplexity-agent"``)."""
        return self.search is None

    @property
    def providers(self) -> list[str]:
        """Who will be asked for sources: the chain's labels, or ``["perplexity-agent"]``."""
        return [AGENT_PROVIDER] if self.search is None else [p.label for p in self.search.providers]

    @property
    def label(self) -> str:
        """What answers: the model, effort or preset named in the request."""
        p = self.params
        return str(p.get("model") or p.get("effort") or p.get("preset") or (p.get("models") or [""])[0])

    def __repr__(self) -> str:
        request = {k: v for k, v in self.params.items() if k != "sent_by"}
        return (
            f"AnswerPlan(query={self.query!r}, providers={self.providers!r}, request={request!r}, "
            f"deadline_ms={self.deadline_ms!r}, on_empty={self.on_empty!r})"
        )

    def with_callback(self, on_attempt: AttemptCallback | None) -> AnswerPlan:
        """The same plan with another ``on_attempt`` callback (the adapters' event dispatch)."""
        return replace(self, on_attempt=on_attempt)

    @staticmethod
    def is_agent_mode(provider: Any) -> bool:
        """Whether ``provider`` selects the ``perplexity-agent`` mode: ``"perplexity-agent"`` alone (any case,
        as a string or a one-item list). ``None`` reads the default chain. Raises
        :class:`~perplexed.ConfigError` when it is part of a chain."""
        spec = provider
        if spec is None:
            spec = default_chain()
        if isinstance(spec, str):
            names = [s.strip().lower() for s in spec.split(",") if s.strip()]
        elif isinstance(spec, list | tuple):
            names = [s.strip().lower() if isinstance(s, str) else "" for s in spec]
        else:
            return False
        if AGENT_PROVIDER not in names:
            return False
        if len(names) > 1:
            raise ConfigError(
                f"{AGENT_PROVIDER!r} cannot be part of a chain: it is a grounding mode of answer() in which the "
                "Agent API searches by itself; pass provider='perplexity-agent' alone"
            )
        return True


def prepare_answer(
    query: object,
    provider: Any = None,
    *,
    client: AsyncAgentClient | AgentClient | None = None,
    async_client: AsyncAgentClient | None = None,
    preset: str | None = None,
    effort: str | None = None,
    model: str | None = None,
    models: Sequence[str] | None = None,
    instructions: str | None = None,
    max_output_tokens: int | None = None,
    reasoning: Any = None,
    agent_options: Mapping[str, Any] | None = None,
    max_source_chars: int | None = DEFAULT_MAX_SOURCE_CHARS,
    on_empty: OnEmpty = "raise",
    strip_unmatched: bool = False,
    verify: bool = False,
    on_attempt: AttemptCallback | None = None,
    fetch_content: Any = None,
    fetch_provider: Any = None,
    **options: Any,
) -> AnswerPlan:
    """Validate everything :func:`perplexed.answer` needs, before any call, and return the plan.

    ``provider`` is a provider spec or chain as for :func:`perplexed.search` (default: the settings chain),
    or ``"perplexity-agent"`` to let the Agent API search by itself. ``**options`` are the chain and search
    options of :func:`perplexed.search` (``provider_timeout_ms``, ``deadline_ms``, ``fallback_on``,
    ``max_results``, ``include_domains``, ``recency``, ... and the chain members' own options; an unknown
    name is an :class:`~perplexed.InvalidRequest` naming the closest valid one). ``deadline_ms``, when
    given, is the budget of the whole answer: search, then the Agent API call with what is left.

    The Agent API client is ``client`` (an :class:`~perplexed.agent.AgentClient` or
    :class:`~perplexed.agent.AsyncAgentClient`; ``async_client`` is the one the async entry points prefer),
    else one built from ``PERPLEXITY_API_KEY`` / ``PERPLEXITY_BASE_URL`` (a missing key fails now, before
    the search is paid for). ``preset``/``effort`` (default ``preset="fast"``), ``model``/``models``,
    ``max_output_tokens``, ``reasoning`` and the request fields in ``agent_options`` (e.g.
    ``{"temperature": 0}``) go to the Agent API; ``instructions`` replaces the citation instruction.
    ``max_source_chars``, ``on_empty``, ``strip_unmatched``, ``verify`` and ``on_attempt``: see
    :func:`perplexed.answer`. ``fetch_content=N`` (and ``fetch_provider``, fetch options such as
    ``allow_private``) grounds the answer on the top N hits' page content instead of their snippets.

    Raises :class:`~perplexed.InvalidRequest` or :class:`~perplexed.ConfigError` naming the argument.
    """
    cleaned = clean_query(query)
    _check_grounding(on_empty, max_source_chars, instructions)
    if on_attempt is not None and not callable(on_attempt):
        raise InvalidRequest("on_attempt must be a callable taking an Attempt", param="on_attempt")
    if not isinstance(strip_unmatched, bool):
        raise InvalidRequest(f"strip_unmatched must be True or False, got {strip_unmatched!r}", param="strip_unmatched")
    if not isinstance(verify, bool):
        raise InvalidRequest(f"verify must be True or False, got {verify!r}", param="verify")
    fetch = fetch_plan(fetch_content, fetch_provider, options)
    if fetch is not None and AnswerPlan.is_agent_mode(provider):
        raise InvalidRequest("fetch_content needs a search chain (the Agent API searches by itself in "
                             f"{AGENT_PROVIDER!r} mode)", param="fetch_content")
    search, search_options = _search_plan(cleaned, provider, options)
    params = _agent_params(
        {
            "preset": preset,
            "effort": effort,
            "model": model,
            "models": _models(models),
            "max_output_tokens": max_output_tokens,
            "reasoning": reasoning,
        },
        agent_options,
    )
    grounding = _tool_policy(params, search_options if search is None else None)
    params.update(grounding)
    params["sent_by"] = _sent_by(params, grounding, defaulted="preset" not in _given(preset, agent_options))
    # Validate the request now, so a bad agent option fails before the search is paid for.
    from perplexed.agent._request import build_request

    build_request(None, {**params, "input": cleaned, "instructions": instructions or ""})
    sync_client, async_only = _clients(client, async_client)
    deadline = options.get("deadline_ms")
    deadline_ms = None if deadline is None else ChainOptions.build(deadline_ms=deadline).deadline_ms
    return AnswerPlan(
        query=cleaned,
        search=search,
        params=MappingProxyType(params),
        instructions=instructions,
        max_source_chars=max_source_chars,
        on_empty=on_empty,
        strip_unmatched=bool(strip_unmatched),
        verify=verify,
        deadline_ms=deadline_ms,
        fetch=fetch,
        on_attempt=on_attempt,
        client=sync_client,
        async_client=async_only,
    )


# --- the seams of prepare_answer -------------------------------------------------------------------------


def _check_grounding(on_empty: object, max_source_chars: object, instructions: object) -> None:
    """The grounding arguments: ``on_empty``, ``max_source_chars``, ``instructions``."""
    if on_empty not in ("raise", "answer"):
        raise InvalidRequest(f"on_empty must be 'raise' or 'answer', got {on_empty!r}", param="on_empty")
    if max_source_chars is not None and (
        isinstance(max_source_chars, bool) or not isinstance(max_source_chars, int) or max_source_chars < 0
    ):
        raise InvalidRequest(
            f"max_source_chars must be a non-negative integer or None, got {max_source_chars!r}",
            param="max_source_chars",
        )
    if instructions is not None and not isinstance(instructions, str):
        raise InvalidRequest("instructions must be a string", param="instructions")


def _search_plan(query: str, provider: Any, options: dict[str, Any]) -> tuple[Search | None, SearchOptions]:
    """The prepared chain search, or ``None`` in ``perplexity-agent`` mode (options still validated)."""
    if not AnswerPlan.is_agent_mode(provider):
        prepared = prepare_with(query, provider, options, also=(*ANSWER_ARGUMENTS, "provider"))
        return prepared, prepared.options
    chain_kw, search_kw = split_options(dict(options))
    ChainOptions.build(**chain_kw)  # validated; a chain does not run in this mode
    search_options = SearchOptions.build(**search_kw)
    check_search_options(search_options, [], also=(*ANSWER_ARGUMENTS, "provider"), mode=AGENT_PROVIDER)
    return None, search_options


def _models(models: object) -> list[str] | None:
    if models is None:
        return None
    if isinstance(models, str) or not isinstance(models, Sequence):
        raise InvalidRequest(
            f"models must be a list of model ids (a fallback list, at most 5), got {models!r}", param="models"
        )
    return list(models)


def _agent_params(named: Mapping[str, Any], agent_options: object) -> dict[str, Any]:
    """The Agent API request fields: the named ones, then ``agent_options`` (no conflicts), then the
    default preset when nothing selects a model."""
    if agent_options is not None and not isinstance(agent_options, Mapping):
        raise InvalidRequest(
            f"agent_options must be a dict of Agent API request fields (e.g. {{'temperature': 0}}), "
            f"got {agent_options!r}",
            param="agent_options",
        )
    params: dict[str, Any] = {k: v for k, v in named.items() if v is not None}
    for key, value in dict(agent_options or {}).items():
        if key in _RESERVED or key == "instructions":
            hint = "pass instructions= directly" if key == "instructions" else "answer() sets it"
            raise InvalidRequest(f"agent_options cannot set {key!r} ({hint})", param=key)
        if key in params and value is not None and params[key] != value:
            raise InvalidRequest(f"{key} given both as an argument and in agent_options", param=key)
        if value is not None:
            params[key] = value
    if not any(params.get(k) for k in _SELECTORS):
        params["preset"] = DEFAULT_PRESET
    return params


def _given(preset: object, agent_options: object) -> set[str]:
    """The request selectors the caller named (so a default one can be told apart)."""
    named = {"preset"} if preset is not None else set()
    if isinstance(agent_options, Mapping) and agent_options.get("preset") is not None:
        named.add("preset")
    return named


def _sent_by(params: Mapping[str, Any], grounding: Mapping[str, Any], *, defaulted: bool) -> dict[str, str]:
    """Who sent the request fields the caller did not (``AgentRequest.sent_by``): a 400 naming one of them
    says which perplexed option is behind it."""
    notes = {
        "input": "perplexed.answer(): the numbered sources and the question",
        "instructions": "perplexed.answer(): the citation instruction (instructions= replaces it)",
    }
    if defaulted and params.get("preset") == DEFAULT_PRESET:
        notes["preset"] = (
            f"perplexed.answer(): preset={DEFAULT_PRESET!r}, the default when no preset, effort, model or "
            "models is named"
        )
    for field_name, value in grounding.items():
        if field_name == "max_tool_calls":
            notes[field_name] = (
                f"perplexed.answer(): grounding with a preset sends max_tool_calls={value} (the model answers "
                "from the chain's sources and must not search)"
            )
        elif field_name == "tools":
            notes[field_name] = (
                f"perplexed.answer(): provider={AGENT_PROVIDER!r} sends the web_search tool with the search filters"
            )
    return notes


def _tool_type(tool: Any) -> Any:
    return tool.get("type") if isinstance(tool, Mapping) else getattr(tool, "type", None)


def _tool_policy(params: Mapping[str, Any], agent_search: SearchOptions | None) -> dict[str, Any]:
    """What to add to the request about tools: in ``perplexity-agent`` mode (``agent_search`` given) the
    ``web_search`` tool carrying the search filters (unless the caller gave one); in chain mode what keeps
    the model from searching (:func:`~perplexed.grounding._grounding.search_off`)."""
    if agent_search is None:
        return search_off(params)
    tools = list(params.get("tools") or ())
    mine = [t for t in tools if _tool_type(t) == "web_search"]
    own = [t for t in tools if _tool_type(t) != "web_search"]
    return {"tools": [*(mine or [web_search_tool(agent_search)]), *own]}


def _clients(client: Any, async_client: Any) -> tuple[Any, Any]:
    """(the client of the sync entry points, the client of the async ones), both async-capable."""
    first = _async_client(client) if client is not None else None
    second = _async_client(async_client) if async_client is not None else None
    if first is None and second is None:
        first = second = _default_client()
    from perplexed.agent import AsyncAgentClient

    for each in {id(c): c for c in (first, second) if isinstance(c, AsyncAgentClient)}.values():
        # a client built without api_key= reads $PERPLEXITY_API_KEY: a missing key fails now, before the
        # search is paid for (not when the Agent API is called after it)
        each._key()
    return (first if first is not None else second), (second if second is not None else first)


def _default_client() -> AsyncAgentClient:
    # From the settings; the key is checked now so a missing one fails before the search is paid for (and
    # before the client is imported: an MCP server without a key only learns that answer is not offered).
    if not os.environ.get(_ENV_API_KEY, "").strip():
        raise ConfigError(
            f"no Perplexity API key: set the {_ENV_API_KEY} environment variable or pass client="
            "AgentClient(api_key=...) (AsyncAgentClient for the async API)"
        )
    from perplexed.agent import AsyncAgentClient

    return AsyncAgentClient()  # PERPLEXITY_API_KEY / PERPLEXITY_BASE_URL


#: ``perplexed.agent._client.ENV_API_KEY`` (tests/test_cold_start.py checks they agree)
_ENV_API_KEY = "PERPLEXITY_API_KEY"


def _async_client(client: Any) -> Any:
    from perplexed.agent import AgentClient, AsyncAgentClient

    if isinstance(client, AgentClient):
        return client.async_client
    if isinstance(client, AsyncAgentClient):
        return client
    inner = getattr(client, "async_client", None)
    if inner is not None and callable(getattr(inner, "create", None)):
        return inner
    if callable(getattr(client, "create", None)) and callable(getattr(client, "stream", None)):
        return client  # duck-typed (a test double, an adapter's wrapper)
    raise InvalidRequest(
        f"client must be a perplexed.agent.AgentClient or AsyncAgentClient, not {type(client).__name__}",
        param="client",
    )
