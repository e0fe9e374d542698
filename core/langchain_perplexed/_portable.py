"""Tool schemas in the subset strict tool callers accept (OpenAI strict mode, Gemini function declarations), and
the tools' arguments as the core's tool catalogue (``perplexed.catalogue``) declares them."""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_core.tools import ToolException
from perplexed import InvalidRequest
from perplexed.catalogue import AgentTool
from perplexed.integration import portable_schema
from pydantic import ConfigDict, Field, create_model

from ._config import KnownNames

__all__ = ["PORTABLE", "CatalogueArguments", "PortableToolSchema", "ToolInput", "input_model"]

#: The ``model_config`` of a tool's arguments model: its JSON schema goes through ``perplexed.portable_schema``
#: (typed properties, no ``anyOf`` with ``null``, a closed object).
PORTABLE = ConfigDict(json_schema_extra=portable_schema)  # type: ignore[typeddict-item]


def _catalogue_schema(schema: dict[str, Any], model: type[Any]) -> None:
    """The JSON schema of a tool's arguments is the catalogue's, exactly (what MCP and LlamaIndex show too)."""
    tool: AgentTool | None = getattr(model, "catalogue", None)
    if tool is None:  # the base class itself
        portable_schema(schema)
        return
    schema.clear()
    schema.update(tool.input_schema())


class ToolInput(KnownNames):
    """The arguments of one catalogue tool as a pydantic model (typed, bounded, described): its JSON schema is
    the catalogue's; a misspelt name is an error naming the closest argument."""

    model_config = ConfigDict(json_schema_extra=_catalogue_schema)
    catalogue: ClassVar[AgentTool | None] = None


def input_model(name: str, tool: AgentTool, doc: str) -> type[ToolInput]:
    """The arguments model of ``tool`` (e.g. ``PerplexedSearchInput``), its fields generated from the catalogue."""
    fields: dict[str, Any] = {}
    for argument in tool.arguments:
        bounds = {k: v for k, v in (("ge", argument.minimum), ("le", argument.maximum)) if v is not None}
        default = ... if argument.required else None
        fields[argument.name] = (argument.python_type, Field(default, description=argument.description, **bounds))  # type: ignore[call-overload]
    model = create_model(name, __base__=ToolInput, __doc__=doc, __module__="langchain_perplexed", **fields)
    model.catalogue = tool
    return model


class PortableToolSchema:
    """A tool mixin: the schema a model is shown is the arguments model itself (the tools have no injected
    arguments to hide), so its portable JSON schema is kept; LangChain's generated subset model would lose it."""

    @property
    def tool_call_schema(self) -> Any:
        return self.args_schema  # type: ignore[attr-defined]


class CatalogueArguments(PortableToolSchema):
    """A tool mixin: a model's arguments are checked by the catalogue (``catalogue``: the tool's declaration), in
    its words: an unknown or misspelt argument names the closest one, a missing or bad one says what is
    allowed, the same text the MCP server and the LlamaIndex tools give. Raised as a :class:`ToolException`
    (``handle_tool_error=True`` hands it to the model), with the :class:`perplexed.InvalidRequest` as cause."""

    catalogue: ClassVar[AgentTool]

    def _parse_input(self, tool_input: str | dict[str, Any], tool_call_id: str | None) -> Any:
        if isinstance(tool_input, str):  # a bare string is the first (required) argument
            tool_input = {self.catalogue.arguments[0].name: tool_input}
        try:
            return self.catalogue.parse(tool_input, self.name)  # type: ignore[attr-defined]
        except InvalidRequest as exc:
            raise ToolException(self.catalogue.retry_text(exc)) from exc

