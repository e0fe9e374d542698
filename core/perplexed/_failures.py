"""The failure map (pure): one classifier from an HTTP status or an exception to (outcome, reason, exception class).

Every caller reads failures through it: the engine (a chain's attempts), the providers' ``check_status``, the
Agent client and its stream, ``answer()`` and ``doctor --live``. The reasons are the closed set
:data:`perplexed._errors.Reason`. A provider's own statuses (Tavily's 432/433, Perplexity Search's 451, Linkup's
credit 429) are data: :class:`StatusRule` rows in the provider's ``status_rules``, checked before the general
table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from ._errors import (
    REASONS,
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ConflictError,
    InvalidRequest,
    NotFoundError,
    PermissionDeniedError,
    PerplexedError,
    ProviderError,
    RateLimitError,
    Reason,
    ServerError,
)
from ._models import Outcome
from ._wire import ErrorEnvelope

__all__ = ["Failure", "StatusRule", "classify_exception", "classify_status", "match_rule", "status_error"]


@dataclass(frozen=True, slots=True)
class Failure:
    """A classified failure: the attempt's ``outcome`` and ``reason``, and the exception class the Agent API
    client raises for it (:class:`ProviderError` carries the reason for a search provider)."""

    outcome: Outcome
    reason: Reason
    error: type[PerplexedError]


# status -> (reason, the Agent API's exception class)
_STATUSES: dict[int, tuple[Reason, type[APIStatusError]]] = {
    400: ("bad_request", BadRequestError),
    401: ("auth", AuthenticationError),
    402: ("payment", APIStatusError),
    403: ("auth", PermissionDeniedError),
    404: ("not_found", NotFoundError),
    409: ("bad_request", ConflictError),
    422: ("bad_request", BadRequestError),
    429: ("rate_limited", RateLimitError),
}


def classify_status(status: int) -> Failure:
    """The failure an HTTP error status means (a 2xx is not a failure: do not ask)."""
    known = _STATUSES.get(status)
    if known is not None:
        reason = known[0]
    elif status >= 500:
        reason = "upstream"
    elif 300 <= status < 400:
        reason = "redirect"
    else:
        reason = "bad_request"
    return Failure(Outcome.ERROR, reason, status_error(status))


def status_error(status: int) -> type[APIStatusError]:
    """The Agent API's exception class for an HTTP error status (:func:`classify_status`'s ``error``)."""
    known = _STATUSES.get(status)
    if known is not None:
        return known[1]
    return ServerError if status >= 500 else APIStatusError


@dataclass(frozen=True, slots=True)
class StatusRule:
    """A provider's own reading of a status: ``status`` means ``reason`` (when ``codes`` is set, only when the
    error body's ``code`` or ``type`` contains one of them, case-insensitive). ``message`` is the failure's
    text; it may use ``{status}``, ``{code}`` (upper-cased) and ``{message}`` (the upstream's, redacted and
    cut) and ``{detail}`` (the upstream's error text)."""

    status: int
    reason: Reason
    message: str = "HTTP {status} {detail}"
    codes: tuple[str, ...] = ()


def match_rule(rules: Sequence[StatusRule], status: int, envelope: ErrorEnvelope | None) -> StatusRule | None:
    """The first of ``rules`` that applies to ``status`` and the error body's ``envelope``."""
    for rule in rules:
        if rule.status != status:
            continue
        if not rule.codes:
            return rule
        if envelope is None:
            continue
        said = " ".join(str(v) for v in (envelope.code, envelope.type) if v is not None).upper()
        if any(code.upper() in said for code in rule.codes):
            return rule
    return None


def classify_exception(exc: BaseException) -> Failure:
    """The failure an exception raised during a call means.

    ``TimeoutError`` / httpx timeouts are ``timeout``; :class:`ProviderError` keeps its reason; a
    :class:`ConfigError` (or an URL httpx cannot send to) is ``config``, another perplexed error
    ``bad_request``; other httpx errors (refused, reset, DNS, TLS, protocol) are ``connection``; anything else
    is ``unexpected``.
    """
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return Failure(Outcome.TIMEOUT, "timeout", APITimeoutError)
    if isinstance(exc, ProviderError):
        return Failure(Outcome.ERROR, exc.reason, ProviderError)
    if isinstance(exc, ConfigError | httpx.InvalidURL):
        return Failure(Outcome.ERROR, "config", ConfigError)
    if isinstance(exc, InvalidRequest) and exc.reason in REASONS:  # a classified refusal (private_address)
        return Failure(Outcome.ERROR, exc.reason, InvalidRequest)
    if isinstance(exc, PerplexedError):
        return Failure(Outcome.ERROR, "bad_request", type(exc))
    if isinstance(exc, httpx.HTTPError):
        return Failure(Outcome.ERROR, "connection", APIConnectionError)
    return Failure(Outcome.ERROR, "unexpected", APIError)
