"""Exa: ``POST {base}/search`` with ``x-api-key: $EXA_API_KEY``.

By default each hit's page text (up to 10,000 characters, as exa-py asks for) and highlights come back with
the search, included in the base price: the text becomes :attr:`Hit.content`, the highlights the snippet.
The cost of a call is the one Exa reports (``costDollars.total``); without it, the price table applies.
``recency`` becomes a ``startPublishedDate`` (Exa's date filters leave out undated pages).

The same class fetches pages (``operations`` search and fetch): ``POST {base}/contents`` with ``{"urls": [url],
"text": true}`` (``text: {"maxCharacters": N}`` with the ``max_characters`` option), ``maxAgeHours`` from
``max_age_s`` (rounded up), ``livecrawlTimeout`` (ms) with ``livecrawl_timeout_ms``. The reply's per-URL
``statuses`` (``{id, status, error: {tag, httpStatusCode}}``) say whether the page was read: a failed status maps
its ``httpStatusCode`` (or tag) to the same reasons as any page. A fetch's cost: ``costDollars.total`` when
reported, else 0.001 USD a page (⚠ list price, configurable with ``cost=``).
"""

from __future__ import annotations

import math
from datetime import date
from typing import Any, ClassVar

import httpx

from perplexed._errors import Reason
from perplexed._models import Hit, ProviderAnswer
from perplexed.policy._options import SearchOptions
from perplexed.providers._base import Operation, parse_published
from perplexed.providers._common import as_float, as_str, country_code, date_window, merged_extra
from perplexed.providers._fetching import FetchAnswer, FetchOptions, FetchProvider, reported_page_failure

__all__ = ["Exa"]

_PASS_THROUGH = {"type": "type", "category": "category", "livecrawl": "livecrawl"}
#: a page Exa could not read, by its error tag
_TAGS: dict[str, Reason] = {
    "CRAWL_NOT_FOUND": "not_found",
    "CRAWL_TIMEOUT": "timeout",
    "SOURCE_NOT_AVAILABLE": "blocked",
    "CRAWL_UNKNOWN_ERROR": "upstream",
}


