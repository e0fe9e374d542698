"""Helpers for framework adapters and services that check their settings once and run calls later.

The LangChain and LlamaIndex adapters, the MCP server and the CLI are built on these; an application rarely
needs them (``perplexed.search``, ``fetch`` and ``answer`` validate their own arguments).

- :func:`prepare_answer` validates :func:`perplexed.answer`'s arguments into a frozen :class:`AnswerPlan`
  (``perplexed.answer(plan)`` runs it; ``AnswerPlan.ARGUMENTS`` lists the keywords that are not search options).
- :func:`prepare_fetch` validates :func:`perplexed.fetch`'s arguments into a :class:`FetchPlan`.
- :func:`check_fetch_content` validates search's ``fetch_content`` / ``fetch_provider`` and fetch options
  without searching.
- :func:`portable_schema` turns a tool's JSON schema into the subset every model vendor accepts.

These names were ``perplexed.NAME`` before; that spelling still works for one minor version, with a
``DeprecationWarning``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perplexed.grounding._answer_plan import AnswerPlan, prepare_answer
from perplexed.operations._search import check_fetch_content
from perplexed.tools._schema import portable_schema

if TYPE_CHECKING:  # imported on first use (__getattr__): fetching imports httpx, a search of local providers not
    from perplexed.operations._fetch import FetchPlan, prepare_fetch

__all__ = [
    "AnswerPlan",
    "FetchPlan",
    "check_fetch_content",
    "portable_schema",
    "prepare_answer",
    "prepare_fetch",
]


def __getattr__(name: str) -> Any:
    if name in ("FetchPlan", "prepare_fetch"):
        from perplexed.operations import _fetch

        value = globals()[name] = getattr(_fetch, name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
