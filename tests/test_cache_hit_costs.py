"""What the twelfth session cut from a cache hit and a governed miss (issue 35) must not change: a hit's ledger line
(kept compact until read) reads as the engine's, a repeated call's remembered checks still check what can change
(the provider, the query's cleaning), a function provider's identity follows its label, and the memory store's
size estimate and frozen copies are what they were."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import perplexed
import pytest
from perplexed import ConfigError, Hit, InvalidRequest
from perplexed.providers import FetchAnswer, FetchProvider, FunctionProvider
from perplexed.store import MemoryStore


class EngineMemory(MemoryStore):
    """The memory store through the engine's admission (the hit path takes the exact ``MemoryStore`` only)."""


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    perplexed.reset()
    yield
    perplexed.reset()


def answers(calls: list[str]) -> Any:
    def search(query: str, options: Any) -> list[dict[str, Any]]:
        calls.append(query)
        return [{"url": "https://a.example/1", "title": "A", "raw": {"tags": ["x"], "n": 1}},
                {"url": "https://b.example/2", "title": "B"}]

    return search


def line(record: Any) -> tuple[Any, ...]:
    """A ledger line but its time and latency (clock readings)."""
    return (record.operation, record.provider, record.tag, record.outcome, record.reason, record.billable,
            record.cost, record.cost_source, record.cached, record.saved)


@pytest.mark.parametrize("tag", [None, "team-a"])
async def test_a_hits_ledger_line_reads_as_the_engines(tag: str | None) -> None:
    got = {}
    for path, kind in (("hit", MemoryStore), ("engine", EngineMemory)):
        perplexed.reset()
        store = kind()
        perplexed.configure(store=store)
        provider = FunctionProvider(answers([]), name="kb", cost=0.25)
        options: dict[str, Any] = {"cache_ttl_s": 600} if tag is None else {"cache_ttl_s": 600, "tag": tag}
        await perplexed.asearch("q", provider, **options)
        before = time.time()
        hit = await perplexed.asearch("q", provider, **options)
        assert hit.attempts[0].cached
        records = await store.usage_read(0.0, time.time() + 1)
        assert len(records) == 2 and records[1].ts >= before - 1
        assert type(records[1]) is type(records[0])  # a full record, made when read
        got[path] = [line(r) for r in records]
        # trimming before the hit keeps it; after it, nothing is left
        assert await store.usage_trim(before - 1) == 0
        assert await store.usage_trim(time.time() + 1) == 2
        assert await store.usage_read(0.0, time.time() + 1) == []
    assert got["hit"] == got["engine"]
    assert got["hit"][1] == ("search", "kb", tag or "", "ok", "", False, 0.0, "", True, 0.25)


def test_the_memory_ledger_drops_lines_past_its_retention_hits_included() -> None:
    from perplexed.store._ledger import MemoryLedger, UsageRecord  # private: the in-process ledger, directly

    ledger = MemoryLedger()
    ledger.add([UsageRecord(100.0, "search", "a")], keep_s=50.0)
    ledger.add_hit(120.0, "search", "a", "", 0.0, 0.5, keep_s=50.0)
    assert len(ledger) == 2
    ledger.add_hit(160.0, "search", "b", "t", 3.0, 0.0, keep_s=50.0)  # 100 < 160 - 50: the first goes
    assert [r.provider for r in ledger.read(0.0, 1000.0)] == ["a", "b"]
    ledger.add([UsageRecord(200.0, "fetch", "c")], keep_s=50.0)  # 120 < 150: the first hit goes too
    records = ledger.read(0.0, 1000.0)
    assert [(r.ts, r.provider, r.tag, r.cached, r.latency_ms) for r in records] == [
        (160.0, "b", "t", True, 3.0), (200.0, "c", "", False, 0.0)]
    assert ledger.read(161.0, 1000.0) == records[1:]


