"""Pure governance policy: rolling-window rate limits, cool-down transitions, spend limits, health.

Nothing here does I/O or reads a clock: every function takes ``now`` (seconds, any monotonic-enough epoch)
and returns a decision or a new state. The stores (memory, SQLite, Redis) apply these rules inside one
atomic step each; the tests drive them table-style with a fake clock. :class:`Purse` is the in-process
account of one call's ``budget_usd`` (what it spent, what it holds in flight), shared by the runs of the call.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

from perplexed._errors import UNHEALTHY_REASONS, ConfigError
from perplexed.policy._bounds import MAX_TTL_S, MAX_USD, check_ttl, check_usd
from perplexed.policy._ledger import budget_allows

__all__ = [
    "LATENCY_MIN_SAMPLES",
    "LATENCY_SAMPLES",
    "MAX_COOLDOWN_S",
    "MAX_TTL_S",
    "MAX_USD",
    "MEMBER_DECAY",
    "SPEND_WINDOWS",
    "CoolState",
    "Health",
    "MemberStats",
    "Purse",
    "RateLimit",
    "check_provider_settings",
    "check_ttl",
    "check_usd",
    "cool_admit",
    "cool_record",
    "health_of",
    "member_update",
    "p95",
    "parse_rate_limit",
    "parse_spend_limits",
    "slot_admit",
    "spend_allows",
    "window_admit",
]

MAX_COOLDOWN_S = 600.0
"""No cool-down (doubled, or asked for by ``Retry-After``) lasts longer than this."""

SPEND_WINDOWS: dict[str, float] = {"minute": 60.0, "hour": 3600.0, "day": 86400.0, "week": 7 * 86400.0}
"""Rolling windows understood by ``spend_limits`` and ``perplexed.spend(window=...)``, in seconds."""

LATENCY_SAMPLES = 100
"""How many recent answer latencies a store keeps per provider (for ``latency_p95``)."""

LATENCY_MIN_SAMPLES = 5
"""``latency_p95`` is None until a provider has answered at least this many times."""

_UNITS = {"s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
          "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
          "h": 3600.0, "hour": 3600.0, "hours": 3600.0, "d": 86400.0, "day": 86400.0, "days": 86400.0}
"""The rate-limit units understood (case-insensitive): exactly these spellings, nothing else (no ``m``, no ``ms``)."""
# ASCII digits, "/", ASCII letters; plain spaces around them and nothing else (no tab, no newline, no other
# script's digits): matched against the whole string
_RATE = re.compile(r" *([0-9]+) */ *([A-Za-z]+) *", re.ASCII)

MAX_RATE_LIMIT = 1_000_000_000
"""No rate limit above this many calls per window is accepted."""

Health = Literal["answer", "failure", "neutral"]

# Failure reasons that say the provider is unhealthy (count toward a cool-down): the failure map's
# UNHEALTHY_REASONS. bad_request / not_found are about the request, config means no call was made;
# soft_failure / body_too_large are request-specific too.
_UNHEALTHY: frozenset[str] = UNHEALTHY_REASONS


class RateLimit(NamedTuple):
    """``limit`` admitted calls in any rolling ``window_s`` seconds (parsed from ``"N/s"`` etc.)."""

    limit: int
    window_s: float
    text: str


def parse_rate_limit(value: object, param: str = "rate_limit") -> RateLimit | None:
    """Parse ``"N/s"``, ``"N/min"``, ``"N/hour"``, ``"N/day"`` (``None`` = no limit). ConfigError otherwise."""
    if value is None:
        return None
    if isinstance(value, RateLimit):
        return value
    if isinstance(value, str) and value.isascii():
        match = _RATE.fullmatch(value)
        if match:
            unit = match.group(2).lower()
            count = int(match.group(1))
            if unit in _UNITS and 0 < count <= MAX_RATE_LIMIT:
                return RateLimit(count, _UNITS[unit], value.strip(" "))
    raise ConfigError(
        f"{param} must look like '5/s', '60/min', '1000/hour' or '10000/day' (ASCII digits, N from 1 to "
        f"{MAX_RATE_LIMIT:_}; units s, sec, second, min, minute, h, hour, d, day), got {value!r}"
    )


def parse_spend_limits(value: object) -> dict[str, float]:
    """Validate ``{"day": 5.0, "hour": 1.0}``: window names from :data:`SPEND_WINDOWS`, non-negative USD."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"spend_limits must be a dict like {{'day': 5.0}}, got {value!r}")
    out: dict[str, float] = {}
    for window, limit in value.items():
        if window not in SPEND_WINDOWS:
            known = ", ".join(SPEND_WINDOWS)
            close = difflib.get_close_matches(str(window).lower(), SPEND_WINDOWS, n=1, cutoff=0.5)
            hint = f": did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"spend_limits: unknown window {window!r}{hint} (use {known})")
        out[window] = check_usd(limit, f"spend_limits[{window!r}]")
    return out


