"""Pure retry/backoff decisions and the HTTP error → typed exception mapping (no I/O)."""

from __future__ import annotations

import email.utils
import json

import pytest
from perplexed import PerplexedError
from perplexed._errors import register_secret  # private: a registered secret must vanish from errors
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
from perplexed.agent._outcome import error_from_response  # private: status-to-error mapping, no I/O
from perplexed.agent._policy import (  # private: pure retry and backoff decisions, tested without I/O
    backoff_delay,
    retry_delay,
    should_retry,
)
from perplexed.providers import parse_retry_after


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 599])
def test_retryable_statuses(status):
    assert should_retry(status)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422, 424])
def test_not_retryable_statuses(status):
    assert not should_retry(status)


def test_connection_errors_retryable_and_x_should_retry_overrides():
    assert should_retry(None)
    assert not should_retry(500, {"x-should-retry": "false"})
    assert should_retry(400, {"X-Should-Retry": "true"})


def test_retry_after_ms_preferred():
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "5"}) == 0.25
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"Retry-After": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "junk", "retry-after": "2"}) == 2.0
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-4"}) == 0.0


def test_retry_after_http_date():
    now = 1_700_000_000.0
    header = email.utils.formatdate(now + 7, usegmt=True)
    assert parse_retry_after({"retry-after": header}, now=now) == pytest.approx(7, abs=1)


def test_backoff_exponential_with_jitter_and_cap():
    assert backoff_delay(0, jitter=0) == 0.5
    assert backoff_delay(1, jitter=0) == 1.0
    assert backoff_delay(2, jitter=0) == 2.0
    assert backoff_delay(10, jitter=0) == 8.0
    assert backoff_delay(1, jitter=1) == 0.75
    for n in range(8):
        d = backoff_delay(n)
        assert 0.375 <= d <= 8.0


def test_retry_delay_decisions():
    # retries exhausted / not retryable
    assert retry_delay(2, 2, 500) is None
    assert retry_delay(0, 2, 400) is None
    assert retry_delay(0, 0, 500) is None
    # server's hint honoured
    assert retry_delay(0, 2, 429, {"retry-after": "2"}) == 2.0
    assert retry_delay(0, 2, 429, {"retry-after-ms": "20", "retry-after": "1"}) == 0.02
    # a hint longer than max_retry_after: give up (the error carries retry_after)
    assert retry_delay(0, 2, 429, {"retry-after": "120"}) is None
    assert retry_delay(0, 2, 429, {"retry-after": "120"}, max_retry_after=300) == 120.0
    # backoff otherwise; and never past the caller's remaining budget
    assert retry_delay(1, 2, 503, jitter=0) == 1.0
    assert retry_delay(1, 2, 503, jitter=0, remaining=0.5) is None
    assert retry_delay(0, 2, None, jitter=0) == 0.5


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (422, BadRequestError),
        (429, RateLimitError),
        (500, ServerError),
        (503, ServerError),
        (413, APIStatusError),
        (424, APIStatusError),
    ],
)
def test_status_to_exception(status, cls):
    err = error_from_response(status, b'{"error": {"message": "m", "type": "t", "code": %d}}' % status)
    assert type(err) is cls
    assert isinstance(err, PerplexedError)
    assert (err.status, err.type, err.code, str(err)) == (status, "t", status, "m")


def test_envelope_fields_and_message_preserved():
    body = b'{"error":{"message":"invalid request body: json: unknown field \\"foo\\"","type":"invalid_request","code":400,"param":"foo"}}'
    err = error_from_response(400, body)
    assert isinstance(err, BadRequestError)
    assert err.message == 'invalid request body: json: unknown field "foo"'
    assert err.param == "foo" and err.type == "invalid_request" and err.code == 400
    assert err.body["error"]["param"] == "foo"


def test_rate_limit_retry_after():
    err = error_from_response(
        429,
        b'{"error":{"message":"slow down","type":"request_rate_limit_exceeded","code":429}}',
        {"Retry-After": "3"},
    )
    assert isinstance(err, RateLimitError) and err.retry_after == 3.0


def test_fastapi_detail_and_non_json_bodies():
    err = error_from_response(
        422, b'{"detail":[{"loc":["body","query"],"msg":"field required","type":"missing"}]}'
    )
    assert isinstance(err, BadRequestError) and err.param == "query" and "field required" in str(err)
    assert str(error_from_response(502, b"<html>Bad Gateway</html>")) == "<html>Bad Gateway</html>"
    assert str(error_from_response(500, b"")) == "HTTP 500"


def test_api_key_never_in_message_or_body():
    key = "pplx-test-not-a-real-key-echoed"
    register_secret(key)
    body = json.dumps({"error": {"message": f"bad key {key}", "type": "forbidden", "code": 401}}).encode()
    err = error_from_response(401, body)
    assert key not in str(err) and key not in repr(err.body) and key not in repr(err.args)
    # also an unregistered pplx- shaped key
    err = error_from_response(401, b'{"error":{"message":"key pplx-abcdefghijklmnop is invalid"}}')
    assert "pplx-abcdefghijklmnop" not in str(err)
