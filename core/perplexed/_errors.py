"""Typed exceptions. Every error perplexed raises is a :class:`PerplexedError`, and every exception class of
the library is defined here (other modules import them; ``perplexed`` exports the public ones).

Nothing paid for is lost: every error carries the attempts made before it was raised (possibly none) and
their summed cost. Messages never contain credentials: they are passed through :func:`redact` first.

The tree (``(also X)``: a second base class, so ``except X`` catches it too)::

    PerplexedError
    ├── ConfigError (also ValueError) ........ misconfiguration: unknown provider, missing/bad key, bad setting
    │   └── CorruptIndexError ................ the local index file is damaged (remedy: index --rebuild)
    ├── InvalidRequest (also ValueError) ..... the caller's input is invalid; ``param`` names it
    ├── UsageError ........................... bad command-line usage (the CLI exits with code 2)
    ├── DocumentError ........................ a file cannot be indexed (binary, unreadable, too large)
    ├── ProviderError ........................ one search provider call failed; ``reason`` classifies it
    ├── UpstreamError ........................ a chain failed: ``reason == "all_providers_failed"``, every attempt
    │   └── NoSourcesError ................... answer(): the search found nothing to ground an answer in
    ├── StoreError ........................... the state store's error reply (internal: never reaches a caller)
    │   ├── StoreProtocolError (also ConnectionError) ... a reply out of bounds or not RESP: connection closed
    │   └── StoreScriptMissing ............... -NOSCRIPT: the store re-sends the script
    ├── ResponseBodyError .................... a body could not be read within bounds (HTTP layer)
    │   ├── BodyTooLargeError ................ larger than the cap, in decoded bytes; ``limit``
    │   └── ContentDecodingError ............. corrupt, or in an encoding not decoded here; ``encoding``
    └── APIError ............................. talking to the Perplexity Agent API
        ├── APIConnectionError ............... not reached (refused, reset, DNS, bad port)
        │   └── APITimeoutError .............. no answer within the timeout
        ├── APIStatusError ................... an HTTP error status (or a refused redirect)
        │   ├── BadRequestError (also InvalidRequest) .... 400/422
        │   ├── AuthenticationError .......... 401
        │   ├── PermissionDeniedError ........ 403
        │   ├── NotFoundError ................ 404
        │   ├── ConflictError ................ 409
        │   ├── RateLimitError ............... 429; ``retry_after``
        │   └── ServerError .................. 5xx
        ├── ResponseFailedError .............. 200, but the run failed; ``response``, ``reason``
        │   ├── ResponseIncompleteError ...... ... stopped incomplete (e.g. max_output_tokens)
        │   └── ResponseCancelledError ....... ... was cancelled
        ├── StreamError ...................... a stream ended without a terminal event, or sent ``error``
        └── MalformedResponseError ........... a success status whose body is not what the API sends

docs/errors.md lists the same tree (generated; tests/test_error_tree.py keeps the two in step).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from perplexed._models import Attempt

Reason = Literal[
    # what a provider's answer says
    "auth",
    "payment",
    "rate_limited",
    "bad_request",
    "not_found",
    "upstream",
    "malformed",
    "soft_failure",
    "body_too_large",
    "redirect",
    # the connection and the clock
    "connection",
    "timeout",
    "cancelled",
    # perplexed's side
    "config",
    "accept",
    "unexpected",
    # fetching a page (the fetch operation)
    "blocked",
    "unsupported_type",
    "robots",
    "private_address",
]
"""The closed set of reasons a failed call is recorded with (``Attempt.reason`` of an ``error`` / ``timeout`` /
``cancelled`` attempt, ``ProviderError.reason``). :data:`REASONS` describes each; ``_failures`` classifies
statuses and exceptions into them; the health policy reads :data:`UNHEALTHY_REASONS`; docs/errors.md lists them."""

REASONS: dict[Reason, str] = {
    "auth": "the key was refused (HTTP 401 / 403; Perplexity Search's 451 for a key older than the API)",
    "payment": "credits or quota exhausted (HTTP 402; Tavily's 432 / 433; Linkup's 429 naming credit or budget)",
    "rate_limited": "too many requests (HTTP 429); the retry-after is kept when the provider sends one",
    "bad_request": "the provider refused this request (another HTTP 4xx), or perplexed refused it before the call",
    "not_found": "the endpoint or page does not exist (HTTP 404)",
    "upstream": "the provider failed (HTTP 5xx)",
    "malformed": "the body is not what the API documents (not JSON, wrong shape, corrupt encoding)",
    "soft_failure": "a success status whose body reports a failure (Firecrawl's success=false)",
    "body_too_large": "the body is larger than max_body_bytes",
    "redirect": "a redirect that is not followed (a credential must not reach another origin)",
    "connection": "no connection, or it broke (refused, reset, DNS, TLS)",
    "timeout": "no answer within the budget",
    "cancelled": "cancelled because another provider answered first, or the chain ended",
    "config": "the provider is not set up (missing key, invalid base URL)",
    "accept": "the accept= callable raised",
    "unexpected": "the provider raised something unexpected (a bug; logged with its traceback)",
    "blocked": "the site refused the fetch (a bot wall, HTTP 403 / 451 from the site)",
    "unsupported_type": "the page's content type cannot be extracted",
    "robots": "robots.txt disallows fetching the page",
    "private_address": "the URL resolves to a private, loopback or link-local address",
}

UNHEALTHY_REASONS: frozenset[Reason] = frozenset(
    {"timeout", "connection", "upstream", "rate_limited", "malformed", "auth", "payment", "unexpected"}
)
"""The reasons that count against a provider's health (cool-downs): it, not the request, is failing."""



