"""The Agent API settings of the answer components, and a grounded :class:`perplexed.Answer` as
Documents and as tool text. No I/O, no citation logic: the markers and sources are the core's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import perplexed.integration
from langchain_core.documents import Document
from perplexed import Hit
from perplexed.catalogue import format_answer as _format_answer
from perplexed.citations import format_footnotes
from pydantic import BaseModel, Field, SecretStr

from ._documents import attempts_summary, flatten_metadata, hit_metadata

if TYPE_CHECKING:
    from perplexed import Answer
    from perplexed.integration import AnswerPlan

__all__ = ["AnswerConfig", "answer_documents", "format_answer", "source_documents"]

# settings that build a client when no ``client`` is given
CLIENT_FIELDS = ("api_key", "base_url", "timeout")


class AnswerConfig(BaseModel):
    """The Agent API side of :func:`perplexed.answer` as fields (a mixin of the answer components).

    ``None`` means "the core's default" (``preset="fast"`` when no preset/effort/model is named; the key and
    URL from ``PERPLEXITY_API_KEY`` / ``PERPLEXITY_BASE_URL``).
    """

    client: Any = Field(default=None, exclude=True)
    """A :class:`perplexed.agent.AgentClient` or :class:`perplexed.agent.AsyncAgentClient` (both work for
    sync and async calls). Default: one built from ``api_key`` / ``base_url`` / ``timeout``, else from the
    environment."""

    async_client: Any = Field(default=None, exclude=True)
    """A :class:`perplexed.agent.AsyncAgentClient` for async calls (``answer()``'s ``async_client``): with
    both, sync calls use ``client`` and async calls ``async_client``."""

    api_key: SecretStr | None = None
    """Perplexity API key (default ``$PERPLEXITY_API_KEY``). Kept as a SecretStr, never shown."""

    base_url: str | None = None
    """Agent API base URL (default ``$PERPLEXITY_BASE_URL``, else ``https://api.perplexity.ai``)."""

    timeout: float | None = Field(default=None, gt=0)
    """Agent API request timeout in seconds (default: sized by preset)."""

    preset: str | None = None
    """Agent API preset (``fast``, ``low``, ``medium``, ...); the core's default is ``fast``."""

    effort: str | None = None
    """Agent API effort level (the newer name for presets)."""

    model: str | None = None
    """A model id, e.g. ``openai/gpt-5.1``."""

    models: list[str] | None = None
    """A model fallback list (at most 5)."""

    instructions: str | None = None
    """Replaces the default citation instruction."""

    max_output_tokens: int | None = Field(default=None, ge=1)
    """Cap on the answer's tokens."""

    reasoning: Any = None
    """``{"effort": ...}`` for reasoning models."""

    agent_options: dict[str, Any] | None = None
    """Other Agent API request fields (e.g. ``{"temperature": 0}``)."""

    max_source_chars: int | None = Field(default=None, ge=0)
    """Cap on the characters of source text given to the model (default: the core's, 24000)."""

    on_empty: Literal["raise", "answer"] = "raise"
    """When the search finds nothing: ``"raise"`` returns no answer (the retriever returns ``[]``, the
    tool ``"No results."``) without calling the model; ``"answer"`` answers without sources."""

    strip_unmatched: bool = False
    """Remove markers that cite no source from the answer text."""

    verify: bool = False
    """Check the answer's citations (:func:`perplexed.verify`, offline): the answer Document's
    ``metadata["verification"]`` is the result's JSON. Per call: ``invoke(q, verify=True)``."""

    fetch_content: int | bool | None = None
    """Ground on the top N hits' page content instead of their snippets (:func:`perplexed.fetch`; ``True``:
    every hit). Fetch options (``allow_private``, ``max_chars``, ...) may be given per call."""

    fetch_provider: Any = None
    """The fetch chain for ``fetch_content`` (default ``["http"]``)."""

    # provider="perplexity-agent" (the Agent API searches by itself) is valid here (see SearchConfig)
    _grounding_modes: ClassVar[bool] = True

    def answer_kwargs(self, overrides: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Split per-call ``overrides`` into (the answer arguments of :func:`perplexed.prepare_answer`, the
        rest), applying the configured Agent settings under them."""
        rest = dict(overrides)
        kwargs: dict[str, Any] = {}
        for name in perplexed.integration.AnswerPlan.ARGUMENTS:
            if name in ("client", "async_client", "on_attempt"):
                continue
            if name in rest:
                kwargs[name] = rest.pop(name)
            elif name == "max_source_chars":  # None is meaningful (no cap): only when set
                if name in self.model_fields_set:
                    kwargs[name] = self.max_source_chars
            elif getattr(self, name, None) is not None:  # an answer argument with no field: per call only
                kwargs[name] = getattr(self, name)
        client_settings = {name: rest.pop(name, getattr(self, name)) for name in CLIENT_FIELDS}
        client = rest.pop("client", None) or self.client
        async_client = rest.pop("async_client", None) or self.async_client
        if client is None and async_client is None:  # as the core's default client (from the environment
            # when nothing is set), so a missing key says "pass api_key=", this component's word for it
            from perplexed.agent import AsyncAgentClient

            client = AsyncAgentClient(**{k: v for k, v in client_settings.items() if v is not None})
        if client is not None:
            kwargs["client"] = client
        if async_client is not None:
            kwargs["async_client"] = async_client
        return kwargs, rest

    def answer_plan(self, query: str, search_kwargs: Mapping[str, Any], agent_kwargs: Mapping[str, Any]) -> AnswerPlan:
        """The :class:`perplexed.AnswerPlan` of one call: the search's kwargs and the Agent API's."""
        return perplexed.integration.prepare_answer(query, **search_kwargs, **agent_kwargs)


def _citations(answer: Answer) -> list[dict[str, Any]]:
    """``[{n, url, title}]``: each cited source once, in order of first use."""
    seen: dict[int, dict[str, Any]] = {}
    for citation in answer.citations:
        seen.setdefault(citation.n, {"n": citation.n, "url": citation.url, "title": citation.title})
    return list(seen.values())


def source_hits(answer: Answer) -> list[Hit]:
    """The answer's sources, numbered as the model saw them, with their full text (the model may have been
    given a shortened text: ``max_source_chars``)."""
    full = {hit.id: hit for hit in answer.search.hits} if answer.search is not None else {}
    return [full.get(hit.id, hit) for hit in answer.sources]


def source_documents(answer: Answer, *, flat: bool = False) -> list[Document]:
    """One Document per source, ``metadata["id"] == n`` (so every ``[n]`` resolves), ``type="source"``."""
    search = answer.search
    attempts = search.attempts if search is not None else []
    cost = search.cost if search is not None else 0.0
    docs = []
    for hit in source_hits(answer):
        metadata = {"type": "source", **hit_metadata(hit, answered_by=answer.provider, cost=cost, attempts=attempts)}
        docs.append(Document(page_content=hit.text, metadata=flatten_metadata(metadata) if flat else metadata))
    return docs


def answer_document(answer: Answer, *, flat: bool = False) -> Document:
    """The answer as a Document: its text with inline ``[n]``; metadata ``type="answer"``, ``citations``
    ``[{n, url, title}]``, ``cost`` (search + Agent API, USD), ``attempts`` (the search's), ``response_id``,
    ``model``, and ``answered_by``, ``search_cost``, ``agent_cost``, ``unmatched``, ``query``; with
    ``verify=True`` also ``verification`` (:class:`perplexed.Verification` as JSON)."""
    search = answer.search
    metadata: dict[str, Any] = {
        "type": "answer",
        "query": answer.query,
        "citations": _citations(answer),
        "unmatched": [int(n) for n in answer.unmatched],
        "answered_by": answer.provider,
        "cost": answer.cost,
        "search_cost": answer.search_cost,
        "agent_cost": answer.agent_cost,
        "attempts": attempts_summary(search.attempts if search is not None else []),
        "response_id": answer.response.id or None,
        "model": answer.response.model,
    }
    if answer.verification is not None:
        metadata["verification"] = answer.verification.model_dump(mode="json")
    return Document(page_content=answer.text, metadata=flatten_metadata(metadata) if flat else metadata)


def answer_documents(answer: Answer, *, flat: bool = False) -> list[Document]:
    """The answer Document first, then one Document per source."""
    return [answer_document(answer, flat=flat), *source_documents(answer, flat=flat)]


def format_sources(hits: Sequence[Hit]) -> str:
    """``[n] title — url`` lines, numbered by the hits' ids (the core's footnote format)."""
    return format_footnotes(hits, numbers=[hit.id for hit in hits])


def format_answer(answer: Answer) -> str:
    """What the answer tool returns to the model: the catalogue's text (``perplexed.catalogue.format_answer``,
    the same on MCP and LlamaIndex): the answer text, then the numbered sources (and, with ``verify=True``, the
    citation check: the sentences their sources do not support)."""
    return _format_answer(answer)
