"""The fetch-provider shape: sans-io, like search providers (build requests, parse responses; the engine does I/O).

A fetch provider turns one URL into the page's whole extracted text (:class:`FetchAnswer`); the engine applies the
quality floor (``min_chars``), cuts the slice (``start_index``, ``max_chars``) and records the attempt. An API
provider implements :meth:`FetchProvider.build_fetch_request` and :meth:`FetchProvider.parse_fetch_response` (or
overrides :meth:`FetchProvider.fetch_flow`). The ``http`` provider talks to the page itself (see
:mod:`perplexed.fetchers.http`).

A page-level failure, whether the page's own status came back directly or inside a successful API reply
(Firecrawl's ``metadata.statusCode``, Exa's ``statuses``), maps to the same reasons: :func:`page_failure`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping
from datetime import date
from typing import Any, ClassVar, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from .._errors import ProviderError, Reason
from .._models import PageType
from .._ssrf import NOTHING, Allowed
from ..providers._base import Provider

__all__ = [
    "FetchAnswer",
    "FetchFlow",
    "FetchOptions",
    "FetchProvider",
    "FunctionFetcher",
    "page_failure",
    "reason_from_text",
    "status_reason",
]

Format = Literal["markdown", "text"]


class FetchOptions(BaseModel):
    """What every fetch provider is asked for (validated by :func:`perplexed.fetch` before any call).

    ``max_age_s``: how old a provider's cached copy may be (Firecrawl ``maxAge`` in ms, Exa ``maxAgeHours``
    rounded up, Jina's ``X-Cache-Tolerance`` in seconds); None = the provider's default. ``extra``: options for
    one provider (its ``extra_options``), passed through.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    format: Format = "markdown"
    max_chars: int = Field(20_000, ge=1)
    start_index: int = Field(0, ge=0)
    min_chars: int = Field(200, ge=0)
    max_age_s: float | None = Field(None, ge=0)
    allow_private: Allowed = NOTHING
    respect_robots: bool = True
    extra: Mapping[str, Any] = Field(default_factory=dict)


class FetchAnswer(BaseModel):
    """What a fetch provider returns: the page's whole extracted text and what is known about it.

    ``cost`` is None when the provider does not report a charge (the engine then uses its price).
    """

    text: str = ""
    format: Format = "markdown"
    final_url: str | None = None
    title: str = ""
    published: date | None = None
    language: str | None = None
    content_type: str | None = None
    status: int | None = None
    cost: float | None = None
    detail: str | None = None
    page_type: PageType | None = None
    page_type_confidence: float | None = None
    structured: dict[str, Any] = Field(default_factory=dict)


FetchFlow = Generator[httpx.Request, httpx.Response, FetchAnswer]


def status_reason(status: int) -> Reason | None:
    """The failure reason of a page's own HTTP status (None for a success): what a page answered, not an API.

    404/410 ``not_found``; 401, 402, 403, 451 ``blocked``; 429 ``rate_limited``; 408 ``timeout``; other 4xx and
    5xx ``upstream``; 415 ``unsupported_type``."""
    if 200 <= status < 300:
        return None
    if status in (404, 410):
        return "not_found"
    if status in (401, 402, 403, 451):
        return "blocked"
    if status == 429:
        return "rate_limited"
    if status == 408:
        return "timeout"
    if status == 415:
        return "unsupported_type"
    return "upstream"


def page_failure(provider: Provider, status: int, what: str, response: httpx.Response | None = None) -> ProviderError:
    """The :class:`ProviderError` for a page that answered ``status`` (``what``: the upstream's words)."""
    reason: Reason = status_reason(status) or "upstream"
    error = provider.fail(reason, f"the page answered HTTP {status}" + (f" ({what})" if what else ""), response)
    error.status = status
    return error


class FetchProvider(Provider):
    """Base class of the fetch providers (``http``, ``jina``, ``exa``, ``tavily``, ``firecrawl``).

    Same constructor and governance settings as a search :class:`~perplexed.providers.Provider`
    (``api_key``, ``base_url``, ``cost``, ``name``, ``transport``, ``max_body_bytes``, ``rate_limit``, ...).
    ``extra_options``: the provider's own options, accepted by :func:`perplexed.fetch` as keywords.
    """

    kind: ClassVar[str] = "fetch"
    extra_options: ClassVar[tuple[str, ...]] = ()
    #: the ``http`` provider talks to the page itself (the engine drives it through the guarded client)
    direct: ClassVar[bool] = False

    def fetch_flow(self, url: str, options: FetchOptions) -> FetchFlow:
        """Yield HTTP requests and receive their (fully read) responses; return the answer."""
        response = yield self.build_fetch_request(url, options)
        return self.parse_fetch_response(response, url, options)

    def build_fetch_request(self, url: str, options: FetchOptions) -> httpx.Request:
        raise NotImplementedError

    def parse_fetch_response(self, response: httpx.Response, url: str, options: FetchOptions) -> FetchAnswer:
        raise NotImplementedError

    def fetch_price(self, options: FetchOptions) -> float:
        """USD per fetched page when the provider reports no cost."""
        return self.price()

    def option(self, options: FetchOptions, name: str, default: Any = None) -> Any:
        """A provider option: given to the call (``options.extra``), else to the constructor, else ``default``."""
        if name in options.extra:
            return options.extra[name]
        return self.options.get(name, default)


class FunctionFetcher(FetchProvider):
    """A plain function (sync or async) ``fn(url, options)`` as a fetch-chain member. It may return a
    :class:`FetchAnswer`, a dict of its fields, a string (the text), or None (nothing found)."""

    name = "function"

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, cost: float | None = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name or getattr(fn, "__name__", "function"), cost=cost, **kwargs)
        import inspect

        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004
        )

    def coerce(self, value: Any) -> FetchAnswer:
        """What the function returned, as a :class:`FetchAnswer`."""
        if isinstance(value, FetchAnswer):
            return value
        if value is None:
            return FetchAnswer()
        if isinstance(value, str):
            return FetchAnswer(text=value)
        if isinstance(value, Mapping):
            fields = {k: v for k, v in value.items() if k in FetchAnswer.model_fields}
            if "content" in value and "text" not in fields:
                fields["text"] = value["content"]
            return FetchAnswer(**fields)
        raise ProviderError(
            "malformed", f"fetch function returned {type(value).__name__}, not a page", provider=self.label
        )


def credits_cost(credits: Any, usd_per_credit: float) -> float | None:
    """USD for a reported number of credits (None when not a finite non-negative number)."""
    if isinstance(credits, bool) or not isinstance(credits, int | float) or not math.isfinite(credits):
        return None
    return max(0.0, float(credits)) * usd_per_credit


def reason_from_text(message: str) -> Reason | None:
    """A page failure reason from a vendor's words (``404``, ``forbidden``, ``timeout``, ...), or None."""
    text = message.lower()
    if "404" in text or "not found" in text or "410" in text:
        return "not_found"
    if any(w in text for w in ("403", "401", "451", "forbidden", "blocked", "captcha", "access denied", "cloudflare")):
        return "blocked"
    if "timeout" in text or "timed out" in text:
        return "timeout"
    if "429" in text or "rate limit" in text or "too many requests" in text:
        return "rate_limited"
    if "unsupported" in text or "content type" in text or "content-type" in text:
        return "unsupported_type"
    return None