__all__ = [
    "REASONS",
    "UNHEALTHY_REASONS",
    "APIConnectionError",
    "APIError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "BodyTooLargeError",
    "ConfigError",
    "ConflictError",
    "ContentDecodingError",
    "CorruptIndexError",
    "DocumentError",
    "InvalidRequest",
    "MalformedResponseError",
    "NoSourcesError",
    "NotFoundError",
    "PermissionDeniedError",
    "PerplexedError",
    "ProviderError",
    "RateLimitError",
    "Reason",
    "ResponseBodyError",
    "ResponseCancelledError",
    "ResponseFailedError",
    "ResponseIncompleteError",
    "ServerError",
    "StoreError",
    "StoreProtocolError",
    "StoreScriptMissing",
    "StreamError",
    "UpstreamError",
    "UsageError",
    "install_hint",
    "mask_url",
    "redact",
    "register_secret",
    "register_url_secret",
]

# Secrets known to this process (values of SecretStr keys that were used). Any message built by perplexed is
# scrubbed of them, also when an upstream echoes a key back in its error body, and also when only a piece of
# one (8 characters or more) appears: a body cut in the middle of an echoed key must not keep the rest of it.
_SECRETS: set[str] = set()
_PIECE = 8  # the shortest piece of a secret that is redacted on its own
# every 4-character substring of every secret of _PIECE characters or more: a piece of 8 or more characters
# always covers one 4-character block of the text that starts at a multiple of 4, so a scan looks up only those
_QUADS: set[str] = set()
_LONG: list[str] = []
_KEY_PATTERN = re.compile(
    r"(?i)(bearer\s+)[A-Za-z0-9._\-]{8,}|\b(pplx|tvly|fc|sk|exa|lk)-[A-Za-z0-9_\-]{8,}"
)
_MASK = "[REDACTED]"
# the password of a URL's user info (``scheme://user:PASSWORD@host``, percent-encoded or not): up to the last
# "@" before the path, so a password holding a raw "@" is masked whole
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/?#@:\[\]]*:)[^\s/?#]+@")
# password-like query parameters of a URL (``?password=...``)
_URL_QUERY_SECRET = re.compile(r"(?i)([?&](?:password|passwd|pwd|pass)=)[^&#\s]+")
URL_PASSWORD_MASK = "***"


