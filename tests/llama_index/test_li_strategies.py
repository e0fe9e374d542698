"""The LlamaIndex components take the strategy and quality-floor options as named keywords (validated at
construction) and pass them to the chain: merged nodes carry ``sources``, hedged losers are ``cancelled``,
answers below the floor are ``insufficient``; sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index_perplexed import PerplexedRetriever, PerplexedToolSpec
from perplexed import Hit, InvalidRequest, Result
from perplexed.providers import FunctionProvider


def provider(name: str, *urls: str, hang: bool = False) -> FunctionProvider:
    async def fn(query: str, options: Any) -> list[Hit]:
        if hang:
            await asyncio.sleep(3600)
        return [Hit(url=u, title=u, snippet=f"about {u}") for u in urls]

    return FunctionProvider(fn, name=name)


EXA = provider("exa", "https://a.example/", "https://b.example/")
BRAVE = provider("brave", "https://b.example/", "https://c.example/")


async def retrieve(retriever: PerplexedRetriever, mode: str) -> list[Any]:
    return retriever.retrieve("q") if mode == "sync" else await retriever.aretrieve("q")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_retriever_merge(mode: str) -> None:
    nodes = await retrieve(PerplexedRetriever([EXA, BRAVE], strategy="merge", merge_providers=2), mode)
    assert [n.node.metadata["url"] for n in nodes] == [
        "https://b.example/", "https://a.example/", "https://c.example/"
    ]
    assert nodes[0].node.metadata["sources"] == [{"provider": "exa", "rank": 2}, {"provider": "brave", "rank": 1}]
    assert nodes[0].node.metadata["answered_by"] == "exa,brave"
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True)  # the fused scores keep the fused order


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_retriever_hedged(mode: str) -> None:
    slow = provider("slow", "https://s.example/", hang=True)
    nodes = await retrieve(PerplexedRetriever([slow, EXA], strategy="hedged", hedge_after_ms=20,
                                              provider_timeout_ms=60_000), mode)
    meta = nodes[0].node.metadata
    assert meta["answered_by"] == "exa"
    assert [(a["provider"], a["outcome"]) for a in meta["attempts"]] == [("slow", "cancelled"), ("exa", "ok")]
    assert "sources" not in meta


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_retriever_min_hits_and_accept(mode: str) -> None:
    one = provider("one", "https://1.example/")
    nodes = await retrieve(PerplexedRetriever([one, EXA], min_hits=2), mode)
    assert [a["outcome"] for a in nodes[0].node.metadata["attempts"]] == ["insufficient", "ok"]

    def gate(result: Result) -> bool | str:
        return True if result.provider == "brave" else "not brave"

    nodes = await retrieve(PerplexedRetriever([EXA, BRAVE], accept=gate), mode)
    assert nodes[0].node.metadata["answered_by"] == "brave"


@pytest.mark.parametrize(
    ("options", "param"),
    [({"strategy": "fastest"}, "strategy"), ({"hedge_after_ms": -1}, "hedge_after_ms"),
     ({"merge_providers": 0}, "merge_providers"), ({"min_hits": 0}, "min_hits"),
     ({"min_hits": 4, "similarity_top_k": 3}, "min_hits"), ({"accept": "yes"}, "accept")],
)
def test_bad_options_fail_at_construction(options: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        PerplexedRetriever(EXA, **options)
    assert info.value.param == param


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_tool_spec_merge(mode: str) -> None:
    spec = PerplexedToolSpec([EXA, BRAVE], strategy="merge")
    tool = next(t for t in spec.to_tool_list() if t.metadata.name == "perplexed_search")
    out = tool.call(query="q") if mode == "sync" else await tool.acall(query="q")
    assert "https://a.example/" in str(out) and "https://c.example/" in str(out)
