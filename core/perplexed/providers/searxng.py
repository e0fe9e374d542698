"""SearXNG: ``GET {base}/search?q=…&format=json`` on your own instance. Free.

SearXNG has no result-count or domain parameters: the engine truncates and filters the hits client-side.
An HTTP 200 with no results and a non-empty ``unresponsive_engines`` is a quiet block: the attempt is
``empty`` and its ``detail`` names the engines that did not answer. JSON output must be enabled in the
instance's ``settings.yml`` (``search.formats``); otherwise SearXNG answers 403 (an ``auth`` error).

SearXNG's direct ``answers`` (e.g. a calculator or a definition) and ``infoboxes`` (an entity card) are not
web pages with a rank, so they do not become hits: they go into the attempt's ``detail``, after the
unresponsive engines, as ``answers: TEXT (URL)`` and ``infoboxes: TITLE: CONTENT (URL)`` (each text cut at
300 characters). ``number_of_results`` is optional (upstream dropped it in 2026) and not used.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from perplexed._models import Hit, ProviderAnswer
from perplexed.policy._options import SearchOptions
from perplexed.providers._base import Provider, parse_published

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
        parts = []
        unresponsive = data.get("unresponsive_engines") or []
        if isinstance(unresponsive, list) and unresponsive:
            names = []
            for entry in unresponsive:
                if isinstance(entry, list | tuple) and entry:
                    names.append(": ".join(str(x) for x in entry[:2]))
                else:
                    names.append(str(entry))
            parts.append("unresponsive engines: " + "; ".join(names))
        answers = [text for entry in _list(data.get("answers")) if (text := _answer_text(entry))]
        if answers:
            parts.append("answers: " + "; ".join(answers))
        boxes = [text for entry in _list(data.get("infoboxes")) if (text := _infobox_text(entry))]
        if boxes:
            parts.append("infoboxes: " + "; ".join(boxes))
        return ProviderAnswer(hits=hits, cost=None, detail=" | ".join(parts) or None)


_TEXT_CAP = 300


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TEXT_CAP else text[: _TEXT_CAP - 1] + "…"


def _answer_text(entry: Any) -> str:
    """One SearXNG answer (a dict ``{answer, url, ...}`` in current versions, a plain string in old ones)."""
    if isinstance(entry, str):
        return _cut(entry)
    if not isinstance(entry, dict):
        return ""
    text = entry.get("answer")
    if not isinstance(text, str) or not text.strip():
        return ""
    url = entry.get("url")
    return _cut(text) + (f" ({url})" if isinstance(url, str) and url else "")


def _infobox_text(entry: Any) -> str:
    """One SearXNG infobox: ``TITLE: CONTENT (URL)``; the URL is its ``id`` or its first link."""
    if not isinstance(entry, dict):
        return ""
    title = entry.get("infobox")
    content = entry.get("content")
    text = ": ".join(
        _cut(v) for v in (title, content) if isinstance(v, str) and v.strip()
    )
    if not text:
        return ""
    url = entry.get("id")
    if not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        links = [u.get("url") for u in _list(entry.get("urls")) if isinstance(u, dict)]
        url = next((u for u in links if isinstance(u, str) and u), None)
    return text + (f" ({url})" if url else "")
