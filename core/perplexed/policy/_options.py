"""Validation of search, chain and fetch options. Bad input fails here, before any provider is called.

Each option is declared once, in :mod:`perplexed.policy._optionspec` (name, type, default, bounds, the words of its
errors, flag, environment variable, help): the option lists, the models' defaults and bounds and the error texts
below are read from there."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from perplexed._errors import ConfigError, InvalidRequest
from perplexed.policy._bounds import check_ttl, check_usd
from perplexed.policy._optionspec import fetch_chain_names, names, option

__all__ = [
    "COMMON_OPTIONS",
    "ChainOptions",
    "SearchOptions",
    "check_fetch_options",
    "clean_query",
    "parse_date",
    "split_options",
]

MAX_QUERY_CHARS = 4000
Recency = Literal["day", "week", "month", "year"]
SafeSearch = Literal["off", "moderate", "strict"]
FallbackOn = Literal["error", "empty", "timeout", "insufficient"]
Strategy = Literal["sequential", "hedged", "merge", "adaptive"]

COMMON_OPTIONS = names("search")
"""Options every provider receives (they are part of a cache key)."""
CHAIN_OPTION_NAMES = names("chain")
"""Options that shape how the chain runs; they never reach a provider and never change a cache key."""
FETCH_OPTION_NAMES = names("fetch")
"""Options of a fetch (they reach the fetch providers)."""
FETCH_CHAIN_NAMES = fetch_chain_names()
"""The chain options a fetch takes (how the fetch chain runs)."""


def _field(name: str) -> Any:
    """The pydantic field of option ``name``: its declared default and bounds."""
    declared = option(name)
    default = frozenset(declared.default) if isinstance(declared.default, tuple) else declared.default
    limits = declared.limits
    return Field(default, ge=limits.get("ge"), gt=limits.get("gt"), le=limits.get("le"))


def _must(name: str, value: object = None, *, got: bool = True) -> InvalidRequest:
    """``NAME must be EXPECTS, got VALUE``: an option's error, in its declared words."""
    tail = f", got {value!r}" if got else ""
    return InvalidRequest(f"{name} must be {option(name).expects}{tail}", param=name)

_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}")  # usage ledger (issue 38): a call's tag
_DOMAIN = re.compile(r"^[a-z0-9*]([a-z0-9\-.*]*[a-z0-9])?(/[^\s]*)?$")


def clean_query(query: object) -> str:
    """Validate a query: a non-empty string of at most 4000 characters; control characters become spaces."""
    if not isinstance(query, str):
        raise InvalidRequest(f"query must be a string, not {type(query).__name__}", param="query")
    if query.isprintable():  # fast path: no control characters or surrogates (Cc, Cs) to replace
        cleaned = query.strip()
    else:
        cleaned = "".join(
            " " if unicodedata.category(ch) in ("Cc", "Cs") else ch for ch in query
        ).strip()
    if not cleaned:
        raise InvalidRequest("query is empty", param="query")
    if len(cleaned) > MAX_QUERY_CHARS:
        raise InvalidRequest(
            f"query is {len(cleaned)} characters long; the limit is {MAX_QUERY_CHARS}", param="query"
        )
    return cleaned


def parse_date(value: object, param: str) -> date | None:
    """Accept a ``date``, a ``datetime`` or an ISO ``YYYY-MM-DD`` string; anything else is InvalidRequest."""
    if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
        return value
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise _must(param, value)


def _domains(value: object, param: str) -> list[str] | None:
    if value is None:
        return None
    items: Iterable[Any] = [value] if isinstance(value, str) else value  # type: ignore[assignment]
    try:
        items = list(items)
    except TypeError:
        raise _must(param, got=False) from None
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidRequest(f"{param} entries must be strings, got {item!r}", param=param)
        d = item.strip().lower()
        d = re.sub(r"^[a-z][a-z0-9+.\-]*://", "", d).rstrip("/")
        d = d.removeprefix("www.")
        if not d or not _DOMAIN.match(d):
            raise InvalidRequest(f"{param} has an invalid domain: {item!r}", param=param)
        out.append(d)
    return out or None


