"""LangChain adapters for perplexed: reliable, cheap, cited web search.

- :class:`PerplexedRetriever`: web search down a provider fallback chain, as Documents.
- :class:`PerplexedSearchTool`: the same as a tool (``perplexed_search``), numbered results + Documents.
- :class:`PerplexedAnswerRetriever` / :class:`PerplexedAnswerTool`: a grounded answer with inline ``[n]``
  citations, and the sources every marker points at.
- :func:`as_provider`: any LangChain retriever as a member of a perplexed chain (local knowledge first).

Every provider attempt is dispatched to the run's callback handlers as the custom event
``perplexed_attempt`` (:data:`ATTEMPT_EVENT`). The adapters are thin: the search, the chain rules, the
timing and the citations are perplexed's.
"""

from __future__ import annotations

from ._documents import NO_RESULTS
from ._events import ATTEMPT_EVENT
from .provider import RetrieverProvider, as_provider
from .retrievers import PerplexedRetriever
from .tools import PerplexedSearchInput, PerplexedSearchTool

__all__ = [
    "ATTEMPT_EVENT",
    "NO_RESULTS",
    "PerplexedRetriever",
    "PerplexedSearchInput",
    "PerplexedSearchTool",
    "RetrieverProvider",
    "as_provider",
]