class Exa(FetchProvider):
    """Exa search and contents (``EXA_API_KEY``; default ``base_url`` ``https://api.exa.ai``).

    Extra options: ``type`` (``auto``/``fast``/``neural``/``deep``/...), ``category``, ``include_text`` /
    ``exclude_text`` (a phrase of at most 5 words), ``text`` (True, False or the max characters of page text;
    default 10000), ``highlights`` (default True), ``summary`` (True or Exa's summary object), ``livecrawl``,
    ``contents`` (a raw ``contents`` object that replaces ``text``/``highlights``/``summary``).
    """

    name = "exa"
    operations: ClassVar[frozenset[Operation]] = frozenset({"search", "fetch"})
    #: fetch options: ``max_characters``, ``livecrawl_timeout_ms``
    fetch_options: ClassVar[tuple[str, ...]] = ("max_characters", "livecrawl_timeout_ms")
    #: USD per fetched page when Exa reports no cost (list price)
    fetch_default_price: ClassVar[float] = 0.001
    env_key = "EXA_API_KEY"
    default_base_url = "https://api.exa.ai"
    # $7 per 1,000 searches with text and highlights for up to 10 results (exa.ai pricing after the
    # 2026-03-03 update; reference checked 2026-11). Used only when the response reports no costDollars.
    default_price = 0.007
    #: USD per result beyond the first 10 ($1 per 1,000 results)
    price_per_extra_result: ClassVar[float] = 0.001
    native_options: ClassVar[frozenset[str]] = frozenset(
        {
            "max_results",
            "include_domains",
            "exclude_domains",
            "recency",
            "published_after",
            "published_before",
            "country",
            "safe_search",
        }
    )
    extra_options: ClassVar[tuple[str, ...]] = (
        "type",
        "category",
        "include_text",
        "exclude_text",
        "text",
        "highlights",
        "summary",
        "livecrawl",
        "contents",
    )

    def price(self, options: SearchOptions | None = None) -> float:
        """Expected USD when Exa reports no cost: an override if set, else $0.007 plus the extra results."""
        configured = self.price_override()
        if configured is not None:
            return configured
        results = min((options or SearchOptions()).max_results, 100)
        return self.default_price + max(0, results - 10) * self.price_per_extra_result

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        """``POST {base}/search`` with the options mapped to Exa's camelCase fields and ``contents``."""
        key = self.api_key()
        extra = merged_extra(self.options, options)
        body: dict[str, Any] = {"query": query, "numResults": max(1, min(options.max_results, 100))}
        if options.include_domains:
            body["includeDomains"] = options.include_domains
        if options.exclude_domains:
            body["excludeDomains"] = options.exclude_domains
        after, before = date_window(options)
        if after:
            body["startPublishedDate"] = _iso(after)
        if before:
            body["endPublishedDate"] = _iso(before, end_of_day=True)
        country = country_code(options.country)
        if country:
            body["userLocation"] = country
        if options.safe_search is not None and options.safe_search != "off":
            body["moderation"] = True
        for option, field in _PASS_THROUGH.items():
            if option in extra:
                body[field] = extra[option]
        for option, field in (("include_text", "includeText"), ("exclude_text", "excludeText")):
            value = extra.get(option)
            if value:
                body[field] = [value] if isinstance(value, str) else list(value)
        contents = self._contents(extra)
        if contents:
            body["contents"] = contents
        return httpx.Request(
            "POST",
            f"{self.base_url}/search",
            json=body,
            headers=self.headers(**{"x-api-key": key}),
        )

    @staticmethod
    def _contents(extra: dict[str, Any]) -> dict[str, Any]:
        if isinstance(extra.get("contents"), dict):
            return dict(extra["contents"])
        contents: dict[str, Any] = {}
        text = extra.get("text", 10000)
        if text is True:
            contents["text"] = True
        elif isinstance(text, int) and not isinstance(text, bool) and text > 0:
            contents["text"] = {"maxCharacters": text}
        if extra.get("highlights", True):
            contents["highlights"] = extra.get("highlights", True)
        summary = extra.get("summary")
        if summary:
            contents["summary"] = summary
        return contents

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        """``results[]`` to hits (``text`` is the content, highlights the snippet); cost = ``costDollars.total``."""
        data = self.json_object(response)
        results = data.get("results")
        if not isinstance(results, list):
            raise self.fail("malformed", "Exa answer has no 'results' list", response)
        hits = []
        for item in results:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str) or not item["url"]:
                continue
            text = item.get("text")
            highlights = [h for h in item.get("highlights") or [] if isinstance(h, str) and h.strip()]
            snippet = " … ".join(h.strip() for h in highlights) or as_str(item.get("summary"))
            if not snippet and isinstance(text, str):
                snippet = text[:500]
            hits.append(
                Hit(
                    title=as_str(item.get("title")),
                    url=item["url"],
                    snippet=snippet,
                    content=text if isinstance(text, str) and text else None,
                    published=parse_published(item.get("publishedDate")),
                    score=as_float(item.get("score")),
                    provider=self.label,
                    raw=item,
                )
            )
        return ProviderAnswer(hits=hits, cost=self._reported_cost(data))

    def _reported_cost(self, data: dict[str, Any]) -> float | None:
        if self.price_override() is not None:
            return None  # the engine uses the override
        cost = data.get("costDollars")
        total = as_float(cost.get("total")) if isinstance(cost, dict) else None
        return total if total is not None and total >= 0 else None


    # -- fetch (contents) -----------------------------------------------------------------------------------

    def fetch_price(self, options: FetchOptions | None = None) -> float:
        """USD per fetched page when Exa reports no cost: an override if set, else 0.001."""
        configured = self.price_override()
        return self.fetch_default_price if configured is None else configured

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
                failure = reported_page_failure(self, code, tag, response)
                if failure is None:
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

def _iso(day: date, *, end_of_day: bool = False) -> str:
    return f"{day.isoformat()}T23:59:59.999Z" if end_of_day else f"{day.isoformat()}T00:00:00.000Z"


def _dollars(value: Any) -> float | None:
    total = value.get("total") if isinstance(value, dict) else value
    if isinstance(total, bool) or not isinstance(total, int | float) or not math.isfinite(total) or total < 0:
        return None
    return float(total)
