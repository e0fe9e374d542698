"""Tool schemas in the subset strict tool callers accept (OpenAI strict mode, Gemini function declarations)."""

from __future__ import annotations

from typing import Any

from perplexed.integration import portable_schema
from pydantic import ConfigDict

__all__ = ["PORTABLE", "PortableToolSchema"]

#: The ``model_config`` of a tool's arguments model: its JSON schema goes through ``perplexed.portable_schema``
#: (typed properties, no ``anyOf`` with ``null``, a closed object).
PORTABLE = ConfigDict(json_schema_extra=portable_schema)  # type: ignore[typeddict-item]


class PortableToolSchema:
    """A tool mixin: the schema a model is shown is the arguments model itself (the tools have no injected
    arguments to hide), so its portable JSON schema is kept; LangChain's generated subset model would lose it."""

    @property
    def tool_call_schema(self) -> Any:
        return self.args_schema  # type: ignore[attr-defined]
