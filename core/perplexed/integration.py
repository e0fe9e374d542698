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

from perplexed.tools._schema import portable_schema

if TYPE_CHECKING:  # imported on first use (__getattr__): the answer plan and the fetch check import the search
    # engine (perplexed.engine.chain), fetching imports httpx; an adapter imported but not yet called needs neither
    from perplexed.grounding._answer_plan import AnswerPlan, prepare_answer
    from perplexed.operations._fetch import FetchPlan, prepare_fetch
    from perplexed.operations._search import check_fetch_content

__all__ = [
    "AnswerPlan",
    "FetchPlan",
    "check_fetch_content",
    "portable_schema",
    "prepare_answer",
    "prepare_fetch",
]


#: name -> the module it is imported from on first use
_LAZY = {
    "AnswerPlan": "perplexed.grounding._answer_plan",
    "prepare_answer": "perplexed.grounding._answer_plan",
    "check_fetch_content": "perplexed.operations._search",
    "FetchPlan": "perplexed.operations._fetch",
    "prepare_fetch": "perplexed.operations._fetch",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is not None:
        import importlib

        value = globals()[name] = getattr(importlib.import_module(module_name), name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
