"""Exa: ``POST {base}/search`` with ``x-api-key: $EXA_API_KEY``.

By default each hit's page text (up to 10,000 characters, as exa-py asks for) and highlights come back with
the search, included in the base price: the text becomes :attr:`Hit.content`, the highlights the snippet.
The cost of a call is the one Exa reports (``costDollars.total``); without it, the price table applies.
``recency`` becomes a ``startPublishedDate`` (Exa's date filters leave out undated pages).
"""

from __future__ import annotations

from datetime import date
from typing import Any, ClassVar

import httpx

from .._models import Hit, ProviderAnswer
from .._options import SearchOptions
from ._base import Provider, parse_published
from ._common import as_float, as_str, country_code, date_window, merged_extra

__all__ = ["Exa"]

_PASS_THROUGH = {"type": "type", "category": "category", "livecrawl": "livecrawl"}


class Exa(Provider):
    """Exa search (``EXA_API_KEY``; default ``base_url`` ``https://api.exa.ai``).

    Extra options: ``type`` (``auto``/``fast``/``neural``/``deep``/...), ``category``, ``include_text`` /
    ``exclude_text`` (a phrase of at most 5 words), ``text`` (True, False or the max characters of page text;
    default 10000), ``highlights`` (default True), ``summary`` (True or Exa's summary object), ``livecrawl``,
    ``contents`` (a raw ``contents`` object that replaces ``text``/``highlights``/``summary``).
    """

    name = "exa"
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


def _iso(day: date, *, end_of_day: bool = False) -> str:
    return f"{day.isoformat()}T23:59:59.999Z" if end_of_day else f"{day.isoformat()}T00:00:00.000Z"