def check_provider_settings(
    *,
    rate_limit: object = None,
    rate_limit_wait_ms: object = None,
    cooldown_after: object = None,
    cooldown_s: object = None,
    owner: str = "provider",
) -> dict[str, object]:
    """Validate a provider's governance settings (None = unset); the set ones, parsed. ConfigError naming
    the setting otherwise."""
    out: dict[str, object] = {}
    if rate_limit is not None:
        out["rate_limit"] = parse_rate_limit(rate_limit, f"rate_limit of {owner}")
    if rate_limit_wait_ms is not None:
        if isinstance(rate_limit_wait_ms, bool) or not isinstance(rate_limit_wait_ms, int | float) or not (
            math.isfinite(rate_limit_wait_ms) and rate_limit_wait_ms >= 0
        ):
            raise ConfigError(f"rate_limit_wait_ms of {owner} must be a non-negative number of ms, got {rate_limit_wait_ms!r}")
        out["rate_limit_wait_ms"] = int(rate_limit_wait_ms)
    if cooldown_after is not None:
        if isinstance(cooldown_after, bool) or not isinstance(cooldown_after, int) or cooldown_after < 1:
            raise ConfigError(f"cooldown_after of {owner} must be a positive integer (or None = off), got {cooldown_after!r}")
        out["cooldown_after"] = cooldown_after
    if cooldown_s is not None:
        if isinstance(cooldown_s, bool) or not isinstance(cooldown_s, int | float) or not (
            math.isfinite(cooldown_s) and cooldown_s > 0
        ):
            raise ConfigError(f"cooldown_s of {owner} must be a positive number of seconds, got {cooldown_s!r}")
        out["cooldown_s"] = min(float(cooldown_s), MAX_COOLDOWN_S)
    return out


# -- rolling window -----------------------------------------------------------------------------------------


def window_admit(stamps: Sequence[float], now: float, limit: RateLimit) -> tuple[bool, float]:
    """Sliding-window log: may one more call start at ``now``, given the admission times ``stamps``?

    Returns ``(allowed, wait_s)``: when not allowed, ``wait_s`` is how long until the oldest admission in
    the window leaves it (a slot frees). Stamps older than the window are ignored (callers prune them).
    """
    start = now - limit.window_s
    live = [s for s in stamps if s > start]
    if len(live) < limit.limit:
        return True, 0.0
    live.sort()
    # the (len - limit + 1)-th oldest must leave before there are fewer than `limit` in the window
    oldest_blocking = live[len(live) - limit.limit]
    return False, max(0.0, oldest_blocking + limit.window_s - now)


# -- a fleet's rate limit while its shared store is down: time slots ------------------------------------------


