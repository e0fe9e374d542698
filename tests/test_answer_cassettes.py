"""Grounded answers against synthesized Agent API cassettes (``cassettes/synthesized/answer``, record mode none).

The Agent API client is the default one, built from ``PERPLEXITY_API_KEY`` (a fake key) and the default base
URL; vcrpy answers from the cassette and matches the request body exactly, so these tests also pin what the
model receives. The search side is a plain function provider (no HTTP).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import perplexed
import pytest
import vcr
from perplexed import Answer, Hit
from perplexed.agent import AsyncAgentClient, RateLimitError, ResponseFailedError
from test_answer_fakes import FAKE_KEY, provider

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes" / "synthesized" / "answer"
QUERY = "What are typical zoning setbacks?"
HITS = [
    Hit(
        title="Zoning setbacks explained",
        url="https://docs.example.org/zoning-setbacks",
        snippet="A setback is the minimum distance between a building and the property line.",
    ),
    Hit(
        title="Residential zoning setback requirements",
        url="https://docs.example.org/residential-setbacks",
        snippet="Front setbacks of 20 to 25 feet and side setbacks of 5 to 10 feet are typical.",
    ),
]

player = vcr.VCR(
    cassette_library_dir=str(CASSETTES),
    record_mode="none",
    match_on=["method", "scheme", "host", "port", "path", "query", "body"],
    filter_headers=["authorization"],
)


@pytest.fixture(autouse=True)
def fake_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PERPLEXITY_API_KEY", FAKE_KEY)
    monkeypatch.delenv("PERPLEXITY_BASE_URL", raising=False)
    yield


def test_no_real_key_in_any_cassette() -> None:
    for path in CASSETTES.glob("*.yaml"):
        text = path.read_text()
        assert "authorization" not in text.lower(), path
        assert "pplx-" not in text, path


async def test_grounded_answer_from_the_cassette() -> None:
    with player.use_cassette("grounded_ok.yaml") as cassette:
        ans = await perplexed.aanswer(QUERY, provider=provider(HITS, cost=0.001), preset="fast")
    assert cassette.play_count == 1
    assert ans.response.id == "resp_ans_ok"
    assert [(c.n, c.hit.url) for c in ans.citations] == [(1, HITS[0].url), (2, HITS[1].url)]
    assert ans.agent_cost == pytest.approx(0.00011)
    assert ans.cost == pytest.approx(0.00111)


def test_sync_grounded_answer_from_the_cassette() -> None:
    with player.use_cassette("grounded_ok.yaml") as cassette:
        ans = perplexed.answer(QUERY, provider=provider(HITS), preset="fast")
    assert cassette.play_count == 1 and len(ans.citations) == 2


async def test_streamed_answer_from_the_cassette_equals_the_plain_one() -> None:
    with player.use_cassette("grounded_stream.yaml") as cassette:
        items: list[Any] = [x async for x in perplexed.astream_answer(QUERY, provider=provider(HITS), preset="fast")]
    assert cassette.play_count == 1
    final = items[-1]
    assert isinstance(final, Answer)
    assert len(items) > 3
    assert "".join(items[:-1]) == final.text
    with player.use_cassette("grounded_ok.yaml"):
        plain = await perplexed.aanswer(QUERY, provider=provider(HITS), preset="fast")
    assert final.text == plain.text
    assert [c.span for c in final.citations] == [c.span for c in plain.citations]


async def test_rate_limited_from_the_cassette() -> None:
    with player.use_cassette("grounded_429.yaml"), pytest.raises(RateLimitError) as info:
        await perplexed.aanswer(
            QUERY, provider=provider(HITS, cost=0.002, name="paid"), preset="fast", client=AsyncAgentClient(max_retries=0)
        )
    assert info.value.retry_after == 2.0
    assert [a.provider for a in info.value.attempts] == ["paid"] and info.value.cost == pytest.approx(0.002)


async def test_failed_status_from_the_cassette() -> None:
    with player.use_cassette("grounded_failed.yaml"), pytest.raises(ResponseFailedError) as info:
        await perplexed.aanswer(QUERY, provider=provider(HITS, cost=0.002, name="paid"), preset="fast")
    assert "failed to produce" in str(info.value)
    assert info.value.attempts[0].provider == "paid"
    assert info.value.cost == pytest.approx(0.002 + 0.00008)


async def test_perplexity_agent_mode_from_the_cassette() -> None:
    with player.use_cassette("agent_search.yaml") as cassette:
        ans = await perplexed.aanswer(QUERY, provider="perplexity-agent", preset="fast", recency="year", max_results=5)
    assert cassette.play_count == 1
    assert ans.search is None
    assert [h.id for h in ans.sources] == [1, 2]
    assert [c.n for c in ans.citations] == [1, 2]
    assert ans.unmatched == [3]
    assert ans.cost == pytest.approx(0.0053)
