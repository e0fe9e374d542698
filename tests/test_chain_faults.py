"""Every way a provider's server can misbehave, through the chain: each fault is one classified ``error``
(or ``timeout``) attempt, the chain falls back to a healthy provider, and the failing connection does not
poison the next search. Runs through search() and asearch().
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from perplexed import Outcome
from perplexed.providers import SearXNG
from testkit.loopback import (
    HEALTHY_MS,
    SLACK,
    Close,
    Drip,
    Hang,
    Html,
    Huge,
    Json,
    LoopbackServer,
    Raw,
    ResetMidBody,
    SearchAPI,
    Status,
    searxng_json,
    sequence,
)


@dataclass(frozen=True)
class Fault:
    reply: Any
    outcome: Outcome
    reason: str
    error_has: str


FAULTS = {
    "401": Fault(Status(401, '{"error": "invalid key"}', content_type="application/json"), Outcome.ERROR, "auth", "HTTP 401 invalid key"),
    "403": Fault(Status(403, "forbidden"), Outcome.ERROR, "auth", "HTTP 403"),
    "402": Fault(Status(402, '{"message": "no credits"}', content_type="application/json"), Outcome.ERROR, "payment", "no credits"),
    "404": Fault(Status(404, "nope"), Outcome.ERROR, "not_found", "HTTP 404"),
    "400": Fault(Status(400, '{"detail": "bad q"}', content_type="application/json"), Outcome.ERROR, "bad_request", "bad q"),
    "429-retry-after": Fault(Status(429, "slow down", {"Retry-After": "7"}), Outcome.ERROR, "rate_limited", "HTTP 429"),
    "500": Fault(Status(500, "internal"), Outcome.ERROR, "upstream", "HTTP 500 internal"),
    "503-html": Fault(Status(503, "<html>maintenance</html>", content_type="text/html"), Outcome.ERROR, "upstream", "HTTP 503"),
    "html-200": Fault(Html(), Outcome.ERROR, "malformed", "expected JSON"),
    "malformed-json": Fault(Raw(b'{"results": [{"url": '), Outcome.ERROR, "malformed", "not valid JSON"),
    "json-not-object": Fault(Json([1, 2, 3]), Outcome.ERROR, "malformed", "JSON object"),
    "no-results-key": Fault(Json({"answers": []}), Outcome.ERROR, "malformed", "'results'"),
    "reset-mid-body": Fault(ResetMidBody(), Outcome.ERROR, "connection", "connection"),
    "close-without-answer": Fault(Close(), Outcome.ERROR, "connection", "connection"),
    "huge-declared": Fault(Huge(64 * 1024 * 1024), Outcome.ERROR, "body_too_large", "cap"),
    "huge-chunked": Fault(Huge(64 * 1024 * 1024, content_length=False), Outcome.ERROR, "body_too_large", "cap"),
    "hang": Fault(Hang(), Outcome.TIMEOUT, "timeout", "no answer within"),
    "drip": Fault(Drip(searxng_json(3), interval=0.1, chunks=40), Outcome.TIMEOUT, "timeout", "no answer within"),
}


@pytest.mark.parametrize("name", list(FAULTS))
async def test_each_fault_is_one_classified_attempt_and_the_chain_falls_back(
    api: SearchAPI, loopback: LoopbackServer, name: str
) -> None:
    fault = FAULTS[name]
    loopback.route("/bad/search", fault.reply)
    loopback.route("/good/search", Json(searxng_json(2)))
    chain = [SearXNG(base_url=f"{loopback.url}/bad", name="bad"), SearXNG(base_url=f"{loopback.url}/good", name="good")]

    result = await api("zoning", chain, provider_timeout_ms=HEALTHY_MS)

    assert result.provider == "good"
    bad, good = result.attempts
    assert (bad.outcome, bad.reason) == (fault.outcome, fault.reason)
    assert bad.error is not None and fault.error_has in bad.error
    assert bad.cost == 0 and not bad.billable
    assert bad.duration_ms < HEALTHY_MS + SLACK * 1000
    assert good.outcome is Outcome.OK and len(result.hits) == 2


async def test_a_redirect_is_followed(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/old/search", Status(302, "", {"Location": "/new/search?q=zoning&format=json"}))
    loopback.route("/new/search", Json(searxng_json(1)))

    result = await api("zoning", SearXNG(base_url=f"{loopback.url}/old"))

    assert result.attempts[0].outcome is Outcome.OK
    assert [r.path for r in loopback.requests] == ["/old/search", "/new/search"]


async def test_a_quiet_block_is_empty_with_a_detail(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/search", Json(searxng_json(0, unresponsive=[["google", "CAPTCHA"], ["bing", "timeout"]])))

    result = await api("zoning", SearXNG(base_url=loopback.url))

    (attempt,) = result.attempts
    assert attempt.outcome is Outcome.EMPTY
    assert attempt.detail == "unresponsive engines: google: CAPTCHA; bing: timeout"


async def test_a_server_that_recovers_is_used_again(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/search", sequence(ResetMidBody(), Hang(), Status(500), Json(searxng_json(2))))
    provider = SearXNG(base_url=loopback.url)

    outcomes = []
    for _ in range(4):
        try:
            result = await api("zoning", provider, provider_timeout_ms=HEALTHY_MS)
            outcomes.append(result.attempts[0].outcome)
        except Exception as exc:
            outcomes.append(exc.attempts[0].outcome)  # type: ignore[attr-defined]

    assert outcomes == [Outcome.ERROR, Outcome.TIMEOUT, Outcome.ERROR, Outcome.OK]


async def test_healthy_connections_are_reused(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/search", Json(searxng_json(1)))
    provider = SearXNG(base_url=loopback.url)

    for _ in range(3):
        await api("zoning", provider)

    assert len(loopback.requests) == 3
    assert len({id(r.connection) for r in loopback.requests}) == 1  # one pooled keep-alive connection
