"""The fetch operation of a provider: sans-io, like search (build requests, parse responses; the engine does I/O).

A fetch provider turns one URL into the page's whole extracted text (:class:`FetchAnswer`); the engine applies the
quality floor (``min_chars``), cuts the slice (``start_index``, ``max_chars``) and records the attempt. An API
provider implements :meth:`FetchProvider.build_fetch_request` and :meth:`FetchProvider.parse_fetch_response` (or
overrides :meth:`FetchProvider.fetch_flow`). The ``http`` provider talks to the page itself (see
:mod:`perplexed.providers.http`). A vendor whose API both searches and fetches (Tavily, Exa, Firecrawl) is one
class that subclasses :class:`FetchProvider` and declares both operations (``operations``).

A page-level failure, whether the page's own status came back directly or inside a successful API reply
(Firecrawl's ``metadata.statusCode``, Exa's ``statuses``), maps to the same reasons: :func:`page_failure`, which
reads the status table (:mod:`perplexed.policy._status`, contexts ``page`` and ``reported``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping
from datetime import date
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from perplexed._errors import ProviderError, Reason
from perplexed._models import PageType
from perplexed.net._ssrf import NOTHING, Allowed
from perplexed.policy._status import Context, lookup, reason_from_text
from perplexed.providers._base import Operation, Provider

__all__ = [
    "FetchAnswer",
    "FetchFlow",
    "FetchOptions",
    "FetchProvider",
    "FunctionFetcher",
    "page_failure",
    "reason_from_text",  # from the status table (perplexed.policy._status), here for its earlier importers
    "reported_page_failure",
    "status_reason",
]

Format = Literal["markdown", "text"]


class FetchOptions(BaseModel):
    """What every fetch provider is asked for (validated by :func:`perplexed.fetch` before any call).

    ``max_age_s``: how old a provider's cached copy may be (Firecrawl ``maxAge`` in ms, Exa ``maxAgeHours``
    rounded up, Jina's ``X-Cache-Tolerance`` in seconds); None = the provider's default. ``extra``: options for
    one provider (its ``extra_options``), passed through.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)  # built on first fetch

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

    model_config = ConfigDict(defer_build=True)  # built on first use: a search never makes one

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


if TYPE_CHECKING:
    import httpx

    FetchFlow = Generator[httpx.Request, httpx.Response, FetchAnswer]
else:

    def __getattr__(name: str) -> Any:
        """``FetchFlow`` is built on first use: httpx is imported then (see ``perplexed.providers._base.Flow``)."""
        if name == "FetchFlow":
            import httpx

            value = globals()["FetchFlow"] = Generator[httpx.Request, httpx.Response, FetchAnswer]
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def status_reason(status: int) -> Reason | None:
    """The failure reason of a page's own HTTP status (None for a success): what a page answered, not an API.

    Read from the status table (:mod:`perplexed.policy._status`, context ``page``): 404/410 ``not_found``; 401, 402, 403,
    451 ``blocked``; 429 ``rate_limited``; 408 ``timeout``; 415 ``unsupported_type``; other 4xx and 5xx
    ``upstream``."""
    return lookup(status, "page").reason


def page_failure(provider: Provider, status: int, what: str, response: httpx.Response | None = None,
                 context: Context = "page") -> ProviderError:
    """The :class:`ProviderError` for a page that answered ``status`` (``what``: the upstream's words)."""
    reason: Reason = lookup(status, context).reason or "upstream"
    error = provider.fail(reason, f"the page answered HTTP {status}" + (f" ({what})" if what else ""), response)
    error.status = status
    return error


def reported_page_failure(provider: Provider, code: Any, what: str,
                          response: httpx.Response | None = None) -> ProviderError | None:
    """The failure of a page whose status an API reported inside a successful reply (Firecrawl's
    ``metadata.statusCode``, Exa's ``httpStatusCode``), or None when ``code`` is no status or not a failure (the
    status table, context ``reported``)."""
    if isinstance(code, bool) or not isinstance(code, int) or lookup(code, "reported").reason is None:
        return None
    return page_failure(provider, code, what, response, context="reported")


class FetchProvider(Provider):
    """Base class of the providers that fetch pages (``http``, ``jina``; ``exa``, ``tavily`` and ``firecrawl``
    both search and fetch: ``operations``).

    Same constructor and governance settings as a search :class:`~perplexed.providers.Provider`
    (``api_key``, ``base_url``, ``cost``, ``name``, ``transport``, ``max_body_bytes``, ``rate_limit``, ...).
    ``fetch_options``: the provider's own fetch options, accepted by :func:`perplexed.fetch` as keywords (a class
    that only fetches may name them ``extra_options``, as before). ``fetch_price``: USD per fetched page when the
    provider reports no cost.
    """

    kind: ClassVar[str] = "fetch"
    operations: ClassVar[frozenset[Operation]] = frozenset({"fetch"})
    extra_options: ClassVar[tuple[str, ...]] = ()
    fetch_options: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # a fetch-only class written before fetch_options existed names its fetch options extra_options
        if "search" not in cls.operations and "fetch_options" not in cls.__dict__ and "extra_options" in cls.__dict__:
            cls.fetch_options = tuple(cls.extra_options)
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

    def fetch_price(self, options: FetchOptions | None = None) -> float:
        """USD per fetched page when the provider reports no cost (a vendor that also searches overrides it:
        its ``price`` is a search's)."""
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
