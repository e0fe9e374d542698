"""The LangChain adapters take the strategy and quality-floor options as named fields (validated at
construction) and pass them to the chain: merged hits carry ``sources``, hedged losers are ``cancelled``,
answers below the floor are ``insufficient``; sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_perplexed import PerplexedRetriever, PerplexedSearchTool
from perplexed import Hit, Result
from perplexed.providers import FunctionProvider
from pydantic import ValidationError


def provider(name: str, *urls: str, hang: bool = False) -> FunctionProvider:
    async def fn(query: str, options: Any) -> list[Hit]:
        if hang:
            await asyncio.sleep(3600)
        return [Hit(url=u, title=u, snippet=f"about {u}") for u in urls]

    return FunctionProvider(fn, name=name)


EXA = provider("exa", "https://a.example/", "https://b.example/")
BRAVE = provider("brave", "https://b.example/", "https://c.example/")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_retriever_merge(mode: str) -> None:
    retriever = PerplexedRetriever(provider=[EXA, BRAVE], strategy="merge", merge_providers=2, k=5)
    docs = retriever.invoke("q") if mode == "sync" else await retriever.ainvoke("q")
    assert [d.metadata["url"] for d in docs] == ["https://b.example/", "https://a.example/", "https://c.example/"]
    assert docs[0].metadata["sources"] == [{"provider": "exa", "rank": 2}, {"provider": "brave", "rank": 1}]
    assert all(d.metadata["answered_by"] == "exa,brave" for d in docs)
    assert [a["outcome"] for a in docs[0].metadata["attempts"]] == ["ok", "ok"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_retriever_hedged(mode: str) -> None:
    retriever = PerplexedRetriever(provider=[provider("slow", "https://s.example/", hang=True), EXA],
                                   strategy="hedged", hedge_after_ms=20, provider_timeout_ms=60_000)
    docs = retriever.invoke("q") if mode == "sync" else await retriever.ainvoke("q")
    assert docs[0].metadata["answered_by"] == "exa"
    assert [(a["provider"], a["outcome"]) for a in docs[0].metadata["attempts"]] == [
        ("slow", "cancelled"), ("exa", "ok")
    ]
    assert "sources" not in docs[0].metadata  # only merged hits have sources


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_retriever_min_hits_and_accept(mode: str) -> None:
    one = provider("one", "https://1.example/")
    retriever = PerplexedRetriever(provider=[one, EXA], min_hits=2)
    docs = retriever.invoke("q") if mode == "sync" else await retriever.ainvoke("q")
    assert docs[0].metadata["answered_by"] == "exa"
    assert [a["outcome"] for a in docs[0].metadata["attempts"]] == ["insufficient", "ok"]

    seen: list[Result] = []
    gate = PerplexedRetriever(provider=[EXA, BRAVE], accept=lambda r: seen.append(r) or r.provider == "brave")
    docs = gate.invoke("q") if mode == "sync" else await gate.ainvoke("q")
    assert docs[0].metadata["answered_by"] == "brave"
    assert [r.provider for r in seen] == ["exa", "brave"]


def test_per_call_override_of_the_strategy() -> None:
    retriever = PerplexedRetriever(provider=[EXA, BRAVE])
    docs = retriever.invoke("q", strategy="merge")
    assert docs[0].metadata["answered_by"] == "exa,brave"


@pytest.mark.parametrize(
    "options",
    [{"strategy": "fastest"}, {"hedge_after_ms": -1}, {"merge_providers": 0}, {"min_hits": 0},
     {"accept": "yes"}],
)
def test_bad_options_fail_at_construction(options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        PerplexedRetriever(provider=EXA, **options)


def test_named_fields_and_json_form() -> None:
    def gate(r: Result) -> bool:
        return True

    retriever = PerplexedRetriever(provider=EXA, strategy="hedged", hedge_after_ms="auto", min_hits=1, accept=gate)
    assert retriever.strategy == "hedged"
    assert retriever.hedge_after_ms == "auto"
    assert retriever.min_hits == 1
    assert retriever.accept is gate
    assert "gate" in retriever.model_dump_json()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_search_tool_merge(mode: str) -> None:
    tool = PerplexedSearchTool(provider=[EXA, BRAVE], strategy="merge")
    out = tool.invoke({"query": "q"}) if mode == "sync" else await tool.ainvoke({"query": "q"})
    text = out if isinstance(out, str) else str(out)
    assert "https://a.example/" in text and "https://c.example/" in text
