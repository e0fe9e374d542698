"""Ceramic: ``POST {base}/search`` with ``Authorization: Bearer $CERAMIC_API_KEY``. Lexical (keyword) search.

The API takes only the query, ``maxResults`` and ``maxDescriptionLength`` (anything else is a 422), so
domain filters are done on the hits and recency, dates, language, country and safe search are ignored.
A query must be 1-50 words; a longer one fails before any call (``bad_request``, not billed).
Errors are RFC 7807 bodies; 402 means the credits are exhausted.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from perplexed._models import Hit, ProviderAnswer
from perplexed.policy._options import SearchOptions
from perplexed.providers._base import Provider
from perplexed.providers._common import as_float, as_str, body_retry_after, merged_extra

__all__ = ["Ceramic"]


class Ceramic(Provider):
    """Ceramic search (``CERAMIC_API_KEY``; ``base_url`` or ``CERAMIC_BASE_URL``, default
    ``https://api.ceramic.ai``).

    Extra options: ``max_description_length`` (characters per description, 1000-8000 per the docs),
    ``max_results_limit`` (the largest ``maxResults`` sent; default 50 as the SDK validates, while the
    skill docs say 20 - unverified, hence configurable).
    """

    name = "ceramic"
    env_key = "CERAMIC_API_KEY"
    env_base_url = "CERAMIC_BASE_URL"
    default_base_url = "https://api.ceramic.ai"
    # x402 pay-per-call price, 0.001 USDC per search (reference checked 2026-11); API-key plan price unknown.
    default_price = 0.001
    native_options: ClassVar[frozenset[str]] = frozenset({"max_results"})
    extra_options: ClassVar[tuple[str, ...]] = ("max_description_length", "max_results_limit")
    max_query_words: ClassVar[int] = 50

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        """``POST {base}/search`` with the query, ``maxResults`` and ``maxDescriptionLength`` only."""
        key = self.api_key()
        words = len(query.split())
        if words > self.max_query_words:
            raise self.fail(
                "bad_request",
                f"Ceramic takes keyword queries of at most {self.max_query_words} words; this one has {words}",
            )
        extra = merged_extra(self.options, options)
        limit = int(extra.get("max_results_limit", 50))
        body: dict[str, Any] = {"query": query, "maxResults": max(1, min(options.max_results, limit))}
        if extra.get("max_description_length") is not None:
            body["maxDescriptionLength"] = int(extra["max_description_length"])
        return httpx.Request(
            "POST",
            f"{self.base_url}/search",
            json=body,
            headers=self.headers(Authorization=f"Bearer {key}"),
        )

    def retry_after(self, response: httpx.Response) -> float | None:
        """The ``Retry-After`` header, else the body's ``retry_after_seconds``."""
        header = super().retry_after(response)
        return header if header is not None else body_retry_after(response)

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        """``result.results[]`` to hits (``description`` is the snippet; ``score`` kept when present)."""
        data = self.json_object(response)
        result = data.get("result")
        results = result.get("results") if isinstance(result, dict) else data.get("results")
        if not isinstance(results, list):
            raise self.fail("malformed", "Ceramic answer has no 'result.results' list", response)
        hits = []
        for item in results:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str) or not item["url"]:
                continue
            hits.append(
                Hit(
                    title=as_str(item.get("title")),
                    url=item["url"],
                    snippet=as_str(item.get("description")),
                    score=as_float(item.get("score")),
                    provider=self.label,
                    raw=item,
                )
            )
        return ProviderAnswer(hits=hits)
