"""Tool metadata whose parameter schema is in the subset strict tool callers accept (OpenAI strict mode, Gemini
function declarations): LlamaIndex's own ``get_parameters_dict`` drops ``additionalProperties`` and keeps the
``anyOf`` of an optional argument; this one hands the schema to :func:`perplexed.portable_schema`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama_index.core.tools.types import ToolMetadata
from perplexed.integration import portable_schema


@dataclass
class PortableToolMetadata(ToolMetadata):
    """:class:`~llama_index.core.tools.types.ToolMetadata` with a portable parameter schema: a catalogue tool's
    own (``catalogue``, from ``perplexed.catalogue``: the schema the MCP server and the LangChain tools show too),
    else the function's, made portable."""

    catalogue: Any = None

    def get_parameters_dict(self) -> dict[str, Any]:
        if self.catalogue is not None:
            return dict(self.catalogue.input_schema())
        return portable_schema(super().get_parameters_dict())
