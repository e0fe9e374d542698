"""Pure policy of the Agent API client: timeouts, and whether and when to retry. No I/O.

Every function here is a decision over plain values (status codes, headers, counters, seconds), tested
table-style in ``tests/agent/test_agent_retry.py``; the client (``_client.py``) and the stream engine
(``_stream.py``) only carry them out.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import httpx

from perplexed.agent._request import AgentRequest
from perplexed.policy._status import ROWS, lookup
from perplexed.policy._wire import parse_retry_after

__all__ = [
    "BACKGROUND_CREATE_TIMEOUT",
    "CONNECT_TIMEOUT",
    "CONTROL_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_WAIT_TIMEOUT",
    "MAX_BODY_BYTES",
    "MAX_RETRY_AFTER",
    "MODEL_TIMEOUT",
    "PRESET_TIMEOUTS",
    "backoff_delay",
    "default_timeout",
    "retry_delay",
    "should_retry",
]

CONNECT_TIMEOUT = 5.0
# Overall per-request timeouts (seconds), sized for what each preset/effort level does. Not the SDK's 900 s.
PRESET_TIMEOUTS: dict[str, float] = {
    "fast": 60.0,
    "low": 120.0,
    "medium": 300.0,
    "high": 600.0,
    "xhigh": 900.0,
    "fast-search": 60.0,
    "pro-search": 120.0,
    "deep-research": 300.0,
    "advanced-deep-research": 600.0,
}
MODEL_TIMEOUT = 120.0  # model-only requests and unknown presets
BACKGROUND_CREATE_TIMEOUT = 30.0  # a background create answers at once with status "queued"
CONTROL_TIMEOUT = 30.0  # retrieve / cancel
DEFAULT_WAIT_TIMEOUT = 1800.0  # wait(): deep research runs take minutes

DEFAULT_MAX_RETRIES = 2
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
MAX_BODY_BYTES = 32 * 1024 * 1024  # a whole response (decoded)
#: a whole stream (decoded): far above any answer; memory is bounded per event (the SSE decoder's 32 MB)
MAX_STREAM_BYTES = 512 * 1024 * 1024
ERROR_BODY_BYTES = 1024 * 1024  # an error response's body is read up to this much, for its message
#: the single statuses the status table marks retried (408, 409, 429, 503; every 5xx is retried too)
RETRYABLE_STATUSES = frozenset(r.low for r in ROWS if r.context == "api" and not r.vendor and r.retry
                               and r.low == r.high)


def _lower(headers: Mapping[str, str] | None) -> dict[str, str]:
    if headers is None:
        return {}
    if isinstance(headers, httpx.Headers):
        return {k.lower(): v for k, v in headers.items()}
    return {str(k).lower(): str(v) for k, v in headers.items()}


def should_retry(status: int | None, headers: Mapping[str, str] | None = None) -> bool:
    """Whether a failed attempt is worth retrying.

    ``status=None`` is a connection error or timeout (retried). Otherwise the status table decides
    (:mod:`perplexed.policy._status`, an API's answer: 408, 409, 429 and 5xx are retried), unless the server says
    ``x-should-retry: false`` (and ``true`` forces a retry).
    """
    flag = _lower(headers).get("x-should-retry", "").strip().lower()
    if flag == "true":
        return True
    if flag == "false":
        return False
    if status is None:
        return True
    return lookup(status, "api").retry


def backoff_delay(retry_number: int, *, jitter: float | None = None) -> float:
    """Exponential backoff with jitter: ``min(0.5 * 2**n, 8) * (1 - 0.25 * jitter)`` for the n-th retry (0-based)."""
    j = random.random() if jitter is None else jitter
    base = min(INITIAL_RETRY_DELAY * (2.0**retry_number), MAX_RETRY_DELAY)
    return base * (1.0 - 0.25 * j)


def retry_delay(
    retry_number: int,
    max_retries: int,
    status: int | None,
    headers: Mapping[str, str] | None = None,
    *,
    remaining: float | None = None,
    max_retry_after: float = MAX_RETRY_AFTER,
    jitter: float | None = None,
) -> float | None:
    """How long to sleep before retry number ``retry_number`` (0-based), or ``None`` to give up.

    Gives up when retries are exhausted, the failure is not retryable, the server asks to wait longer than
    ``max_retry_after``, or the wait would not fit in ``remaining`` seconds of the caller's budget.
    """
    if retry_number >= max_retries or not should_retry(status, headers):
        return None
    asked = parse_retry_after(headers)
    if asked is not None:
        if asked > max_retry_after:
            return None
        delay = asked
    else:
        delay = backoff_delay(retry_number, jitter=jitter)
    if remaining is not None and delay >= remaining:
        return None
    return delay


def default_timeout(request: AgentRequest) -> float:
    """The overall timeout for ``request``: by preset/effort level, shorter for a background create."""
    if request.background and not request.stream:
        return BACKGROUND_CREATE_TIMEOUT
    level = (request.effort or request.preset or "").split("@", 1)[0].strip().lower()
    return PRESET_TIMEOUTS.get(level, MODEL_TIMEOUT)


def stream_timeouts(
    request: AgentRequest | None,
    *,
    timeout: float | None,
    stream_timeout: float | None,
    client_timeout: float | None,
    client_stream_timeout: float | None,
) -> tuple[float, float]:
    """``(per-event timeout, whole-stream timeout)`` of a stream (``request=None``: a resumed stream).

    The per-event bound is the call's ``timeout``, else the client's, else the preset-sized default; the
    whole-stream bound is the call's ``stream_timeout``, else the client's, else the preset-sized default
    (30 minutes for a resumed stream, as ``wait``) or the per-event bound when that is longer.
    """
    if request is None:
        idle = timeout or client_timeout or MODEL_TIMEOUT
        return idle, stream_timeout or client_stream_timeout or max(DEFAULT_WAIT_TIMEOUT, idle)
    idle = timeout or client_timeout or default_timeout(request)
    return idle, stream_timeout or client_stream_timeout or max(default_timeout(request), idle)
