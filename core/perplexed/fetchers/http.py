"""The ``http`` fetch provider: moved to :mod:`perplexed.providers.http` (one registry of providers); this module
keeps its earlier import path."""

from __future__ import annotations

from perplexed.providers.http import DEFAULT_USER_AGENT, MAX_REDIRECTS, ROBOTS_TOKEN, Http

__all__ = ["DEFAULT_USER_AGENT", "MAX_REDIRECTS", "ROBOTS_TOKEN", "Http"]
