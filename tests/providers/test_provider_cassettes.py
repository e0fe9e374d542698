"""Every paid provider, through the real chain engine, against its synthesized cassettes (vcrpy, record mode
``none``): outcomes, classified reasons, retry-after, costs, normalised hits, the body cap and secrets."""

from __future__ import annotations

from datetime import date
from typing import Any

import perplexed
import pytest
from perplexed import Outcome, ProviderError, UpstreamError, providers
from perplexed.providers import Provider
from testkit.cassettes import FAKE_KEYS, PROVIDERS, cassette

QUERY = "california rental laws"

# default cost (USD) of one answered call, per provider, with no overrides
OK_COST = {
    "ceramic": 0.001,
    "firecrawl": 0.002,  # creditsUsed 2 x $0.001
    "perplexity": 0.005,
    "tavily": 0.008,  # usage.credits 1 x $0.008
    "exa": 0.007,  # costDollars.total (billed as costDollars.search.neural only, as a live call was)
    "brave": 0.005,
    "linkup": 0.005,
}
EMPTY_COST = {**OK_COST, "exa": 0.007}  # Exa reports its own cost for the empty answer

ERROR_CASES = {
    "401": "auth",
    "402": "payment",
    "429": "rate_limited",
    "5xx": "upstream",
    "malformed": "malformed",
    "html": "malformed",
}


def make(name: str, **kwargs: Any) -> Provider:
    return providers.get(name)(api_key=FAKE_KEYS[name], **kwargs)


async def run(
    name: str, case: str, provider: Provider | None = None, **options: Any
) -> tuple[perplexed.Result | None, list[perplexed.Attempt], BaseException | None]:
    """One chain run with one provider against ``<name>/<case>.yaml``: (result, attempts, error)."""
    provider = provider or make(name)
    with cassette(f"{name}/{case}.yaml") as cas:
        try:
            result = await perplexed.asearch(QUERY, provider=[provider], **options)
        except UpstreamError as exc:
            assert cas.play_count == 1
            return None, exc.attempts, exc
    assert cas.all_played
    return result, result.attempts, None


@pytest.mark.parametrize("name", PROVIDERS)
async def test_ok_answers_with_hits_and_list_price(name: str) -> None:
    result, attempts, _ = await run(name, "ok")
    assert result is not None
    [attempt] = attempts
    assert attempt.outcome is Outcome.OK and attempt.error is None
    assert attempt.cost == pytest.approx(OK_COST[name]) and attempt.billable
    assert result.provider == name and result.cost == pytest.approx(OK_COST[name])
    assert len(result.hits) >= 2
    assert [h.id for h in result.hits] == list(range(1, len(result.hits) + 1))
    for hit in result.hits:
        assert hit.provider == name
        assert hit.url.startswith("https://") and hit.title
        assert hit.raw and hit.raw.get("url", hit.raw.get("id")) is not None
    assert result.hits[0].url == "https://example.com/california-tenant-rights"
    assert result.hits[0].title.startswith("California Tenant Rights Guide")


@pytest.mark.parametrize("name", PROVIDERS)
async def test_empty_answer_is_empty_and_still_billed(name: str) -> None:
    result, attempts, _ = await run(name, "empty")
    assert result is not None and result.hits == []
    [attempt] = attempts
    assert attempt.outcome is Outcome.EMPTY
    assert attempt.cost == pytest.approx(EMPTY_COST[name])


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
@pytest.mark.parametrize("name", PROVIDERS)
async def test_failures_are_classified_errors_and_not_billed(name: str, case: str) -> None:
    result, attempts, exc = await run(name, case)
    assert result is None and isinstance(exc, UpstreamError)
    assert exc.reason == "all_providers_failed"
    [attempt] = attempts
    assert attempt.outcome is Outcome.ERROR
    assert attempt.reason == ERROR_CASES[case], attempt.error
    assert attempt.error and attempt.error.startswith(ERROR_CASES[case])
    assert attempt.cost == 0 and not attempt.billable
    cause = exc.__cause__
    assert isinstance(cause, ProviderError) and cause.reason == ERROR_CASES[case]


