"""The pure governance policy (perplexed.policy._policy), table-style with explicit times: no clock, no I/O."""

from __future__ import annotations

import pytest
from perplexed import ConfigError
from perplexed.policy._policy import (  # private: the pure governance policy, with explicit times
    CoolState,
    RateLimit,
    check_provider_settings,
    cool_admit,
    cool_record,
    health_of,
    p95,
    parse_rate_limit,
    parse_spend_limits,
    slot_admit,
    spend_allows,
    window_admit,
)


@pytest.mark.parametrize(
    ("text", "limit", "window"),
    [("5/s", 5, 1.0), ("1/s", 1, 1.0), ("60/min", 60, 60.0), ("60/minute", 60, 60.0), ("1000/hour", 1000, 3600.0),
     ("10000/day", 10000, 86400.0), (" 3 / sec ", 3, 1.0), ("2/h", 2, 3600.0), ("7/d", 7, 86400.0), ("4/S", 4, 1.0)],
)
def test_parse_rate_limit(text: str, limit: int, window: float) -> None:
    parsed = parse_rate_limit(text)
    assert parsed is not None
    assert (parsed.limit, parsed.window_s) == (limit, window)


@pytest.mark.parametrize("bad", ["", "5", "0/s", "-1/s", "5/week", "five/s", "5/s/s", 5, 1.5, ["5/s"], "1.5/s"])
def test_malformed_rate_limit_is_config_error_naming_the_setting(bad: object) -> None:
    with pytest.raises(ConfigError, match="rate_limit"):
        parse_rate_limit(bad)


def test_no_rate_limit() -> None:
    assert parse_rate_limit(None) is None


# -- rolling window: (admission times, now, limit) -> (allowed, wait) ------------------------------------------

R3 = RateLimit(3, 1.0, "3/s")


@pytest.mark.parametrize(
    ("stamps", "now", "allowed", "wait"),
    [
        ([], 0.0, True, 0.0),
        ([0.0, 0.1], 0.2, True, 0.0),
        ([0.0, 0.1, 0.2], 0.3, False, 0.7),        # the oldest leaves at 1.0
        ([0.0, 0.1, 0.2], 1.0, True, 0.0),         # exactly one window later: 0.0 is out (window is (now-1, now])
        ([0.0, 0.1, 0.2], 0.999, False, 0.001),
        ([0.5, 0.9, 1.05], 1.06, False, 0.44),     # rolling, not fixed: 1.0 does not reset anything
        ([0.0, 0.1, 0.2, 0.3], 0.35, False, 0.75), # over-full (another process): the 2nd oldest must leave
        ([-5.0, -4.0, 0.1], 0.2, True, 0.0),       # stale stamps are ignored
    ],
)
def test_window_admit(stamps: list[float], now: float, allowed: bool, wait: float) -> None:
    ok, wait_s = window_admit(stamps, now, R3)
    assert ok is allowed
    assert wait_s == pytest.approx(wait, abs=1e-9)


def test_window_never_exceeds_limit_in_any_rolling_window() -> None:
    # simulate a greedy caller that retries exactly when told: no window of 1 s ever holds more than 3
    admitted: list[float] = []
    now = 0.0
    while now < 10.0:
        ok, wait = window_admit(admitted, now, R3)
        if ok:
            admitted.append(now)
            now += 0.013
        else:
            now += max(wait, 1e-6)
    for t in admitted:
        assert sum(1 for s in admitted if t - 1.0 < s <= t) <= 3
    assert len(admitted) >= 28  # and it does use the allowance


# -- a fleet taking turns while its store is down: slot_admit -----------------------------------------------------

R5 = RateLimit(5, 1.0, "5/s")  # slots of 1 / 4.25 s, each open for its first eighth
L5 = 1.0 / 4.25


K = 430  # the first slot past the outage's first window (100.0 + 1.0 s): it starts at 101.18 s, member 6's
E = 1e-9


@pytest.mark.parametrize(
    ("now", "index", "last", "allowed", "wait", "slot"),
    [
        (100.5, 6, None, False, K * L5 - 100.5, K),  # the outage's first window (from 100.0): nothing, then its slot
        (100.5, 2, None, False, (K + 4) * L5 - 100.5, K + 4),
        (K * L5 + E, 6, None, True, 0.0, K),  # the start of this member's slot
        ((K + 0.125) * L5 - E, 6, None, True, 0.0, K),  # the end of its opening
        ((K + 0.125) * L5 + E, 6, None, False, (K + 8) * L5 - (K + 0.125) * L5 - E, K + 8),  # just after: the next
        (K * L5 + E, 6, K, False, 8 * L5 - E, K + 8),  # one call per slot
        (K * L5 + E, 7, None, False, L5 - E, K + 1),  # another member's slot: this one's is next
        (K * L5 + E, 5, None, False, 7 * L5 - E, K + 7),
    ],
)
def test_slot_admit(now: float, index: int, last: int | None, allowed: bool, wait: float, slot: int) -> None:
    ok, wait_s, turn = slot_admit(now, 100.0, index, 8, R5, last)
    assert (ok, turn) == (allowed, slot)
    assert wait_s == pytest.approx(wait, abs=1e-6)


