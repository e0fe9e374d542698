"""Validation of search and chain options. Bad input fails here, before any provider is called."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._bounds import check_ttl, check_usd
from ._errors import InvalidRequest

__all__ = [
    "COMMON_OPTIONS",
    "ChainOptions",
    "SearchOptions",
    "clean_query",
    "parse_date",
    "split_options",
]

MAX_QUERY_CHARS = 4000
Recency = Literal["day", "week", "month", "year"]
SafeSearch = Literal["off", "moderate", "strict"]
FallbackOn = Literal["error", "empty", "timeout", "insufficient"]
Strategy = Literal["sequential", "hedged", "merge"]

COMMON_OPTIONS = (
    "max_results",
    "include_domains",
    "exclude_domains",
    "recency",
    "published_after",
    "published_before",
    "language",
    "country",
    "safe_search",
)
CHAIN_OPTION_NAMES = (
    "provider_timeout_ms",
    "deadline_ms",
    "fallback_on",
    # governance (state across calls; see perplexed.store)
    "cache_ttl_s",
    "cache_single_flight",
    "budget_usd",
    # strategies and the quality floor
    "strategy",
    "hedge_after_ms",
    "merge_providers",
    "min_hits",
    "accept",
    # --- usage ledger (issue 38): begin ---
    "tag",
    # --- usage ledger (issue 38): end ---
)
"""Options that shape how the chain runs; they never reach a provider and never change a cache key."""

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
    raise InvalidRequest(
        f"{param} must be a date or an ISO 'YYYY-MM-DD' string, got {value!r}", param=param
    )


def _domains(value: object, param: str) -> list[str] | None:
    if value is None:
        return None
    items: Iterable[Any] = [value] if isinstance(value, str) else value  # type: ignore[assignment]
    try:
        items = list(items)
    except TypeError:
        raise InvalidRequest(f"{param} must be a list of domains", param=param) from None
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

    max_results: int = Field(10, ge=1, le=100)
    include_domains: list[str] | None = None
    exclude_domains: list[str] | None = None
    recency: Recency | None = None
    published_after: date | None = None
    published_before: date | None = None
    language: str | None = None
    country: str | None = None
    safe_search: SafeSearch | None = None
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
                raise InvalidRequest(f"{key} must be a language/country code like 'en' or 'en-US', got {val!r}", param=key)
        try:
            opts = cls(**common, extra=options)
        except ValidationError as exc:
            err = exc.errors()[0]
            param = str(err["loc"][0]) if err.get("loc") else None
            if param == "max_results":  # one wording for the limit, whatever side of it the value is
                raise InvalidRequest(
                    f"max_results must be a whole number, at least 1 and at most 100, got {common[param]!r}",
                    param=param,
                ) from None
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

    provider_timeout_ms: int = Field(15000, gt=0, le=3_600_000)
    deadline_ms: int = Field(30000, gt=0, le=3_600_000)
    fallback_on: frozenset[FallbackOn] = frozenset({"error", "empty"})
    cache_ttl_s: float | None = None
    cache_single_flight: bool = False
    budget_usd: float | None = None
    strategy: Strategy = "sequential"
    hedge_after_ms: int | Literal["auto"] = "auto"
    merge_providers: int = Field(2, ge=1, le=20)
    min_hits: int | None = Field(None, ge=1, le=100)
    accept: Callable[..., Any] | None = None
    # --- usage ledger (issue 38): begin ---
    tag: str | None = None
    """Who or what the call is for (a tenant, feature or user): recorded in the usage ledger."""
    # --- usage ledger (issue 38): end ---

    @classmethod
    def build(cls, **options: Any) -> ChainOptions:
        """Validate chain options; ``None`` keeps the default. Raises :class:`InvalidRequest` naming the option."""
        values = {k: v for k, v in options.items() if v is not None}
        if not values:
            return _DEFAULT_CHAIN_OPTIONS
        # the same options call after call (a service's settings): validate once (frozen, so shareable)
        try:
            memo_key: tuple[Any, ...] | None = tuple(sorted((k, type(v), v) for k, v in values.items()))
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
                values[key] = _finite(values[key], key, "a number of milliseconds")
                values[key] = int(values[key])
        for key in ("cache_ttl_s", "budget_usd"):
            if key in values:
                val = _finite(values[key], key, "a number" + (" of seconds" if key == "cache_ttl_s" else " (USD)"))
                if val < 0:
                    raise InvalidRequest(f"{key} must not be negative, got {val!r}", param=key)
                # a bound the stores can all keep (ConfigError: a setting no store could honour)
                values[key] = check_ttl(float(val)) if key == "cache_ttl_s" else check_usd(float(val), key)
        if "cache_ttl_s" in values and values["cache_ttl_s"] == 0:
            values["cache_ttl_s"] = None  # 0 = off
        if "cache_single_flight" in values and not isinstance(values["cache_single_flight"], bool):
            raise InvalidRequest("cache_single_flight must be True or False", param="cache_single_flight")
        if "hedge_after_ms" in values:
            hedge = values["hedge_after_ms"]
            if hedge != "auto":
                hedge = _finite(hedge, "hedge_after_ms", "a number of milliseconds or 'auto'")
                if hedge < 0:
                    raise InvalidRequest("hedge_after_ms must not be negative", param="hedge_after_ms")
                values["hedge_after_ms"] = int(hedge)
        for key in ("merge_providers", "min_hits"):
            if key in values and (isinstance(values[key], bool) or not isinstance(values[key], int)):
                raise InvalidRequest(f"{key} must be an integer, got {values[key]!r}", param=key)
        # --- usage ledger (issue 38): begin ---
        if "tag" in values:
            tag = values["tag"]
            if not isinstance(tag, str) or not _TAG.fullmatch(tag):
                raise InvalidRequest(f"tag must be 1-64 letters, digits or '_.:@-' (starting with a letter or "
                                     f"digit), got {tag!r}", param="tag")
        # --- usage ledger (issue 38): end ---
        if "accept" in values and not callable(values["accept"]):
            raise InvalidRequest("accept must be a callable taking a Result", param="accept")
        if "fallback_on" in values:
            fallback_on = values["fallback_on"]
            items = [fallback_on] if isinstance(fallback_on, str) else fallback_on
            try:
                values["fallback_on"] = frozenset(str(getattr(i, "value", i)) for i in items)
            except TypeError:
                raise InvalidRequest("fallback_on must be a list of outcomes", param="fallback_on") from None
        try:
            return cls(**values)
        except ValidationError as exc:
            err = exc.errors()[0]
            param = str(err["loc"][0]) if err.get("loc") else None
            hint = {
                "fallback_on": " (fallback_on takes 'error', 'empty', 'timeout', 'insufficient')",
                "strategy": " (strategy takes 'sequential', 'hedged', 'merge')",
            }.get(param or "", "")
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


def _finite(value: object, param: str, what: str) -> float:
    """A finite int or float (not a bool), else :class:`InvalidRequest` naming ``param``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidRequest(f"{param} must be {what}, got {value!r}", param=param)
    return value


_DEFAULT_SEARCH_OPTIONS = SearchOptions()
_DEFAULT_CHAIN_OPTIONS = ChainOptions()
_CHAIN_MEMO: dict[tuple[Any, ...], ChainOptions] = {}


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split keyword options into (chain options, search options)."""
    chain = {k: options.pop(k) for k in CHAIN_OPTION_NAMES if k in options}
    return chain, options
