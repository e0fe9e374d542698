"""The engine is generic over the operation: a small operation that is not search (look up a word's
definitions in a chain of dictionaries) runs through the same run loop, with fallback, the cache, hedging,
merge, the quality floor and ``all_providers_failed``, without touching the engine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from perplexed import Attempt, ChainOptions, Hit, Outcome, UpstreamError, reset, telemetry
from perplexed.engine import _engine  # private: runs a made-up operation through the engine's run loop
from perplexed.providers import CallableProvider, Provider


class Dictionary(CallableProvider):
    """A test member: ``define(word)`` after ``delay`` seconds, or the failure ``fail`` names."""

    name = "dictionary"

    def __init__(self, label: str, entries: dict[str, list[str]], *, delay: float = 0.0,
                 fail: str | None = None, cost: float | None = None) -> None:
        super().__init__(name=label, cost=cost)
        self.entries = entries
        self.delay = delay
        self.failure = fail
        self.calls = 0

    async def define(self, word: str) -> list[str]:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.failure:
            raise self.fail(self.failure, f"{self.label} is down")
        return list(self.entries.get(word, []))


class Definitions:
    """The operation: a word -> its definitions (a list of strings)."""

    name = "define"
    subject_key = "word"
    nothing: list[str] = []

    def __init__(self, word: str, members: Sequence[Dictionary], **chain: Any) -> None:
        self.subject = word
        self.members = list(members)
        self.chain = ChainOptions.build(**chain)
        self.min_definitions = 0

    def client(self, member: Provider) -> None:
        return None

    async def call(self, member: Provider, client: None) -> list[str]:
        assert isinstance(member, Dictionary)
        return await member.define(self.subject)

    def finish(self, member: Provider, raw: list[str]) -> tuple[list[str], float, str | None]:
        return raw, member.price(), None

    def is_empty(self, answer: list[str]) -> bool:
        return not answer

    def size(self, answer: list[str]) -> int:
        return len(answer)

    def insufficient(self, label: str, answer: list[str], attempts: Callable[[], list[Attempt]]) -> str | None:
        return "too_few" if len(answer) < self.min_definitions else None

    def price(self, member: Provider) -> float:
        return member.price()

    def cache_parts(self, member: Provider) -> tuple[str, ...] | None:
        return ("define", self.subject)

    def to_cache(self, answer: list[str]) -> list[Hit]:
        return [Hit(id=n, url=f"urn:definition:{n}", title=text) for n, text in enumerate(answer, start=1)]

    def from_cache(self, stored: Sequence[Hit]) -> list[str]:
        return [hit.title for hit in stored]

    def combine(self, answers: Sequence[tuple[str, list[str]]]) -> list[str]:
        out: list[str] = []
        for _label, texts in answers:
            out.extend(t for t in texts if t not in out)
        return out

    def result(self, provider: str, answer: list[str], attempts: list[Attempt]) -> dict[str, Any]:
        return {"word": self.subject, "provider": provider, "definitions": list(answer), "attempts": attempts}


@pytest.fixture(autouse=True)
def _fresh_governance() -> Any:
    reset()
    yield
    reset()


async def test_falls_back_past_an_error_and_an_empty_answer() -> None:
    down = Dictionary("down", {}, fail="server")
    blank = Dictionary("blank", {})
    good = Dictionary("good", {"chain": ["a sequence of links"]})
    seen: list[str] = []
    result = await _engine.run(Definitions("chain", [down, blank, good]), lambda a: seen.append(a.provider))
    assert result["provider"] == "good"
    assert result["definitions"] == ["a sequence of links"]
    assert [(a.provider, a.outcome, a.reason) for a in result["attempts"]] == [
        ("down", Outcome.ERROR, "server"), ("blank", Outcome.EMPTY, None), ("good", Outcome.OK, None),
    ]
    assert seen == ["down", "blank", "good"]


async def test_attempt_event_and_span_are_named_after_the_operation() -> None:
    events: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    with telemetry.scoped(lambda name, measurements, metadata: events.append((name, dict(metadata)))):
        await _engine.run(Definitions("chain", [Dictionary("good", {"chain": ["x"]})]))
    assert [(name, meta["word"], meta["provider"]) for name, meta in events] == [
        (("perplexed", "define", "attempt"), "chain", "good"),
    ]


async def test_all_members_failing_is_all_providers_failed() -> None:
    with pytest.raises(UpstreamError) as info:
        await _engine.run(Definitions("chain", [Dictionary("a", {}, fail="server"),
                                               Dictionary("b", {}, fail="rate_limited")]))
    assert info.value.reason == "all_providers_failed"
    assert [a.reason for a in info.value.attempts] == ["server", "rate_limited"]


async def test_an_empty_answer_is_the_result_when_nobody_answers() -> None:
    result = await _engine.run(Definitions("zzz", [Dictionary("a", {}), Dictionary("b", {}, fail="server")]))
    assert (result["provider"], result["definitions"]) == ("a", [])


async def test_the_cache_answers_the_second_run_without_a_call() -> None:
    good = Dictionary("good", {"chain": ["a sequence of links", "a store"]})
    first = await _engine.run(Definitions("chain", [good], cache_ttl_s=60))
    second = await _engine.run(Definitions("chain", [good], cache_ttl_s=60))
    assert good.calls == 1
    assert second["definitions"] == first["definitions"] == ["a sequence of links", "a store"]
    assert [a.cached for a in second["attempts"]] == [True]
    other_word = await _engine.run(Definitions("link", [good], cache_ttl_s=60))
    assert (good.calls, other_word["definitions"]) == (2, [])


async def test_hedged_starts_the_next_member_beside_a_slow_one_and_cancels_the_loser() -> None:
    slow = Dictionary("slow", {"chain": ["late"]}, delay=5.0)
    fast = Dictionary("fast", {"chain": ["early"]})
    result = await _engine.run(Definitions("chain", [slow, fast], strategy="hedged", hedge_after_ms=20))
    assert result["provider"] == "fast"
    assert result["definitions"] == ["early"]
    assert [(a.provider, a.outcome) for a in result["attempts"]] == [
        ("slow", Outcome.CANCELLED), ("fast", Outcome.OK),
    ]


async def test_merge_combines_the_answers_through_the_operation() -> None:
    a = Dictionary("a", {"chain": ["x", "y"]})
    b = Dictionary("b", {"chain": ["y", "z"]})
    result = await _engine.run(Definitions("chain", [a, b], strategy="merge"))
    assert result["provider"] == "a,b"
    assert result["definitions"] == ["x", "y", "z"]


async def test_the_operation_decides_what_is_insufficient() -> None:
    thin = Dictionary("thin", {"chain": ["one"]})
    rich = Dictionary("rich", {"chain": ["one", "two"]})
    op = Definitions("chain", [thin, rich], min_hits=1)
    op.min_definitions = 2
    result = await _engine.run(op)
    assert result["provider"] == "rich"
    assert [(a.outcome, a.reason) for a in result["attempts"]] == [
        (Outcome.INSUFFICIENT, "too_few"), (Outcome.OK, None),
    ]


async def test_per_member_timeout_and_paid_attempts() -> None:
    stuck = Dictionary("stuck", {"chain": ["never"]}, delay=5.0)
    paid = Dictionary("paid", {"chain": ["yes"]}, cost=0.002)
    result = await _engine.run(Definitions("chain", [stuck, paid], provider_timeout_ms=50))
    assert [(a.provider, a.outcome) for a in result["attempts"]] == [
        ("stuck", Outcome.TIMEOUT), ("paid", Outcome.OK),
    ]
    assert result["attempts"][1].cost == pytest.approx(0.002)
