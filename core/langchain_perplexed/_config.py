"""The search settings shared by the retrievers and the tools, and how they become core arguments.

Everything here is configuration: validation is the core's (``SearchOptions.build``, ``ChainOptions.build``,
``providers.resolve``), run once at construction so a bad option fails when the component is built, not on
its first query. Secrets in a provider spec (``api_key``) are kept as :class:`~pydantic.SecretStr` and never
shown by ``repr``/``str``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from perplexed import ChainOptions, InvalidRequest, SearchOptions
from perplexed.catalogue import OPTIONS, option
from perplexed.policy._keywords import check_names
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    create_model,
    field_serializer,
    field_validator,
    model_validator,
)

__all__ = ["KnownNames", "ProviderCredentials", "SearchConfig", "protect_secrets", "redact_spec"]

# The core's option catalogue (so a new chain or search option cannot be forgotten here; each is a field).
CHAIN_FIELDS = tuple(o.name for o in OPTIONS if o.group == "chain")
SEARCH_FIELDS = tuple(o.name for o in OPTIONS if o.group == "search" and o.name != "max_results")
# Keys of a provider spec whose values are credentials (masked in repr; api_key becomes a SecretStr).
_SECRET_KEY = re.compile(r"(?i)(api[_-]?key|token|secret|password|authorization|credential)")
_MASK = "**********"


def protect_secrets(spec: Any) -> Any:
    """Copy a provider spec with every ``api_key`` string wrapped in a :class:`SecretStr`."""
    if isinstance(spec, Mapping):
        out: dict[Any, Any] = {}
        for key, value in spec.items():
            if key == "api_key" and isinstance(value, str):
                out[key] = SecretStr(value)
            else:
                out[key] = protect_secrets(value)
        return out
    if isinstance(spec, list | tuple):
        return [protect_secrets(item) for item in spec]
    return spec


def redact_spec(spec: Any, *, as_json: bool = False) -> Any:
    """A provider spec safe to show: credential-like values are replaced by ``**********``.

    With ``as_json`` every leaf is JSON-friendly too (a Provider or function becomes its repr).
    """
    if isinstance(spec, Mapping):
        return {
            str(key) if as_json else key: (
                _MASK if value is not None and _SECRET_KEY.search(str(key)) else redact_spec(value, as_json=as_json)
            )
            for key, value in spec.items()
        }
    if isinstance(spec, list | tuple):
        return [redact_spec(item, as_json=as_json) for item in spec]
    if isinstance(spec, SecretStr):
        return _MASK
    if as_json and not (spec is None or isinstance(spec, str | int | float | bool)):
        return repr(spec)  # Provider reprs show "api_key=set", never the key
    return spec


def _field_names(model: type[BaseModel]) -> list[str]:
    """The keywords a model's constructor takes: its field names and their aliases."""
    names: list[str] = []
    for name, info in model.model_fields.items():
        names.append(name)
        for alias in (info.alias, info.validation_alias):
            if isinstance(alias, str):
                names.append(alias)
            elif isinstance(alias, AliasChoices):
                names += [choice for choice in alias.choices if isinstance(choice, str)]
    return names