def slot_admit(
    now: float, start: float, index: int, fleet: int, limit: RateLimit, last: int | None
) -> tuple[bool, float, int]:
    """May the fleet member holding slot ``index`` (of ``fleet``) call a ``limit``-ed provider at ``now``,
    the shared store having been down since ``start``? Returns ``(allowed, wait_s, slot)``.

    Without the store the members cannot count together, so they take turns: time (the wall clock, which
    the members share) is cut into slots of ``window / (limit - 0.75)`` seconds, slot ``k`` is member
    ``k % fleet``'s, and a member may start one call in the first eighth of each of its slots (``last`` is
    the slot of its previous call). N + 1 calls then span N slots less an eighth: more than the window (by
    ``0.625 / (limit - 0.75)`` of it, 15 % under ``"5/s"``), so no rolling window ever holds more than
    ``limit`` calls, with a margin for clocks a little apart and calls a little late. Nothing
    starts in the window the outage began in: the calls the fleet made just before it may fill that one.
    ``wait_s`` is how long until this member's next chance (0 when allowed)."""
    length = limit.window_s / (limit.limit - 0.75)
    opening = length / 8
    first = start + limit.window_s
    slot = math.floor(now / length)
    if (slot + 1) * length <= now:  # (the division rounded down across a boundary)
        slot += 1
    elif slot * length > now:
        slot -= 1
    open_now = slot % fleet == index and slot != last and now < slot * length + opening
    if open_now and now >= first:
        return True, 0.0, slot
    # this member's next chance: the rest of the current slot (before ``first``), or its next slot
    later = slot if open_now else slot + 1 + (index - slot - 1) % fleet
    while later * length + opening <= first:
        later += fleet
    return False, max(0.0, max(later * length, first) - now), later


# -- cool-down (circuit breaker) ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CoolState:
    """One provider's cool-down state.

    ``failures``: consecutive unhealthy failures. ``open_until``: when the current cool-down ends (None =
    closed). ``period``: the length of the last cool-down (doubles after a failed trial). ``trial_until``:
    the lease of the trial call in flight (None = none), which expires so a killed worker cannot hold it.
    """

    failures: int = 0
    open_until: float | None = None
    period: float = 0.0
    trial_until: float | None = None


CoolVerdict = Literal["call", "trial", "cooling_down"]


def cool_admit(
    state: CoolState, now: float, lease_s: float, early: bool = False
) -> tuple[CoolVerdict, CoolState, float]:
    """Whether a call may go now. Returns ``(verdict, new_state, wait_s)``.

    Closed: ``call``. Cooling down: ``cooling_down`` with ``wait_s`` = time left, unless ``early`` (the
    end-of-chain trial) and no trial is in flight, which takes the trial lease. Cool-down over: the first
    caller takes the trial lease (``trial``); the others get ``cooling_down`` until its lease expires.
    """
    if state.open_until is None:
        return "call", state, 0.0
    lease_live = state.trial_until is not None and state.trial_until > now
    if lease_live:
        return "cooling_down", state, max(0.0, state.open_until - now)
    if now >= state.open_until or early:
        return "trial", replace(state, trial_until=now + max(lease_s, 0.001)), 0.0
    return "cooling_down", state, state.open_until - now


def cool_record(
    state: CoolState,
    now: float,
    health: Health,
    *,
    trial: bool,
    cooldown_after: int | None,
    cooldown_s: float,
    retry_after: float | None = None,
) -> CoolState:
    """The state after a call ended with ``health`` (see :func:`health_of`).

    An answer closes any cool-down and resets the period. A failure counts; reaching ``cooldown_after``
    opens a cool-down of ``cooldown_s``; a failed trial re-opens it for twice the last period (<= 600 s).
    ``retry_after`` (a 429/503's ``Retry-After``) opens a cool-down of exactly that long (<= 600 s).
    A neutral end (bad request, cancelled, ...) changes nothing but releases a trial lease it held.
    """
    if cooldown_after is None:
        return state
    if health == "answer":
        return CoolState()
    if health == "neutral":
        return replace(state, trial_until=None) if trial else state
    failures = state.failures + 1
    if retry_after is not None and retry_after >= 0:
        wait = min(float(retry_after), MAX_COOLDOWN_S)
        period = state.period or cooldown_s
        return CoolState(failures=failures, open_until=now + wait, period=period, trial_until=None)
    if trial and state.open_until is not None:
        period = min(max(state.period or cooldown_s, cooldown_s) * 2, MAX_COOLDOWN_S)
        return CoolState(failures=failures, open_until=now + period, period=period, trial_until=None)
    if state.open_until is not None:  # a call admitted before the cool-down started failed too
        return replace(state, failures=failures)
    if failures >= cooldown_after:
        period = min(cooldown_s, MAX_COOLDOWN_S)
        return CoolState(failures=failures, open_until=now + period, period=period, trial_until=None)
    return replace(state, failures=failures)


