"""Fake chain members for the LlamaIndex adapter tests (plain functions: perplexed wraps them)."""

from __future__ import annotations

import asyncio
from typing import Any

from perplexed import Hit, ProviderError, SearchOptions
from testkit.hits import WEB_HITS


def web(query: str, options: SearchOptions) -> list[dict[str, Any]]:
    """A fake web provider (a plain function: perplexed wraps it as a FunctionProvider)."""
    return [dict(h) for h in WEB_HITS]


async def aweb(query: str, options: SearchOptions) -> list[Hit]:
    """The same fake web provider, async."""
    return [Hit(**h) for h in WEB_HITS]


def broken(query: str, options: SearchOptions) -> list[Hit]:
    """A provider that always fails with a classified error."""
    raise ProviderError("upstream", "HTTP 503 service unavailable", provider="broken", status=503)


def nothing(query: str, options: SearchOptions) -> list[Hit]:
    """A provider that always answers empty."""
    return []


async def slow_web(query: str, options: SearchOptions) -> list[Hit]:
    """The fake web provider, answering after 0.3 s of (non-blocking) waiting."""
    await asyncio.sleep(0.3)
    return [Hit(**h) for h in WEB_HITS]