@pytest.mark.parametrize(("limit", "fleet"), [(RateLimit(5, 1.0, ""), 8), (RateLimit(1, 1.0, ""), 3),
                                              (RateLimit(10, 1.0, ""), 4), (RateLimit(3, 60.0, ""), 5),
                                              (RateLimit(2, 1.0, ""), 1)])
def test_a_fleet_taking_turns_never_passes_the_limit(limit: RateLimit, fleet: int) -> None:
    # every member asks all the time, and again exactly when told: no rolling window ever holds more than the
    # limit, nothing starts in the outage's first window, and the fleet keeps (limit - 0.75) per window
    start = 1_700_000_000.123
    calls: list[float] = []
    for index in range(fleet):
        now, last = start, None
        while now < start + 40 * limit.window_s:
            ok, wait, turn = slot_admit(now, start, index, fleet, limit, last)
            if ok:
                calls.append(now)
                last = turn
                now += limit.window_s / 1000
            else:
                assert wait > 0
                now += wait
    calls.sort()
    assert calls[0] >= start + limit.window_s
    assert max(sum(1 for c in calls if t <= c < t + limit.window_s) for t in calls) <= limit.limit
    assert len(calls) >= (limit.limit - 0.75) * 38


# -- cool-down transitions: (state, event, now) -> state ---------------------------------------------------------

AFTER, PERIOD = 3, 30.0


def fail(state: CoolState, now: float, trial: bool = False, retry: float | None = None) -> CoolState:
    return cool_record(state, now, "failure", trial=trial, cooldown_after=AFTER, cooldown_s=PERIOD, retry_after=retry)


@pytest.mark.parametrize(
    ("state", "health", "trial", "retry", "expected"),
    [
        (CoolState(), "failure", False, None, CoolState(failures=1)),
        (CoolState(failures=2), "failure", False, None, CoolState(3, 130.0, 30.0, None)),  # reaches 3 at t=100
        (CoolState(failures=2), "answer", False, None, CoolState()),
        (CoolState(failures=2), "neutral", False, None, CoolState(failures=2)),
        (CoolState(3, 130.0, 30.0, None), "failure", False, None, CoolState(4, 130.0, 30.0, None)),  # in flight earlier
        (CoolState(3, 90.0, 30.0, 105.0), "failure", True, None, CoolState(4, 160.0, 60.0, None)),  # trial failed: x2
        (CoolState(9, 90.0, 480.0, 105.0), "failure", True, None, CoolState(10, 700.0, 600.0, None)),  # capped 600
        (CoolState(3, 90.0, 30.0, 105.0), "answer", True, None, CoolState()),  # trial ok: closed, period reset
        (CoolState(3, 90.0, 30.0, 105.0), "neutral", True, None, CoolState(3, 90.0, 30.0, None)),  # lease released
        (CoolState(), "failure", False, 12.5, CoolState(1, 112.5, 30.0, None)),  # Retry-After: at once, exactly
        (CoolState(), "failure", False, 5000.0, CoolState(1, 700.0, 30.0, None)),  # ... capped at 600
    ],
)
def test_cool_record_table(state: CoolState, health: str, trial: bool, retry: float | None, expected: CoolState) -> None:
    got = cool_record(state, 100.0, health, trial=trial, cooldown_after=AFTER, cooldown_s=PERIOD,  # type: ignore[arg-type]
                      retry_after=retry)
    assert got == expected


def test_cool_record_off_changes_nothing() -> None:
    state = CoolState(failures=2)
    assert cool_record(state, 1.0, "failure", trial=False, cooldown_after=None, cooldown_s=30.0) is state