def install_hint(extra: str) -> str:
    """How to install an extra, in messages: the package's name and the form that works from a clone (until
    the package is on PyPI, ``pip install 'perplexed-search[X]'`` does not install this project)."""
    return f"pip install 'perplexed-search[{extra}]' (from a clone: pip install -e '.[{extra}]')"


def register_secret(value: str | None) -> None:
    """Remember a credential so that :func:`redact` removes it (or any piece of 8+ characters of it) from
    every message."""
    if not value or len(value) < 4 or value in _SECRETS:
        return
    _SECRETS.add(value)
    if len(value) >= _PIECE:
        _LONG.append(value)
        _QUADS.update(value[i : i + 4] for i in range(len(value) - 3))


def _in_secret(piece: str) -> bool:
    return any(piece in secret for secret in _LONG)


def _secret_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every run of ``text`` that is a piece (8+ characters) of a known secret."""
    spans: list[tuple[int, int]] = []
    n = len(text)
    for start in range(0, n - 3, 4):
        if (spans and start + 4 <= spans[-1][1]) or text[start : start + 4] not in _QUADS:
            continue
        lo = start
        while lo > 0 and _in_secret(text[lo - 1 : start + 4]):
            lo -= 1
        hi = start + 4
        while hi < n and _in_secret(text[start : hi + 1]):
            hi += 1
        if hi - lo >= _PIECE:
            if spans and lo <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(hi, spans[-1][1]))
            else:
                spans.append((lo, hi))
    return spans


def redact(text: str) -> str:
    """Remove every known credential, every piece of 8 or more characters of one, and anything shaped like
    an API key from ``text``."""
    if _SECRETS:
        for secret in _SECRETS:
            if secret in text:
                text = text.replace(secret, _MASK)
        if _LONG and len(text) >= _PIECE:
            for lo, hi in reversed(_secret_spans(text)):
                text = text[:lo] + _MASK + text[hi:]
    if "://" in text:
        text = mask_url(text)
    return _KEY_PATTERN.sub(lambda m: (m.group(1) or "") + _MASK, text)


def mask_url(text: str) -> str:
    """``text`` with the password of every URL in it masked (``redis://user:***@host``, also a
    ``?password=`` parameter); the rest of the URL, user name included, is kept so it can be recognised.
    Never raises, whatever the URL (a malformed one included)."""
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + URL_PASSWORD_MASK + "@", text)
    if "=" in text:
        text = _URL_QUERY_SECRET.sub(lambda m: m.group(1) + URL_PASSWORD_MASK, text)
    return text


def register_url_secret(url: str | None) -> None:
    """Remember the password of ``url``'s user info (as written and percent-decoded) for :func:`redact`."""
    if not url or "@" not in url:
        return
    from urllib.parse import unquote

    for match in _URL_PASSWORD.finditer(url):
        password = match.group(0)[len(match.group(1)):-1]
        register_secret(password)
        register_secret(unquote(password))


class ExtractionMemoryError(Exception):
    """Internal (never reaches a caller): extracting a page needed more memory than an extraction worker may
    take; the ``http`` fetch provider records ``body_too_large``."""


class WorkerCrashed(Exception):
    """Internal (never reaches a caller): an extraction worker died without answering (a crash on the page, or
    an out-of-memory kill); the ``http`` fetch provider records ``malformed``."""


class BudgetExpired(TimeoutError):
    """Internal (never reaches a caller): the attempt's deadline passed during a sync request of the direct path
    or between two reads (raised by the sync I/O, ``net._http``); ``net._direct.Timer`` turns it into the
    ``TimeoutError`` that ``asyncio.timeout`` raises, so the attempt is recorded as ``timeout``."""


