"""``provider="perplexity-agent"``: the Agent API searches by itself; its search results become the sources."""

from __future__ import annotations

from datetime import date

import perplexed
import pytest
from perplexed import Answer, ConfigError, InvalidRequest
from perplexed.grounding._grounding import AGENT_CITATION_INSTRUCTION  # private: the exact prompt text sent
from test_answer_fakes import FakeAgentAPI, ok, response_json

QUERY = "What changed in the EU AI Act this month?"

ROUND_1 = [
    {"id": 1, "url": "https://eur-lex.example/ai-act", "title": "AI Act text", "snippet": "Regulation (EU) 2024/1689.", "date": "2026-03-01", "source": "web"},
    {"id": 2, "url": "https://news.example/ai-act-update", "title": "AI Act update", "snippet": "New guidance.", "date": None},
]
ROUND_2 = [
    {"id": 2, "url": "https://other.example/dup", "title": "Repeated id", "snippet": "a later result reusing id 2"},
    {"id": 3, "url": "https://blog.example/gpai", "title": "GPAI obligations", "snippet": "Codes of practice.", "last_updated": "2026-03-05"},
]
TEXT = "The Commission published new guidance [2] on general-purpose AI [3], under the AI Act [1]. Unverified [5]."


def _api() -> FakeAgentAPI:
    resp = response_json(TEXT, cost=0.0123, search_results=[[], ROUND_1, ROUND_2])
    return FakeAgentAPI(reply=ok(resp))


async def test_the_agent_searches_with_the_same_filters() -> None:
    api = _api()
    await perplexed.aanswer(
        QUERY,
        provider="perplexity-agent",
        client=api.async_client(),
        preset="fast",
        max_results=8,
        include_domains=["europa.eu"],
        exclude_domains=["reddit.com"],
        published_after=date(2026, 3, 1),
        country="de",
    )
    body = api.body
    assert body["input"] == QUERY
    assert body["instructions"] == AGENT_CITATION_INSTRUCTION
    assert "max_tool_calls" not in body
    assert body["tools"] == [
        {
            "type": "web_search",
            "filters": {"search_domain_filter": ["europa.eu", "-reddit.com"], "search_after_date_filter": "03/01/2026"},
            "max_results": 8,
            "user_location": {"country": "DE"},
        }
    ]


async def test_a_bare_model_also_gets_the_web_search_tool() -> None:
    api = _api()
    await perplexed.aanswer(QUERY, provider="perplexity-agent", client=api.async_client(), model="perplexity/sonar", recency="week")
    body = api.body
    assert body["model"] == "perplexity/sonar"
    assert body["tools"] == [{"type": "web_search", "filters": {"search_recency_filter": "week"}}]


async def test_markers_map_to_the_agents_search_result_ids() -> None:
    api = _api()
    ans = await perplexed.aanswer(QUERY, provider="perplexity-agent", client=api.async_client())
    assert isinstance(ans, Answer)
    assert ans.search is None
    assert ans.provider == "perplexity-agent"
    assert [h.id for h in ans.sources] == [1, 2, 3]
    assert ans.sources[1].url == "https://news.example/ai-act-update"  # a repeated id keeps its first result
    assert all(h.provider == "perplexity-agent" for h in ans.sources)
    assert ans.sources[0].published == date(2026, 3, 1)
    assert [(c.n, c.hit.url) for c in ans.citations] == [
        (2, "https://news.example/ai-act-update"),
        (3, "https://blog.example/gpai"),
        (1, "https://eur-lex.example/ai-act"),
    ]
    assert ans.unmatched == [5]
    assert ans.cost == ans.agent_cost == pytest.approx(0.0123) and ans.search_cost == 0.0


async def test_instructions_replace_the_agent_default() -> None:
    api = _api()
    await perplexed.aanswer(QUERY, provider="perplexity-agent", client=api.async_client(), instructions="")
    assert api.body["instructions"] == ""


def test_sync_and_stream_in_agent_mode() -> None:
    api = _api()
    items = list(perplexed.stream_answer(QUERY, provider="perplexity-agent", client=api.client()))
    final = items[-1]
    assert isinstance(final, Answer)
    assert "".join(x for x in items[:-1] if isinstance(x, str)) == final.text == TEXT
    assert [h.id for h in final.sources] == [1, 2, 3]
    assert final.cost == pytest.approx(0.0123)
    assert api.body["stream"] is True


async def test_perplexity_agent_cannot_join_a_chain() -> None:
    with pytest.raises(ConfigError, match="cannot be part of a chain"):
        await perplexed.aanswer(QUERY, provider=["searxng", "perplexity-agent"], client=_api().async_client())


async def test_recency_and_date_bounds_conflict_before_any_call() -> None:
    api = _api()
    with pytest.raises(InvalidRequest):
        await perplexed.aanswer(
            QUERY, provider="perplexity-agent", client=api.async_client(), recency="week", published_after="2026-01-01"
        )
    assert api.requests == []


async def test_default_chain_naming_the_agent_selects_agent_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERPLEXED_PROVIDER", "perplexity-agent")
    api = _api()
    ans = await perplexed.aanswer(QUERY, client=api.async_client())
    assert ans.search is None and api.body["tools"][0]["type"] == "web_search"
