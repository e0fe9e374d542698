"""Exa ``POST {base}/contents`` as a fetch provider (``x-api-key: $EXA_API_KEY``).

Body: ``{"urls": [url], "text": true}`` (``text: {"maxCharacters": N}`` with the ``max_characters`` option),
``maxAgeHours`` from ``max_age_s`` (rounded up), ``livecrawlTimeout`` (ms) with ``livecrawl_timeout_ms``. The
reply's per-URL ``statuses`` (``{id, status, error: {tag, httpStatusCode}}``) say whether the page was read: a
failed status maps its ``httpStatusCode`` (or tag) to the same reasons as any page. Cost: ``costDollars.total``
when reported, else 0.001 USD a page (⚠ list price, configurable with ``cost=``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import httpx

from .._errors import Reason
from .._options import SearchOptions
from ..providers._base import parse_published
from ..providers.exa import Exa
from ._base import FetchAnswer, FetchOptions, FetchProvider, page_failure

__all__ = ["ExaContents"]

_TAGS: dict[str, Reason] = {
    "CRAWL_NOT_FOUND": "not_found",
    "CRAWL_TIMEOUT": "timeout",
    "SOURCE_NOT_AVAILABLE": "blocked",
    "CRAWL_UNKNOWN_ERROR": "upstream",
}


class ExaContents(FetchProvider, Exa):
    """Exa contents (same key and base URL as the Exa search provider). Options: ``max_characters``,
    ``livecrawl_timeout_ms``."""

    name = "exa"
    default_price = 0.001
    extra_options: ClassVar[tuple[str, ...]] = ("max_characters", "livecrawl_timeout_ms")

    def price(self, options: SearchOptions | None = None) -> float:
        configured = self.price_override()
        return self.default_price if configured is None else configured

    def build_fetch_request(self, url: str, options: FetchOptions) -> httpx.Request:
        key = self.api_key()
        limit = self.option(options, "max_characters")
        body: dict[str, Any] = {"urls": [url], "text": {"maxCharacters": int(limit)} if limit else True}
        if options.max_age_s is not None:
            body["maxAgeHours"] = math.ceil(options.max_age_s / 3600)
        timeout = self.option(options, "livecrawl_timeout_ms")
        if timeout is not None:
            body["livecrawlTimeout"] = int(timeout)
        return httpx.Request("POST", f"{self.base_url}/contents", json=body, headers=self.headers(**{"x-api-key": key}))

    def parse_fetch_response(self, response: httpx.Response, url: str, options: FetchOptions) -> FetchAnswer:
        data = self.json_object(response)
        cost = _dollars(data.get("costDollars"))
        statuses = data.get("statuses")
        if isinstance(statuses, list):
            for status in statuses:
                if not isinstance(status, dict) or status.get("status") == "success":
                    continue
                error: dict[str, Any] = status["error"] if isinstance(status.get("error"), dict) else {}
                code = error.get("httpStatusCode")
                tag = str(error.get("tag") or "")
                if isinstance(code, int) and not isinstance(code, bool) and code >= 400:
                    failure = page_failure(self, code, tag, response)
                else:
                    failure = self.fail(_TAGS.get(tag, "upstream"), f"Exa could not read the page ({tag or 'error'})", response)
                failure.charged = cost
                raise failure
        results = data.get("results")
        if not isinstance(results, list):
            raise self.fail("malformed", "Exa contents reply has no results list", response)
        page = next((r for r in results if isinstance(r, dict)), None)
        if page is None:
            return FetchAnswer(cost=cost if cost is not None else 0.0, format=options.format)
        text = page.get("text") or ""
        return FetchAnswer(
            text=str(text).strip(),
            format="markdown",
            final_url=str(page.get("url") or url),
            title=str(page.get("title") or ""),
            published=parse_published(page.get("publishedDate")),
            cost=cost,
        )


def _dollars(value: Any) -> float | None:
    total = value.get("total") if isinstance(value, dict) else value
    if isinstance(total, bool) or not isinstance(total, int | float) or not math.isfinite(total) or total < 0:
        return None
    return float(total)
