"""One catalogue of agent tools (issue 41 §3, issue 39 §2): ``web_search``, ``web_fetch`` and ``answer`` are
declared once (``perplexed.catalogue``) and the three surfaces built from it (the MCP server, the LangChain
tools, the LlamaIndex tool spec) show the same description and the same argument JSON schema, and answer an
unknown or misspelt argument with the same did-you-mean text (MCP: an ``isError`` result), before any search."""

from __future__ import annotations

import asyncio
from typing import Any

import perplexed
import pytest
from perplexed.catalogue import (  # private: the tool catalogue the three surfaces are built from
    ANSWER,
    TOOLS,
    WEB_FETCH,
    WEB_SEARCH,
    format_hits,
    tool_named,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CALLS: list[str] = []


def counted(query: str, options: Any) -> list[perplexed.Hit]:
    CALLS.append(query)
    return [perplexed.Hit(title="A page", url="https://example.com/a", snippet="alpha snippet")]


def fake_agent() -> Any:
    from test_answer_fakes import FakeAgentAPI

    return FakeAgentAPI()


def mcp_surface() -> dict[str, Any]:
    """{adapter tool name: the MCP tool (name, description, input_schema)} of a server with all three tools."""
    from mcp import Client
    from perplexed.mcp_server import create_server

    server = create_server(counted, answer_options={"async_client": fake_agent().async_client()})

    async def listed() -> dict[str, Any]:
        async with Client(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = asyncio.run(listed())
    return {tool.name: tools[tool.mcp_name] for tool in TOOLS.values()}


def mcp_call(name: str, arguments: dict[str, Any]) -> Any:
    from mcp import Client
    from perplexed.mcp_server import create_server

    server = create_server(counted, answer_options={"async_client": fake_agent().async_client()})

    async def call() -> Any:
        async with Client(server) as client:
            await client.list_tools()
            return await client.call_tool(name, arguments)

    return asyncio.run(call())


def langchain_tools() -> dict[str, Any]:
    import langchain_perplexed

    api = fake_agent()
    tools = [langchain_perplexed.PerplexedSearchTool(provider=counted),
             langchain_perplexed.PerplexedFetchTool(),
             langchain_perplexed.PerplexedAnswerTool(provider=counted, client=api.client())]
    return {tool.name: tool for tool in tools}


def llama_index_tools() -> dict[str, Any]:
    from llama_index_perplexed import PerplexedToolSpec

    spec = PerplexedToolSpec(counted, client=fake_agent().client())
    return {tool.metadata.name: tool for tool in spec.to_tool_list()}


def test_the_names_are_declared_once_side_by_side() -> None:
    assert {(t.mcp_name, t.name) for t in TOOLS.values()} == {
        ("web_search", "perplexed_search"), ("web_fetch", "perplexed_fetch"), ("answer", "perplexed_answer")}


def test_the_three_surfaces_show_the_same_descriptions_and_argument_schemas() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    mcp = mcp_surface()
    langchain = langchain_tools()
    llama = llama_index_tools()
    for tool in TOOLS.values():
        declared = tool.input_schema()
        lc = convert_to_openai_tool(langchain[tool.name])["function"]
        li = llama[tool.name].metadata.to_openai_tool()["function"]
        assert mcp[tool.name].description == lc["description"] == li["description"] == tool.description, tool.name
        assert mcp[tool.name].input_schema == lc["parameters"] == li["parameters"] == declared, tool.name
        assert llama[tool.name].metadata.get_parameters_dict() == declared
    # the adapters gained the MCP tools' optional arguments
    assert set(WEB_SEARCH.input_schema()["properties"]) == {"query", "max_results", "include_domains",
                                                            "exclude_domains", "recency"}
    assert set(ANSWER.input_schema()["properties"]) == set(WEB_SEARCH.input_schema()["properties"])
    assert set(WEB_FETCH.input_schema()["properties"]) == {"url", "max_chars", "start_index"}


def test_the_llama_index_functions_have_real_signatures() -> None:
    import inspect

    from llama_index_perplexed import PerplexedToolSpec

    for fn in (PerplexedToolSpec.perplexed_search, PerplexedToolSpec.aperplexed_answer):
        params = inspect.signature(fn).parameters
        assert list(params) == ["self", *WEB_SEARCH.argument_names]
        assert params["query"].default is inspect.Parameter.empty and params["max_results"].default is None
    assert list(inspect.signature(PerplexedToolSpec.perplexed_fetch).parameters) == ["self", "url", "max_chars",
                                                                                     "start_index"]


@pytest.mark.parametrize(
    ("tool", "arguments", "closest"),
    [
        ("perplexed_search", {"qury": "alpha"}, "query"),
        ("perplexed_search", {"query": "alpha", "max_result": 3}, "max_results"),
        ("perplexed_search", {"query": "alpha", "include_domain": ["example.com"]}, "include_domains"),
        ("perplexed_answer", {"query": "alpha", "recent": "week"}, "recency"),
        ("perplexed_fetch", {"urls": "https://example.com/"}, "url"),
        ("perplexed_fetch", {"url": "https://example.com/", "maxchars": 500}, "max_chars"),
    ],
)
def test_a_misspelt_argument_gets_the_same_did_you_mean_on_all_three(
    tool: str, arguments: dict[str, Any], closest: str
) -> None:
    from langchain_core.tools import ToolException

    CALLS.clear()
    declared = tool_named(tool)
    result = mcp_call(declared.mcp_name, arguments)
    assert result.is_error
    mcp_text = result.content[0].text
    with pytest.raises(ToolException) as lc_error:
        langchain_tools()[tool].invoke(arguments)
    handled = langchain_tools()[tool]
    handled.handle_tool_error = True
    message = handled.invoke({"type": "tool_call", "id": "c1", "name": tool, "args": arguments})
    with pytest.raises(perplexed.InvalidRequest) as li_error:
        llama_index_tools()[tool].call(**arguments)
    assert mcp_text == str(lc_error.value) == message.content == str(li_error.value)
    assert f"did you mean {closest!r}?" in mcp_text
    assert mcp_text.startswith("unknown argument ")
    assert CALLS == []  # refused before any search


def test_old_mcp_behaviour_fixed_a_misspelt_query_is_not_an_empty_query() -> None:
    """Issue 39: ``qury`` used to be dropped and read "query must be a non-empty string"."""
    text = mcp_call("web_search", {"qury": "setbacks"}).content[0].text
    assert "did you mean 'query'?" in text and "non-empty" not in text


def test_bad_values_and_missing_arguments_read_the_same_on_all_three() -> None:
    from langchain_core.tools import ToolException

    for arguments in ({"query": "q", "max_results": 50}, {"query": "q", "recency": "decade"}, {"query": ""}):
        mcp_text = mcp_call("web_search", arguments).content[0].text
        with pytest.raises(ToolException) as lc_error:
            langchain_tools()["perplexed_search"].invoke(arguments)
        with pytest.raises(perplexed.InvalidRequest) as li_error:
            llama_index_tools()["perplexed_search"].call(**arguments)
        assert mcp_text == str(li_error.value), arguments  # LangChain frames the same text with what to do
        assert str(lc_error.value) == f"Invalid arguments: {mcp_text}. Call the tool again with allowed values."
    missing = mcp_call("web_search", {}).content[0].text
    assert "web_search needs the argument 'query'" in missing and "query must be a non-empty string" in missing


def test_the_mcp_answer_tool_still_takes_question() -> None:
    result = mcp_call("answer", {"question": "What is a setback?"})
    assert not result.is_error, result.content[0].text
    assert "[1] A page — https://example.com/a" in result.content[0].text


def test_one_text_of_the_hits() -> None:
    hits = [perplexed.Hit(id=1, title="T", url="https://example.com/t", snippet="a  b\nc" + " x" * 300)]
    text = format_hits(hits)
    head, snippet = text.split("\n")
    assert head == "[1] T — https://example.com/t" and snippet.startswith("a b c") and len(snippet) == 400
    assert format_hits([]) == "No results."
    import langchain_perplexed._documents as lc_documents  # private: format_hits must be one object, not a copy
    import llama_index_perplexed.tools as li_tools  # private: format_hits must be one object, not a copy

    assert lc_documents.format_hits is format_hits and li_tools.format_hits is format_hits


def test_one_text_of_the_answer_on_all_three() -> None:
    question = "What is a setback?"
    mcp_text = mcp_call("answer", {"query": question}).content[0].text
    lc_text = langchain_tools()["perplexed_answer"].invoke({"query": question})
    li_text = llama_index_tools()["perplexed_answer"].call(query=question).content
    assert mcp_text == lc_text == li_text
    assert "\n\nSources:\n[1] A page — https://example.com/a" in mcp_text
