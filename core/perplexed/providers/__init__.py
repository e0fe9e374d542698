"""Search providers, registered by name, and the resolution of provider specs.

A provider spec is a registered name (``"searxng"``), a dict (``{"name": "searxng", "base_url": ...}``), a
:class:`Provider` instance, a plain function ``fn(query, options)`` (sync or async), or a list of these (a
chain). Provider modules are imported on first use, so ``import perplexed`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import CallableProvider, FunctionProvider, Provider, parse_published, parse_retry_after
from ._credentials import describe, with_credentials
from ._registry import _CLASS_NAMES, available, get, register, resolve
from ._registry import unregister as unregister  # tests and plug-ins undo a register()
from ._table import support_table

if TYPE_CHECKING:  # pragma: no cover
    from .brave import Brave
    from .ceramic import Ceramic
    from .exa import Exa
    from .firecrawl import Firecrawl
    from .linkup import Linkup
    from .local import Local
    from .perplexity import PerplexitySearch
    from .searxng import SearXNG
    from .tavily import Tavily

__all__ = [
    "Brave",
    "CallableProvider",
    "Ceramic",
    "Exa",
    "Firecrawl",
    "FunctionProvider",
    "Linkup",
    "Local",
    "PerplexitySearch",
    "Provider",
    "SearXNG",
    "Tavily",
    "available",
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