async def test_a_repeated_call_still_checks_the_provider_and_cleans_the_query() -> None:
    perplexed.configure(store=MemoryStore())
    calls: list[str] = []
    provider = FunctionProvider(answers(calls), name="kb")
    first = await perplexed.asearch("  zoning\tsetbacks ", provider, cache_ttl_s=600)
    again = await perplexed.asearch("  zoning\tsetbacks ", provider, cache_ttl_s=600)
    assert first.query == again.query == "zoning setbacks" and again.attempts[0].cached and len(calls) == 1

    class Mirror(FetchProvider):
        name = "mirror"

        async def afetch(self, url: str, options: Any) -> FetchAnswer:  # pragma: no cover - never called
            return FetchAnswer(text="")

    for _ in range(2):  # the same query and options as a call that passed: the provider is checked every time
        with pytest.raises(ConfigError, match="cannot search"):
            await perplexed.asearch("  zoning\tsetbacks ", Mirror(), cache_ttl_s=600)
    # a value equal to a checked one but of another type is checked on its own
    with pytest.raises(InvalidRequest):
        await perplexed.asearch("  zoning\tsetbacks ", provider, cache_ttl_s="600")
    with pytest.raises(InvalidRequest):
        await perplexed.asearch("\x00", provider, cache_ttl_s=600)
    assert len(calls) == 1


def test_a_function_providers_identity_follows_its_label() -> None:
    from perplexed.engine._governance import provider_identity  # private: the identity digest, directly

    provider = FunctionProvider(answers([]), name="kb")
    first = provider_identity(provider)
    assert provider_identity(provider) == first
    provider.label = "kb2"
    assert provider_identity(provider) != first
    provider.label = "kb"
    assert provider_identity(provider) == first
    assert provider_identity(FunctionProvider(answers([]), name="other")) != first


def test_the_size_estimate_counts_strings_containers_and_pages() -> None:
    from perplexed.store._base import snapshot_hits  # private: the cache's frozen snapshot
    from perplexed.store.memory import _answer_bytes  # private: the cache size estimate, tested directly

    plain = _answer_bytes(snapshot_hits([Hit(id=1, url="https://example.com/a")]), None)
    longer = _answer_bytes(snapshot_hits([Hit(id=1, url="https://example.com/a", title="x" * 100)]), None)
    assert longer - plain == 100
    nested = Hit(id=1, url="https://example.com/a", raw={"k": ["ab", 1, None, {"c": b"xyz"}], "t": (1, "q")})
    # raw itself, its 2 keys and 2 values, the list's 4 items, the inner dict's key and value, the tuple's 2
    # items: 13 values, and the strings' lengths (an empty raw, the plain hit's, counts nothing)
    assert _answer_bytes(snapshot_hits([nested]), None) - plain == 13 * 64 + len("ktabcxyzq")
    assert _answer_bytes(snapshot_hits([]), "d" * 70) - _answer_bytes(snapshot_hits([]), None) == 70


def test_a_cached_answers_hits_are_read_only_copies_of_the_providers() -> None:
    store = MemoryStore()
    from perplexed.store._base import CachedAnswer, Record  # private: a store record, written directly

    mine = [Hit(id=1, url="https://example.com/a", raw={"tags": ["x"]}, sources=[{"provider": "p"}]),
            Hit(id=2, url="https://example.com/b")]
    store.record_now(Record(provider="p", label="p", health="answer", cache_key="k",
                            answer=CachedAnswer(mine, "d"), ttl_s=60))
    mine[0].raw["tags"].append("y")  # the caller's own objects: the cache keeps what it had
    mine[0].sources.append({"provider": "q"})
    cached = store.cached_now("k")
    assert cached is not None and cached.detail == "d"
    assert cached.hits[0].raw == {"tags": ["x"]} and cached.hits[0].sources == [{"provider": "p"}]
    with pytest.raises(TypeError):
        cached.hits[0].raw["tags"].append("z")  # type: ignore[attr-defined]
    assert cached.hits[1].raw == {} and cached.hits[1].sources == []


async def test_a_hit_reads_the_price_from_the_environment_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    perplexed.configure(store=MemoryStore())
    monkeypatch.setenv("PERPLEXED_PRICE_KB", "0.25")
    provider = FunctionProvider(answers([]), name="kb")
    await perplexed.asearch("q", provider, cache_ttl_s=600)
    first = await perplexed.asearch("q", provider, cache_ttl_s=600)
    monkeypatch.setenv("PERPLEXED_PRICE_KB", "0.75")  # read again at once, not remembered
    second = await perplexed.asearch("q", provider, cache_ttl_s=600)
    monkeypatch.delenv("PERPLEXED_PRICE_KB")
    third = await perplexed.asearch("q", provider, cache_ttl_s=600)
    assert all(r.attempts[0].cached for r in (first, second, third))
    assert (first.usage.saved_usd, second.usage.saved_usd) == (pytest.approx(0.25), pytest.approx(0.75))
    assert third.usage.saved_usd == pytest.approx(provider.default_price)
