"""Portable tool schemas, everywhere: the input schema of every tool this package ships (the MCP server's,
the LangChain tools', the LlamaIndex tool spec's functions) passes the strict-caller subset check
(``testkit.portable``): typed properties, no ``anyOf`` with ``null``, closed objects, enums for closed sets."""

from __future__ import annotations

from typing import Any

import perplexed
import pytest
from testkit.portable import portability_problems

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def provider(query: str, options: Any) -> list[perplexed.Hit]:
    return []


def test_the_check_catches_what_strict_callers_reject() -> None:
    bad = {"type": "object", "properties": {
        "a": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        "b": {"description": "untyped"},
        "c": {"type": ["string", "null"]},
        "d": {"type": "object", "properties": {}},
        "e": {"type": "string", "enum": ["x", 1]},
        "f": {"type": "array"},
    }}
    problems = portability_problems(bad)
    assert any("$: object without additionalProperties" in p for p in problems)
    for name in "abcdef":
        assert any(p.startswith(f"$.{name}") for p in problems), name
    good = {"type": "object", "additionalProperties": False, "required": ["q"], "properties": {
        "q": {"type": "string"}, "n": {"type": "integer", "minimum": 1},
        "r": {"type": "string", "enum": ["day", "week"]}, "l": {"type": "array", "items": {"type": "string"}}}}
    assert portability_problems(good) == []


def mcp_schemas() -> dict[str, dict[str, Any]]:
    import asyncio

    from mcp import Client
    from perplexed.mcp_server import create_server
    from test_answer_fakes import FakeAgentAPI

    server = create_server(provider, answer_options={"async_client": FakeAgentAPI().async_client()})

    async def listed() -> dict[str, dict[str, Any]]:
        async with Client(server) as client:
            return {f"mcp:{t.name}": t.input_schema for t in (await client.list_tools()).tools}

    return asyncio.run(listed())


def langchain_schemas() -> dict[str, dict[str, Any]]:
    import langchain_perplexed
    from langchain_core.utils.function_calling import convert_to_openai_tool

    tools = [langchain_perplexed.PerplexedSearchTool(provider=provider),
             langchain_perplexed.PerplexedAnswerTool(provider=provider)]
    fetch_tool = getattr(langchain_perplexed, "PerplexedFetchTool", None)
    if fetch_tool is not None:
        tools.append(fetch_tool())
    out = {}
    for tool in tools:
        out[f"langchain:{tool.name}"] = convert_to_openai_tool(tool)["function"]["parameters"]
        out[f"langchain:{tool.name}:strict"] = convert_to_openai_tool(tool, strict=True)["function"]["parameters"]
    return out


def llama_index_schemas() -> dict[str, dict[str, Any]]:
    from llama_index_perplexed import PerplexedToolSpec

    out = {}
    for tool in PerplexedToolSpec(provider).to_tool_list():
        out[f"llama_index:{tool.metadata.name}"] = tool.metadata.to_openai_tool()["function"]["parameters"]
    return out


def every_schema() -> dict[str, dict[str, Any]]:
    return {**mcp_schemas(), **langchain_schemas(), **llama_index_schemas()}


def test_every_shipped_tool_schema_is_portable() -> None:
    schemas = every_schema()
    assert {"mcp:web_search", "langchain:perplexed_search", "langchain:perplexed_answer",
            "llama_index:perplexed_search", "llama_index:perplexed_answer"} <= set(schemas)
    problems = {name: portability_problems(schema) for name, schema in schemas.items()}
    assert {name: p for name, p in problems.items() if p} == {}


def test_closed_sets_are_enums() -> None:
    schemas = every_schema()
    for name, schema in schemas.items():
        recency = schema.get("properties", {}).get("recency")
        if recency is not None:
            assert recency.get("enum") == ["day", "week", "month", "year"], name
