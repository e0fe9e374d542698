"""Firecrawl v2 search: ``POST {base}/v2/search`` with ``Authorization: Bearer $FIRECRAWL_API_KEY``.

Works against the cloud API and against a self-hosted Firecrawl (``base_url=`` or ``FIRECRAWL_API_URL``);
a self-hosted instance needs no key unless it was set up with authentication, and costs nothing by default.

Asking for scraping (``scrape=True``, ``formats=[...]`` or ``scrape_options={...}``) makes Firecrawl fetch every hit and
return its markdown, which becomes :attr:`Hit.content` (a scraped page's ``modifiedTime`` becomes :attr:`Hit.updated`). A 200 with ``"success": false`` is an error
(``soft_failure``). Only keys of the v2 request schema are sent (it rejects unknown keys): there is no
safe-search key, so ``safe_search`` is not native here; ``country`` goes in lower case. Cost is Firecrawl's credits (``creditsUsed`` when reported, else 2 credits per 10
results, plus 1 per scraped page) times ``usd_per_credit``.

The same class fetches pages (``operations`` search and fetch): ``POST {base}/v2/scrape`` with ``{"url": url,
"formats": ["markdown"], "onlyMainContent": true}`` plus ``maxAge`` (ms) from ``max_age_s``, ``timeout`` (ms) and
``parsers: ["pdf"]``. The reply is ``{success, data: {markdown, metadata: {title, sourceURL, url, statusCode,
language, ...}}}``: a page status of 400 or more in ``metadata.statusCode`` maps to the same reasons as any page,
and ``success: false`` is a failure read from its ``error`` text. A fetch's cost: credits
(``metadata.creditsUsed`` when reported, else 1) times ``usd_per_credit`` (0.001 cloud, 0 self-hosted).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx

from perplexed._errors import ConfigError
from perplexed._models import Hit, ProviderAnswer
from perplexed.extract._extract import markdown_to_text
from perplexed.policy._options import SearchOptions
from perplexed.policy._status import reason_from_text
from perplexed.policy._wire import clip
from perplexed.providers._base import Operation, parse_published
from perplexed.providers._common import as_float, as_str, country_code, date_window, merged_extra
from perplexed.providers._fetching import (
    FetchAnswer,
    FetchOptions,
    FetchProvider,
    credits_cost,
    reported_page_failure,
)

__all__ = ["Firecrawl"]

_RECENCY_TBS = {"day": "qdr:d", "week": "qdr:w", "month": "qdr:m", "year": "qdr:y"}
_CLOUD_HOST = "api.firecrawl.dev"
_PASS_THROUGH = {
    "sources": "sources",
    "categories": "categories",
    "location": "location",
    "timeout": "timeout",
}


class Firecrawl(FetchProvider):
    """Firecrawl search and scrape (``FIRECRAWL_API_KEY``; ``base_url`` or ``FIRECRAWL_API_URL`` for a self-hosted
    instance, default ``https://api.firecrawl.dev``).

    Extra options: ``scrape`` (bool: return each hit's markdown as ``content``), ``scrape_options`` (a raw
    ``scrapeOptions`` object, implies scraping), ``formats`` (scrape with these formats, e.g. ``["markdown"]``), ``usd_per_credit`` (default 0.001 for the cloud API, 0 for a
    self-hosted ``base_url``), ``sources``, ``categories``, ``location``, ``timeout`` (ms), ``tbs`` (raw
    time filter, replaces the one built from ``recency``/dates).

    Fetch (scrape) options: ``usd_per_credit``, ``timeout_ms``, ``only_main_content`` (default True); main
    content only, markdown.
    """

    name = "firecrawl"
    operations: ClassVar[frozenset[Operation]] = frozenset({"search", "fetch"})
    fetch_options: ClassVar[tuple[str, ...]] = ("usd_per_credit", "timeout_ms", "only_main_content")
    env_key = "FIRECRAWL_API_KEY"
    env_base_url = "FIRECRAWL_API_URL"
    default_base_url = "https://api.firecrawl.dev"
    #: USD per credit, about $1 per 1,000 credits on the Standard plan (reference checked 2026-11; plans
    #: differ, roughly $0.8-6 per 1,000 credits: set ``usd_per_credit`` to yours).
    default_usd_per_credit: ClassVar[float] = 0.001
    #: credits per started block of 10 results (Firecrawl billing docs, 2026-08)
    credits_per_10_results: ClassVar[int] = 2
    #: extra credits per scraped page (basic markdown scrape)
    credits_per_scraped_page: ClassVar[int] = 1
    # USD per call of a plain 10-result search at the default usd_per_credit (for the price table).
    default_price = 0.002
    native_options: ClassVar[frozenset[str]] = frozenset(
        {
            "max_results",
            "include_domains",
            "exclude_domains",
            "recency",
            "published_after",
            "published_before",
            "country",
        }
    )
    extra_options: ClassVar[tuple[str, ...]] = (
        "scrape",
        "scrape_options",
        "formats",
        "usd_per_credit",
        "sources",
        "categories",
        "location",
        "timeout",
        "tbs",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        rate = self.options.get("usd_per_credit")
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float) or rate < 0):
            raise ConfigError("usd_per_credit for provider 'firecrawl' must be a non-negative number of USD")

    # -- configuration ------------------------------------------------------------------------------------

    @property
    def self_hosted(self) -> bool:
        """Whether the base URL points somewhere other than Firecrawl's cloud API."""
        return (urlsplit(self.base_url).hostname or "").lower() != _CLOUD_HOST

    @property
    def configured(self) -> bool:
        """A self-hosted instance may run without a key; the cloud API needs one."""
        try:
            if self.self_hosted:
                return True
            self.api_key()
        except ConfigError:
            return False
        return True

    def usd_per_credit(self, options: SearchOptions | None = None) -> float:
        """USD per Firecrawl credit: the ``usd_per_credit`` option, else 0.001 (cloud) or 0 (self-hosted)."""
        extra = merged_extra(self.options, options) if options is not None else self.options
        rate = extra.get("usd_per_credit")
        if isinstance(rate, int | float) and not isinstance(rate, bool) and rate >= 0:
            return float(rate)
        return 0.0 if self.self_hosted else self.default_usd_per_credit

    def credits(self, results: int, scraped: int = 0) -> int:
        """Credits for a search returning ``results`` hits with ``scraped`` pages scraped."""
        blocks = math.ceil(max(results, 1) / 10)
        return blocks * self.credits_per_10_results + scraped * self.credits_per_scraped_page

    def price(self, options: SearchOptions | None = None) -> float:
        """Expected USD for a call: an override if set, else the credits for ``max_results`` hits."""
        configured = self.price_override()
        if configured is not None:
            return configured
        opts = options or SearchOptions()
        limit = min(opts.max_results, 100)
        scraped = limit if self._scraping(merged_extra(self.options, opts)) else 0
        return self.credits(limit, scraped) * self.usd_per_credit(opts)

    # -- the sans-io protocol -----------------------------------------------------------------------------

    @staticmethod
    def _scrape_options(extra: dict[str, Any]) -> dict[str, Any] | None:
        """The ``scrapeOptions`` to send, or None when no scraping is asked for."""
        raw = extra.get("scrape_options", extra.get("scrapeOptions"))
        if isinstance(raw, dict):
            return dict(raw)
        formats = extra.get("formats")
        if formats:
            return {
                "formats": [formats] if isinstance(formats, str) else list(formats),
                "onlyMainContent": True,
            }
        if extra.get("scrape"):
            return {"formats": ["markdown"], "onlyMainContent": True}
        return None

    @classmethod
    def _scraping(cls, extra: dict[str, Any]) -> bool:
        return cls._scrape_options(extra) is not None

    def auth_headers(self) -> dict[str, str]:
        """The JSON headers with ``Authorization``; none for a self-hosted instance without a key."""
        headers = self.headers()
        try:
            headers["Authorization"] = f"Bearer {self.api_key()}"
        except ConfigError:
            if not self.self_hosted:
                raise
            # a self-hosted instance without authentication: no header
        return headers

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        """``POST {base}/v2/search``; ``scrapeOptions`` (markdown) when scraping is asked for."""
        headers = self.auth_headers()
        extra = merged_extra(self.options, options)
        body: dict[str, Any] = {"query": query, "limit": max(1, min(options.max_results, 100))}
        # includeDomains and excludeDomains are mutually exclusive: send the allow-list, the engine applies
        # the deny-list to the hits.
        if options.include_domains:
            body["includeDomains"] = options.include_domains
        elif options.exclude_domains:
            body["excludeDomains"] = options.exclude_domains
        tbs = extra.get("tbs") or self._tbs(options)
        if tbs:
            body["tbs"] = tbs
        country = country_code(options.country)
        if country:
            body["country"] = country.lower()  # the API's default and examples are lower case ("us")
        # No safe-search key: the v2 request schema has none and rejects unknown keys with a 400.
        for option, field in _PASS_THROUGH.items():
            if option in extra:
                body[field] = extra[option]
        scrape_options = self._scrape_options(extra)
        if scrape_options is not None:
            body["scrapeOptions"] = scrape_options
        return httpx.Request("POST", f"{self.base_url}/v2/search", json=body, headers=headers)

    @staticmethod
    def _tbs(options: SearchOptions) -> str | None:
        if options.published_after is None and options.published_before is None:
            return _RECENCY_TBS[options.recency] if options.recency else None
        after, before = date_window(options)
        parts = ["cdr:1"]
        if after:
            parts.append(f"cd_min:{after:%m/%d/%Y}")
        if before:
            parts.append(f"cd_max:{before:%m/%d/%Y}")
        return ",".join(parts)

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        """``data.web[]`` (and ``data.news[]``, or a v1 flat ``data[]``) to hits; ``success: false`` is an error."""
        data = self.json_object(response)
        if data.get("success") is False:
            message = data.get("error") or data.get("message") or "success: false"
            raise self.fail(
                "soft_failure", f"Firecrawl answered success=false: {clip(str(message), 300)}", response
            )
        payload = data.get("data")
        items: list[Any]
        if isinstance(payload, dict):  # v2: one array per source type
            items = []
            for source in ("web", "news"):
                section = payload.get(source)
                if section is not None and not isinstance(section, list):
                    raise self.fail("malformed", f"Firecrawl 'data.{source}' is not a list", response)
                items.extend(section or [])
        elif isinstance(payload, list):  # v1-style flat list (older self-hosted instances)
            items = payload
        else:
            raise self.fail("malformed", "Firecrawl answer has no 'data'", response)
        hits = [hit for item in items if (hit := self._hit(item)) is not None]
        warning = data.get("warning")
        return ProviderAnswer(
            hits=hits,
            cost=self._cost_of(data, len(hits), options),
            detail=warning if isinstance(warning, str) and warning else None,
        )

    def _hit(self, item: Any) -> Hit | None:
        if not isinstance(item, dict):
            return None
        metadata = item.get("metadata")
        meta: dict[str, Any] = metadata if isinstance(metadata, dict) else {}
        url = item.get("url") or meta.get("url") or meta.get("sourceURL")
        if not isinstance(url, str) or not url:
            return None
        markdown = item.get("markdown")
        published = (
            item.get("date")
            or meta.get("publishedTime")
            or meta.get("article:published_time")
            or meta.get("datePublished")
        )
        updated = meta.get("modifiedTime") or meta.get("article:modified_time") or meta.get("dateModified")
        return Hit(
            title=as_str(item.get("title")) or as_str(meta.get("title")),
            url=url,
            snippet=as_str(item.get("description"))
            or as_str(item.get("snippet"))
            or as_str(meta.get("description")),
            content=markdown if isinstance(markdown, str) and markdown else None,
            published=parse_published(published),
            updated=parse_published(updated),
            score=as_float(item.get("score")),
            provider=self.label,
            raw=item,
        )

    def _cost_of(self, data: dict[str, Any], hits: int, options: SearchOptions) -> float:
        configured = self.price_override()
        if configured is not None:
            return configured
        used = as_float(data.get("creditsUsed"))
        if used is None or used < 0:
            scraped = hits if self._scraping(merged_extra(self.options, options)) else 0
            used = float(self.credits(hits, scraped))
        return used * self.usd_per_credit(options)

    # -- fetch (scrape) -------------------------------------------------------------------------------------

    def fetch_price(self, options: FetchOptions | None = None) -> float:
        """USD per scraped page: an override if set, else 1 credit times ``usd_per_credit``."""
        configured = self.price_override()
        return configured if configured is not None else self.credits_per_scraped_page * self.usd_per_credit()

    def build_fetch_request(self, url: str, options: FetchOptions) -> httpx.Request:
        headers = self.auth_headers()
        body: dict[str, Any] = {
            "url": url,
            "formats": ["markdown"],
            "onlyMainContent": bool(self.option(options, "only_main_content", True)),
            "parsers": ["pdf"],
        }
        if options.max_age_s is not None:
            body["maxAge"] = math.ceil(options.max_age_s * 1000)
        timeout = self.option(options, "timeout_ms")
        if timeout is not None:
            body["timeout"] = int(timeout)
        return httpx.Request("POST", f"{self.base_url}/v2/scrape", json=body, headers=headers)

    def parse_fetch_response(self, response: httpx.Response, url: str, options: FetchOptions) -> FetchAnswer:
        # the status table reads a 408, a 500 and a 400 about the URL as a scrape that failed on the page's side
        self.check_status(response, url=url, context="fetch")
        data = self.json_object(response)
        if data.get("success") is False:
            message = str(data.get("error") or "success: false")
            raise self.fail(reason_from_text(message) or "upstream", f"Firecrawl: {message[:300]}", response)
        page = data.get("data")
        if not isinstance(page, dict):
            raise self.fail("malformed", "Firecrawl scrape reply has no data object", response)
        meta: dict[str, Any] = page["metadata"] if isinstance(page.get("metadata"), dict) else {}
        rate = float(self.option(options, "usd_per_credit", self.usd_per_credit()))
        cost = None if self.price_override() is not None else credits_cost(meta.get("creditsUsed", 1), rate)
        failure = reported_page_failure(self, meta.get("statusCode"), str(meta.get("error") or ""), response)
        if failure is not None:
            failure.charged = cost
            raise failure
        markdown = page.get("markdown") or ""
        if not isinstance(markdown, str):
            raise self.fail("malformed", "Firecrawl's data.markdown is not text", response)
        text = markdown.strip() if options.format == "markdown" else markdown_to_text(markdown)
        return FetchAnswer(
            text=text,
            format=options.format,
            final_url=str(meta.get("url") or meta.get("sourceURL") or url),
            title=str(meta.get("title") or meta.get("ogTitle") or ""),
            published=parse_published(meta.get("publishedTime") or meta.get("article:published_time")),
            language=meta.get("language") if isinstance(meta.get("language"), str) else None,
            content_type=meta.get("contentType") if isinstance(meta.get("contentType"), str) else None,
            status=None,
            cost=cost,
        )
