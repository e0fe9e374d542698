"""``perplexed.configure()`` and ``perplexed.reset()``: process-wide settings in code.

A layer above the settings (:mod:`perplexed.policy._settings`, which reads the environment) and governance
(:mod:`perplexed.engine._governance`): it validates everything first, then hands each part to the module that keeps it.
"""

from __future__ import annotations

import sys
from typing import Any

from perplexed import _otel
from perplexed.engine import _governance, _usage
from perplexed.policy import _settings
from perplexed.policy._bounds import check_usd

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
    tag: str | None = None,
    usage_retention_days: float | None = None,
    trace_content: bool | None = None,
) -> None:
    """Set process-wide defaults (None = leave as is).

    ``provider``: the default chain. ``prices``: USD per call by provider name. Governance (see
    docs/production.md): ``store`` (a :class:`perplexed.store.Store`, ``"memory"`` = a fresh in-process
    store, or a URL like ``"sqlite:////var/lib/app/state.db"``), ``rate_limits`` (``{"brave": "1/s"}``),
    ``rate_limit_wait_ms``, ``cooldown_after``, ``cooldown_s`` (a value for every provider, or a dict keyed
    by registry names or labels, a label winning; a provider's own constructor argument wins over both),
    and ``spend_limits`` (``{"day": 5.0, "hour": 1.0}``, replacing earlier limits). Everything is validated
    before anything changes: a bad value is a :class:`ConfigError`. :func:`reset` forgets all of it.

    Usage and tracing (docs/usage.md, docs/tracing.md): ``tag``, the default tag of every call in the usage
    ledger (``""`` clears it); ``usage_retention_days`` (default 30), how long the ledger keeps records;
    ``trace_content=True`` puts query text and tool arguments on spans (off by default).
    """
    if trace_content is not None and not isinstance(trace_content, bool):
        from perplexed._errors import ConfigError

        raise ConfigError(f"trace_content must be True or False, got {trace_content!r}")
    for name, value in (prices or {}).items():
        check_usd(value, f"price for {name!r}")
    if any(v is not None for v in (store, rate_limits, rate_limit_wait_ms, cooldown_after, cooldown_s,
                                    spend_limits)):
        _governance.configure(
            store=store, rate_limits=rate_limits, rate_limit_wait_ms=rate_limit_wait_ms,
            cooldown_after=cooldown_after, cooldown_s=cooldown_s, spend_limits=spend_limits,
        )
    if tag is not None or usage_retention_days is not None:
        _usage.configure(tag=tag, usage_retention_days=usage_retention_days)
    if trace_content is not None:
        _otel.set_trace_content(trace_content)
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
    _usage.reset()
    _otel.set_trace_content(None)
    fetch_net = sys.modules.get("perplexed.net._fetch_net")  # no robots.txt is cached before it is imported
    if fetch_net is not None:
        fetch_net.forget_robots()
