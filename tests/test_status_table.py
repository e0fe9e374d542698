"""The status table (perplexed.policy._status), table-style: one row set read by the providers, the fetch providers, the
failure map and the Agent client's retry policy; and every reason the code can record is in the closed set.

The table is private; these tests reach it (and the failure map) on purpose: it is the unit under test.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import httpx
import perplexed
import pytest
from perplexed import ProviderError, UpstreamError
from perplexed._errors import REASONS, Reason  # private: the closed reason set is checked
from perplexed.agent._policy import should_retry  # private: the Agent client's retry reads the same table
from perplexed.fetchers import status_reason
from perplexed.policy._failures import classify_status  # private: the failure map reads the same table
from perplexed.policy._status import (  # private: the status table is the unit under test
    ROWS,
    TEXT_ROWS,
    lookup,
    reason_from_text,
)
from perplexed.providers import get

CORE = Path(__file__).resolve().parents[1] / "core" / "perplexed"


@pytest.mark.parametrize(
    ("context", "vendor", "status", "body", "reason"),
    [
        # an API's 403 is the key; a page's 403 is the site's wall
        ("api", "", 403, b"", "auth"),
        ("page", "", 403, b"", "blocked"),
        ("api", "", 401, b"", "auth"),
        ("page", "", 401, b"", "blocked"),
        ("api", "", 402, b"", "payment"),
        ("page", "", 402, b"", "blocked"),
        ("api", "", 404, b"", "not_found"),
        ("page", "", 410, b"", "not_found"),
        ("api", "", 410, b"", "bad_request"),
        ("api", "", 408, b"", "bad_request"),
        ("page", "", 408, b"", "timeout"),
        ("page", "", 415, b"", "unsupported_type"),
        ("api", "", 415, b"", "bad_request"),
        ("api", "", 429, b"", "rate_limited"),
        ("page", "", 429, b"", "rate_limited"),
        ("api", "", 451, b"", "bad_request"),
        ("page", "", 451, b"", "blocked"),
        ("api", "", 302, b"", "redirect"),
        ("page", "", 302, b"", "upstream"),
        ("api", "", 500, b"", "upstream"),
        ("api", "", 599, b"", "upstream"),
        ("page", "", 502, b"", "upstream"),
        ("api", "", 200, b"", None),
        ("page", "", 204, b"", None),
        # a page's status inside an API's successful reply: below 400 it is not a failure
        ("reported", "", 302, b"", None),
        ("reported", "", 200, b"", None),
        ("reported", "", 404, b"", "not_found"),
        ("reported", "", 403, b"", "blocked"),
        ("reported", "", 500, b"", "upstream"),
        # vendors' own rows
        ("api", "tavily", 432, b"", "payment"),
        ("api", "tavily", 433, b"", "payment"),
        ("api", "", 432, b"", "bad_request"),
        ("fetch", "tavily", 432, b"", "payment"),  # a fetch reads the API's rows after its own
        ("api", "linkup", 429, b'{"error": {"code": "INSUFFICIENT_CREDIT"}}', "payment"),
        ("api", "linkup", 429, b'{"error": {"code": "TOO_MANY"}}', "rate_limited"),
        ("api", "linkup", 400, b'{"error": {"code": "SEARCH_QUERY_NO_RESULT"}}', None),
        ("api", "linkup", 400, b'{"error": {"message": "No result found"}}', None),
        ("api", "linkup", 400, b'{"error": {"code": "BAD_DEPTH"}}', "bad_request"),
        ("api", "perplexity", 451, b'{"error": {"code": "api_key_created_before_search_api_cutoff"}}', "auth"),
        ("api", "perplexity", 451, b'{"error": {"code": "other"}}', "bad_request"),
        ("fetch", "jina", 451, b"", "blocked"),
        ("fetch", "jina", 422, b"", "upstream"),
        ("fetch", "jina", 400, b'{"message": "invalid url"}', "upstream"),
        ("fetch", "jina", 400, b'{"message": "bad header"}', "bad_request"),
        ("fetch", "firecrawl", 408, b"", "timeout"),
        ("fetch", "firecrawl", 500, b"", "upstream"),
        # Firecrawl's page rows are for a fetch: its search's 408 is an API's
        ("api", "firecrawl", 408, b"", "bad_request"),
        ("api", "jina", 451, b"", "bad_request"),
    ],
)
def test_status_rows(context: str, vendor: str, status: int, body: bytes, reason: str | None) -> None:
    row = lookup(status, context, vendor=vendor, body=body)  # type: ignore[arg-type]
    assert row.reason == reason
    assert row.low <= status <= row.high
    if row.vendor:
        assert row.vendor == vendor


@pytest.mark.parametrize("status", [*range(100, 1000), -1, 0, 10**6])
def test_every_status_has_a_row_in_every_context(status: int) -> None:
    for context in ("api", "fetch", "page", "reported"):
        assert lookup(status, context).reason in (None, *REASONS)  # type: ignore[arg-type]


_OLD_API = {400: "bad_request", 401: "auth", 402: "payment", 403: "auth", 404: "not_found", 409: "bad_request",
            422: "bad_request", 429: "rate_limited"}


@pytest.mark.parametrize("status", range(100, 1000))
def test_the_table_reads_statuses_as_the_three_earlier_tables_did(status: int) -> None:
    # the API table of the failure map
    old_api = _OLD_API.get(status) or (
        "upstream" if status >= 500 else "redirect" if 300 <= status < 400 else "bad_request")
    if not 200 <= status < 300:
        assert classify_status(status).reason == old_api
    # the page table of the fetch path
    old_page = (None if 200 <= status < 300 else "not_found" if status in (404, 410)
                else "blocked" if status in (401, 402, 403, 451) else "rate_limited" if status == 429
                else "timeout" if status == 408 else "unsupported_type" if status == 415 else "upstream")
    assert status_reason(status) == old_page
    # the Agent client's retry table
    assert should_retry(status) == (status in (408, 409, 429) or status >= 500)


def test_agent_retry_headers_still_override_the_table() -> None:
    assert should_retry(400, {"x-should-retry": "true"}) is True
    assert should_retry(503, {"x-should-retry": "false"}) is False
    assert should_retry(None) is True


def test_retry_after_is_read_only_where_the_table_says() -> None:
    assert {r.low for r in ROWS if r.retry_after} == {429, 503}


def test_vendor_words_are_a_table_too() -> None:
    assert reason_from_text("HTTP 404 Not Found") == "not_found"
    assert reason_from_text("blocked by Cloudflare") == "blocked"
    assert reason_from_text("the scrape timed out") == "timeout"
    assert reason_from_text("Too Many Requests") == "rate_limited"
    assert reason_from_text("unsupported content type") == "unsupported_type"
    assert reason_from_text("something else") is None


def test_providers_read_statuses_through_the_table() -> None:
    def answer(status: int, body: bytes = b"{}") -> httpx.Response:
        return httpx.Response(status, content=body, request=httpx.Request("POST", "https://api.example/x"))

    tavily = get("tavily")(api_key="tvly-test")
    with pytest.raises(ProviderError) as info:
        tavily.check_status(answer(432))
    assert info.value.reason == "payment" and "credit limit" in info.value.message
    jina = get("jina")()
    with pytest.raises(ProviderError) as info:
        jina.check_status(answer(451, b'{"readableMessage": "domain blocked"}'), url="https://a.example/",
                          context="fetch")
    assert info.value.reason == "blocked" and "https://a.example/" in info.value.message
    with pytest.raises(ProviderError) as info:
        jina.check_status(answer(422, b'{"readableMessage": "the page answered 404 not found"}'), context="fetch")
    assert info.value.reason == "not_found"  # the vendor's words decide
    with pytest.raises(ProviderError) as info:
        get("searxng")(base_url="http://127.0.0.1:9").check_status(answer(503))
    assert info.value.reason == "upstream"


def test_no_provider_reads_a_status_inline() -> None:
    inline = re.compile(r"status_code\s*(==|!=|in\b|<|>)|\bstatus\s+in\s*\(|\bstatus\s*==\s*\d|code\s*>=\s*\d")
    offenders = []
    for folder in ("providers", "fetchers"):
        for path in sorted((CORE / folder).glob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if inline.search(line):
                    offenders.append(f"{folder}/{path.name}:{n}: {line.strip()}")
    assert offenders == []


# -- every reason the code can record is in the closed set --------------------------------------------------------

_REASON_SITES = [
    re.compile(r"\bfail\(\s*\"([a-z_]+)\""),  # provider.fail("reason", ...)
    re.compile(r"\bProviderError\(\s*\"([a-z_]+)\""),
    re.compile(r"Failure\(Outcome\.[A-Z]+,\s*\"([a-z_]+)\""),  # the failure map
    re.compile(r"reason: Reason\s*=\s*\"([a-z_]+)\""),
    re.compile(r"reason=\"([a-z_]+)\",\s*$", re.M),
    re.compile(r"or \"([a-z_]+)\"\)?\s*$", re.M),  # `... or "upstream"` defaults
    re.compile(r"InvalidRequest\([^)]*reason=\"([a-z_]+)\""),
    re.compile(r"\"[A-Z]+_[A-Z_]+\":\s*\"([a-z_]+)\",\s*$", re.M),  # tag -> reason tables (Exa's)
]


def _reasons_in_code() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(CORE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "Reason" not in text and ".fail(" not in text and "ProviderError(" not in text:
            continue
        for pattern in _REASON_SITES:  # over the whole text: a call may span lines
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.setdefault(match.group(1), []).append(f"{path.relative_to(CORE)}:{line}")
    return found


# words those patterns also catch that are not failure reasons (outcomes of the engine, skip and floor verdicts)
_NOT_REASONS = {"ok", "empty", "error", "skipped", "cooling_down", "over_budget", "min_hits", "rejected",
                "min_chars", "markdown", "text", "basic", "advanced", "auto", "sequential", "function",
                "http", "https"}


def test_every_reason_used_in_the_code_and_the_tables_is_in_the_closed_set() -> None:
    closed = set(get_args(Reason))
    assert set(REASONS) == closed
    used = _reasons_in_code()
    used.update({row.reason: ["_status.ROWS"] for row in ROWS if row.reason is not None})
    used.update({row.reason: ["_status.TEXT_ROWS"] for row in TEXT_ROWS})
    # the collection is real: it finds the reasons raised across the providers, the failure map and fetch
    assert {"malformed", "payment", "blocked", "unsupported_type", "not_found", "config", "connection",
            "unexpected", "redirect", "private_address", "soft_failure"} <= set(used)
    outside = {reason: where for reason, where in used.items() if reason not in closed and reason not in _NOT_REASONS}
    assert outside == {}


def test_a_rewrapped_page_failure_keeps_a_reason_of_the_closed_set() -> None:
    # a file:// URL the index does not hold is refused after resolving: its UpstreamError used reason "failed"
    results = perplexed.fetch_many(["file:///nowhere/not-indexed.md"])
    assert isinstance(results[0], UpstreamError)
    assert results[0].reason in REASONS
    assert results[0].reason == "bad_request"
