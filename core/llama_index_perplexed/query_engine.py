"""``PerplexedQueryEngine``: grounded, cited answers (``perplexed.answer``) as LlamaIndex responses."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

import perplexed
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import (
    RESPONSE_TYPE,
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.callbacks import CallbackManager
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import QueryBundle
from pydantic import SecretStr

from ._config import SETTINGS, answer_configs, named_settings, with_settings
from ._nodes import answer_metadata, answer_source_nodes
from .events import dispatching, reporting

__all__ = ["PerplexedQueryEngine"]

if TYPE_CHECKING:  # perplexed.answer() and its Answer load on first use (the Agent API client)
    from perplexed import Answer


def answer_to_response(ans: Answer) -> Response:
    """A grounded answer as a LlamaIndex ``Response``: ``response`` is the text with its ``[n]`` markers,
    ``source_nodes[n-1]`` is source ``n``, ``metadata`` holds cost, attempts and the citations."""
    return Response(response=ans.text, source_nodes=answer_source_nodes(ans), metadata=answer_metadata(ans))


def _finish(ans: Answer, response: StreamingResponse | AsyncStreamingResponse, text: str) -> None:
    """At the end of a stream: fill in the sources and metadata, and the text when nobody collected it."""
    response.source_nodes.extend(answer_source_nodes(ans))
    if response.metadata is None:
        response.metadata = {}
    response.metadata.update(answer_metadata(ans))
    if response.response_txt is None:  # the generator was consumed directly, not through get_response()
        response.response_txt = text


def _report_final(report: Callable[[Any], None], item: Any) -> None:
    """A stream's usage event: once, with its final Answer (a delta is a string)."""
    if not isinstance(item, str):
        report(item)


class PerplexedQueryEngine(BaseQueryEngine):
    """Answer questions with :func:`perplexed.answer`: a provider-chain search, then the Perplexity Agent API
    answering from the numbered hits with ``[n]`` citations.

    ``query``/``aquery`` return a ``Response`` whose text carries the ``[n]`` markers and whose
    ``source_nodes`` are the sources in id order, so ``[n]`` is ``source_nodes[n-1]`` (nodes as made by
    :class:`~llama_index_perplexed.PerplexedRetriever`, holding the text the model was given).
    ``response.metadata``: ``cost`` (USD, search + Agent API), ``search_cost``, ``agent_cost``, ``attempts``,
    ``answered_by``, ``model``, ``response_id``, ``citations``, ``unmatched`` and ``answer`` (the
    :class:`perplexed.Answer`).

    ``streaming=True``: ``query`` returns a ``StreamingResponse`` and ``aquery`` an
    ``AsyncStreamingResponse``, fed by the answer stream's text deltas. The search runs (and its errors are
    raised) before the response is returned; ``source_nodes`` and ``metadata`` are filled in when the
    stream ends (the final answer arrives last).

    Options are those of :func:`perplexed.prepare_answer` (each query runs an :class:`perplexed.AnswerPlan`):
    ``provider`` and the search options (``max_results``, alias ``similarity_top_k``,
    ``provider_timeout_ms``, ``deadline_ms``, ``fallback_on``, ``include_domains``, ...), ``client`` (an
    :class:`~perplexed.agent.AgentClient`) and/or ``async_client`` (an
    :class:`~perplexed.agent.AsyncAgentClient`), built from the settings when neither is given, and the
    Agent options ``preset``, ``effort``, ``model``, ``models``, ``instructions``, ``max_output_tokens``,
    ``reasoning``, ``agent_options``, ``max_source_chars``, ``on_empty``, ``strip_unmatched``.

    Errors are perplexed's own: :class:`perplexed.UpstreamError` when no provider answered,
    :class:`perplexed.NoSourcesError` when the search found nothing (``on_empty="raise"``), the
    Agent API's :class:`perplexed.APIError` subclasses; each carries the search ``attempts``.
    """

    @with_settings
    def __init__(
        self,
        provider: Any = None,
        *,
        max_results: int | None = None,
        similarity_top_k: int | None = None,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        streaming: bool = False,
        callback_manager: CallbackManager | None = None,
        **options: Any,
    ) -> None:
        settings = {"max_results": max_results, "similarity_top_k": similarity_top_k, "api_key": api_key,
                    "base_url": base_url, **named_settings(options)}
        self._search, self._answer = answer_configs("PerplexedQueryEngine", provider, settings,
                                                      {k: v for k, v in options.items() if k not in SETTINGS})
        self.streaming = bool(streaming)
        super().__init__(callback_manager=callback_manager)

    def __repr__(self) -> str:
        settings = ", ".join(p for p in (self._search.describe(), self._answer.describe()) if p)
        return f"PerplexedQueryEngine({settings}, streaming={self.streaming})"

    @property
    def client(self) -> Any:
        """The Agent API client of the sync path (``None`` when only ``async_client`` was given)."""
        return self._answer.client

    @property
    def async_client(self) -> Any:
        """The ``async_client`` given (``None``: the async path uses ``client``'s)."""
        return self._answer.async_client

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    # -- sync -----------------------------------------------------------------------------------------------

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        plan = self._answer.plan(query_bundle.query_str, self._search, prefer_async=False)
        if not self.streaming:
            with dispatching(), reporting("answer") as report:
                ans = perplexed.answer(plan)
                report(ans)
            return answer_to_response(ans)
        with dispatching(), reporting("answer") as report:
            stream = perplexed.stream_answer(plan)
            first = next(stream)  # runs the search: its errors surface here, not in the consumer's loop
            _report_final(report, first)
        response = StreamingResponse(response_gen=None, source_nodes=[], metadata={})  # type: ignore[arg-type]
        response.response_gen = self._deltas(first, stream, response)
        return response

    @staticmethod
    def _deltas(
        item: str | Answer, stream: Iterator[str | Answer], response: StreamingResponse
    ) -> Generator[str, None, None]:
        parts: list[str] = []
        try:
            while isinstance(item, str):
                parts.append(item)
                yield item
                with dispatching(), reporting("answer") as report:  # the usage once the answer is whole
                    item = next(stream)
                    _report_final(report, item)
            _finish(item, response, "".join(parts))
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    # -- async ----------------------------------------------------------------------------------------------

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        plan = self._answer.plan(query_bundle.query_str, self._search, prefer_async=True)
        if not self.streaming:
            with dispatching(), reporting("answer") as report:
                ans = await perplexed.aanswer(plan)
                report(ans)
            return answer_to_response(ans)
        stream = perplexed.astream_answer(plan)
        with dispatching(), reporting("answer") as report:
            first = await stream.__anext__()
            _report_final(report, first)
        response = AsyncStreamingResponse(response_gen=None, source_nodes=[], metadata={})  # type: ignore[arg-type]
        response.response_gen = self._adeltas(first, stream, response)
        return response

    @staticmethod
    async def _adeltas(
        item: str | Answer, stream: AsyncIterator[str | Answer], response: AsyncStreamingResponse
    ) -> AsyncGenerator[str, None]:
        parts: list[str] = []
        try:
            while isinstance(item, str):
                parts.append(item)
                yield item
                with dispatching(), reporting("answer") as report:
                    item = await stream.__anext__()
                    _report_final(report, item)
            _finish(item, response, "".join(parts))
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
