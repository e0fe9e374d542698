"""HTTP status -> failure reason: one table of data rows, and the one function that reads it (pure, no I/O).

Every reader of a status reads this table: the search providers' :meth:`~perplexed.providers.Provider.check_status`
(an API's answer), the fetch providers (a page's own status, answered directly or reported inside an API's
reply), the failure map (:func:`perplexed.policy._failures.classify_status`: the Agent API client's exception class)
and the Agent client's retry policy (:func:`perplexed.agent._policy.should_retry`). Providers hold no status
logic of their own: a vendor's own reading of a status is a row here with its ``vendor`` set.

A row says: in ``context``, a status from ``low`` to ``high`` (inclusive) means ``reason`` (None: not a failure).
The contexts:

* ``api``: what an API answered to the call (a 403 is ``auth``: the key was refused);
* ``fetch``: what an API answered to a fetch call (a vendor's statuses that mean the page could not be read);
  otherwise read as ``api``;
* ``page``: what a page answered (a 403 is ``blocked``: the site refused the fetch);
* ``reported``: a page's status an API reported inside a successful reply (Firecrawl's ``metadata.statusCode``,
  Exa's ``statuses``): below 400 it is not a failure; otherwise read as ``page``.

:func:`lookup` reads the rows in this order: the vendor's own rows for the context and then for its parent
(``fetch`` -> ``api``, ``reported`` -> ``page``), then the context's rows and its parent's; the first row that
applies wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from perplexed._errors import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    Reason,
    ServerError,
)
from perplexed.policy._wire import ErrorEnvelope, parse_error_envelope

__all__ = [
    "CONTEXTS",
    "HIGHEST",
    "LOWEST",
    "ROWS",
    "TEXT_ROWS",
    "Context",
    "StatusRow",
    "TextRow",
    "lookup",
    "reason_from_text",
    "rows_for",
]

Context = Literal["api", "fetch", "page", "reported"]
#: each context, and the context read after its own rows (None: none)
CONTEXTS: dict[Context, Context | None] = {"api": None, "fetch": "api", "page": None, "reported": "page"}

#: the ends of the catch-all rows: every int is read by some row
LOWEST, HIGHEST = -(2**31), 2**31

#: how much of a body the ``words`` of a row are looked for in
WORDS_SCAN_BYTES = 2000


@dataclass(frozen=True, slots=True)
class StatusRow:
    """One reading of a status range.

    ``reason``: the failure reason (None: not a failure, e.g. Linkup's "no result" 400 is an empty answer).
    ``vendor``: a provider's registry name when the row is that provider's own reading ("" = every provider).
    ``codes``: the row applies only when the error body's ``code`` or ``type`` contains one of them
    (case-insensitive); ``words``: only when the body's first bytes contain one of them (lower case); with both
    set, either one is enough. ``from_text``: the vendor's words (:func:`reason_from_text`) decide the reason
    when they name one, ``reason`` otherwise. ``retry``: the Agent API client retries it. ``retry_after``: a
    ``Retry-After`` header is read and honoured (a cool-down of exactly that long). ``message``: the failure's
    text (``{status}``, ``{code}`` upper-cased, ``{message}`` the upstream's redacted and cut, ``{detail}`` the
    upstream's error text, ``{url}`` the page asked for). ``error``: the Agent API client's exception class.
    """

    low: int
    high: int
    context: Context
    reason: Reason | None
    vendor: str = ""
    codes: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    from_text: bool = False
    retry: bool = False
    retry_after: bool = False
    message: str = "HTTP {status} {detail}"
    error: type[APIStatusError] = APIStatusError

    def applies(self, status: int, envelope: ErrorEnvelope | None = None, body: bytes = b"") -> bool:
        """Whether this row reads ``status`` (with the error body's ``envelope`` and raw ``body``)."""
        if not self.low <= status <= self.high:
            return False
        if not self.codes and not self.words:
            return True
        if self.codes and envelope is not None:
            said = " ".join(str(v) for v in (envelope.code, envelope.type) if v is not None).upper()
            if any(code.upper() in said for code in self.codes):
                return True
        if self.words:
            text = body[:WORDS_SCAN_BYTES].lower()
            if any(word.encode() in text for word in self.words):
                return True
        return False


def _one(status: int, context: Context, reason: Reason | None, **kw: Any) -> StatusRow:
    return StatusRow(status, status, context, reason, **kw)


_CREDIT_LIMIT = "HTTP {status} (Tavily credit limit exceeded)"
KEY_PREDATES_SEARCH_API = "api_key_created_before_search_api_cutoff"
LINKUP_NO_RESULT_CODES = ("SEARCH_QUERY_NO_RESULT", "NO_RESULT")
LINKUP_CREDIT_WORDS = ("CREDIT", "FUNDS", "BUDGET", "QUOTA")

ROWS: tuple[StatusRow, ...] = (
    # -- an API's answer ----------------------------------------------------------------------------------------
    StatusRow(200, 299, "api", None),
    StatusRow(300, 399, "api", "redirect"),  # never followed by the flow: a credential must not travel
    _one(400, "api", "bad_request", error=BadRequestError),
    _one(401, "api", "auth", error=AuthenticationError),
    _one(402, "api", "payment", message="HTTP 402 (credits or quota exhausted) {detail}"),
    _one(403, "api", "auth", error=PermissionDeniedError),
    _one(404, "api", "not_found", error=NotFoundError),
    _one(408, "api", "bad_request", retry=True),
    _one(409, "api", "bad_request", error=ConflictError, retry=True),
    _one(422, "api", "bad_request", error=BadRequestError),
    _one(429, "api", "rate_limited", error=RateLimitError, retry=True, retry_after=True),
    _one(503, "api", "upstream", error=ServerError, retry=True, retry_after=True),
    StatusRow(500, HIGHEST, "api", "upstream", error=ServerError, retry=True),
    StatusRow(LOWEST, HIGHEST, "api", "bad_request"),  # 1xx and the other 4xx
    # -- a page's own answer ------------------------------------------------------------------------------------
    StatusRow(200, 299, "page", None),
    _one(404, "page", "not_found"),
    _one(410, "page", "not_found"),
    StatusRow(401, 403, "page", "blocked"),
    _one(451, "page", "blocked"),
    _one(429, "page", "rate_limited"),
    _one(408, "page", "timeout"),
    _one(415, "page", "unsupported_type"),
    StatusRow(LOWEST, HIGHEST, "page", "upstream"),
    # -- a page's status reported inside an API's successful reply (then read as a page's) ------------------------
    StatusRow(LOWEST, 399, "reported", None),
    # -- vendors' own readings ------------------------------------------------------------------------------------
    _one(432, "api", "payment", vendor="tavily", message=_CREDIT_LIMIT),
    _one(433, "api", "payment", vendor="tavily", message=_CREDIT_LIMIT),
    _one(429, "api", "payment", vendor="linkup", message="HTTP 429 {code}: {message}",
         codes=LINKUP_CREDIT_WORDS),
    _one(400, "api", None, vendor="linkup", message="Linkup found no result (not billed)",
         codes=LINKUP_NO_RESULT_CODES, words=("no result",)),
    _one(451, "api", "auth", vendor="perplexity", codes=(KEY_PREDATES_SEARCH_API,),
         message=f"HTTP 451 {KEY_PREDATES_SEARCH_API}: this API key was created before the Perplexity Search API "
                 "existed and cannot call it; create a new API key (perplexity.ai, API settings) and set "
                 "PERPLEXITY_API_KEY to it"),
    # Jina Reader: the target could not be read (422, or a 400 about the URL), or the domain is refused (451):
    # the page's failure, not the API's
    _one(451, "fetch", "blocked", vendor="jina", message="Jina could not read {url}: HTTP {status} {message}"),
    _one(422, "fetch", "upstream", vendor="jina", from_text=True,
         message="Jina could not read {url}: HTTP {status} {message}"),
    _one(400, "fetch", "upstream", vendor="jina", from_text=True, words=("url",),
         message="Jina could not read {url}: HTTP {status} {message}"),
    # Firecrawl scrape: a scrape that failed on the page's side (timeout, SCRAPE_* errors)
    _one(408, "fetch", "timeout", vendor="firecrawl", from_text=True,
         message="Firecrawl could not scrape {url}: HTTP {status} {message}"),
    _one(500, "fetch", "upstream", vendor="firecrawl", from_text=True,
         message="Firecrawl could not scrape {url}: HTTP {status} {message}"),
    _one(400, "fetch", "upstream", vendor="firecrawl", from_text=True, words=("url",),
         message="Firecrawl could not scrape {url}: HTTP {status} {message}"),
)


def rows_for(context: Context, vendor: str = "") -> tuple[StatusRow, ...]:
    """The rows :func:`lookup` reads for ``context`` (and ``vendor``), in the order it reads them."""
    chain: list[Context] = []
    current: Context | None = context
    while current is not None:
        chain.append(current)
        current = CONTEXTS[current]
    rows: list[StatusRow] = []
    if vendor:  # the vendor's own rows first, for the context and then its parents
        for each in chain:
            rows.extend(r for r in ROWS if r.vendor == vendor and r.context == each)
    for each in chain:
        rows.extend(r for r in ROWS if not r.vendor and r.context == each)
    return tuple(rows)


_GENERAL: dict[Context, tuple[StatusRow, ...]] = {c: rows_for(c) for c in CONTEXTS}
_VENDORS = frozenset(r.vendor for r in ROWS if r.vendor)
_BY_VENDOR: dict[tuple[Context, str], tuple[StatusRow, ...]] = {}


def _rows(context: Context, vendor: str) -> tuple[StatusRow, ...]:
    rows = _BY_VENDOR.get((context, vendor))
    if rows is None:
        rows = _BY_VENDOR[(context, vendor)] = rows_for(context, vendor)
    return rows


def lookup(
    status: int, context: Context = "api", *, vendor: str = "", envelope: ErrorEnvelope | None = None,
    body: bytes = b"",
) -> StatusRow:
    """The row that reads ``status`` in ``context`` (a vendor's own row first). Every status has one: the
    contexts end with a catch-all row; a row whose ``reason`` is None is not a failure."""
    rows = _rows(context, vendor) if vendor in _VENDORS else _GENERAL[context]
    for row in rows:
        if not row.low <= status <= row.high:
            continue
        if row.codes and envelope is None and body:  # the error body is parsed only when a row asks
            envelope = parse_error_envelope(body)
        if row.applies(status, envelope, body):
            return row
    raise AssertionError(f"no status row for {status} in {context}")  # pragma: no cover - catch-all rows


@dataclass(frozen=True, slots=True)
class TextRow:
    """A vendor's words (any of ``words``, lower case, in its error text) that mean ``reason``."""

    words: tuple[str, ...]
    reason: Reason


TEXT_ROWS: tuple[TextRow, ...] = (
    TextRow(("404", "not found", "410"), "not_found"),
    TextRow(("403", "401", "451", "forbidden", "blocked", "captcha", "access denied", "cloudflare"), "blocked"),
    TextRow(("timeout", "timed out"), "timeout"),
    TextRow(("429", "rate limit", "too many requests"), "rate_limited"),
    TextRow(("unsupported", "content type", "content-type"), "unsupported_type"),
)


def reason_from_text(message: str) -> Reason | None:
    """A page failure reason from a vendor's words (``404``, ``forbidden``, ``timeout``, ...), or None."""
    text = message.lower()
    for row in TEXT_ROWS:
        if any(word in text for word in row.words):
            return row.reason
    return None
