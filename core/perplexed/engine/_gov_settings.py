"""Governance settings and the state store: what :func:`configure` sets (rate limits, cool-downs, spend limits)
and :func:`reset` forgets, the store in use (:func:`current_store`), each provider's effective settings
(:func:`settings_for`), and the quiet handling of a store failure. Re-exported by ``_governance``.

The settings object is replaced by :func:`reset`: read it as ``_gov_settings._settings`` (or
``_governance._settings``), never through a name bound at import.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from perplexed._errors import ConfigError
from perplexed._logs import get_logger
from perplexed.policy._policy import (
    SPEND_WINDOWS,
    RateLimit,
    check_provider_settings,
    parse_rate_limit,
    parse_spend_limits,
)
from perplexed.policy._settings import env_get
from perplexed.store._base import Store
from perplexed.store.memory import MemoryStore

if TYPE_CHECKING:
    from perplexed.providers import Provider

__all__ = [
    "STORE_ENV",
    "ProviderSettings",
    "configure",
    "current_store",
    "reset",
    "settings_for",
]

logger = get_logger("perplexed.governance")

STORE_ENV = "PERPLEXED_STORE"
DEFAULT_RATE_LIMIT_WAIT_MS = 1000
DEFAULT_COOLDOWN_S = 30.0


class _Settings:
    """Process-wide governance defaults set by :func:`configure`, and the store."""

    def __init__(self) -> None:
        self.store: Store | None = None  # configured explicitly
        self.env_store: tuple[str, Store] | None = None  # opened from PERPLEXED_STORE (spec, store)
        self.default_store: Store | None = None  # the lazily created MemoryStore
        self.rate_limits: dict[str, RateLimit] = {}
        self.wait_ms: dict[str, int] | int | None = None
        self.cooldown_after: dict[str, int] | int | None = None
        self.cooldown_s: dict[str, float] | float | None = None
        self.spend_limits: tuple[tuple[float, float], ...] = ()
        self.version = 0
        self.active = False  # anything here that governs every search (limits, cool-downs)

    def changed(self) -> None:
        self.version += 1
        self.active = bool(self.rate_limits or self.cooldown_after or self.spend_limits)


_settings = _Settings()


def _per_name(value: Any, param: str, check: Callable[[Any, str], Any]) -> Any:
    """A scalar (every provider) or a dict keyed by registry names or labels; each value checked."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key.strip():
                raise ConfigError(f"{param}: keys must be provider names or labels, got {key!r}")
            out[key.strip()] = check(item, f"{param}[{key!r}]")
        return out
    return check(value, param)


def configure(
    *,
    store: Any = None,
    rate_limits: Mapping[str, str] | None = None,
    rate_limit_wait_ms: Any = None,
    cooldown_after: Any = None,
    cooldown_s: Any = None,
    spend_limits: Mapping[str, float] | None = None,
) -> None:
    """The governance part of :func:`perplexed.configure` (None = leave as is). Validates everything first."""
    from perplexed.store import open_store

    new_store = open_store(store) if store is not None else None
    limits = None
    if rate_limits is not None:
        if not isinstance(rate_limits, Mapping):
            raise ConfigError(f"rate_limits must be a dict like {{'brave': '1/s'}}, got {rate_limits!r}")
        limits = _per_name(rate_limits, "rate_limits", lambda v, p: parse_rate_limit(v, p))
    wait = None if rate_limit_wait_ms is None else _per_name(
        rate_limit_wait_ms, "rate_limit_wait_ms",
        lambda v, p: check_provider_settings(rate_limit_wait_ms=v, owner=p)["rate_limit_wait_ms"])
    after = None if cooldown_after is None else _per_name(
        cooldown_after, "cooldown_after",
        lambda v, p: check_provider_settings(cooldown_after=v, owner=p)["cooldown_after"])
    period = None if cooldown_s is None else _per_name(
        cooldown_s, "cooldown_s", lambda v, p: check_provider_settings(cooldown_s=v, owner=p)["cooldown_s"])
    spend = None if spend_limits is None else parse_spend_limits(spend_limits)
    # everything valid: apply
    if new_store is not None:
        old = _settings.store
        _settings.store = new_store
        if old is not None and old is not new_store:
            _close_quietly(old)
    if limits is not None:
        _settings.rate_limits = {k: v for k, v in limits.items() if v is not None}
    if wait is not None:
        _settings.wait_ms = wait
    if after is not None:
        _settings.cooldown_after = after
    if period is not None:
        _settings.cooldown_s = period
    if spend is not None:
        _settings.spend_limits = tuple((SPEND_WINDOWS[w], usd) for w, usd in spend.items())
    _settings.changed()


