"""``perplexed.configure()`` and ``perplexed.reset()``: process-wide settings in code.

A layer above the settings (:mod:`perplexed._settings`, which reads the environment) and governance
(:mod:`perplexed._governance`): it validates everything first, then hands each part to the module that keeps it.
"""

from __future__ import annotations

from typing import Any

from . import _governance, _settings
from ._bounds import check_usd
from ._fetch_net import forget_robots

__all__ = ["configure", "reset"]


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
    before anything changes: a bad value is a :class:`ConfigError`. :func:`reset` forgets all of it.
    """
    for name, value in (prices or {}).items():
        check_usd(value, f"price for {name!r}")
    if any(v is not None for v in (store, rate_limits, rate_limit_wait_ms, cooldown_after, cooldown_s,
                                    spend_limits)):
        _governance.configure(
            store=store, rate_limits=rate_limits, rate_limit_wait_ms=rate_limit_wait_ms,
            cooldown_after=cooldown_after, cooldown_s=cooldown_s, spend_limits=spend_limits,
        )
    _settings.set_defaults(provider=provider, prices=prices)


def reset() -> None:
    """Forget everything :func:`configure` set and the in-process state: the default chain and prices set in
    code, governance settings (rate limits, cool-downs, spend limits), the configured store (closed) and the
    default in-process store with its cache, cool-downs, rate-limit windows and spend, and the robots.txt rules
cached by :func:`perplexed.fetch`. The next search starts as
    in a fresh process. The environment is read at call time, so ``PERPLEXED_*`` variables still apply;
    registered provider plug-ins and telemetry handlers are kept.

    For tests and notebooks: call it between cases that configure perplexed differently.
    """
    _settings.clear()
    _governance.reset()
    forget_robots()
