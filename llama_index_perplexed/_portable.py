"""Tool metadata whose parameter schema is in the subset strict tool callers accept (OpenAI strict mode, Gemini
function declarations): LlamaIndex's own ``get_parameters_dict`` drops ``additionalProperties`` and keeps the
``anyOf`` of an optional argument; this one hands the schema to :func:`perplexed.portable_schema`."""

from __future__ import annotations

from typing import Any

from llama_index.core.tools.types import ToolMetadata
from perplexed.integration import portable_schema


class PortableToolMetadata(ToolMetadata):
    """:class:`~llama_index.core.tools.types.ToolMetadata` with a portable parameter schema."""

    def get_parameters_dict(self) -> dict[str, Any]:
        return portable_schema(super().get_parameters_dict())
