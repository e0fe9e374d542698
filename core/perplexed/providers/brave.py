"""Brave Search: ``GET {base}/res/v1/web/search`` with ``X-Subscription-Token: $BRAVE_API_KEY``.

Brave has no domain parameters (the engine filters the hits) and takes at most 20 results per call. A query
over 400 characters or 50 words fails before any call (``bad_request``). The snippet's ``<strong>``
highlighting is switched off and stripped. A 429 is a rate limit or the monthly quota; when Brave sends no
``Retry-After``, the first (per-second window) value of ``X-RateLimit-Reset`` is kept as the retry-after
(⚠ header layout unverified).
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from perplexed._models import Hit, ProviderAnswer
from perplexed.policy._options import SearchOptions
from perplexed.providers._base import Provider, parse_published
from perplexed.providers._common import (
    as_float,
    as_str,
    country_code,
    date_window,
    language_code,
    merged_extra,
    strip_tags,
    today,
)

__all__ = ["Brave"]

_FRESHNESS = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}
_PASS_THROUGH = ("extra_snippets", "result_filter", "goggles_id", "spellcheck", "units", "offset", "ui_lang")


class Brave(Provider):
    """Brave web search (``BRAVE_API_KEY``; default ``base_url`` ``https://api.search.brave.com``).

    Extra options, sent as query parameters: ``extra_snippets``, ``result_filter``, ``goggles_id``,
    ``spellcheck``, ``units``, ``offset``, ``ui_lang``.
    """

    name = "brave"
    env_key = "BRAVE_API_KEY"
    default_base_url = "https://api.search.brave.com"
    # $5 per 1,000 requests (Brave dashboard as reported by a third party, Sep 2026; reference checked 2026-11).
    default_price = 0.005
    native_options: ClassVar[frozenset[str]] = frozenset(
        {
            "max_results",
            "recency",
            "published_after",
            "published_before",
            "language",
            "country",
            "safe_search",
        }
    )
    extra_options: ClassVar[tuple[str, ...]] = _PASS_THROUGH
    max_query_chars: ClassVar[int] = 400
    max_query_words: ClassVar[int] = 50

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        """``GET {base}/res/v1/web/search`` with the options as query parameters."""
        key = self.api_key()
        if len(query) > self.max_query_chars or len(query.split()) > self.max_query_words:
            raise self.fail(
                "bad_request",
                f"Brave takes queries of at most {self.max_query_chars} characters and {self.max_query_words} words",
            )
        extra = merged_extra(self.options, options)
        params: dict[str, Any] = {
            "q": query,
            "count": max(1, min(options.max_results, 20)),
            "text_decorations": "false",
        }
        if options.published_after or options.published_before:
            after, before = date_window(options)
            params["freshness"] = f"{after or '1970-01-01'}to{before or today()}"
        elif options.recency:
            params["freshness"] = _FRESHNESS[options.recency]
        country = country_code(options.country)
        if country:
            params["country"] = country
        language = language_code(options.language)
        if language:
            params["search_lang"] = language
        if options.safe_search:
            params["safesearch"] = options.safe_search
        for field in _PASS_THROUGH:
            value = extra.get(field)
            if value is not None:
                params[field] = str(value).lower() if isinstance(value, bool) else value
        return httpx.Request(
            "GET",
            f"{self.base_url}/res/v1/web/search",
            params=params,
            headers=self.headers(**{"X-Subscription-Token": key}),
        )

    def retry_after(self, response: httpx.Response) -> float | None:
        """``Retry-After`` when sent, else the first (per-second window) value of ``X-RateLimit-Reset`` ⚠."""
        header = super().retry_after(response)
        if header is not None:
            return header
        first = response.headers.get("x-ratelimit-reset", "").split(",")[0].strip()
        try:
            seconds = float(first)
        except ValueError:
            return None
        return seconds if 0 <= seconds < 86400 * 31 else None

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        """``web.results[]`` to hits (markup stripped; ``page_age``/``age`` is the published date, ``page_fetched``
        (when Brave last crawled the page) the ``updated`` date)."""
        data = self.json_object(response)
        web = data.get("web")
        if web is None:
            if "query" not in data and data.get("type") != "search":
                raise self.fail("malformed", "Brave answer has neither 'web' nor 'query'", response)
            return ProviderAnswer(hits=[])  # Brave leaves out 'web' when nothing matched
        results = web.get("results") if isinstance(web, dict) else None
        if not isinstance(results, list):
            raise self.fail("malformed", "Brave answer has no 'web.results' list", response)
        hits = []
        for item in results:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str) or not item["url"]:
                continue
            hits.append(
                Hit(
                    title=strip_tags(as_str(item.get("title"))),
                    url=item["url"],
                    snippet=strip_tags(as_str(item.get("description"))),
                    published=parse_published(item.get("page_age")) or parse_published(item.get("age")),
                    updated=parse_published(item.get("page_fetched")),
                    score=as_float(item.get("score")),
                    provider=self.label,
                    raw=item,
                )
            )
        return ProviderAnswer(hits=hits)
