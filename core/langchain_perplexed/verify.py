"""``VerifyCitations``: check a text your own LLM wrote over perplexed's documents, in an LCEL pipeline.

    from langchain_perplexed import PerplexedRetriever, VerifyCitations

    check = VerifyCitations()
    verification = check.invoke({"text": "Setbacks are 20 to 25 feet [2].", "documents": docs})
    verification.citation_recall, verification.unsupported

The documents are those a perplexed retriever or tool returned: ``metadata["id"]`` is the hit id a ``[n]``
marker cites. The check itself is :func:`perplexed.verify` (offline by default); this is a thin runnable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import perplexed
from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from perplexed import InvalidRequest, Verification
from pydantic import ConfigDict

__all__ = ["VerifyCitations"]


def _split(value: Any) -> tuple[str, Sequence[Any]]:
    """(text, documents) of the runnable's input: ``{"text", "documents"}``, or the list of Documents a
    :class:`~langchain_perplexed.PerplexedAnswerRetriever` returned (the answer Document first)."""
    if isinstance(value, Mapping):
        text = value.get("text")
        if not isinstance(text, str):
            raise InvalidRequest(
                "VerifyCitations takes {'text': <the text with [n] markers>, 'documents': [...]}: 'text' is "
                f"{'missing' if text is None else type(text).__name__}",
                param="text",
            )
        documents = value.get("documents")
        if documents is None or isinstance(documents, str | bytes) or not isinstance(documents, Sequence):
            raise InvalidRequest(
                "VerifyCitations takes {'text': ..., 'documents': [<the Documents a perplexed retriever returned>]}",
                param="documents",
            )
        return text, documents
    if isinstance(value, Sequence) and value and isinstance(value[0], Document):
        answers = [d for d in value if d.metadata.get("type") == "answer"]
        if answers:
            return answers[0].page_content, value
    raise InvalidRequest(
        "VerifyCitations takes {'text': <the text with [n] markers>, 'documents': [...]} (or a "
        f"PerplexedAnswerRetriever's Documents), not {type(value).__name__}",
        param="input",
    )


class VerifyCitations(RunnableSerializable[Any, Verification]):
    """A runnable: ``{"text": ..., "documents": [...]}`` in, a :class:`perplexed.Verification` out.

    ``checker`` (``"lexical"``, offline, or a callable ``(claim, passage) -> float``), ``threshold`` and
    ``fetch`` are those of :func:`perplexed.verify`. The input may also be the Documents a
    :class:`~langchain_perplexed.PerplexedAnswerRetriever` returned (the answer Document's text is checked
    against the source Documents). Bad input raises :class:`perplexed.InvalidRequest` naming the key.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    checker: str | Callable[[str, str], float] = "lexical"
    threshold: float | None = None
    fetch: bool = False

    def _verify(self, value: Any) -> Verification:
        text, documents = _split(value)
        return perplexed.verify(
            text, list(documents), checker=self.checker, threshold=self.threshold, fetch=self.fetch
        )

    async def _averify(self, value: Any) -> Verification:
        text, documents = _split(value)
        return await perplexed.averify(
            text, list(documents), checker=self.checker, threshold=self.threshold, fetch=self.fetch
        )

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Verification:
        return self._call_with_config(self._verify, input, config, run_type="parser")

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Verification:
        return await self._acall_with_config(self._averify, input, config, run_type="parser")
