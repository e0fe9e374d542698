"""LangChain adapters for perplexed: reliable, cheap, cited web search.

- :class:`PerplexedRetriever`: web search down a provider fallback chain, as Documents.
- :class:`PerplexedSearchTool`: the same as a tool (``perplexed_search``), numbered results + Documents.
- :class:`PerplexedAnswerRetriever` / :class:`PerplexedAnswerTool`: a grounded answer with inline ``[n]``
  citations, and the sources every marker points at.
- :func:`as_provider`: any LangChain retriever as a member of a perplexed chain (local knowledge first).
- :class:`PerplexedLoader` / :class:`PerplexedFetchTool` (``perplexed_fetch``): web pages' content through a
  chain of fetch providers (:func:`perplexed.fetch`), as Documents or for an agent to read.
- :class:`VerifyCitations`: a runnable checking that the documents a text cites support it
  (:func:`perplexed.verify`), for pipelines that answer with their own LLM.

Every provider attempt is dispatched to the run's callback handlers as the custom event
``perplexed_attempt`` (:data:`ATTEMPT_EVENT`), and an answer's Agent API call as ``perplexed_answer``
(:data:`ANSWER_EVENT`). The adapters are thin: the search, the chain rules, the
timing and the citations are perplexed's.
"""

from __future__ import annotations

try:  # the extra: without it, say how to install it instead of a bare ModuleNotFoundError
    import langchain_core  # noqa: F401
except ImportError as _missing:
    raise ImportError(
        "langchain_perplexed needs langchain-core, which is not installed: pip install 'perplexed-search[langchain]' "
        "(from a clone: pip install -e '.[langchain]')",
        name=_missing.name,
    ) from None

from typing import TYPE_CHECKING, Any

from ._documents import NO_RESULTS
from ._events import ANSWER_EVENT, ATTEMPT_EVENT
from .retrievers import PerplexedAnswerRetriever, PerplexedRetriever

if TYPE_CHECKING:  # imported on first use (_LAZY): page fetching and the citation check are not a search, and a
    # retriever as a chain member needs the provider registry (perplexed.providers), which a search loads anyway;
    # the tools need LangChain's BaseTool (langchain_core.tools.base), which a retriever does not
    from .fetch import PerplexedFetchInput, PerplexedFetchTool, PerplexedLoader
    from .provider import RetrieverProvider, as_provider, document_to_hit
    from .tools import PerplexedAnswerInput, PerplexedAnswerTool, PerplexedSearchInput, PerplexedSearchTool
    from .verify import VerifyCitations

__version__ = "0.1.0"

__all__ = [
    "ANSWER_EVENT",
    "ATTEMPT_EVENT",
    "NO_RESULTS",
    "PerplexedAnswerInput",
    "PerplexedAnswerRetriever",
    "PerplexedAnswerTool",
    "PerplexedFetchInput",
    "PerplexedFetchTool",
    "PerplexedLoader",
    "PerplexedRetriever",
    "PerplexedSearchInput",
    "PerplexedSearchTool",
    "RetrieverProvider",
    "VerifyCitations",
    "__version__",
    "as_provider",
    "document_to_hit",
]

_LAZY = {
    "PerplexedFetchInput": "langchain_perplexed.fetch",
    "PerplexedFetchTool": "langchain_perplexed.fetch",
    "PerplexedLoader": "langchain_perplexed.fetch",
    "RetrieverProvider": "langchain_perplexed.provider",
    "as_provider": "langchain_perplexed.provider",
    "document_to_hit": "langchain_perplexed.provider",
    "VerifyCitations": "langchain_perplexed.verify",
    "PerplexedAnswerInput": "langchain_perplexed.tools",
    "PerplexedAnswerTool": "langchain_perplexed.tools",
    "PerplexedSearchInput": "langchain_perplexed.tools",
    "PerplexedSearchTool": "langchain_perplexed.tools",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'langchain_perplexed' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