class KnownNames(BaseModel):
    """A mixin of every LangChain component: a misspelt constructor keyword names the closest field
    (``topk``: did you mean 'k'?), raised as a ValueError, so pydantic reports it as its ValidationError, as
    for any other bad field (rather than pydantic's bare "Extra inputs are not permitted").

    Every component's validator is built on first use (``defer_build``, inherited), not when
    ``langchain_perplexed`` is imported: half of the import's time went to building the schemas of classes an
    application may never instantiate (issue 35: cold start)."""

    model_config = ConfigDict(defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _known_names(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            check_names([str(name) for name in data], _field_names(cls), what="option")
        return data


def _option_field(name: str) -> tuple[Any, Any]:
    """The field of a chain or search option: its catalogue type (or ``None``: the core's default), its help."""
    declared = option(name)
    default = declared.default if not isinstance(declared.default, tuple) else list(declared.default)
    return (declared.annotation | None, Field(None, description=f"{declared.help[:1].upper()}{declared.help[1:]} "
                                               f"(core default: {default!r})."))


#: The provider spec and every chain and search option as fields, generated from the core's option catalogue
#: (``perplexed.catalogue.OPTIONS``: each option declared once, with its type and help).
_OptionFields: type[KnownNames] = create_model(  # type: ignore[call-overload]
    "_OptionFields",
    __base__=KnownNames,
    __module__=__name__,
    provider=(Any, Field(None, description=(
        "A provider name ('searxng'), a spec dict ({'name': 'tavily', 'api_key': ...}), a perplexed Provider, a "
        "function, or a list of these (a fallback chain). None uses the default chain (PERPLEXED_PROVIDER, else "
        "local,searxng)."))),
    **{name: _option_field(name) for name in (*CHAIN_FIELDS, *SEARCH_FIELDS)},
)


class SearchConfig(_OptionFields):
    """Provider chain, chain options and search options, as fields (a mixin of the LangChain components).

    Every option is handed to :func:`perplexed.search` as is; ``None`` means "the core's default". An unknown
    keyword is an error (a misspelt option must not be dropped silently).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    if TYPE_CHECKING:  # generated from the option catalogue (_OptionFields); declared for the type checker only
        provider: Any = None
        include_domains: list[str] | None = None
        exclude_domains: list[str] | None = None

    search_kwargs: dict[str, Any] | None = None
    """Provider-specific search options passed through to every provider (e.g. SearXNG ``engines``)."""

    flat_metadata: bool = False
    """Keep only scalar metadata values (lists and dicts become one compact JSON string, ``None`` values
    are dropped), for vector stores that reject nested metadata."""

    # Whether provider="perplexity-agent" (the Agent API searching by itself) is a valid choice: the answer
    # components say yes.
    _grounding_modes: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _count_in_search_kwargs(cls, data: Any) -> Any:
        # LangChain's vector-store idiom search_kwargs={"k": 1} (or max_results) is the component's count
        extra = data.get("search_kwargs") if isinstance(data, dict) else None
        if not isinstance(extra, Mapping) or not ({"k", "max_results"} & set(extra)):
            return data
        extra = dict(extra)
        counts = [extra.pop(name) for name in ("k", "max_results") if name in extra]
        named = [name for name in ("k", "max_results") if data.get(name) is not None]
        if any(value != counts[0] for value in [*counts, *(data[name] for name in named)]):
            raise InvalidRequest(
                "the number of results is given twice with different values (k/max_results and "
                "search_kwargs); pass it once",
                param="k",
            )
        return {**data, "search_kwargs": extra, (named[0] if named else "k"): counts[0]}

    @field_validator("provider", mode="before")
    @classmethod
    def _protect_provider(cls, value: Any) -> Any:
        return protect_secrets(value)

    @field_serializer("provider", when_used="json")
    def _serialize_provider(self, value: Any) -> Any:
        return redact_spec(value, as_json=True)

    @field_serializer("accept", when_used="json")
    def _serialize_accept(self, value: Any) -> Any:
        return None if value is None else repr(value)

    @model_validator(mode="after")
    def _validate_with_core(self) -> SearchConfig:
        # The core's own validation, run now: a typo fails at construction, not at the first query.
        # the search engine (and the answer plan) are imported now, when a component is built, not with
        # `import langchain_perplexed` (issue 35: cold start)
        from perplexed.engine import chain
        from perplexed.integration import AnswerPlan

        chain_options = {name: getattr(self, name) for name in CHAIN_FIELDS}
        if self._grounding_modes and AnswerPlan.is_agent_mode(self.provider):
            ChainOptions.build(**chain_options)  # no chain runs; answer() checks the rest per call
            SearchOptions.build(**self.search_options())
        elif self.provider is not None or self.search_options():
            chain.check_options(self.provider, **chain_options, **self.search_options())
        else:
            ChainOptions.build(**chain_options)  # the default chain is read at call time
        return self

    def search_options(self) -> dict[str, Any]:
        """The configured search options (``search_kwargs`` first, the named fields over them)."""
        options = dict(self.search_kwargs or {})
        for name in SEARCH_FIELDS:
            value = getattr(self, name)
            if value is not None:
                options[name] = value
        return options

    def core_kwargs(self, max_results: int | None, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Keyword arguments for :func:`perplexed.search`: the configuration, then per-call ``overrides``.

        An override of ``None`` clears the configured value (the core default applies).
        """
        kwargs: dict[str, Any] = {"provider": self.provider, **self.search_options()}
        for name in CHAIN_FIELDS:
            value = getattr(self, name)
            if value is not None:
                kwargs[name] = value
        kwargs["max_results"] = max_results
        for key, value in overrides.items():
            if key == "provider":
                value = protect_secrets(value)
            kwargs[key] = value
        return {k: v for k, v in kwargs.items() if v is not None or k == "provider"}

    def __repr_args__(self) -> Any:
        for key, value in super().__repr_args__():
            yield key, (redact_spec(value) if key == "provider" else value)


class ProviderCredentials(BaseModel):
    """``api_key=`` / ``base_url=`` for the one search provider ``provider`` names (a mixin of the search
    components), as langchain-tavily's ``TavilySearch(tavily_api_key=...)``: checked at construction, so a
    missing key fails there, naming the variable to set. A chain warns once about members that cannot run.
    """

    api_key: SecretStr | None = None
    """The key of the provider ``provider`` names (default: its environment variable, e.g. ``TAVILY_API_KEY``).
    Kept as a SecretStr, never shown. For a chain, put each key in its member's dict instead."""

    base_url: str | None = None
    """The base URL of the provider ``provider`` names (default: its environment variable or its own)."""

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # After validation and outside it, so a missing key is a perplexed.ConfigError, not a ValidationError.
        spec = getattr(self, "provider", None)
        if spec is None and self.api_key is None and self.base_url is None:
            return  # the default chain, read at call time
        from perplexed.providers import with_credentials  # the provider registry: imported when first needed

        bound = with_credentials(spec, api_key=self.api_key, base_url=self.base_url, owner=type(self).__name__)
        object.__setattr__(self, "provider", protect_secrets(bound))
