"""The memory store's cache is bounded least-recently-used: a cache hit keeps an entry, so a full cache gives up
the entry nobody asked for the longest, not the one filled first."""

from __future__ import annotations

from typing import Any

import perplexed
from perplexed.providers import FunctionProvider
from perplexed.store import MemoryStore


def test_a_full_cache_gives_up_the_least_recently_used_entry() -> None:
    asked: list[str] = []

    def kb(query: str, options: Any) -> list[dict[str, str]]:
        asked.append(query)
        return [{"url": f"https://example.org/{query}", "title": query}]

    perplexed.configure(store=MemoryStore(max_cache_entries=3))
    provider = FunctionProvider(kb, name="kb")

    def search(query: str) -> bool:
        return perplexed.search(query, provider, cache_ttl_s=600).attempts[0].cached

    assert [search(q) for q in ("q1", "q2", "q3")] == [False, False, False]
    assert search("q1")  # q1 is now the most recently used
    assert not search("q4")  # the cache is full: q2, the least recently used, goes
    assert search("q1") and search("q3")
    assert not search("q2")
    assert asked == ["q1", "q2", "q3", "q4", "q2"]