@pytest.mark.parametrize(
    ("name", "seconds"),
    [("ceramic", 7.0), ("perplexity", 2.0), ("tavily", 12.0), ("brave", 1.0)],
)
async def test_rate_limit_keeps_retry_after(name: str, seconds: float) -> None:
    _, attempts, exc = await run(name, "429")
    assert isinstance(exc, UpstreamError) and isinstance(exc.__cause__, ProviderError)
    assert exc.__cause__.retry_after == pytest.approx(seconds)
    assert exc.__cause__.status == 429
    assert f"retry after {seconds:g} s" in (attempts[0].error or "")


@pytest.mark.parametrize("name", ["firecrawl", "exa", "linkup"])
async def test_rate_limit_without_a_hint_has_no_retry_after(name: str) -> None:
    _, _, exc = await run(name, "429")
    assert isinstance(exc, UpstreamError) and isinstance(exc.__cause__, ProviderError)
    assert exc.__cause__.reason == "rate_limited" and exc.__cause__.retry_after is None


@pytest.mark.parametrize("name", PROVIDERS)
async def test_body_cap_is_enforced_on_every_provider_path(name: str) -> None:
    # the ok cassettes declare no Content-Length: the cap is enforced while reading
    _, attempts, exc = await run(name, "ok", provider=make(name, max_body_bytes=64))
    assert isinstance(exc, UpstreamError)
    assert attempts[0].outcome is Outcome.ERROR and attempts[0].reason == "body_too_large"
    assert "64-byte cap" in (attempts[0].error or "")


@pytest.mark.parametrize("name", PROVIDERS)
async def test_keys_never_show_in_errors_or_repr(name: str) -> None:
    provider = make(name)
    assert FAKE_KEYS[name] not in repr(provider) and FAKE_KEYS[name] not in str(provider)
    assert "api_key=set" in repr(provider)
    _, attempts, exc = await run(name, "401", provider=provider)
    assert exc is not None
    assert FAKE_KEYS[name] not in str(exc) and FAKE_KEYS[name] not in (attempts[0].error or "")


# --- provider specifics ------------------------------------------------------------------------------------


async def test_ceramic_hits_and_duplicate_merge() -> None:
    result, _, _ = await run("ceramic", "ok")
    assert result is not None
    # the www./trailing-slash listing of the same page is merged into the first one
    assert [h.url for h in result.hits] == [
        "https://example.com/california-tenant-rights",
        "https://tenants.example.org/deposits",
    ]
    first = result.hits[0]
    assert first.snippet == "Comprehensive guide to California rental laws and tenant rights."
    assert first.score == pytest.approx(14.523)
    assert first.content is None and first.published is None
    assert first.raw["description"] == first.snippet


async def test_firecrawl_plain_search() -> None:
    result, _, _ = await run("firecrawl", "ok")
    assert result is not None
    assert [h.url for h in result.hits] == [
        "https://example.com/california-tenant-rights",
        "https://tenants.example.org/deposits",
    ]
    assert all(h.content is None for h in result.hits)
    assert result.hits[0].raw["position"] == 1


async def test_firecrawl_scrape_returns_markdown_content_and_bills_credits() -> None:
    result, attempts, _ = await run("firecrawl", "scrape", provider=make("firecrawl", scrape=True))
    assert result is not None
    first, second = result.hits
    assert first.content is not None and first.content.startswith("# California Tenant Rights Guide")
    assert first.text == first.content
    assert first.published == date(2025, 4, 2)
    assert first.updated == date(2025, 10, 15)  # metadata.modifiedTime: an update date, not a publication
    assert second.published is None and second.updated is None
    assert second.content == "## Deposits\n\nAt most two months' rent."
    assert attempts[0].cost == pytest.approx(4 * 0.001)  # creditsUsed 4


async def test_firecrawl_success_false_is_a_soft_failure() -> None:
    _, attempts, exc = await run("firecrawl", "soft_failure")
    assert exc is not None
    assert attempts[0].outcome is Outcome.ERROR and attempts[0].reason == "soft_failure"
    assert "search engine returned an error" in (attempts[0].error or "")


async def test_firecrawl_usd_per_credit_option() -> None:
    _, attempts, _ = await run("firecrawl", "ok", provider=make("firecrawl", usd_per_credit=0.005))
    assert attempts[0].cost == pytest.approx(2 * 0.005)


