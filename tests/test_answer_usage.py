"""``Answer.usage``: an answer's usage is its search's plus its Agent API call, declared once in the core (the
adapters' usage events and run metadata read it)."""

from __future__ import annotations

import perplexed
import pytest
from perplexed.providers import FunctionProvider
from test_answer_fakes import ZONING_HITS, FakeAgentAPI

QUERY = "What are typical zoning setbacks?"


async def test_an_answer_counts_its_search_and_its_agent_api_call() -> None:
    api = FakeAgentAPI()
    paid = FunctionProvider(lambda query, options: list(ZONING_HITS), name="paid", cost=0.01)
    ans = await perplexed.aanswer(QUERY, provider=paid, client=api.async_client())
    assert ans.search is not None
    usage = ans.usage
    assert usage.calls == ans.search.usage.calls + 1 == 2
    assert usage.cost_usd == pytest.approx(ans.cost)
    assert usage.billable_calls == ans.search.usage.billable_calls + (1 if ans.agent_cost > 0 else 0)
    assert usage.cache_hits == 0 and usage.saved_usd == 0.0
