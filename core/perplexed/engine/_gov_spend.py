"""Spend and status, for :func:`perplexed.spend`, ``answer()`` and the CLI: spend per provider over a window,
spend recorded outside a chain, a provider's observed latency and governance state. Re-exported by
``_governance``."""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any

from perplexed._errors import ConfigError, InvalidRequest
from perplexed.engine._gov_identity import provider_identity
from perplexed.engine._gov_settings import _background, _store_failed, current_store, settings_for
from perplexed.net import _portal
from perplexed.policy._policy import SPEND_WINDOWS
from perplexed.store._base import Record
from perplexed.store.memory import MemoryStore

if TYPE_CHECKING:
    from perplexed.providers import Provider

__all__ = ["arecord_spend", "aspend", "latency_p95", "note_spend", "provider_status", "record_spend", "spend"]


# -- spend and status, for perplexed.spend(), answer() and the CLI ---------------------------------------------


def _window_s(window: object) -> float:
    if isinstance(window, str) and window in SPEND_WINDOWS:
        return SPEND_WINDOWS[window]
    known = ", ".join(repr(w) for w in SPEND_WINDOWS)
    raise InvalidRequest(f"window must be one of {known}, got {window!r}", param="window")


async def aspend(window: str = "day") -> dict[str, float]:
    """Spend per provider (the name attempts show) over the rolling ``window`` (``"minute"``, ``"hour"``,
    ``"day"`` = the last 24 hours, ``"week"``), across everything sharing the store; Agent API calls made by
    ``answer()`` are included as ``perplexity-agent``."""
    window_s = _window_s(window)
    store = current_store()
    try:
        totals = await store.spend(window_s)
    except Exception as exc:
        _store_failed("spend", exc)
        return {}
    return {label: round(amount, 10) for label, amount in sorted(totals.items()) if amount > 0}


def spend(window: str = "day") -> dict[str, float]:
    """Synchronous :func:`aspend`."""
    _window_s(window)
    return _portal.run(aspend, window)


async def arecord_spend(label: str, cost: float | None) -> None:
    """Record ``cost`` USD spent outside a chain under ``label`` (e.g. the Agent API under
    ``"perplexity-agent"``). Never raises for a store failure; ignores None / 0 / non-finite costs."""
    if cost is None or isinstance(cost, bool) or not isinstance(cost, int | float):
        return
    if not math.isfinite(cost) or cost <= 0:
        return
    try:
        await current_store().add_spend(label, float(cost))
    except Exception as exc:
        _store_failed("add_spend", exc)


def record_spend(label: str, cost: float | None) -> None:
    """Synchronous :func:`arecord_spend` (safe to call from any thread or inside a running event loop:
    inside one, the write is scheduled on it and this returns at once)."""
    if cost is None or isinstance(cost, bool) or not isinstance(cost, int | float) or not cost > 0:
        return
    try:
        store = current_store()
    except ConfigError as exc:
        _store_failed("open", exc)
        return
    if isinstance(store, MemoryStore):
        try:
            store.record_now(Record(provider="", label=label, cost=float(cost)))
        except Exception as exc:
            _store_failed("add_spend", exc)
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        _portal.run(arecord_spend, label, cost)
        return
    task = loop.create_task(arecord_spend(label, cost))
    _background.add(task)
    task.add_done_callback(_background.discard)


def note_spend(label: str, cost: float) -> None:
    """The plain chain's spend bookkeeping (nothing configured): add a paid attempt's cost to the store so
    ``perplexed.spend()`` reports it. Never blocks and never raises."""
    try:
        record_spend(label, cost)
    except Exception as exc:  # pragma: no cover - defensive
        _store_failed("spend", exc)


async def latency_p95(provider: Provider) -> float | None:
    """``provider``'s observed p95 latency in ms from the store (None: too few answers yet, or no store)."""
    try:
        return await current_store().latency_p95(provider_identity(provider))
    except Exception as exc:
        _store_failed("latency_p95", exc)
        return None


async def provider_status(provider: Provider) -> dict[str, Any]:
    """What ``perplexed providers`` shows: rate limit, cool-down state, window usage, spend today."""
    settings = settings_for(provider)
    rate = settings.rate_limit
    out: dict[str, Any] = {
        "rate_limit": rate.text if rate else None,
        "cooldown_after": settings.cooldown_after,
        "cooldown": "off" if settings.cooldown_after is None else "ok",
        "cooldown_ends_in_s": None,
        "window_calls": None,
        "spend_today": 0.0,
    }
    try:
        store = current_store()
        state = await store.state(provider_identity(provider), rate.window_s if rate else None)
        today = await store.spend(SPEND_WINDOWS["day"])
    except Exception as exc:
        _store_failed("state", exc)
        out["cooldown"] = "unknown"
        return out
    if settings.cooldown_after is not None or state.cooling_down:
        if state.cooling_down:
            ends = state.cooldown_ends_in_s or 0.0
            out["cooldown"] = ("trial in flight" if state.trial_in_flight
                               else "cooling down" if ends > 0 else "trial due")
            out["cooldown_ends_in_s"] = round(ends, 1)
        elif state.failures:
            out["cooldown"] = f"ok ({state.failures} failure{'s' if state.failures != 1 else ''})"
    if rate is not None:
        out["window_calls"] = state.window_calls
    out["spend_today"] = round(today.get(provider.label, 0.0), 6)
    return out
