"""Providers, registered by name in one registry, and the resolution of provider specs.

Each provider class declares what it can do (``operations``): ``search``, ``fetch`` (a page's content), or both
(Tavily, Exa and Firecrawl are one class each). Asking a provider for an operation it does not declare is a
:class:`~perplexed.ConfigError` when the call is validated, before any request. A provider spec is a registered name (``"searxng"``), a dict (``{"name": "searxng", "base_url": ...}``), a
:class:`Provider` instance, a plain function ``fn(query, options)`` (sync or async), or a list of these (a
chain). Provider modules are imported on first use, so ``import perplexed`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perplexed.providers._base import (
    OPERATIONS,
    CallableProvider,
    FunctionProvider,
    Operation,
    Provider,
    parse_published,
    parse_retry_after,
)
from perplexed.providers._credentials import describe, with_credentials
from perplexed.providers._fetching import FetchAnswer, FetchOptions, FetchProvider, FunctionFetcher
from perplexed.providers._registry import _CLASS_NAMES, available, check_operation, get, register, resolve
from perplexed.providers._registry import unregister as unregister  # tests and plug-ins undo a register()
from perplexed.providers._table import support_table

if TYPE_CHECKING:  # pragma: no cover
    from perplexed.providers.brave import Brave
    from perplexed.providers.ceramic import Ceramic
    from perplexed.providers.exa import Exa
    from perplexed.providers.firecrawl import Firecrawl
    from perplexed.providers.http import Http
    from perplexed.providers.jina import Jina
    from perplexed.providers.linkup import Linkup
    from perplexed.providers.local import Local
    from perplexed.providers.perplexity import PerplexitySearch
    from perplexed.providers.searxng import SearXNG
    from perplexed.providers.tavily import Tavily

__all__ = [
    "OPERATIONS",
    "Brave",
    "CallableProvider",
    "Ceramic",
    "Exa",
    "FetchAnswer",
    "FetchOptions",
    "FetchProvider",
    "Firecrawl",
    "FunctionFetcher",
    "FunctionProvider",
    "Http",
    "Jina",
    "Linkup",
    "Local",
    "Operation",
    "PerplexitySearch",
    "Provider",
    "SearXNG",
    "Tavily",
    "available",
    "check_operation",
    "describe",
    "get",
    "parse_published",
    "parse_retry_after",
    "register",
    "resolve",
    "support_table",
    "with_credentials",
]

def __getattr__(attr: str) -> Any:
    if attr in _CLASS_NAMES:
        return get(_CLASS_NAMES[attr])
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
