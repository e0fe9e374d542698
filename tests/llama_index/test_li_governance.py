"""The LlamaIndex components take cache_ttl_s, cache_single_flight and budget_usd as named keywords
(validated at construction) and pass them to the chain; sync and async."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index_perplexed import PerplexedRetriever, PerplexedToolSpec
from perplexed import Hit, InvalidRequest
from perplexed.providers import FunctionProvider


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, query: str, options: Any) -> list[Hit]:
        self.calls += 1
        return [Hit(url="https://a.example/", title="A", snippet="about a")]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_retriever_cache_ttl(mode: str) -> None:
    fn = Counting()
    retriever = PerplexedRetriever(FunctionProvider(fn, name="fn"), cache_ttl_s=60, cache_single_flight=True)
    for _ in range(3):
        nodes = retriever.retrieve("q") if mode == "sync" else await retriever.aretrieve("q")
        assert [n.node.metadata["url"] for n in nodes] == ["https://a.example/"]
    assert fn.calls == 1
    assert retriever.search_kwargs["cache_ttl_s"] == 60


def test_tool_spec_budget_skips_paid_providers() -> None:
    paid, free = Counting(), Counting()
    spec = PerplexedToolSpec([FunctionProvider(paid, name="paid", cost=0.5), FunctionProvider(free, name="free")],
                             budget_usd=0.1)
    assert "a.example" in spec.search("q")
    assert (paid.calls, free.calls) == (0, 1)


def test_bad_governance_options_fail_at_construction() -> None:
    with pytest.raises(InvalidRequest, match="budget_usd"):
        PerplexedRetriever("searxng", budget_usd=-1)
    with pytest.raises(InvalidRequest, match="cache_single_flight"):
        PerplexedRetriever("searxng", cache_single_flight="yes")
