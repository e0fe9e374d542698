"""SearXNG: ``GET {base}/search?q=…&format=json`` on your own instance. Free.

SearXNG has no result-count or domain parameters: the engine truncates and filters the hits client-side.
An HTTP 200 with no results and a non-empty ``unresponsive_engines`` is a quiet block: the attempt is
``empty`` and its ``detail`` names the engines that did not answer. JSON output must be enabled in the
instance's ``settings.yml`` (``search.formats``); otherwise SearXNG answers 403 (an ``auth`` error).
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from .._models import Hit, ProviderAnswer
from .._options import SearchOptions
from ._base import Provider, parse_published

__all__ = ["SearXNG"]

_SAFE = {"off": "0", "moderate": "1", "strict": "2"}


class SearXNG(Provider):
    """A SearXNG instance (``base_url`` or ``SEARXNG_URL``). Extra options: ``categories``, ``engines``,
    ``pageno``, ``timeout_limit`` (seconds, passed to SearXNG)."""

    name = "searxng"
    env_base_url = "SEARXNG_URL"
    default_price = 0.0
    native_options: ClassVar[frozenset[str]] = frozenset({"recency", "language", "safe_search"})
    extra_options: ClassVar[tuple[str, ...]] = ("categories", "engines", "pageno", "timeout_limit")

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        params: dict[str, Any] = {"q": query, "format": "json"}
        if options.recency:
            params["time_range"] = options.recency
        if options.language:
            params["language"] = options.language
        if options.safe_search:
            params["safesearch"] = _SAFE[options.safe_search]
        extra = {**self.options, **options.extra}
        for key in self.extra_options:
            value = extra.get(key)
            if value is not None:
                params[key] = ",".join(value) if isinstance(value, list | tuple) else value
        return httpx.Request("GET", f"{self.base_url}/search", params=params, headers=self.headers())

    def parse_response(
        self, response: httpx.Response, query: str, options: SearchOptions
    ) -> ProviderAnswer:
        data = self.json_object(response)
        results = data.get("results")
        if not isinstance(results, list):
            raise self.fail("malformed", "SearXNG answer has no 'results' list", response)
        hits = []
        for item in results:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            score = item.get("score")
            hits.append(
                Hit(
                    title=str(item.get("title") or ""),
                    url=item["url"],
                    snippet=str(item.get("content") or ""),
                    published=parse_published(item.get("publishedDate") or item.get("pubdate")),
                    score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
                    provider=self.label,
                    raw=item,
                )
            )
        detail = None
        unresponsive = data.get("unresponsive_engines") or []
        if unresponsive:
            names = []
            for entry in unresponsive:
                if isinstance(entry, list | tuple) and entry:
                    names.append(": ".join(str(x) for x in entry[:2]))
                else:
                    names.append(str(entry))
            detail = "unresponsive engines: " + "; ".join(names)
        return ProviderAnswer(hits=hits, cost=None, detail=detail)