def health_of(outcome: str, reason: str | None) -> Health:
    """What an attempt says about the provider's health: ``answer`` (ok, empty, insufficient), ``failure``
    (timeouts; connection, upstream, rate_limited, malformed, auth, payment, unexpected errors) or
    ``neutral`` (request-specific errors, config, cancelled, skipped, deadline)."""
    if outcome in ("ok", "empty", "insufficient"):
        return "answer"
    if outcome == "timeout":
        return "failure"
    if outcome == "error" and reason in _UNHEALTHY:
        return "failure"
    return "neutral"


# -- spend ----------------------------------------------------------------------------------------------------


def spend_allows(spent: Mapping[float, float], price: float, limits: Iterable[tuple[float, float]]) -> bool:
    """Whether reserving ``price`` keeps every ``(window_s, limit)`` limit, given ``spent[window_s]`` (what
    the window already holds, reservations included). Free calls always pass."""
    if price <= 0:
        return True
    return all(spent.get(window_s, 0.0) + price <= limit + 1e-12 for window_s, limit in limits)


def p95(samples: Sequence[float]) -> float | None:
    """The 95th percentile (nearest rank) of ``samples``; None with fewer than :data:`LATENCY_MIN_SAMPLES`."""
    if len(samples) < LATENCY_MIN_SAMPLES:
        return None
    ordered = sorted(samples)
    return float(ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)])


class Purse:
    """What one call may spend (``budget_usd``; ``None``: no cap) and what it has spent and holds in flight.

    One purse per call, shared by every run of that call: a search and the page fetches of its
    ``fetch_content`` draw on the same ``budget_usd``. A run checks and reserves a call's price in one step,
    before its first await (no two concurrent calls both pass), and releases it when the call ends."""

    __slots__ = ("in_flight", "in_flight_n", "limit", "spent")

    def __init__(self, limit: float | None = None) -> None:
        self.limit = limit
        self.spent = 0.0
        self.in_flight = 0.0  # the prices of the calls running, and how many there are
        self.in_flight_n = 0

    def fits(self, price: float) -> bool:
        """Whether a call of ``price`` fits beside what was spent and the prices in flight (the one rule of
        ``budget_usd``, :func:`perplexed.policy._ledger.budget_allows`; no limit: always)."""
        return self.limit is None or budget_allows(self.limit, self.spent, self.in_flight, price)

    def reserve(self, price: float) -> None:
        self.in_flight += price
        self.in_flight_n += 1

    def release(self, price: float) -> None:
        self.in_flight_n -= 1
        self.in_flight = self.in_flight - price if self.in_flight_n else 0.0


# -- the adaptive strategy's per-member record (issue 37) -----------------------------------------------------

MEMBER_DECAY = 0.95
"""Each new call of a member weighs its earlier calls by this much (about the last 20 calls count)."""


class MemberStats(NamedTuple):
    """What the state store has seen of one chain member, for ``strategy="adaptive"``: decayed counts of its
    ``ok`` answers (``ok``) and of its calls (``calls``; ``empty``, ``error``, ``timeout`` and ``insufficient``
    count as calls that were not ok), its decayed mean latency and cost, and how many calls it has had.
    Immutable (a tuple: cheap to build on every call)."""

    ok: float = 0.0
    calls: float = 0.0
    latency_ms: float | None = None
    cost_usd: float = 0.0
    total: int = 0

    @property
    def success(self) -> float | None:
        """The decayed success rate (None before the first call)."""
        return self.ok / self.calls if self.calls > 0 else None


def member_update(stats: MemberStats | None, ok: bool, latency_ms: float | None, cost_usd: float,
                  decay: float = MEMBER_DECAY) -> MemberStats:
    """``stats`` after one more call (pure; every store applies it atomically, Redis in Lua)."""
    old = stats if stats is not None else MemberStats()
    if latency_ms is None or not math.isfinite(latency_ms):
        latency = old.latency_ms
    else:
        latency = latency_ms if old.latency_ms is None else old.latency_ms * decay + latency_ms * (1 - decay)
    cost = cost_usd if old.total == 0 else old.cost_usd * decay + cost_usd * (1 - decay)
    return MemberStats(old.ok * decay + (1.0 if ok else 0.0), old.calls * decay + 1.0, latency, cost, old.total + 1)
