"""Jina Reader as a fetch provider: moved to :mod:`perplexed.providers.jina` (one registry of providers); this
module keeps its earlier import path."""

from __future__ import annotations

from perplexed.providers.jina import Jina

__all__ = ["Jina"]