class PerplexedError(Exception):
    """Base class of every perplexed error.

    ``attempts`` lists the provider attempts made before the error (empty when none were made), and
    ``cost`` is what they cost in USD, so a caller never loses track of what was paid for.
    """

    def __init__(self, message: str, *, attempts: Sequence[Attempt] | None = None) -> None:
        self.message = redact(str(message))
        self.attempts: list[Attempt] = list(attempts or ())
        super().__init__(self.message)

    @property
    def cost(self) -> float:
        """Sum of the cost of :attr:`attempts` in USD."""
        return float(sum(a.cost for a in self.attempts))

    def __str__(self) -> str:
        return self.message


class ConfigError(PerplexedError, ValueError):
    """Perplexed is misconfigured: unknown provider, missing API key or base URL, bad setting."""


class CorruptIndexError(ConfigError):
    """The local index file is damaged; the message (one line) names the file, the first problem and the
    remedy (``perplexed index --rebuild``); ``details`` holds every problem SQLite reported."""

    def __init__(self, message: str, *, path: str | None = None, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.path = path
        self.details = list(details)


class InvalidRequest(PerplexedError, ValueError):
    """The caller's input is invalid (empty query, bad option value, bad filter, wrong date format)."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        attempts: Sequence[Attempt] | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message, attempts=attempts)
        self.param = param
        #: set when the refusal has a classified reason (``"private_address"`` for a fetch the trust boundary
        #: refused); None for plain bad input
        self.reason = reason


class UsageError(PerplexedError):
    """Bad command-line usage (unknown option, missing argument, bad number): exit code 2."""


class DocumentError(PerplexedError):
    """A file cannot be indexed: binary, not UTF-8, unreadable. The message says why, for the report."""


class ProviderError(PerplexedError):
    """One provider call failed, with a classified ``reason``.

    ``reason`` is one of the closed set :data:`Reason` (the list below is generated from :data:`REASONS`).
    """

    reason: Reason

    def __init__(
        self,
        reason: Reason,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        cost: float | None = None,
    ) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.provider = provider
        self.status = status
        self.retry_after = retry_after
        self.charged = cost


ProviderError.__doc__ = (ProviderError.__doc__ or "").rstrip() + "\n\n    Reasons:\n\n" + "".join(
    f"    * ``{name}``: {text}\n" for name, text in REASONS.items()
)


class UpstreamError(PerplexedError):
    """The upstream could not answer. For a chain: ``reason == "all_providers_failed"`` with every attempt."""

    def __init__(
        self, reason: str, attempts: Iterable[Attempt] = (), message: str | None = None
    ) -> None:
        attempts = list(attempts)
        if message is None:
            message = _describe_attempts(reason, attempts)
        super().__init__(message, attempts=attempts)
        self.reason = reason


class NoSourcesError(UpstreamError):
    """The search answered but found nothing to ground an answer in (``reason == "no_sources"``).

    Raised by :func:`answer` with ``on_empty="raise"`` (the default) before the model is called; carries
    the search attempts (and their cost). Pass ``on_empty="answer"`` to answer without sources instead.
    """


class StoreError(PerplexedError):
    """The shared state store answered with an error reply (a Redis/Valkey ``-ERR``). Internal: a search or an
    answer never raises it; the store layer degrades to in-process state (docs/fleet.md)."""


class StoreProtocolError(StoreError, ConnectionError):
    """The state store sent what the client does not accept (not RESP, or a reply over its size, element or
    depth bounds): the connection is closed. Internal, like :class:`StoreError`."""


class StoreScriptMissing(StoreError):
    """``-NOSCRIPT``: the server does not know a script's SHA (restarted, flushed, failed over); the store sends
    the script's source instead."""


class ResponseBodyError(PerplexedError):
    """A response body could not be read within the library's bounds (raised by the HTTP layer; the search
    chain turns it into an ``error`` attempt, the Agent client into an ``APIError``). ``status`` is the
    response's HTTP status."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class BodyTooLargeError(ResponseBodyError):
    """A response body, decoded, was larger than the cap; ``limit`` is the cap in (decoded) bytes."""

    def __init__(self, message: str, *, limit: int, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.limit = limit


class ContentDecodingError(ResponseBodyError):
    """A response body's ``Content-Encoding`` could not be decoded: a corrupt body, or an encoding this
    installation does not decode within bounds (``br`` without ``brotli`` >= 1.2, ``zstd`` without
    ``zstandard``). ``encoding`` names it."""

    def __init__(self, message: str, *, encoding: str, status: int | None = None) -> None:
        super().__init__(message, status=status)
        self.encoding = encoding


def _describe_attempts(reason: str, attempts: Sequence[Attempt]) -> str:
    if not attempts:
        return f"{reason}: no provider was tried"
    parts = []
    for a in attempts:
        piece = f"{a.provider}: {a.outcome.value} after {a.duration_ms} ms"
        if a.error:
            piece += f" ({a.error})"
        if a.cost:
            piece += f", cost ${a.cost:.4f}"
        parts.append(piece)
    return f"{reason}: " + "; ".join(parts)


# --- HTTP API errors (Perplexity Agent API) ----------------------------------------------------------------


class APIError(PerplexedError):
    """An error talking to an HTTP API (the Perplexity Agent API).

    Exposes ``status``, ``type``, ``code``, ``param`` and ``retry_after`` (seconds) when known, and ``reason``
    when perplexed classified the failure (e.g. ``"redirect"``: the API answered 3xx, which is never followed).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        type: str | None = None,
        code: str | int | None = None,
        param: str | None = None,
        retry_after: float | None = None,
        body: Any = None,
        attempts: Sequence[Attempt] | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message, attempts=attempts)
        self.reason = reason
        self.status = status
        self.type = type
        self.code = code
        self.param = param
        self.retry_after = retry_after
        self.body = body