@pytest.mark.parametrize(
    ("state", "now", "early", "verdict", "wait", "lease"),
    [
        (CoolState(), 0.0, False, "call", 0.0, None),
        (CoolState(failures=2), 0.0, False, "call", 0.0, None),
        (CoolState(3, 130.0, 30.0, None), 100.0, False, "cooling_down", 30.0, None),
        (CoolState(3, 130.0, 30.0, None), 130.0, False, "trial", 0.0, 145.0),   # lease = now + 15
        (CoolState(3, 130.0, 30.0, 140.0), 131.0, False, "cooling_down", 0.0, 140.0),  # trial in flight
        (CoolState(3, 130.0, 30.0, 140.0), 140.5, False, "trial", 0.0, 155.5),  # lease expired: new trial
        (CoolState(3, 130.0, 30.0, None), 100.0, True, "trial", 0.0, 115.0),    # early trial at the chain's end
        (CoolState(3, 130.0, 30.0, 110.0), 100.0, True, "cooling_down", 30.0, 110.0),  # ... but one at a time
    ],
)
def test_cool_admit_table(state: CoolState, now: float, early: bool, verdict: str, wait: float,
                          lease: float | None) -> None:
    got, new, wait_s = cool_admit(state, now, 15.0, early)
    assert got == verdict
    assert wait_s == pytest.approx(wait)
    assert new.trial_until == lease


def test_full_cycle_with_a_fake_clock() -> None:
    state, now = CoolState(), 0.0
    for _ in range(3):
        state = fail(state, now)
        now += 1
    assert state.open_until == 32.0  # 30 s from the third failure (t=2)
    periods = []
    for _ in range(7):  # every trial fails: 60, 120, 240, 480, 600, 600, 600
        verdict, state, _ = cool_admit(state, state.open_until or now, 10.0)
        assert verdict == "trial"
        now = state.trial_until or 0.0
        state = fail(state, now, trial=True)
        periods.append(state.period)
    assert periods == [60.0, 120.0, 240.0, 480.0, 600.0, 600.0, 600.0]
    verdict, state, _ = cool_admit(state, state.open_until or 0.0, 10.0)
    state = cool_record(state, 1e6, "answer", trial=True, cooldown_after=AFTER, cooldown_s=PERIOD)
    assert state == CoolState()


@pytest.mark.parametrize(
    ("outcome", "reason", "health"),
    [("ok", None, "answer"), ("empty", None, "answer"), ("insufficient", None, "answer"),
     ("timeout", "timeout", "failure"), ("error", "connection", "failure"), ("error", "upstream", "failure"),
     ("error", "rate_limited", "failure"), ("error", "malformed", "failure"), ("error", "auth", "failure"),
     ("error", "payment", "failure"), ("error", "unexpected", "failure"), ("error", "bad_request", "neutral"),
     ("error", "not_found", "neutral"), ("error", "config", "neutral"), ("cancelled", None, "neutral"),
     ("skipped", "cooling_down", "neutral"), ("deadline", None, "neutral")],
)
def test_health_of(outcome: str, reason: str | None, health: str) -> None:
    assert health_of(outcome, reason) == health


@pytest.mark.parametrize(
    ("spent", "price", "ok"),
    [({3600.0: 0.0, 86400.0: 0.0}, 0.5, True), ({3600.0: 0.5, 86400.0: 4.0}, 0.5, True),
     ({3600.0: 0.6, 86400.0: 4.0}, 0.5, False), ({3600.0: 0.0, 86400.0: 4.8}, 0.5, False),
     ({3600.0: 9.0, 86400.0: 9.0}, 0.0, True)],
)
def test_spend_allows(spent: dict[float, float], price: float, ok: bool) -> None:
    assert spend_allows(spent, price, [(3600.0, 1.0), (86400.0, 5.0)]) is ok


def test_parse_spend_limits() -> None:
    assert parse_spend_limits({"day": 5, "hour": 1.0}) == {"day": 5.0, "hour": 1.0}
    for bad in ({"fortnight": 1.0}, {"day": -1}, {"day": "5"}, {"day": True}, [("day", 1.0)]):
        with pytest.raises(ConfigError, match="spend_limits"):
            parse_spend_limits(bad)


def test_p95() -> None:
    assert p95([1.0, 2.0, 3.0, 4.0]) is None
    assert p95([float(i) for i in range(1, 101)]) == 95.0
    assert p95([5.0] * 5) == 5.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"rate_limit_wait_ms": -1}, "rate_limit_wait_ms"), ({"cooldown_after": 0}, "cooldown_after"),
     ({"cooldown_after": True}, "cooldown_after"), ({"cooldown_s": 0}, "cooldown_s"),
     ({"cooldown_s": float("nan")}, "cooldown_s"), ({"rate_limit": "x"}, "rate_limit")],
)
def test_bad_provider_settings_name_the_setting(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        check_provider_settings(**kwargs)  # type: ignore[arg-type]
