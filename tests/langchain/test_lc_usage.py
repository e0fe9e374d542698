"""Issue 38: the LangChain adapter reports a call's usage: the ``perplexed_usage`` custom event (billable calls,
cost, cache hits, saved) and the run's metadata, beside the cost it already puts on the documents."""

from __future__ import annotations

import asyncio
from typing import Any

import perplexed
import pytest
from langchain_perplexed import PerplexedRetriever, PerplexedSearchTool
from lc_support import AsyncEventRecorder, EventRecorder
from perplexed.providers import FunctionProvider


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    perplexed.reset()
    yield
    perplexed.reset()


def hits(query: str, options: Any) -> list[dict[str, str]]:
    return [{"url": "https://example.org/a", "title": "A"}]


def test_retriever_reports_usage_as_an_event_and_cache_savings() -> None:
    provider = FunctionProvider(hits, name="paid", cost=0.02)
    retriever = PerplexedRetriever(provider=provider, cache_ttl_s=60, tag="lc-app")
    recorder = EventRecorder()
    docs = retriever.invoke("q", config={"callbacks": [recorder]})
    again = retriever.invoke("q", config={"callbacks": [recorder]})
    assert docs[0].metadata["cost"] == pytest.approx(0.02) and again[0].metadata["cost"] == 0.0
    first, second = recorder.named("perplexed_usage")
    assert first == {"calls": 1, "billable_calls": 1, "cost_usd": pytest.approx(0.02), "cache_hits": 0,
                     "saved_usd": 0.0}
    assert second["cache_hits"] == 1 and second["saved_usd"] == pytest.approx(0.02)
    assert second["billable_calls"] == 0
    assert perplexed.usage(tag="lc-app").totals.calls == 2


def test_tool_reports_usage_async() -> None:
    tool = PerplexedSearchTool(provider=FunctionProvider(hits, name="paid", cost=0.01))
    recorder = AsyncEventRecorder()
    asyncio.run(tool.ainvoke("q", config={"callbacks": [recorder]}))
    (usage,) = recorder.named("perplexed_usage")
    assert usage["billable_calls"] == 1 and usage["cost_usd"] == pytest.approx(0.01)
