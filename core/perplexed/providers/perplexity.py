"""Perplexity Search API: ``POST {base}/search`` with ``Authorization: Bearer $PERPLEXITY_API_KEY``.

Ranked web results (title, url, snippet, date), no model tokens: a flat price per request. Domain filters go
into ``search_domain_filter`` (an allow-list, or a deny-list with ``-`` prefixes; the API does not mix the
two, so with both the allow-list is sent and the deny-list is applied to the hits). ``recency`` cannot be
combined with date bounds in the API, so with dates the recency becomes a lower date bound.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from perplexed._models import Hit, ProviderAnswer
from perplexed.policy._options import SearchOptions
from perplexed.policy._status import KEY_PREDATES_SEARCH_API
from perplexed.providers._base import Provider, parse_published
from perplexed.providers._common import as_str, country_code, date_window, language_code, merged_extra

__all__ = ["KEY_PREDATES_SEARCH_API", "PerplexitySearch"]

_PASS_THROUGH = (
    "search_type",
    "search_mode",
    "search_context_size",
    "max_tokens",
    "max_tokens_per_page",
    "last_updated_after_filter",
    "last_updated_before_filter",
    "display_server_time",
)
_MAX_DOMAINS = 20
#: the error type of the HTTP 451 the Search API answers to a key created before the API existed


class PerplexitySearch(Provider):
    """Perplexity's Search API (``PERPLEXITY_API_KEY``; ``base_url`` or ``PERPLEXITY_BASE_URL``, default
    ``https://api.perplexity.ai``).

    Extra options, sent as they are: ``search_type`` (``web``/``fast``/``people``), ``search_mode``,
    ``search_context_size``, ``max_tokens``, ``max_tokens_per_page``, ``last_updated_after_filter``,
    ``last_updated_before_filter`` (``MM/DD/YYYY``), ``display_server_time``.
    """

    name = "perplexity"
    env_key = "PERPLEXITY_API_KEY"
    env_base_url = "PERPLEXITY_BASE_URL"
    default_base_url = "https://api.perplexity.ai"
    # $5 per 1,000 requests, no token charges (docs.perplexity.ai pricing, reference checked 2026-11).
    default_price = 0.005
    native_options: ClassVar[frozenset[str]] = frozenset(
        {
            "max_results",
            "include_domains",
            "exclude_domains",
            "recency",
            "published_after",
            "published_before",
            "language",
            "country",
        }
    )
    extra_options: ClassVar[tuple[str, ...]] = _PASS_THROUGH
    # HTTP 451 api_key_created_before_search_api_cutoff (a key older than the Search API) is ``auth``: a row of
    # the status table (perplexed.policy._status)

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        """``POST {base}/search`` with the options mapped to Perplexity's filters."""
        key = self.api_key()
        extra = merged_extra(self.options, options)
        cap = 50 if extra.get("search_type") == "people" else 20
        body: dict[str, Any] = {"query": query, "max_results": max(1, min(options.max_results, cap))}
        if options.include_domains and len(options.include_domains) <= _MAX_DOMAINS:
            body["search_domain_filter"] = list(options.include_domains)
        elif options.exclude_domains and not options.include_domains:
            body["search_domain_filter"] = [f"-{d}" for d in options.exclude_domains[:_MAX_DOMAINS]]
        if options.published_after or options.published_before:
            after, before = date_window(options)
            if after:
                body["search_after_date_filter"] = f"{after:%m/%d/%Y}"
            if before:
                body["search_before_date_filter"] = f"{before:%m/%d/%Y}"
        elif options.recency:
            body["search_recency_filter"] = options.recency
        language = language_code(options.language)
        if language and len(language) == 2:
            body["search_language_filter"] = [language]
        country = country_code(options.country)
        if country:
            body["country"] = country
        for field in _PASS_THROUGH:
            if field in extra:
                body[field] = extra[field]
        return httpx.Request(
            "POST",
            f"{self.base_url}/search",
            json=body,
            headers=self.headers(Authorization=f"Bearer {key}"),
        )

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        """``results[]`` to hits: ``date`` is the publication date, ``last_updated`` the update date (apart)."""
        data = self.json_object(response)
        results = data.get("results")
        if not isinstance(results, list):
            raise self.fail("malformed", "Perplexity Search answer has no 'results' list", response)
        # Treat a multi-query answer as one flat list (older docs show a list per query).
        flat: list[Any] = []
        for item in results:
            flat.extend(item if isinstance(item, list) else [item])
        hits = []
        for item in flat:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str) or not item["url"]:
                continue
            hits.append(
                Hit(
                    title=as_str(item.get("title")),
                    url=item["url"],
                    snippet=as_str(item.get("snippet")),
                    published=parse_published(item.get("date")),
                    updated=parse_published(item.get("last_updated")),
                    provider=self.label,
                    raw=item,
                )
            )
        return ProviderAnswer(hits=hits)
