"""Issue 38: the LangChain adapter puts a call's usage (billable calls, cost, cache hits, what the cache saved)
on the run's metadata as ``perplexed_usage``, beside the cost it already reports through the documents'
metadata and the ``perplexed_attempt`` events."""

from __future__ import annotations

from typing import Any

import perplexed
import pytest
from langchain_core.runnables import RunnableLambda
from langchain_perplexed import PerplexedRetriever, PerplexedSearchTool
from perplexed.providers import FunctionProvider


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    perplexed.reset()
    yield
    perplexed.reset()


def hits(query: str, options: Any) -> list[dict[str, str]]:
    return [{"url": "https://example.org/a", "title": "A"}]


async def ends(runnable: Any, arg: Any, kind: str, **config: Any) -> list[dict[str, Any]]:
    events = [e async for e in runnable.astream_events(arg, version="v2", config=config)]
    return [e["metadata"] for e in events if e["event"] == f"on_{kind}_end"]


async def test_retriever_usage_is_on_the_run_metadata_with_cache_savings() -> None:
    provider = FunctionProvider(hits, name="paid", cost=0.02)
    retriever = PerplexedRetriever(provider=provider, cache_ttl_s=60, tag="lc-app")
    pipeline = RunnableLambda(lambda q: q.strip()) | retriever
    (first,) = await ends(pipeline, " q ", "retriever")
    (second,) = await ends(pipeline, " q ", "retriever")
    assert first["perplexed_usage"] == {"calls": 1, "billable_calls": 1, "cost_usd": pytest.approx(0.02),
                                        "cache_hits": 0, "saved_usd": 0.0}
    assert second["perplexed_usage"]["cache_hits"] == 1
    assert second["perplexed_usage"]["saved_usd"] == pytest.approx(0.02)
    assert second["perplexed_usage"]["billable_calls"] == 0
    assert perplexed.usage(tag="lc-app").totals.calls == 2


async def test_tool_usage_is_on_the_run_metadata() -> None:
    tool = PerplexedSearchTool(provider=FunctionProvider(hits, name="paid", cost=0.01))
    # a tool run shares its metadata dict with its handlers when it has one (LangChain makes a new, empty one
    # for a run started without metadata)
    (meta,) = await ends(tool, {"query": "q"}, "tool", metadata={"app": "docs"})
    assert meta["perplexed_usage"]["billable_calls"] == 1
    assert meta["perplexed_usage"]["cost_usd"] == pytest.approx(0.01)