class APIConnectionError(APIError):
    """The API could not be reached (connection refused, reset, DNS)."""


class APITimeoutError(APIConnectionError):
    """The API did not answer within the timeout."""


class APIStatusError(APIError):
    """The API answered with an HTTP error status; the error envelope's fields are kept."""


class BadRequestError(APIStatusError, InvalidRequest):
    """HTTP 400/422: the API rejected the request; ``param`` names the offending field when reported."""

    def __init__(self, message: str, **kwargs: Any) -> None:
        APIStatusError.__init__(self, message, **kwargs)


class AuthenticationError(APIStatusError):
    """HTTP 401: missing or invalid API key."""


class PermissionDeniedError(APIStatusError):
    """HTTP 403: the key may not use this resource."""


class NotFoundError(APIStatusError):
    """HTTP 404: unknown resource (e.g. a response id)."""


class ConflictError(APIStatusError):
    """HTTP 409."""


class RateLimitError(APIStatusError):
    """HTTP 429: rate limited; ``retry_after`` says how long to wait (seconds) when the API told us."""


class ServerError(APIStatusError):
    """HTTP 5xx."""


class ResponseFailedError(APIError):
    """The API answered 200 but the response's status is ``failed``, ``cancelled`` or ``incomplete``.

    ``response`` carries the response object; ``reason`` says why (e.g. ``max_output_tokens``).
    """

    def __init__(
        self, message: str, *, response: Any = None, reason: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(message, reason=reason, **kwargs)
        self.response = response


class StreamError(APIError):
    """A stream ended without a terminal event, or carried an ``error`` event."""


# --- Agent API errors (moved from perplexed.agent._client; owner: the agent client) ----------------------


class ResponseIncompleteError(ResponseFailedError):
    """The run ended ``incomplete``; ``reason`` says why (e.g. ``max_output_tokens``)."""


class ResponseCancelledError(ResponseFailedError):
    """The run was cancelled."""


class MalformedResponseError(APIError):
    """The API answered with a body that is not what it should be: not JSON, not a response object (e.g.
    ``{}``: no id, no status), or not decodable as its ``Content-Encoding`` claims."""


# --- end of the Agent API errors --------------------------------------------------------------------------
