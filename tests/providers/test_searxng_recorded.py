"""The SearXNG provider against cassettes recorded from a real SearXNG (``cassettes/recorded/searxng/``),
through the chain engine: hits, client-side truncation and filtering, quiet blocks, 4xx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perplexed
import pytest
import vcr
from perplexed import Outcome, UpstreamError
from perplexed.providers import Ceramic, Firecrawl, SearXNG
from testkit.cassettes import FAKE_KEYS, RECORDED, combined_cassette

BASE = "http://127.0.0.1:18888"  # where the cassettes were recorded
SEARX = RECORDED / "searxng"

# these cassettes are matched on the full query string too: the provider must send exactly what was recorded
STRICT = vcr.VCR(record_mode="none", match_on=["method", "scheme", "host", "port", "path", "query"])
LOOSE = vcr.VCR(record_mode="none", match_on=["method", "scheme", "host", "port", "path"])


async def run(name: str, query: str, *, player: vcr.VCR = STRICT, **options: Any) -> Any:
    provider = SearXNG(
        base_url=BASE, **{k: options.pop(k) for k in ("engines", "max_body_bytes") if k in options}
    )
    with player.use_cassette(str(SEARX / f"{name}.yaml")) as cas:
        try:
            result = await perplexed.asearch(query, provider=[provider], **options)
        except UpstreamError as exc:
            return exc
    assert cas.all_played
    return result


async def test_ok_hits_are_normalised() -> None:
    result = await run("ok", "python httpx")
    [attempt] = result.attempts
    assert attempt.outcome is Outcome.OK and attempt.cost == 0 and not attempt.billable
    assert attempt.detail is None
    assert [h.url for h in result.hits] == [
        "https://docs.example.org/httpx",
        "https://upstream.example/python-httpx",
        "https://upstream.example/python-httpx/more",
    ]
    first = result.hits[0]
    assert first.title == "Python httpx client"
    assert first.snippet.startswith("httpx is an async HTTP client")
    assert first.provider == "searxng" and first.id == 1
    assert first.published is None and first.score is not None
    assert first.raw["engine"] == "localdocs"


async def test_max_results_is_truncated_client_side() -> None:
    result = await run("ok", "python httpx", max_results=1)
    assert [h.url for h in result.hits] == ["https://docs.example.org/httpx"]


async def test_domains_are_filtered_client_side() -> None:
    result = await run("ok", "python httpx", include_domains=["upstream.example"])
    assert [h.url for h in result.hits] == [
        "https://upstream.example/python-httpx",
        "https://upstream.example/python-httpx/more",
    ]
    result = await run("ok", "python httpx", exclude_domains=["upstream.example"])
    assert [h.url for h in result.hits] == ["https://docs.example.org/httpx"]


async def test_engines_option_is_sent() -> None:
    result = await run("corpus_only", "zoning", engines="localdocs")
    assert len(result.hits) == 3 and all(h.raw["engine"] == "localdocs" for h in result.hits)


async def test_a_real_empty_answer_is_empty_without_detail() -> None:
    result = await run("empty", "quokka")
    [attempt] = result.attempts
    assert result.hits == [] and attempt.outcome is Outcome.EMPTY and attempt.detail is None


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("empty_unresponsive", "too many requests"),
        ("unresponsive_http_error", "HTTP error"),
        ("unresponsive_timeout", "timeout"),
    ],
)
async def test_quiet_block_is_empty_with_the_engines_in_detail(name: str, text: str) -> None:
    result = await run(name, "quokka")
    [attempt] = result.attempts
    assert attempt.outcome is Outcome.EMPTY
    assert attempt.detail == f"unresponsive engines: loopjson: {text}"


async def test_partial_answer_is_ok_and_still_names_the_failed_engine() -> None:
    result = await run("partial_unresponsive", "backoff")
    [attempt] = result.attempts
    assert attempt.outcome is Outcome.OK
    assert [h.url for h in result.hits] == ["https://docs.example.org/backoff"]
    assert "loopjson" in (attempt.detail or "")


async def test_json_disabled_403_is_an_auth_error() -> None:
    exc = await run("forbidden_403", "python httpx")
    assert isinstance(exc, UpstreamError)
    [attempt] = exc.attempts
    assert attempt.outcome is Outcome.ERROR and attempt.reason == "auth" and "403" in (attempt.error or "")


async def test_bad_parameter_400_is_bad_request() -> None:
    # recorded for time_range=decade, which the options validation never lets through: matched loosely
    exc = await run("bad_param_400", "python", player=LOOSE)
    assert isinstance(exc, UpstreamError)
    assert exc.attempts[0].reason == "bad_request"
    assert "Invalid value decade" in (exc.attempts[0].error or "")


async def test_body_cap_on_the_searxng_path() -> None:
    exc = await run("ok", "python httpx", max_body_bytes=200)
    assert isinstance(exc, UpstreamError) and exc.attempts[0].reason == "body_too_large"


async def test_chain_from_cassettes_answers_from_firecrawl(tmp_path: Path) -> None:
    """The chain test of the issue, all from cassettes: quiet SearXNG, Ceramic 429, Firecrawl ok."""
    path = combined_cassette(
        tmp_path,
        "recorded/searxng/empty_unresponsive.yaml",
        "synthesized/ceramic/429.yaml",
        "synthesized/firecrawl/ok.yaml",
    )
    chain = [
        SearXNG(base_url=BASE),
        Ceramic(api_key=FAKE_KEYS["ceramic"]),
        Firecrawl(api_key=FAKE_KEYS["firecrawl"]),
    ]
    with LOOSE.use_cassette(str(path)) as cas:
        result = await perplexed.asearch("quokka", provider=chain)
    assert cas.all_played
    assert result.provider == "firecrawl"
    searx, ceramic, firecrawl = result.attempts
    assert (searx.outcome, ceramic.outcome, firecrawl.outcome) == (Outcome.EMPTY, Outcome.ERROR, Outcome.OK)
    assert "loopjson" in (searx.detail or "")
    assert ceramic.reason == "rate_limited" and "retry after 7 s" in (ceramic.error or "")
    assert result.cost == pytest.approx(0.0 + 0.0 + 0.002)


async def test_unconfigured_paid_provider_is_skipped_for_the_free_one() -> None:
    with STRICT.use_cassette(str(SEARX / "ok.yaml")):
        result = await perplexed.asearch("python httpx", provider=["exa", SearXNG(base_url=BASE)])
    exa, searx = result.attempts
    assert exa.outcome is Outcome.ERROR and exa.reason == "config" and "EXA_API_KEY" in (exa.error or "")
    assert searx.outcome is Outcome.OK and result.provider == "searxng" and result.cost == 0
