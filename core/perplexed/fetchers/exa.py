"""Exa contents as a fetch provider: the Exa class itself (:class:`perplexed.providers.Exa`, which both searches
and fetches). ``ExaContents`` is kept as its earlier name."""

from __future__ import annotations

from perplexed.providers.exa import Exa

__all__ = ["ExaContents"]

ExaContents = Exa