async def test_perplexity_dates() -> None:
    """``date`` is the publication date and ``last_updated`` an update date: never mixed (issue 16)."""
    result, _, _ = await run("perplexity", "ok")
    assert result is not None
    assert [h.published for h in result.hits] == [date(2025, 3, 1), None, None]
    assert [h.updated for h in result.hits] == [date(2025, 3, 5), date(2025, 2, 10), None]
    assert result.hits[1].raw["last_updated"] == "2025-02-10"  # not a publication date
    assert result.hits[2].raw["date"] == "sometime last spring"


async def test_perplexity_451_key_before_search_api_is_auth_with_a_remedy() -> None:
    _, attempts, exc = await run("perplexity", "451")
    assert exc is not None
    [attempt] = attempts
    assert attempt.outcome is Outcome.ERROR and attempt.reason == "auth"
    assert "api_key_created_before_search_api_cutoff" in (attempt.error or "")
    assert "create a new API key" in (attempt.error or "")
    assert FAKE_KEYS["perplexity"] not in str(exc)


def test_perplexity_other_451_stays_bad_request() -> None:
    import httpx

    provider = make("perplexity")
    response = httpx.Response(451, json={"error": {"type": "unavailable_for_legal_reasons", "code": 451}})
    with pytest.raises(ProviderError) as info:
        provider.check_status(response)
    assert info.value.reason == "bad_request"


async def test_tavily_hits_content_and_credits() -> None:
    result, attempts, _ = await run("tavily", "ok")
    assert result is not None
    first, second = result.hits
    assert first.score == pytest.approx(0.81) and first.content is None
    assert second.content == "# Deposits\n\nAt most two months' rent."
    assert second.published == date(2025, 11, 4)
    assert attempts[0].cost == pytest.approx(0.008)


async def test_tavily_432_is_payment() -> None:
    _, attempts, _ = await run("tavily", "432")
    assert attempts[0].reason == "payment"


async def test_exa_uses_reported_cost_and_text() -> None:
    result, attempts, _ = await run("exa", "ok", max_results=25)
    assert result is not None
    assert attempts[0].cost == pytest.approx(0.007)  # reported, not the 25-result list price (0.022)
    first, second = result.hits
    # real results carry no score; author, image and favicon stay in raw only
    assert first.score is None and second.score is None
    assert first.raw["author"] == "Jane Doe" and first.raw["favicon"] == "https://example.com/favicon.ico"
    assert first.raw["image"] == "https://example.com/images/tenant-rights.png"
    assert first.snippet == "Landlords must return deposits within 21 days."
    assert first.content and first.content.startswith("California Tenant Rights Guide.")
    assert first.published == date(2025, 6, 1)
    assert second.snippet == "At most two months' rent may be held as a deposit."  # no highlights: text


async def test_brave_strips_markup_and_parses_page_age() -> None:
    result, _, _ = await run("brave", "ok")
    assert result is not None
    first, second = result.hits
    assert first.snippet == "Comprehensive guide to California rental laws & rights."
    assert first.published == date(2025, 9, 1)
    assert first.updated == date(2025, 10, 20)  # page_fetched: a crawl date, kept apart from published
    assert second.published is None  # "2 days ago" is not a date: None, not a crash
    assert second.updated is None
    assert second.raw["extra_snippets"] == ["Deposits are capped at two months' rent."]


async def test_linkup_skips_images_and_maps_name() -> None:
    result, _, _ = await run("linkup", "ok")
    assert result is not None
    assert [h.title for h in result.hits] == [
        "California Tenant Rights Guide",
        "Security deposits in California",
    ]
    assert result.hits[1].snippet == "How much a landlord may hold."


async def test_linkup_no_result_is_empty_and_free() -> None:
    result, attempts, _ = await run("linkup", "no_result")
    assert result is not None and result.hits == []
    assert attempts[0].outcome is Outcome.EMPTY
    assert attempts[0].cost == 0 and not attempts[0].billable
    assert "not billed" in (attempts[0].detail or "")


async def test_linkup_insufficient_credit_is_payment_not_rate_limit() -> None:
    _, attempts, _ = await run("linkup", "429_credits")
    assert attempts[0].reason == "payment"


def test_sync_search_replays_through_the_portal() -> None:
    with cassette("tavily/ok.yaml") as cas:
        result = perplexed.search(QUERY, provider=make("tavily"))
    assert cas.all_played
    assert result.provider == "tavily" and len(result.hits) == 2
