"""The SearXNG provider and a mixed chain against a REAL SearXNG on 127.0.0.1 (the ``searxng`` fixture from
``tests/testkit/searxng.py``), whose upstream engine a test switches between ok / empty / 429 / 500 / hang."""

from __future__ import annotations

from pathlib import Path

import perplexed
import pytest
import vcr
from perplexed import Outcome, UpstreamError
from perplexed.providers import SearXNG
from testkit.cassettes import FAKE_KEYS, combined_cassette
from testkit.searxng import SearxngServer

pytestmark = pytest.mark.integration

NO_MATCH = "quokka"  # in no corpus document: only the upstream engine can answer it

# replays the paid providers' cassettes while loopback requests (the real SearXNG) go through for real
PASS_LOOPBACK = vcr.VCR(
    record_mode="none", match_on=["method", "scheme", "host", "port", "path"], ignore_localhost=True
)


async def test_ok_answers_from_the_corpus_and_the_upstream(searxng: SearxngServer) -> None:
    result = await perplexed.asearch("python httpx", provider=SearXNG(base_url=searxng.base_url))
    [attempt] = result.attempts
    assert attempt.outcome is Outcome.OK and attempt.cost == 0 and attempt.detail is None
    urls = [h.url for h in result.hits]
    assert "https://docs.example.org/httpx" in urls
    assert "https://upstream.example/python-httpx" in urls
    assert all(h.provider == "searxng" and h.title for h in result.hits)
    assert {h.raw["engine"] for h in result.hits} == {searxng.sqlite_engine, searxng.json_engine}


async def test_env_url_and_client_side_options(
    searxng: SearxngServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARXNG_URL", searxng.base_url)
    result = await perplexed.asearch("python httpx", provider="searxng", max_results=1)
    assert len(result.hits) == 1
    result = await perplexed.asearch("python httpx", provider="searxng", include_domains=["docs.example.org"])
    assert result.hits and all(h.url.startswith("https://docs.example.org/") for h in result.hits)


async def test_real_empty_answer(searxng: SearxngServer) -> None:
    searxng.upstream.set_mode("empty")
    result = await perplexed.asearch(NO_MATCH, provider=[SearXNG(base_url=searxng.base_url)])
    [attempt] = result.attempts
    assert result.hits == [] and attempt.outcome is Outcome.EMPTY and attempt.detail is None


@pytest.mark.parametrize(
    ("mode", "text"), [("429", "too many requests"), ("500", "HTTP error"), ("hang", "timeout")]
)
async def test_quiet_block_is_empty_with_unresponsive_engines_in_detail(
    searxng: SearxngServer, mode: str, text: str
) -> None:
    searxng.upstream.set_mode(mode)
    result = await perplexed.asearch(NO_MATCH, provider=[SearXNG(base_url=searxng.base_url)])
    [attempt] = result.attempts
    assert attempt.outcome is Outcome.EMPTY
    assert searxng.json_engine in (attempt.detail or "")
    assert text in (attempt.detail or "")


async def test_json_disabled_is_a_403_error(searxng_no_json: SearxngServer) -> None:
    with pytest.raises(UpstreamError) as info:
        await perplexed.asearch("python httpx", provider=[SearXNG(base_url=searxng_no_json.base_url)])
    [attempt] = info.value.attempts
    assert attempt.outcome is Outcome.ERROR and attempt.reason == "auth" and "403" in (attempt.error or "")


async def test_unconfigured_paid_provider_does_not_stop_the_free_one(
    searxng: SearxngServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARXNG_URL", searxng.base_url)
    result = await perplexed.asearch("python httpx", provider=["tavily", "searxng"])
    tavily, searx = result.attempts
    assert (
        tavily.outcome is Outcome.ERROR
        and tavily.reason == "config"
        and "TAVILY_API_KEY" in (tavily.error or "")
    )
    assert searx.outcome is Outcome.OK and result.provider == "searxng"


async def test_chain_real_searxng_blocked_then_ceramic_429_then_firecrawl_ok(
    searxng: SearxngServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The issue's chain: a real SearXNG quietly blocked (its engine gets 429s), Ceramic's 429 and Firecrawl's
    answer from cassettes; Firecrawl answers, three attempts, the cost is the sum."""
    monkeypatch.setenv("SEARXNG_URL", searxng.base_url)
    monkeypatch.setenv("CERAMIC_API_KEY", FAKE_KEYS["ceramic"])
    monkeypatch.setenv("FIRECRAWL_API_KEY", FAKE_KEYS["firecrawl"])
    searxng.upstream.set_mode("429")
    cassette = combined_cassette(tmp_path, "synthesized/ceramic/429.yaml", "synthesized/firecrawl/ok.yaml")
    with PASS_LOOPBACK.use_cassette(str(cassette)) as cas:
        result = await perplexed.asearch(NO_MATCH, provider=["searxng", "ceramic", "firecrawl"])
    assert cas.all_played
    assert searxng.upstream.queries == [NO_MATCH]  # the real SearXNG really asked its engine

    assert result.provider == "firecrawl" and len(result.hits) == 2
    assert [a.provider for a in result.attempts] == ["searxng", "ceramic", "firecrawl"]
    searx, ceramic, firecrawl = result.attempts
    assert searx.outcome is Outcome.EMPTY and "too many requests" in (searx.detail or "")
    assert ceramic.outcome is Outcome.ERROR and ceramic.reason == "rate_limited"
    assert "retry after 7 s" in (ceramic.error or "")
    assert firecrawl.outcome is Outcome.OK
    assert result.cost == pytest.approx(searx.cost + ceramic.cost + firecrawl.cost)
    assert result.cost == pytest.approx(0.002)  # free SearXNG, unbilled 429, Firecrawl's 2 credits


def test_sync_api_against_the_real_server(searxng: SearxngServer) -> None:
    result = perplexed.search(
        "zoning setbacks", provider=SearXNG(base_url=searxng.base_url, engines="localdocs")
    )
    assert result.provider == "searxng"
    assert "https://docs.example.org/zoning-setbacks" in [h.url for h in result.hits]
