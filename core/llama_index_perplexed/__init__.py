"""LlamaIndex adapters for perplexed (``pip install "perplexed-search[llama-index]"``).

- :class:`PerplexedRetriever`: a ``BaseRetriever`` over a perplexed provider chain;
- :class:`PerplexedQueryEngine`: grounded answers (``perplexed.answer``) as LlamaIndex ``Response`` objects
  whose ``[n]`` markers point at ``source_nodes[n-1]``;
- :class:`PerplexedToolSpec`: ``search``, ``answer`` and ``fetch`` tools for LlamaIndex agents;
- :class:`PerplexedReader`: web pages' content as Documents through a chain of fetch providers;
- :func:`as_provider`: any LlamaIndex retriever as a member of a perplexed chain;
- :class:`PerplexedAttemptEvent` / :class:`PerplexedAgentEvent` / :class:`PerplexedUsageEvent`: instrumentation
  events.

The adapters are thin: searching, budgets, fallback, cost and citations all live in ``perplexed``. The public
surface is what this package exports (documented in docs/llamaindex.md); the node and text helpers of its
modules are its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:  # the extra: without it, say how to install it instead of a bare ModuleNotFoundError
    import llama_index.core  # noqa: F401
except ImportError as _missing:
    raise ImportError(
        "llama_index_perplexed needs llama-index-core, which is not installed: pip install 'perplexed-search[llama-index]' "
        "(from a clone: pip install -e '.[llama-index]')",
        name=_missing.name,
    ) from None

from .events import PerplexedAgentEvent, PerplexedAttemptEvent, PerplexedUsageEvent
from .fetch import PerplexedReader
from .query_engine import PerplexedQueryEngine
from .retriever import PerplexedRetriever
from .tools import PerplexedToolSpec

if TYPE_CHECKING:  # imported on first use (_LAZY): a retriever as a chain member needs the provider registry
    from .provider import RetrieverProvider, as_provider

__all__ = [
    "PerplexedAgentEvent",
    "PerplexedAttemptEvent",
    "PerplexedQueryEngine",
    "PerplexedReader",
    "PerplexedRetriever",
    "PerplexedToolSpec",
    "PerplexedUsageEvent",
    "RetrieverProvider",
    "as_provider",
]

_LAZY = {"RetrieverProvider": "llama_index_perplexed.provider", "as_provider": "llama_index_perplexed.provider"}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'llama_index_perplexed' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