def reset() -> None:
    """Forget every governance setting and store (the next search opens a fresh default store)."""
    global _settings
    for store in (_settings.store, _settings.env_store[1] if _settings.env_store else None):
        if store is not None:
            _close_quietly(store)
    version = _settings.version
    _settings = _Settings()
    _settings.version = version + 1  # a provider's memoised settings (settings_for) are stale from now on
    _last_warning[0] = 0.0


def _close_quietly(store: Store) -> None:
    try:
        store.close()
    except Exception:  # a store failure never fails anything
        logger.debug("closing %r failed", store, exc_info=True)


def current_store() -> Store:
    """The store in use: :func:`configure`'s, else ``PERPLEXED_STORE``'s, else a per-process MemoryStore.

    Raises :class:`~perplexed.ConfigError` for an unknown ``PERPLEXED_STORE``.
    """
    if _settings.store is not None:
        return _settings.store
    spec = (env_get(STORE_ENV) or "").strip()
    if spec and spec.lower() != "memory":
        cached = _settings.env_store
        if cached is not None and cached[0] == spec:
            return cached[1]
        from perplexed.store import open_store

        try:
            store = open_store(spec)
        except ConfigError as exc:
            raise ConfigError(f"{STORE_ENV}: {exc}") from None
        if cached is not None:
            _close_quietly(cached[1])
        _settings.env_store = (spec, store)
        return store
    if _settings.default_store is None:
        _settings.default_store = MemoryStore()
    return _settings.default_store


# -- per-provider settings ---------------------------------------------------------------------------------


class ProviderSettings:
    """A provider's effective governance settings (constructor, else configure()'s label, else its name)."""

    __slots__ = ("cooldown_after", "cooldown_s", "rate_limit", "wait_ms")

    def __init__(self, rate_limit: RateLimit | None, wait_ms: int | None, cooldown_after: int | None,
                 cooldown_s: float) -> None:
        self.rate_limit = rate_limit
        self.wait_ms = wait_ms
        self.cooldown_after = cooldown_after
        self.cooldown_s = cooldown_s

    @property
    def governed(self) -> bool:
        return self.rate_limit is not None or self.cooldown_after is not None

    def wait_bound_s(self) -> float:
        """How long, in total, an attempt may wait for a rate-limit slot: ``rate_limit_wait_ms`` when set;
        by default 1000 ms plus the limit's guard (so under ``"1/s"`` a call right after another waits for
        its slot instead of being skipped for the guard's few milliseconds)."""
        if self.wait_ms is not None:
            return self.wait_ms / 1000
        guard = _rate_guard(self.rate_limit.window_s) if self.rate_limit is not None else 0.0
        return DEFAULT_RATE_LIMIT_WAIT_MS / 1000 + guard


def _lookup(table: Any, provider: Provider) -> Any:
    if not isinstance(table, dict):
        return table
    if provider.label in table:
        return table[provider.label]
    return table.get(provider.name)


def settings_for(provider: Provider) -> ProviderSettings:
    """The effective settings of ``provider`` (memoised per provider until :func:`configure` changes)."""
    cached = getattr(provider, "_gov_cache", None)
    version = _settings.version
    if cached is not None and cached[0] == version:
        return cached[1]  # type: ignore[no-any-return]
    own: dict[str, Any] = getattr(provider, "_gov", None) or {}
    rate = own.get("rate_limit", _lookup(_settings.rate_limits, provider))
    wait = own.get("rate_limit_wait_ms", _lookup(_settings.wait_ms, provider))
    after = own.get("cooldown_after", _lookup(_settings.cooldown_after, provider))
    period = own.get("cooldown_s", _lookup(_settings.cooldown_s, provider))
    result = ProviderSettings(
        rate, None if wait is None else int(wait), after,
        DEFAULT_COOLDOWN_S if period is None else float(period),
    )
    try:
        provider._gov_cache = (version, result)
    except AttributeError:  # a provider class with __slots__ and no room: recompute next time
        pass
    return result


def _governed(provider: Provider) -> bool:
    return getattr(provider, "_gov_on", False) is True


_background: set[asyncio.Task[Any]] = set()
_last_warning = [0.0]


def _store_failed(what: str, exc: BaseException) -> None:
    now = time.monotonic()
    if now - _last_warning[0] > 10:  # do not flood the log when the store is down
        _last_warning[0] = now
        logger.warning("state store %s failed (%s: %s); going ahead without it", what, type(exc).__name__, exc)
    else:
        logger.debug("state store %s failed", what, exc_info=True)


def _rate_guard(window_s: float) -> float:
    """Admissions are counted over a slightly longer window than the limit's (5 %, at most 250 ms), so the
    calls still keep the limit where the provider counts them, on arrival, after scheduling jitter."""
    return min(0.05 * window_s, 0.25)
