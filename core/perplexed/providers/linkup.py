"""Linkup: ``POST {base}/v1/search`` with ``Authorization: Bearer $LINKUP_API_KEY``, ``outputType=searchResults``.

Linkup answers "no result" with an HTTP 400 (``SEARCH_QUERY_NO_RESULT``); that is an ``empty`` attempt and it
is not billed. A 429 is either a rate limit or exhausted credit / budget: the error code tells them apart
(``payment`` vs ``rate_limited``). ⚠ The error codes are read from the SDK's behaviour, not a spec: the
lists are the class attributes ``no_result_codes`` and ``credit_code_words``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from perplexed._models import Hit, ProviderAnswer
from perplexed.policy._options import SearchOptions
from perplexed.policy._status import LINKUP_CREDIT_WORDS, LINKUP_NO_RESULT_CODES
from perplexed.providers._base import Provider
from perplexed.providers._common import as_str, date_window, merged_extra

__all__ = ["Linkup"]


class Linkup(Provider):
    """Linkup search (``LINKUP_API_KEY``; default ``base_url`` ``https://api.linkup.so``).

    Extra options: ``depth`` (``standard`` by default; ``fast``, ``flash`` or ``deep``), ``include_images``,
    ``include_inline_citations``.
    """

    name = "linkup"
    env_key = "LINKUP_API_KEY"
    default_base_url = "https://api.linkup.so"
    # standard/fast/flash searchResults: $0.005 per call (linkup.so pricing in USD since 2026-05; reference
    # checked 2026-11). ``deep`` costs $0.05 (``deep_price``).
    default_price = 0.005
    deep_price: ClassVar[float] = 0.05
    no_result_codes: ClassVar[tuple[str, ...]] = LINKUP_NO_RESULT_CODES
    credit_code_words: ClassVar[tuple[str, ...]] = LINKUP_CREDIT_WORDS
    # a 429 whose code names credit or budget is ``payment``, a 400 "no result" an unbilled empty answer: rows of
    # the status table (perplexed.policy._status)
    native_options: ClassVar[frozenset[str]] = frozenset(
        {
            "max_results",
            "include_domains",
            "exclude_domains",
            "recency",
            "published_after",
            "published_before",
        }
    )
    extra_options: ClassVar[tuple[str, ...]] = ("depth", "include_images", "include_inline_citations")

    def price(self, options: SearchOptions | None = None) -> float:
        """USD per call: an override if set, else $0.005 ($0.05 for ``depth="deep"``)."""
        configured = self.price_override()
        if configured is not None:
            return configured
        extra = merged_extra(self.options, options) if options is not None else self.options
        return self.deep_price if extra.get("depth") == "deep" else self.default_price

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        """``POST {base}/v1/search`` (``outputType=searchResults``) with the options mapped."""
        key = self.api_key()
        extra = merged_extra(self.options, options)
        body: dict[str, Any] = {
            "q": query,
            "depth": extra.get("depth", "standard"),
            "outputType": "searchResults",
            "maxResults": options.max_results,
        }
        if options.include_domains:
            body["includeDomains"] = options.include_domains
        if options.exclude_domains:
            body["excludeDomains"] = options.exclude_domains
        after, before = date_window(options)
        if after:
            body["fromDate"] = after.isoformat()
        if before:
            body["toDate"] = before.isoformat()
        for option, field in (
            ("include_images", "includeImages"),
            ("include_inline_citations", "includeInlineCitations"),
        ):
            if option in extra:
                body[field] = extra[option]
        return httpx.Request(
            "POST",
            f"{self.base_url}/v1/search",
            json=body,
            headers=self.headers(Authorization=f"Bearer {key}"),
        )

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        """``results[]`` (text only) to hits; the 400 "no result" answer is an unbilled empty answer."""
        row = self.status_row(response)
        if row.vendor and row.reason is None:  # not a failure: Linkup found nothing
            return ProviderAnswer(hits=[], cost=0.0, detail=row.message)
        data = self.json_object(response)
        results = data.get("results")
        if results is None:
            results = data.get("sources")  # sourcedAnswer output, if a caller forced it
        if not isinstance(results, list):
            raise self.fail("malformed", "Linkup answer has no 'results' list", response)
        hits = []
        for item in results:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str) or not item["url"]:
                continue
            if item.get("type", "text") != "text":
                continue  # images
            hits.append(
                Hit(
                    title=as_str(item.get("name")) or as_str(item.get("title")),
                    url=item["url"],
                    snippet=as_str(item.get("content")) or as_str(item.get("snippet")),
                    provider=self.label,
                    raw=item,
                )
            )
        return ProviderAnswer(hits=hits)

