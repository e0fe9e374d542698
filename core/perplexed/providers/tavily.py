"""Tavily: ``POST {base}/search`` with ``Authorization: Bearer $TAVILY_API_KEY``.

Maps every common option except ``safe_search``. Cost is Tavily's credits (``usage.credits``, asked for with
``include_usage``; else 1 credit for a basic/fast search and 2 for an advanced one) times ``usd_per_credit``.
HTTP 432/433 (plan or pay-as-you-go credit limit) are ``payment`` errors; a 429 keeps its retry-after.

The same class fetches pages (``operations`` search and fetch): ``POST {base}/extract`` with ``{"urls": [url],
"extract_depth": "basic"|"advanced", "format": "markdown"|"text", "include_usage": true}``. The reply's
``results[].raw_content`` is the page; ``failed_results[].error`` (a URL Tavily could not read) maps to the same
reasons as any page (from the error's words). A fetch's cost: ``usage.credits`` times ``usd_per_credit`` (default
0.008) when reported, else a basic extract's 1 credit per 5 URLs (2 for advanced), ⚠ Tavily's list price.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from perplexed._errors import ConfigError
from perplexed._models import Hit, ProviderAnswer
from perplexed.policy._options import SearchOptions
from perplexed.policy._status import reason_from_text
from perplexed.providers._base import Operation, parse_published
from perplexed.providers._common import (
    as_float,
    as_str,
    body_retry_after,
    country_code,
    date_window,
    language_code,
    merged_extra,
)
from perplexed.providers._fetching import FetchAnswer, FetchOptions, FetchProvider, credits_cost

__all__ = ["Tavily"]

_PASS_THROUGH = (
    "search_depth",
    "topic",
    "chunks_per_source",
    "include_raw_content",
    "include_favicon",
    "include_domains_mode",
    "exact_match",
    "auto_parameters",
    "days",
    "max_age_hours",
    "filter_by_language",
)

# Tavily's ``country`` takes a lower-case English country name (⚠ the reference lists the field without its
# values; the names follow Tavily's docs). Codes not listed here are not sent; pass ``country_name=...``.
_COUNTRY_NAMES = {
    "AR": "argentina",
    "AT": "austria",
    "AU": "australia",
    "BE": "belgium",
    "BR": "brazil",
    "CA": "canada",
    "CH": "switzerland",
    "CL": "chile",
    "CN": "china",
    "CO": "colombia",
    "CZ": "czech republic",
    "DE": "germany",
    "DK": "denmark",
    "EG": "egypt",
    "ES": "spain",
    "FI": "finland",
    "FR": "france",
    "GB": "united kingdom",
    "GR": "greece",
    "HK": "hong kong",
    "HU": "hungary",
    "ID": "indonesia",
    "IE": "ireland",
    "IL": "israel",
    "IN": "india",
    "IT": "italy",
    "JP": "japan",
    "KE": "kenya",
    "KR": "south korea",
    "MX": "mexico",
    "MY": "malaysia",
    "NG": "nigeria",
    "NL": "netherlands",
    "NO": "norway",
    "NZ": "new zealand",
    "PE": "peru",
    "PH": "philippines",
    "PK": "pakistan",
    "PL": "poland",
    "PT": "portugal",
    "RO": "romania",
    "RU": "russia",
    "SA": "saudi arabia",
    "SE": "sweden",
    "SG": "singapore",
    "TH": "thailand",
    "TR": "turkey",
    "TW": "taiwan",
    "UA": "ukraine",
    "AE": "united arab emirates",
    "UK": "united kingdom",
    "US": "united states",
    "VN": "vietnam",
    "ZA": "south africa",
}


class Tavily(FetchProvider):
    """Tavily search and extract (``TAVILY_API_KEY``; default ``base_url`` ``https://api.tavily.com``).

    Extra options: ``usd_per_credit`` (default 0.008, pay-as-you-go), ``include_usage`` (default True: ask
    Tavily for the credits used), ``country_name`` (Tavily's own country name, e.g. ``"united states"``), and,
    sent as they are: ``search_depth``, ``topic``, ``chunks_per_source``, ``include_raw_content`` (the raw
    page becomes ``Hit.content``), ``include_favicon``, ``include_domains_mode``, ``exact_match``,
    ``auto_parameters``, ``days``, ``max_age_hours``, ``filter_by_language``.

    Fetch options (HTTP 432/433 are ``payment``): ``extract_depth`` (``basic`` or ``advanced``),
    ``usd_per_credit``, ``timeout`` (seconds, Tavily's own).
    """

    name = "tavily"
    operations: ClassVar[frozenset[Operation]] = frozenset({"search", "fetch"})
    fetch_options: ClassVar[tuple[str, ...]] = ("extract_depth", "usd_per_credit", "timeout")
    env_key = "TAVILY_API_KEY"
    default_base_url = "https://api.tavily.com"
    #: pay-as-you-go USD per credit (tavily.com pricing, reference checked 2026-11; plans $0.005-0.0075)
    default_usd_per_credit: ClassVar[float] = 0.008
    # Tavily's credit limits (HTTP 432/433) are ``payment``: rows of the status table (perplexed.policy._status)
    # USD per basic search (1 credit) at the default usd_per_credit; advanced searches cost 2 credits.
    default_price = 0.008
    native_options: ClassVar[frozenset[str]] = frozenset(
        {
            "max_results",
            "include_domains",
            "exclude_domains",
            "recency",
            "published_after",
            "published_before",
            "language",
            "country",
        }
    )
    extra_options: ClassVar[tuple[str, ...]] = (
        "usd_per_credit",
        "include_usage",
        "country_name",
        *_PASS_THROUGH,
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        rate = self.options.get("usd_per_credit")
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float) or rate < 0):
            raise ConfigError("usd_per_credit for provider 'tavily' must be a non-negative number of USD")

    def usd_per_credit(self, options: SearchOptions | None = None) -> float:
        """USD per Tavily credit: the ``usd_per_credit`` option, else 0.008."""
        extra = merged_extra(self.options, options) if options is not None else self.options
        rate = extra.get("usd_per_credit")
        if isinstance(rate, int | float) and not isinstance(rate, bool) and rate >= 0:
            return float(rate)
        return self.default_usd_per_credit

    def price(self, options: SearchOptions | None = None) -> float:
        """Expected USD for a call: an override if set, else 1 credit (2 for ``search_depth="advanced"``)."""
        configured = self.price_override()
        if configured is not None:
            return configured
        extra = merged_extra(self.options, options) if options is not None else self.options
        credits = 2 if extra.get("search_depth") == "advanced" else 1
        return credits * self.usd_per_credit(options)

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        """``POST {base}/search`` with the options mapped to Tavily's fields."""
        key = self.api_key()
        extra = merged_extra(self.options, options)
        body: dict[str, Any] = {"query": query, "max_results": max(1, min(options.max_results, 20))}
        if options.include_domains:
            body["include_domains"] = options.include_domains
        if options.exclude_domains:
            body["exclude_domains"] = options.exclude_domains
        if options.published_after or options.published_before:
            after, before = date_window(options)
            if after:
                body["start_date"] = after.isoformat()
            if before:
                body["end_date"] = before.isoformat()
        elif options.recency:
            body["time_range"] = options.recency
        language = language_code(options.language)
        if language:
            body["language"] = language
        country = extra.get("country_name")
        if country is None:
            code = country_code(options.country)
            country = _COUNTRY_NAMES.get(code) if code else None
        if country:
            body["country"] = country
        if extra.get("include_usage", True):
            body["include_usage"] = True
        for field in _PASS_THROUGH:
            if field in extra:
                body[field] = extra[field]
        return httpx.Request(
            "POST",
            f"{self.base_url}/search",
            json=body,
            headers=self.headers(Authorization=f"Bearer {key}"),
        )

    def retry_after(self, response: httpx.Response) -> float | None:
        """The ``Retry-After`` header, else the body's ``retry_after_seconds`` (keyless 429s)."""
        header = super().retry_after(response)
        return header if header is not None else body_retry_after(response)

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        """``results[]`` to hits (``raw_content`` becomes ``content``); the cost from ``usage.credits``."""
        data = self.json_object(response)
        results = data.get("results")
        if not isinstance(results, list):
            raise self.fail("malformed", "Tavily answer has no 'results' list", response)
        hits = []
        for item in results:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str) or not item["url"]:
                continue
            raw_content = item.get("raw_content")
            hits.append(
                Hit(
                    title=as_str(item.get("title")),
                    url=item["url"],
                    snippet=as_str(item.get("content")),
                    content=raw_content if isinstance(raw_content, str) and raw_content else None,
                    published=parse_published(item.get("published_date")),
                    score=as_float(item.get("score")),
                    provider=self.label,
                    raw=item,
                )
            )
        return ProviderAnswer(hits=hits, cost=self._cost_of(data, options))

    def _cost_of(self, data: dict[str, Any], options: SearchOptions) -> float | None:
        if self.price_override() is not None:
            return None  # the engine uses the override
        usage = data.get("usage")
        credits = as_float(usage.get("credits")) if isinstance(usage, dict) else None
        if credits is None or credits < 0:
            return None  # the engine uses price(options)
        return credits * self.usd_per_credit(options)

    # -- fetch (extract) ------------------------------------------------------------------------------------

    def _credits(self, depth: str) -> float:
        return (2 if depth == "advanced" else 1) / 5

    def fetch_price(self, options: FetchOptions | None = None) -> float:
        """USD per extracted page: an override if set, else 1 credit per 5 URLs (2 for ``extract_depth=
        "advanced"``) times ``usd_per_credit``."""
        configured = self.price_override()
        if configured is not None:
            return configured
        return self._credits(str(self.options.get("extract_depth", "basic"))) * self.usd_per_credit()

    def build_fetch_request(self, url: str, options: FetchOptions) -> httpx.Request:
        key = self.api_key()
        body: dict[str, Any] = {
            "urls": [url],
            "extract_depth": str(self.option(options, "extract_depth", "basic")),
            "format": options.format,
            "include_images": False,
            "include_usage": True,
        }
        timeout = self.option(options, "timeout")
        if timeout is not None:
            body["timeout"] = timeout
        return httpx.Request("POST", f"{self.base_url}/extract", json=body, headers=self.headers(Authorization=f"Bearer {key}"))

    def parse_fetch_response(self, response: httpx.Response, url: str, options: FetchOptions) -> FetchAnswer:
        data = self.json_object(response)
        rate = self.option(options, "usd_per_credit", self.usd_per_credit())
        usage = data.get("usage")
        cost = credits_cost(usage.get("credits"), float(rate)) if isinstance(usage, dict) else None
        if self.price_override() is not None:
            cost = None
        failed = data.get("failed_results")
        results = data.get("results")
        page = next((r for r in results if isinstance(r, dict)), None) if isinstance(results, list) else None
        if page is None and isinstance(failed, list) and failed:
            first = failed[0] if isinstance(failed[0], dict) else {}
            message = str(first.get("error") or "extraction failed")
            error = self.fail(reason_from_text(message) or "upstream", f"Tavily could not extract the page: {message[:300]}", response)
            error.charged = cost if cost is not None else 0.0  # Tavily bills successful extractions only
            raise error
        if results is not None and not isinstance(results, list):
            raise self.fail("malformed", "Tavily extract reply's results is not a list", response)
        if page is None:
            return FetchAnswer(format=options.format, cost=cost if cost is not None else 0.0)
        text = page.get("raw_content") or ""
        if cost is None and self.price_override() is None:
            cost = self._credits(str(self.option(options, "extract_depth", "basic"))) * float(rate)
        return FetchAnswer(
            text=str(text).strip(),
            format=options.format,
            final_url=str(page.get("url") or url),
            title=str(page.get("title") or ""),
            cost=cost,
        )
