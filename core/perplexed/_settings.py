"""Settings read from the environment at call time (so changing the environment takes effect at once).

- ``PERPLEXED_PROVIDER``: the default chain, comma-separated (``"searxng,ceramic,firecrawl"``).
- ``PERPLEXED_PRICE_<NAME>``: USD per call for provider ``<name>`` (overrides the price table).
- Provider keys and URLs: each provider names its own variables (``SEARXNG_URL``, ``TAVILY_API_KEY``, …).

:func:`configure` sets the same things in code; code settings win over the environment.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import SecretStr

from ._bounds import check_usd
from ._errors import ConfigError, register_secret

__all__ = [
    "configure",
    "default_chain",
    "default_chain_origin",
    "env_secret",
    "env_str",
    "price_override",
    "reset",
]

DEFAULT_CHAIN = "local,searxng"

_overrides: dict[str, Any] = {}


def configure(
    *,
    provider: Any = None,
    prices: dict[str, float] | None = None,
    store: Any = None,
    rate_limits: dict[str, str] | None = None,
    rate_limit_wait_ms: Any = None,
    cooldown_after: Any = None,
    cooldown_s: Any = None,
    spend_limits: dict[str, float] | None = None,
) -> None:
    """Set process-wide defaults (None = leave as is).

    ``provider``: the default chain. ``prices``: USD per call by provider name. Governance (see
    docs/production.md): ``store`` (a :class:`perplexed.store.Store`, ``"memory"`` = a fresh in-process
    store, or a URL like ``"sqlite:////var/lib/app/state.db"``), ``rate_limits`` (``{"brave": "1/s"}``),
    ``rate_limit_wait_ms``, ``cooldown_after``, ``cooldown_s`` (a value for every provider, or a dict keyed
    by registry names or labels, a label winning; a provider's own constructor argument wins over both),
    and ``spend_limits`` (``{"day": 5.0, "hour": 1.0}``, replacing earlier limits). Everything is validated
    before anything changes: a bad value is a :class:`ConfigError`.
    """
    for name, value in (prices or {}).items():
        check_usd(value, f"price for {name!r}")
    if any(v is not None for v in (store, rate_limits, rate_limit_wait_ms, cooldown_after, cooldown_s,
                                    spend_limits)):
        from . import _governance

        _governance.configure(
            store=store, rate_limits=rate_limits, rate_limit_wait_ms=rate_limit_wait_ms,
            cooldown_after=cooldown_after, cooldown_s=cooldown_s, spend_limits=spend_limits,
        )
    if provider is not None:
        _overrides["provider"] = provider
    if prices is not None:
        _overrides.setdefault("prices", {}).update({k.lower(): float(v) for k, v in prices.items()})


def reset() -> None:
    """Forget everything :func:`configure` set (governance settings and the store included)."""
    _overrides.clear()
    import sys

    governance = sys.modules.get(f"{__package__}._governance")
    if governance is not None:
        governance.reset()


def default_chain() -> Any:
    """The chain used when ``provider=None``: :func:`configure`, else ``PERPLEXED_PROVIDER``, else local,searxng."""
    if "provider" in _overrides:
        return _overrides["provider"]
    raw = os.environ.get("PERPLEXED_PROVIDER", "").strip() or DEFAULT_CHAIN
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise ConfigError("PERPLEXED_PROVIDER is set but names no provider")
    return names


def default_chain_origin() -> str | None:
    """Where :func:`default_chain` comes from when it is not the code's: ``"PERPLEXED_PROVIDER"`` when that
    variable sets it (so an error about it can say so), else ``None``."""
    if "provider" in _overrides or not os.environ.get("PERPLEXED_PROVIDER", "").strip():
        return None
    return "PERPLEXED_PROVIDER"


def price_override(name: str) -> float | None:
    """A configured price (USD per call) for provider ``name``, or None."""
    prices = _overrides.get("prices", {})
    if name.lower() in prices:
        return float(prices[name.lower()])
    raw = os.environ.get(f"PERPLEXED_PRICE_{name.upper().replace('-', '_')}")
    if raw is None or not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"PERPLEXED_PRICE_{name.upper()} must be a number of USD, got {raw!r}") from None
    return check_usd(value, f"PERPLEXED_PRICE_{name.upper()}")


def env_str(var: str) -> str | None:
    """A non-empty environment variable, or None."""
    value = os.environ.get(var, "").strip()
    return value or None


def env_secret(var: str) -> SecretStr | None:
    """An environment variable as a SecretStr (registered for redaction), or None; a ConfigError naming the
    variable (never its value) when it is not a valid key (printable ASCII, no whitespace)."""
    value = env_str(var)
    if value is None:
        return None
    register_secret(value)
    from ._wire import check_key

    return SecretStr(check_key(value, argument=f"the environment variable {var}"))
