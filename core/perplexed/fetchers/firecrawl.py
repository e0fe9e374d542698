"""Firecrawl ``POST {base}/v2/scrape`` as a fetch provider (``Authorization: Bearer $FIRECRAWL_API_KEY``;
``FIRECRAWL_API_URL`` or ``base_url=`` for a self-hosted instance, which needs no key).

Body: ``{"url": url, "formats": ["markdown"], "onlyMainContent": true}`` plus ``maxAge`` (ms) from ``max_age_s``,
``timeout`` (ms) and ``parsers: ["pdf"]``. The reply is ``{success, data: {markdown, metadata: {title, sourceURL,
url, statusCode, language, ...}}}``: a page status of 400 or more in ``metadata.statusCode`` maps to the same
reasons as any page, and ``success: false`` is a failure read from its ``error`` text. Cost: credits
(``metadata.creditsUsed`` when reported, else 1) times ``usd_per_credit`` (0.001 cloud, 0 self-hosted).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import httpx

from .._errors import Reason
from .._extract import markdown_to_text
from .._options import SearchOptions
from ..providers._base import parse_published
from ..providers.firecrawl import Firecrawl
from ._base import FetchAnswer, FetchOptions, FetchProvider, credits_cost, page_failure, reason_from_text

__all__ = ["FirecrawlScrape"]


class FirecrawlScrape(FetchProvider, Firecrawl):
    """Firecrawl scrape, main content only, markdown. Options: ``usd_per_credit``, ``timeout_ms``,
    ``only_main_content`` (default True)."""

    name = "firecrawl"
    extra_options: ClassVar[tuple[str, ...]] = ("usd_per_credit", "timeout_ms", "only_main_content")

    def price(self, options: SearchOptions | None = None) -> float:
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
        status = response.status_code
        if status in (408, 500) or (status == 400 and b"url" in response.content[:2000].lower()):
            # a scrape that failed on the page's side (timeout, SCRAPE_* errors), not an API failure
            message = _error_of(response)
            reason: Reason = reason_from_text(message) or ("timeout" if status == 408 else "upstream")
            raise self.fail(reason, f"Firecrawl could not scrape {url}: HTTP {status} {message[:300]}", response)
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
        code = meta.get("statusCode")
        if isinstance(code, int) and not isinstance(code, bool) and code >= 400:
            failure = page_failure(self, code, str(meta.get("error") or ""), response)
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


def _error_of(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return ""
    return str(data.get("error") or data.get("message") or "") if isinstance(data, dict) else ""
