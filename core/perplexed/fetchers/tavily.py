"""Tavily ``POST {base}/extract`` as a fetch provider (``Authorization: Bearer $TAVILY_API_KEY``).

Body: ``{"urls": [url], "extract_depth": "basic"|"advanced", "format": "markdown"|"text", "include_usage": true}``.
The reply's ``results[].raw_content`` is the page; ``failed_results[].error`` (a URL Tavily could not read) maps to
the same reasons as any page (from the error's words). Cost: ``usage.credits`` times ``usd_per_credit`` (default
0.008) when reported, else a basic extract's 1 credit per 5 URLs (2 for advanced), ⚠ Tavily's list price.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from .._options import SearchOptions
from ..providers.tavily import Tavily
from ._base import FetchAnswer, FetchOptions, FetchProvider, credits_cost, reason_from_text

__all__ = ["TavilyExtract"]


class TavilyExtract(FetchProvider, Tavily):
    """Tavily extract (same key as the Tavily search provider; HTTP 432/433 are ``payment``). Options:
    ``extract_depth`` (``basic`` or ``advanced``), ``usd_per_credit``, ``timeout`` (seconds, Tavily's own)."""

    name = "tavily"
    extra_options: ClassVar[tuple[str, ...]] = ("extract_depth", "usd_per_credit", "timeout")

    def _credits(self, depth: str) -> float:
        return (2 if depth == "advanced" else 1) / 5

    def price(self, options: SearchOptions | None = None) -> float:
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
