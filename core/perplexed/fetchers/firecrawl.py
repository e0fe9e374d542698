"""Firecrawl scrape as a fetch provider: the Firecrawl class itself (:class:`perplexed.providers.Firecrawl`, which
both searches and fetches). ``FirecrawlScrape`` is kept as its earlier name."""

from __future__ import annotations

from perplexed.providers.firecrawl import Firecrawl

__all__ = ["FirecrawlScrape"]

FirecrawlScrape = Firecrawl
