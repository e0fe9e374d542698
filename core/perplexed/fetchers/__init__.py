"""Fetch providers: the providers that can fetch a page (``http``, the page itself, free; ``jina``; and the vendors
that also search: ``exa``, ``tavily``, ``firecrawl``).

There is one provider registry (:mod:`perplexed.providers`): each class declares what it can do
(``operations``: ``search``, ``fetch`` or both). This module is the fetch side of it, kept for its earlier
importers. A fetch-provider spec is a registered name, a dict (``{"name": "firecrawl", "api_key": ...,
"base_url": ...}``), a provider instance that can fetch, a function ``fn(url, options)`` (sync or async), or a list
of these (a chain, free first). The default chain is ``["http"]``. A provider that cannot fetch (``"searxng"``) is
a ConfigError before any call, naming the providers that can.
"""

from __future__ import annotations

from typing import Any

from perplexed._errors import ConfigError
from perplexed.providers import _registry
from perplexed.providers._fetching import (
    FetchAnswer,
    FetchOptions,
    FetchProvider,
    FunctionFetcher,
    page_failure,
    status_reason,
)
from perplexed.providers._registry import DEFAULT_FETCH_CHAIN

__all__ = [
    "DEFAULT_CHAIN",
    "FetchAnswer",
    "FetchOptions",
    "FetchProvider",
    "FunctionFetcher",
    "available",
    "get",
    "page_failure",
    "register",
    "resolve",
    "status_reason",
]

DEFAULT_CHAIN = DEFAULT_FETCH_CHAIN


def register(name: str, cls: type[FetchProvider]) -> None:
    """Register a fetch-provider class under ``name`` (in the one provider registry)."""
    if not (isinstance(cls, type) and issubclass(cls, FetchProvider) and "fetch" in cls.operations):
        raise ConfigError(f"cannot register {cls!r}: not a FetchProvider subclass")
    _registry.register(name, cls)


def available() -> list[str]:
    """Registered names of the providers that can fetch."""
    return _registry.available("fetch")


def get(name: str) -> type[FetchProvider]:
    """The fetch-provider class registered as ``name``; ConfigError for an unknown name or a provider that cannot
    fetch."""
    cls = _registry.get_for(name, "fetch")
    assert issubclass(cls, FetchProvider)
    return cls


def resolve(spec: Any) -> tuple[list[FetchProvider], bool]:
    """Turn a spec into fetch providers: ``(providers, is_chain)``; None is the default chain ``["http"]``."""
    providers, is_chain = _registry.resolve(spec, "fetch")
    fetchers: list[FetchProvider] = []
    for provider in providers:
        if not isinstance(provider, FetchProvider):  # declares fetch but does not speak the fetch protocol
            raise ConfigError(f"provider {provider.label!r} declares fetch but is not a FetchProvider")
        fetchers.append(provider)
    return fetchers, is_chain
