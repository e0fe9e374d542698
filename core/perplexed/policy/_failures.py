"""The failure map (pure): one classifier from an HTTP status or an exception to (outcome, reason, exception class).

Every caller reads failures through it: the engine (a chain's attempts), the providers' ``check_status``, the
Agent client and its stream, ``answer()`` and ``doctor --live``. The reasons are the closed set
:data:`perplexed._errors.Reason`. Statuses are read from the one status table, :mod:`perplexed.policy._status` (the
vendors' own statuses, Tavily's 432/433, Perplexity Search's 451, Linkup's credit 429, are rows there). A
provider written outside the package may still declare :class:`StatusRule` rows in its ``status_rules``, checked
before the table.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from perplexed._errors import (
    REASONS,
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    ConfigError,
    InvalidRequest,
    PerplexedError,
    ProviderError,
    Reason,
)
from perplexed._models import Outcome
from perplexed.policy._status import lookup
from perplexed.policy._wire import ErrorEnvelope

__all__ = [
    "Failure", "StatusRule", "classify_exception", "classify_status", "match_rule", "reason_of", "status_error",
]


@dataclass(frozen=True, slots=True)
class Failure:
    """A classified failure: the attempt's ``outcome`` and ``reason``, and the exception class the Agent API
    client raises for it (:class:`ProviderError` carries the reason for a search provider)."""

    outcome: Outcome
    reason: Reason
    error: type[PerplexedError]


def classify_status(status: int) -> Failure:
    """The failure an API's HTTP error status means (a 2xx is not a failure: do not ask), read from the status
    table (:mod:`perplexed.policy._status`)."""
    row = lookup(status, "api")
    return Failure(Outcome.ERROR, row.reason or "bad_request", row.error)


def status_error(status: int) -> type[APIStatusError]:
    """The Agent API's exception class for an HTTP error status (:func:`classify_status`'s ``error``)."""
    return lookup(status, "api").error


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


def reason_of(exc: BaseException) -> Reason:
    """The failure reason of ``exc`` (always one of :data:`~perplexed._errors.Reason`): what
    :func:`classify_exception` reads, for a caller that re-wraps an error."""
    return classify_exception(exc).reason


def classify_exception(exc: BaseException) -> Failure:
    """The failure an exception raised during a call means.

    ``TimeoutError`` / httpx timeouts are ``timeout``; :class:`ProviderError` keeps its reason; a
    :class:`ConfigError` (or an URL httpx cannot send to) is ``config``, another perplexed error
    ``bad_request``; other httpx errors (refused, reset, DNS, TLS, protocol) are ``connection``; anything else
    is ``unexpected``.
    """
    timeout, invalid_url, http_error = _httpx_errors()
    if isinstance(exc, TimeoutError | timeout):
        return Failure(Outcome.TIMEOUT, "timeout", APITimeoutError)
    if isinstance(exc, ProviderError):
        return Failure(Outcome.ERROR, exc.reason, ProviderError)
    if isinstance(exc, ConfigError | invalid_url):
        return Failure(Outcome.ERROR, "config", ConfigError)
    if isinstance(exc, InvalidRequest) and exc.reason in REASONS:  # a classified refusal (private_address)
        return Failure(Outcome.ERROR, exc.reason, InvalidRequest)
    if isinstance(exc, PerplexedError):
        return Failure(Outcome.ERROR, "bad_request", type(exc))
    if isinstance(exc, http_error):
        return Failure(Outcome.ERROR, "connection", APIConnectionError)
    return Failure(Outcome.ERROR, "unexpected", APIError)


class _NoHttpxError(Exception):
    """Never raised: stands for httpx's exception classes while httpx is not imported."""


def _httpx_errors() -> tuple[type[Exception], type[Exception], type[Exception]]:
    """httpx's (timeout, invalid URL, any HTTP error) classes; while httpx is not imported no exception can be
    one of them, so a class no exception is an instance of (a search of in-process providers never imports httpx)."""
    if sys.modules.get("httpx") is None:
        return _NoHttpxError, _NoHttpxError, _NoHttpxError
    import httpx

    return httpx.TimeoutException, httpx.InvalidURL, httpx.HTTPError
