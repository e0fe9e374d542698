"""Tavily extract as a fetch provider: the Tavily class itself (:class:`perplexed.providers.Tavily`, which both
searches and fetches). ``TavilyExtract`` is kept as its earlier name."""

from __future__ import annotations

from perplexed.providers.tavily import Tavily

__all__ = ["TavilyExtract"]

TavilyExtract = Tavily
