"""The bounds every configured amount keeps, whatever the store: USD amounts (a cost, a price, a budget, a
spend limit) and cache TTLs. Beyond them a value is a :class:`~perplexed.ConfigError` when it is configured, so
the memory, SQLite and Redis stores all behave the same (a Redis store counts nano-USD in 64-bit integers and
a TTL in milliseconds)."""

from __future__ import annotations

import math

from perplexed._errors import ConfigError

__all__ = ["MAX_TTL_S", "MAX_USD", "check_ttl", "check_usd"]

MAX_USD = 1e9
"""No cost, price, budget or spend limit above this many USD is accepted."""

MAX_TTL_S = 10 * 365 * 86400.0
"""No cache TTL above ten years is accepted."""


def check_usd(value: object, param: str, *, error: type[Exception] = ConfigError) -> float:
    """A USD amount: a finite number from 0 to :data:`MAX_USD`; ``error`` (default ConfigError) naming
    ``param`` for anything else, ConfigError above the bound."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise error(f"{param} must be a finite non-negative number of USD, got {value!r}")
    if value > MAX_USD:
        raise ConfigError(f"{param} must be at most {MAX_USD:g} USD, got {value!r}")
    return float(value)


def check_ttl(value: float, param: str = "cache_ttl_s") -> float:
    """A cache TTL in seconds: at most :data:`MAX_TTL_S` (ten years); ConfigError naming ``param`` otherwise."""
    if value > MAX_TTL_S:
        raise ConfigError(f"{param} must be at most ten years ({MAX_TTL_S:g} s), got {value!r}")
    return value
