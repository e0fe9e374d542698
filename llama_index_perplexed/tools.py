"""``PerplexedToolSpec``: ``search`` and ``answer`` tools for LlamaIndex agents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import perplexed
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from perplexed import Answer, Hit, Result
from perplexed import aanswer as _aanswer
from perplexed import answer as _answer
from perplexed._grounding import DEFAULT_MAX_SOURCE_CHARS
from perplexed.citations import format_footnotes

from ._config import AnswerConfig, SearchConfig
from .events import dispatching

__all__ = ["NO_RESULTS", "PerplexedToolSpec", "format_answer", "format_hits"]

dispatcher = get_dispatcher(__name__)

NO_RESULTS = "No results."
SNIPPET_CHARS = 400  # per hit, in the text the search tool returns to the model


def _shorten(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def format_hits(hits: Sequence[Hit]) -> str:
    """What the ``search`` tool returns: per hit ``[n] title — url`` and its snippet, blank-line separated
    (``"No results."`` when there are none)."""
    if not hits:
        return NO_RESULTS
    blocks = []
    for hit in hits:
        line = format_footnotes([hit], numbers=[hit.id])
        snippet = _shorten(hit.snippet or hit.content or "")
        blocks.append(f"{line}\n{snippet}" if snippet else line)
    return "\n\n".join(blocks)


def format_answer(ans: Answer) -> str:
    """What the ``answer`` tool returns: the answer text with its ``[n]`` markers, then ``Sources:`` and one
    ``[n] title — url`` line per source, numbered as the markers."""
    sources = sorted(ans.sources, key=lambda h: h.id)
    if not sources:
        return ans.text
    return f"{ans.text}\n\nSources:\n{format_footnotes(sources, numbers=[h.id for h in sources])}"


class PerplexedToolSpec(BaseToolSpec):
    """Web search and grounded answers as LlamaIndex agent tools: ``spec.to_tool_list()`` gives the tools
    ``search`` and ``answer``, each with a sync and an async function.

    - ``search(query)``: the hits of a perplexed provider chain as a numbered list (``[n] title — url`` and
      the snippet);
    - ``answer(query)``: a grounded answer (:func:`perplexed.answer`) with its ``[n]`` markers, followed by
      the numbered sources.

    Takes the options of :class:`~llama_index_perplexed.PerplexedRetriever` (``provider``, ``max_results`` /
    ``similarity_top_k``, chain and search options) and of
    :class:`~llama_index_perplexed.PerplexedQueryEngine` (``client``, ``async_client``, ``preset``,
    ``model``, ...). Failures raise perplexed's typed errors (never an error string as a result); each
    provider attempt is dispatched as a :class:`~llama_index_perplexed.PerplexedAttemptEvent`.
    """

    spec_functions = [("search", "asearch"), ("answer", "aanswer")]

    def __init__(
        self,
        provider: Any = None,
        *,
        client: Any = None,
        async_client: Any = None,
        preset: str | None = None,
        effort: str | None = None,
        model: str | None = None,
        models: Sequence[str] | None = None,
        instructions: str | None = None,
        max_output_tokens: int | None = None,
        reasoning: Any = None,
        agent_options: Mapping[str, Any] | None = None,
        max_source_chars: int | None = DEFAULT_MAX_SOURCE_CHARS,
        on_empty: Literal["raise", "answer"] = "raise",
        strip_unmatched: bool = False,
        max_results: int | None = None,
        similarity_top_k: int | None = None,
        provider_timeout_ms: int | None = None,
        deadline_ms: int | None = None,
        fallback_on: Any = None,
        **options: Any,
    ) -> None:
        self._search = SearchConfig(
            provider,
            max_results=max_results,
            similarity_top_k=similarity_top_k,
            provider_timeout_ms=provider_timeout_ms,
            deadline_ms=deadline_ms,
            fallback_on=fallback_on,
            answer_mode=True,
            **options,
        )
        self._answer = AnswerConfig(
            client,
            async_client,
            preset=preset,
            effort=effort,
            model=model,
            models=models,
            instructions=instructions,
            max_output_tokens=max_output_tokens,
            reasoning=reasoning,
            agent_options=agent_options,
            on_empty=on_empty,
            strip_unmatched=strip_unmatched,
            max_source_chars=max_source_chars,
        )

    # The docstrings below are the tools' descriptions: they are written for the model.

    @dispatcher.span
    def search(self, query: str) -> str:
        """Search the web for `query`. Returns numbered results: "[n] title — url" and a snippet each."""
        with dispatching():
            result: Result = perplexed.search(query, **self._search.search_kwargs())
        return format_hits(result.hits)

    @dispatcher.span
    async def asearch(self, query: str) -> str:
        """Search the web for `query`. Returns numbered results: "[n] title — url" and a snippet each."""
        with dispatching():
            result: Result = await perplexed.asearch(query, **self._search.search_kwargs())
        return format_hits(result.hits)

    @dispatcher.span
    def answer(self, query: str) -> str:
        """Answer the question `query` from web sources. Returns the answer with [n] citation markers, then the numbered sources ("[n] title — url") they refer to."""
        with dispatching():
            ans = _answer(query, **self._search.search_kwargs(), **self._answer.sync_kwargs())
        return format_answer(ans)

    @dispatcher.span
    async def aanswer(self, query: str) -> str:
        """Answer the question `query` from web sources. Returns the answer with [n] citation markers, then the numbered sources ("[n] title — url") they refer to."""
        with dispatching():
            ans = await _aanswer(query, **self._search.search_kwargs(), **self._answer.async_kwargs())
        return format_answer(ans)
