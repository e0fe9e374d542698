"""The failure map, table-style: one closed set of reasons, one classifier from a status or an exception to
(outcome, reason, exception class), provider overrides as data, and the docs' reasons table read from it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import httpx
import pytest
from perplexed import ConfigError, InvalidRequest, Outcome, ProviderError
from perplexed._errors import REASONS, UNHEALTHY_REASONS, Reason  # private: the closed reason set is the unit
from perplexed.agent import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
)
from perplexed.policy._failures import (  # private: the failure map is the unit under test
    StatusRule,
    classify_exception,
    classify_status,
    match_rule,
)
from perplexed.policy._policy import health_of  # private: which reasons hurt health
from perplexed.policy._wire import parse_error_envelope  # private: the envelope feeds the classifier
from perplexed.providers import get

REPO = Path(__file__).resolve().parents[1]


def test_every_reason_is_described_and_the_fetch_reasons_are_in_the_set() -> None:
    assert set(REASONS) == set(get_args(Reason))
    assert {"not_found", "blocked", "unsupported_type", "robots", "private_address"} <= set(REASONS)
    assert UNHEALTHY_REASONS <= set(REASONS)


def test_provider_error_docstring_lists_every_reason() -> None:
    doc = ProviderError.__doc__ or ""
    assert all(f"``{reason}``" in doc for reason in REASONS)


def test_docs_reasons_table_is_the_failure_map() -> None:
    text = (REPO / "docs" / "errors.md").read_text(encoding="utf-8")
    block = text.split("<!-- reasons -->", 1)[1].split("<!-- /reasons -->", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| (.+) \| (yes|no) \|$", block, re.M)
    assert [(r, m, h == "yes") for r, m, h in rows] == [
        (r, m, r in UNHEALTHY_REASONS) for r, m in REASONS.items()
    ]


def test_health_policy_reads_the_failure_map() -> None:
    for reason in REASONS:
        assert health_of("error", reason) == ("failure" if reason in UNHEALTHY_REASONS else "neutral")


@pytest.mark.parametrize(
    ("status", "reason", "error"),
    [
        (400, "bad_request", BadRequestError),
        (401, "auth", AuthenticationError),
        (402, "payment", APIStatusError),
        (403, "auth", PermissionDeniedError),
        (404, "not_found", NotFoundError),
        (409, "bad_request", ConflictError),
        (418, "bad_request", APIStatusError),
        (422, "bad_request", BadRequestError),
        (429, "rate_limited", RateLimitError),
        (500, "upstream", ServerError),
        (503, "upstream", ServerError),
        (302, "redirect", APIStatusError),
    ],
)
def test_classify_status(status: int, reason: str, error: type) -> None:
    failure = classify_status(status)
    assert (failure.outcome, failure.reason, failure.error) == (Outcome.ERROR, reason, error)


@pytest.mark.parametrize(
    ("exc", "outcome", "reason"),
    [
        (TimeoutError(), Outcome.TIMEOUT, "timeout"),
        (httpx.ReadTimeout("slow"), Outcome.TIMEOUT, "timeout"),
        (httpx.ConnectError("refused"), Outcome.ERROR, "connection"),
        (httpx.RemoteProtocolError("eof"), Outcome.ERROR, "connection"),
        (httpx.InvalidURL("bad"), Outcome.ERROR, "config"),
        (ConfigError("no key"), Outcome.ERROR, "config"),
        (InvalidRequest("bad", param="q"), Outcome.ERROR, "bad_request"),
        (ProviderError("payment", "HTTP 402"), Outcome.ERROR, "payment"),
        (KeyError("bug"), Outcome.ERROR, "unexpected"),
    ],
)
def test_classify_exception(exc: BaseException, outcome: Outcome, reason: str) -> None:
    failure = classify_exception(exc)
    assert (failure.outcome, failure.reason) == (outcome, reason)


def _response(status: int, body: bytes = b"{}") -> httpx.Response:
    return httpx.Response(status, content=body, request=httpx.Request("POST", "https://api.example/search"))


@pytest.mark.parametrize(
    ("provider", "status", "body", "reason", "text"),
    [
        ("tavily", 432, b'{"detail": {"error": "plan limit"}}', "payment", "Tavily credit limit exceeded"),
        ("tavily", 433, b"{}", "payment", "Tavily credit limit exceeded"),
        ("tavily", 429, b"{}", "rate_limited", "HTTP 429"),
        ("perplexity", 451, b'{"error": {"type": "api_key_created_before_search_api_cutoff"}}', "auth",
         "create a new API key"),
        ("perplexity", 451, b'{"error": {"type": "unavailable_for_legal_reasons"}}', "bad_request", "HTTP 451"),
        ("linkup", 429, b'{"error": {"code": "INSUFFICIENT_CREDIT", "message": "top up"}}', "payment",
         "HTTP 429 INSUFFICIENT_CREDIT: top up"),
        ("linkup", 429, b'{"error": {"code": "TOO_MANY_REQUESTS", "message": "slow down"}}', "rate_limited",
         "HTTP 429"),
        ("brave", 402, b"{}", "payment", "credits or quota exhausted"),
        ("brave", 503, b"{}", "upstream", "HTTP 503"),
    ],
)
def test_provider_overrides_are_data_for_the_classifier(
    provider: str, status: int, body: bytes, reason: str, text: str
) -> None:
    member = get(provider)(api_key="k" * 32, base_url="https://api.example")
    with pytest.raises(ProviderError) as info:
        member.check_status(_response(status, body))
    assert info.value.reason == reason
    assert text in str(info.value)
    assert info.value.status == status


def test_match_rule_needs_the_code_when_the_rule_names_one() -> None:
    rules = (StatusRule(429, "payment", codes=("CREDIT",)), StatusRule(432, "payment"))
    assert match_rule(rules, 432, None) is rules[1]
    assert match_rule(rules, 429, None) is None
    assert match_rule(rules, 429, parse_error_envelope(b'{"error": {"code": "no_credit"}}')) is rules[0]
    assert match_rule(rules, 500, parse_error_envelope(b"{}")) is None
