"""answer()/aanswer() pass the strategy and quality-floor options to their search: merged sources with
``sources`` ranks, a hedged loser cancelled, an insufficient answer moving the chain on."""

from __future__ import annotations

import asyncio
from typing import Any

import perplexed
import pytest
from perplexed import Hit, InvalidRequest
from perplexed.providers import FunctionProvider
from test_answer_fakes import ANSWER_TEXT, ZONING_HITS, FakeAgentAPI, ok, provider, response_json

QUERY = "What are typical zoning setbacks?"


@pytest.fixture
def api() -> FakeAgentAPI:
    return FakeAgentAPI(reply=ok(response_json(ANSWER_TEXT)))


def hangs(name: str) -> FunctionProvider:
    async def fn(query: str, options: Any) -> list[Hit]:
        await asyncio.sleep(3600)
        return []

    return FunctionProvider(fn, name=name)


async def run(api: FakeAgentAPI, mode: str, **kw: Any) -> perplexed.Answer:
    if mode == "sync":
        return perplexed.answer(QUERY, client=api.client(), **kw)
    return await perplexed.aanswer(QUERY, client=api.async_client(), **kw)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_answer_with_merge(api: FakeAgentAPI, mode: str) -> None:
    a = provider(ZONING_HITS[:2], name="a", cost=0.001)
    b = provider(ZONING_HITS[1:], name="b", cost=0.002)
    ans = await run(api, mode, provider=[a, b], strategy="merge")
    assert ans.search is not None
    assert ans.search.provider == "a,b"
    assert ans.provider == "a,b"
    assert [h.id for h in ans.sources] == [1, 2, 3]
    assert ans.sources[0].url == ZONING_HITS[1].url  # found by both
    assert ans.sources[0].sources == [{"provider": "a", "rank": 2}, {"provider": "b", "rank": 1}]
    assert ans.search_cost == pytest.approx(0.003)
    assert "[1]" in api.body["input"] and ZONING_HITS[1].url in api.body["input"]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_answer_with_hedged(api: FakeAgentAPI, mode: str) -> None:
    ans = await run(api, mode, provider=[hangs("slow"), provider(name="web")], strategy="hedged",
                    hedge_after_ms=20, provider_timeout_ms=60_000)
    assert ans.search is not None
    assert [(a.provider, a.outcome.value) for a in ans.search.attempts] == [("slow", "cancelled"), ("web", "ok")]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_answer_with_min_hits_and_accept(api: FakeAgentAPI, mode: str) -> None:
    few = provider(ZONING_HITS[:1], name="few")
    ans = await run(api, mode, provider=[few, provider(name="web")], min_hits=2)
    assert ans.search is not None
    assert [a.outcome.value for a in ans.search.attempts] == ["insufficient", "ok"]
    ans = await run(api, mode, provider=[provider(name="first"), provider(name="web")],
                    accept=lambda r: r.provider == "web" or "not web")
    assert ans.search is not None
    assert [(a.outcome.value, a.reason) for a in ans.search.attempts] == [("insufficient", "not web"), ("ok", None)]


def test_answer_rejects_bad_strategy_options_before_any_call(api: FakeAgentAPI) -> None:
    with pytest.raises(InvalidRequest) as info:
        perplexed.answer(QUERY, provider=provider(), client=api.client(), strategy="fastest")
    assert info.value.param == "strategy"
    with pytest.raises(InvalidRequest) as info:
        perplexed.answer(QUERY, provider=provider(), client=api.client(), min_hits=11)
    assert info.value.param == "min_hits"
    assert api.paths == []
