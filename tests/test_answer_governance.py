"""answer() and the chain's memory: budget_usd caps the search, the Agent API's cost is reported as spend
under ``perplexity-agent``, cached searches cost nothing."""

from __future__ import annotations

import perplexed
import pytest
from test_answer_fakes import FakeAgentAPI, provider

QUERY = "What are typical zoning setbacks?"


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_agent_cost_is_reported_as_spend(mode: str) -> None:
    api = FakeAgentAPI()
    chain = [provider(cost=0.005, name="paid")]
    if mode == "sync":
        ans = perplexed.answer(QUERY, provider=chain, client=api.client())
    else:
        ans = await perplexed.aanswer(QUERY, provider=chain, client=api.async_client())
    spent = await perplexed.aspend("day")
    assert spent == pytest.approx({"paid": 0.005, "perplexity-agent": ans.agent_cost})
    assert ans.agent_cost > 0


async def test_budget_usd_caps_the_search_not_the_agent() -> None:
    api = FakeAgentAPI()
    calls: list[str] = []
    chain = [provider(cost=0.5, name="pricey", calls=calls), provider(name="free")]
    ans = await perplexed.aanswer(QUERY, provider=chain, client=api.async_client(), budget_usd=0.01)
    assert ans.search is not None
    assert [(a.provider, a.outcome.value, a.reason) for a in ans.search.attempts] == [
        ("pricey", "skipped", "over_budget"), ("free", "ok", None)]
    assert calls == []
    assert ans.agent_cost > 0.0  # reported, not capped


async def test_answer_uses_the_search_cache() -> None:
    api = FakeAgentAPI()
    calls: list[str] = []
    chain = [provider(cost=0.005, name="paid", calls=calls)]
    for _ in range(2):
        ans = await perplexed.aanswer(QUERY, provider=chain, client=api.async_client(), cache_ttl_s=60)
    assert calls == [QUERY]
    assert ans.search is not None and ans.search.attempts[0].cached
    assert ans.search_cost == 0.0
