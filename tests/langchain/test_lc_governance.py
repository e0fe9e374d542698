"""The LangChain adapters take cache_ttl_s, cache_single_flight and budget_usd as named fields (validated at
construction) and pass them to the chain: cached attempts, over-budget skips; sync and async."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_perplexed import PerplexedRetriever, PerplexedSearchTool
from perplexed import Hit
from perplexed.providers import FunctionProvider
from pydantic import ValidationError


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, query: str, options: Any) -> list[Hit]:
        self.calls += 1
        return [Hit(url="https://a.example/", title="A", snippet="about a")]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_retriever_cache_ttl(mode: str) -> None:
    fn = Counting()
    retriever = PerplexedRetriever(provider=FunctionProvider(fn, name="fn"), cache_ttl_s=60, cache_single_flight=True)
    for _ in range(3):
        docs = retriever.invoke("q") if mode == "sync" else await retriever.ainvoke("q")
        assert [d.metadata["url"] for d in docs] == ["https://a.example/"]
    assert fn.calls == 1
    assert retriever.cache_ttl_s == 60 and retriever.cache_single_flight is True


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_tool_budget_skips_paid_providers(mode: str) -> None:
    paid, free = Counting(), Counting()
    tool = PerplexedSearchTool(provider=[FunctionProvider(paid, name="paid", cost=0.5),
                                         FunctionProvider(free, name="free")], budget_usd=0.1)
    call = {"name": "perplexed_search", "args": {"query": "q"}, "id": "1", "type": "tool_call"}
    message = tool.invoke(call) if mode == "sync" else await tool.ainvoke(call)
    assert "a.example" in str(message.content)
    assert (paid.calls, free.calls) == (0, 1)


def test_bad_governance_fields_fail_at_construction() -> None:
    with pytest.raises((ValidationError, ValueError), match="budget_usd"):
        PerplexedRetriever(provider="searxng", budget_usd=-1)
    with pytest.raises((ValidationError, ValueError), match="cache_ttl_s"):
        PerplexedSearchTool(provider="searxng", cache_ttl_s=float("nan"))