class SearchOptions(BaseModel):
    """The normalised options every provider receives. ``extra`` carries provider-specific options."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_results: int = _field("max_results")
    include_domains: list[str] | None = _field("include_domains")
    exclude_domains: list[str] | None = _field("exclude_domains")
    recency: Recency | None = _field("recency")
    published_after: date | None = _field("published_after")
    published_before: date | None = _field("published_before")
    language: str | None = _field("language")
    country: str | None = _field("country")
    safe_search: SafeSearch | None = _field("safe_search")
    extra: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def build(cls, **options: Any) -> SearchOptions:
        """Validate caller options (common ones by name; everything else goes to ``extra``)."""
        if not options or (len(options) == 1 and options.get("max_results", 0) is None):
            return _DEFAULT_SEARCH_OPTIONS  # nothing to validate (frozen, so it can be shared)
        common = {k: options.pop(k) for k in COMMON_OPTIONS if k in options}
        if "max_results" in common and common["max_results"] is None:
            del common["max_results"]
        if isinstance(common.get("max_results"), bool):
            raise InvalidRequest("max_results must be an integer", param="max_results")
        for key in ("include_domains", "exclude_domains"):
            if key in common:
                common[key] = _domains(common[key], key)
        for key in ("published_after", "published_before"):
            if key in common:
                common[key] = parse_date(common[key], key)
        safe = common.get("safe_search")
        if isinstance(safe, bool):
            common["safe_search"] = "moderate" if safe else "off"
        elif isinstance(safe, int):
            common["safe_search"] = {0: "off", 1: "moderate", 2: "strict"}.get(safe, safe)
        for key in ("language", "country"):
            val = common.get(key)
            if val is not None and (not isinstance(val, str) or not re.fullmatch(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})?|all|auto", val)):
                raise _must(key, val)
        try:
            opts = cls(**common, extra=options)
        except ValidationError as exc:
            err = exc.errors()[0]
            param = str(err["loc"][0]) if err.get("loc") else None
            if param == "max_results":  # one wording for the limit, whatever side of it the value is
                raise _must(param, common[param]) from None
            raise InvalidRequest(f"invalid option {param}: {err['msg']}", param=param) from None
        if opts.published_after and opts.published_before and opts.published_after > opts.published_before:
            raise InvalidRequest(
                "published_after is later than published_before", param="published_after"
            )
        return opts


class ChainOptions(BaseModel):
    """How a chain runs: budgets, which outcomes move on, memory across calls, strategy and quality floor.

    Every field except the first three is opt-in: at its default, a search behaves as the seed's chain.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    provider_timeout_ms: int = _field("provider_timeout_ms")
    deadline_ms: int = _field("deadline_ms")
    fallback_on: frozenset[FallbackOn] = _field("fallback_on")
    cache_ttl_s: float | None = _field("cache_ttl_s")
    cache_single_flight: bool = _field("cache_single_flight")
    budget_usd: float | None = _field("budget_usd")
    strategy: Strategy = _field("strategy")
    hedge_after_ms: int | Literal["auto"] = Field(option("hedge_after_ms").default)  # ge=0: checked in _build
    merge_providers: int = _field("merge_providers")
    min_hits: int | None = _field("min_hits")
    accept: Callable[..., Any] | None = _field("accept")
    # strategy="adaptive" (issue 37; declared in perplexed.policy._optionspec)
    routing: Any = _field("routing")
    """Priors of the adaptive strategy: a routing file (path) or a :class:`~perplexed.Routing`."""
    explore: float = _field("explore")
    """The adaptive strategy: at most this share of calls put a member other than the top one first."""
    seed: int | None = _field("seed")
    """The adaptive strategy: makes its exploration reproducible."""
    # --- usage ledger (issue 38; declared in perplexed.policy._optionspec) ---
    tag: str | None = _field("tag")
    """Who or what the call is for (a tenant, feature or user): recorded in the usage ledger."""

    @classmethod
    def build(cls, **options: Any) -> ChainOptions:
        """Validate chain options; ``None`` keeps the default. Raises :class:`InvalidRequest` naming the option."""
        values = {k: v for k, v in options.items() if v is not None}
        if not values:
            return _DEFAULT_CHAIN_OPTIONS
        # the same options call after call (a service's settings): validate once (frozen, so shareable)
        try:
            if len(values) == 1:  # the common case (cache_ttl_s=...): what sorted() of one item gives
                ((name, value),) = values.items()
                memo_key: tuple[Any, ...] | None = ((name, type(value), value),)
            else:
                memo_key = tuple(sorted((k, type(v), v) for k, v in values.items()))
            known = _CHAIN_MEMO.get(memo_key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable value (a list): validate every time
            memo_key, known = None, None
        if known is not None:
            return known
        built = cls._build(values)
        if memo_key is not None and len(_CHAIN_MEMO) < 512:
            _CHAIN_MEMO[memo_key] = built
        return built

    @classmethod
    def _build(cls, values: dict[str, Any]) -> ChainOptions:
        unknown = set(values) - set(CHAIN_OPTION_NAMES)
        if unknown:
            name = sorted(unknown)[0]
            raise InvalidRequest(f"unknown chain option {name!r}", param=name)
        for key in ("provider_timeout_ms", "deadline_ms"):
            if key in values:
                values[key] = _finite(values[key], key, option(key).expects)
                values[key] = int(values[key])
        for key in ("cache_ttl_s", "budget_usd"):
            if key in values:
                val = _finite(values[key], key, option(key).expects)
                if val < 0:
                    raise InvalidRequest(f"{key} must not be negative, got {val!r}", param=key)
                # a bound the stores can all keep (ConfigError: a setting no store could honour)
                values[key] = check_ttl(float(val)) if key == "cache_ttl_s" else check_usd(float(val), key)
        if "cache_ttl_s" in values and values["cache_ttl_s"] == 0:
            values["cache_ttl_s"] = None  # 0 = off
        if "cache_single_flight" in values and not isinstance(values["cache_single_flight"], bool):
            raise _must("cache_single_flight", got=False)
        if "hedge_after_ms" in values:
            hedge = values["hedge_after_ms"]
            if hedge != "auto":
                hedge = _finite(hedge, "hedge_after_ms", option("hedge_after_ms").expects)
                if hedge < 0:
                    raise InvalidRequest("hedge_after_ms must not be negative", param="hedge_after_ms")
                values["hedge_after_ms"] = int(hedge)
        for key in ("merge_providers", "min_hits"):
            if key in values and (isinstance(values[key], bool) or not isinstance(values[key], int)):
                raise _must(key, values[key])
        _adaptive_options(values)  # strategy="adaptive" (issue 37)
        # --- usage ledger (issue 38): begin ---
        if "tag" in values:
            tag = values["tag"]
            if not isinstance(tag, str) or not _TAG.fullmatch(tag):
                raise InvalidRequest(f"tag must be 1-64 letters, digits or '_.:@-' (starting with a letter or "
                                     f"digit), got {tag!r}", param="tag")
        # --- usage ledger (issue 38): end ---
        if "accept" in values and not callable(values["accept"]):
            raise _must("accept", got=False)
        if "fallback_on" in values:
            fallback_on = values["fallback_on"]
            items = [fallback_on] if isinstance(fallback_on, str) else fallback_on
            try:
                values["fallback_on"] = frozenset(str(getattr(i, "value", i)) for i in items)
            except TypeError:
                raise _must("fallback_on", got=False) from None
        try:
            return cls(**values)
        except ValidationError as exc:
            err = exc.errors()[0]
            param = str(err["loc"][0]) if err.get("loc") else None
            choices = option(param).choices if param in CHAIN_OPTION_NAMES else ()
            hint = f" ({param} takes {', '.join(map(repr, choices))})" if choices and param != "hedge_after_ms" else ""
            raise InvalidRequest(f"invalid {param}: {err['msg']}{hint}", param=param) from None

    def moves_on(self, outcome: str) -> bool:
        """Whether an attempt with this outcome lets the chain try the next provider."""
        if outcome in ("timeout", "cancelled"):
            return "timeout" in self.fallback_on or "error" in self.fallback_on
        if outcome == "insufficient":  # its own value; "empty" moves on after an insufficient answer too
            return "insufficient" in self.fallback_on or "empty" in self.fallback_on
        if outcome == "skipped":
            return True
        return outcome in self.fallback_on


# --- strategy="adaptive" (issue 37): the validation of routing=, explore=, seed= ---


def _adaptive_options(values: dict[str, Any]) -> None:
    """Check (and load) the adaptive strategy's options in ``values``, naming the bad one."""
    if "routing" in values:
        from perplexed.policy._routing import (
            load_routing,  # only when given: `import perplexed` does not load it
        )

        try:
            values["routing"] = load_routing(values["routing"])
        except ConfigError as exc:
            raise InvalidRequest(str(exc), param="routing") from None
    if "explore" in values:
        explore = _finite(values["explore"], "explore", "a share between 0 and 1")
        if not 0 <= explore <= 1:
            raise InvalidRequest(f"explore must be between 0 and 1, got {explore!r}", param="explore")
        values["explore"] = float(explore)
    if "seed" in values and (isinstance(values["seed"], bool) or not isinstance(values["seed"], int)):
        raise InvalidRequest(f"seed must be an integer, got {values['seed']!r}", param="seed")


# --- end of the adaptive block ---


def _finite(value: object, param: str, what: str) -> float:
    """A finite int or float (not a bool), else :class:`InvalidRequest` naming ``param``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidRequest(f"{param} must be {what}, got {value!r}", param=param)
    return value


_DEFAULT_SEARCH_OPTIONS = SearchOptions()
_DEFAULT_CHAIN_OPTIONS = ChainOptions()
_CHAIN_MEMO: dict[tuple[Any, ...], ChainOptions] = {}


def check_fetch_options(values: dict[str, Any]) -> None:
    """Validate the fetch options among ``values`` (given by name, ``None`` removed) in their declared words;
    ``allow_private`` is the trust boundary's to parse (:func:`perplexed.net._ssrf.parse_allow_private`)."""
    if "format" in values and values["format"] not in option("format").choices:
        raise _must("format", values["format"])
    for name in ("max_chars", "start_index", "min_chars"):
        if name in values:
            value = values[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < option(name).limits["ge"]:
                raise _must(name, value)
    if "max_age_s" in values:
        age = values["max_age_s"]
        if isinstance(age, bool) or not isinstance(age, int | float) or not math.isfinite(age) or age < 0:
            raise _must("max_age_s", age)
    if "respect_robots" in values and not isinstance(values["respect_robots"], bool):
        raise _must("respect_robots", got=False)


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split keyword options into (chain options, search options)."""
    chain = {k: options.pop(k) for k in CHAIN_OPTION_NAMES if k in options}
    return chain, options
