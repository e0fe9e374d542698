"""PerplexedToolSpec: the search and answer tools through to_tool_list(), and inside a LlamaIndex agent."""

from __future__ import annotations

import perplexed
import pytest
from llama_agent import LoopbackAgentAPI
from llama_fakes import aweb, broken, nothing, web
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from llama_index_perplexed import PerplexedAgentEvent, PerplexedAttemptEvent, PerplexedToolSpec
from perplexed import Hit, SearchOptions
from perplexed.agent import ServerError

SEARCH_OUTPUT = (
    "[1] Web A — https://web.example/a\nalpha snippet\n\n"
    "[2] Web B — https://web.example/b\nbeta snippet\n\n"
    "[3] Web C — https://web.example/c\ngamma snippet"
)
ANSWER_OUTPUT = (
    "Web A is the first source [1]. Web B comes second [2].\n\n"
    "Sources:\n"
    "[1] Web A — https://web.example/a\n"
    "[2] Web B — https://web.example/b\n"
    "[3] Web C — https://web.example/c"
)


def tools_by_name(spec: PerplexedToolSpec) -> dict[str, FunctionTool]:
    """The tools by their short names (the tools themselves are named ``perplexed_search``/``perplexed_answer``)."""
    return {tool.metadata.name.removeprefix("perplexed_"): tool for tool in spec.to_tool_list()}


def test_spec_lists_sync_and_async_pairs(agent_api: LoopbackAgentAPI) -> None:
    assert BaseToolSpec in PerplexedToolSpec.__mro__
    assert PerplexedToolSpec.spec_functions == [
        ("perplexed_search", "aperplexed_search"),
        ("perplexed_answer", "aperplexed_answer"),
        ("perplexed_fetch", "aperplexed_fetch"),  # issue 24: reading a page (tests/llama_index/test_li_fetch.py)
    ]
    spec = PerplexedToolSpec(web, client=agent_api.client())
    assert {tool.metadata.name for tool in spec.to_tool_list()} == {"perplexed_search", "perplexed_answer",
                                                                     "perplexed_fetch"}
    tools = {name: tool for name, tool in tools_by_name(spec).items() if name != "fetch"}
    for tool in tools.values():
        assert tool.fn is not None and tool.async_fn is not None
        params = tool.metadata.get_parameters_dict()
        assert params["required"] == ["query"]
        assert params["properties"]["query"]["type"] == "string"
        assert "query" in params["properties"]["query"]["description"]
    assert "[n] title — url" in tools["search"].metadata.description
    assert "[n] citation markers" in tools["answer"].metadata.description


def test_search_tool_returns_a_numbered_list(agent_api: LoopbackAgentAPI) -> None:
    tools = tools_by_name(PerplexedToolSpec([broken, web], client=agent_api.client()))
    output = tools["search"].call(query="alpha")
    assert output.content == SEARCH_OUTPUT
    assert output.is_error is False
    assert output.tool_name == "perplexed_search"


async def test_search_tool_async_matches_sync(agent_api: LoopbackAgentAPI) -> None:
    tools = tools_by_name(PerplexedToolSpec([nothing, aweb], client=agent_api.client()))
    output = await tools["search"].acall(query="alpha")
    assert output.content == SEARCH_OUTPUT


def test_search_tool_shortens_long_snippets_and_falls_back_to_the_url() -> None:
    def long(query: str, options: SearchOptions) -> list[Hit]:
        return [Hit(url="https://long.example/", snippet="word " * 300)]

    content = tools_by_name(PerplexedToolSpec(long))["search"].call(query="q").content
    first_line, snippet = content.split("\n", 1)
    assert first_line == "[1] https://long.example/"
    assert len(snippet) <= 400 and snippet.endswith("…")


def test_search_tool_options(agent_api: LoopbackAgentAPI) -> None:
    spec = PerplexedToolSpec(web, client=agent_api.client(), similarity_top_k=1)
    assert tools_by_name(spec)["search"].call(query="q").content == "[1] Web A — https://web.example/a\nalpha snippet"


def test_search_tool_with_no_results() -> None:
    assert tools_by_name(PerplexedToolSpec(nothing))["search"].call(query="q").content == "No results."


def test_answer_tool_returns_the_answer_and_numbered_sources(agent_api: LoopbackAgentAPI) -> None:
    tools = tools_by_name(PerplexedToolSpec(web, client=agent_api.client()))
    assert tools["answer"].call(query="what?").content == ANSWER_OUTPUT
    assert "[1] Web A" in agent_api.bodies[0]["input"]


async def test_answer_tool_async(agent_api: LoopbackAgentAPI) -> None:
    tools = tools_by_name(PerplexedToolSpec(aweb, async_client=agent_api.async_client(), preset="pro"))
    output = await tools["answer"].acall(query="what?")
    assert output.content == ANSWER_OUTPUT
    assert agent_api.bodies[0]["preset"] == "pro"


def test_tools_raise_typed_errors_not_strings(agent_api: LoopbackAgentAPI) -> None:
    tools = tools_by_name(PerplexedToolSpec([broken], client=agent_api.client()))
    with pytest.raises(perplexed.UpstreamError) as info:
        tools["search"].call(query="q")
    assert info.value.reason == "all_providers_failed"
    assert len(info.value.attempts) == 1
    with pytest.raises(perplexed.UpstreamError):
        tools["answer"].call(query="q")
    assert agent_api.bodies == []


async def test_async_tools_raise_typed_errors(agent_api: LoopbackAgentAPI) -> None:
    agent_api.status = 500
    tools = tools_by_name(PerplexedToolSpec(aweb, async_client=agent_api.async_client()))
    with pytest.raises(ServerError) as info:
        await tools["answer"].acall(query="q")
    assert [a.provider for a in info.value.attempts] == ["aweb"]


def test_tools_dispatch_attempt_and_agent_events(agent_api: LoopbackAgentAPI, recorder, spans) -> None:
    tools = tools_by_name(PerplexedToolSpec([nothing, web], client=agent_api.client()))
    tools["search"].call(query="q")
    assert [(e.provider, e.outcome) for e in recorder.of(PerplexedAttemptEvent)] == [("nothing", "empty"), ("web", "ok")]
    tools["answer"].call(query="q")
    assert len(recorder.of(PerplexedAttemptEvent)) == 4
    assert len(recorder.of(PerplexedAgentEvent)) == 1
    tool_spans = {s.id_ for s in spans.completed_spans if s.id_.startswith("PerplexedToolSpec.")}
    assert {e.span_id for e in recorder.of(PerplexedAttemptEvent)} <= tool_spans


async def test_async_tools_dispatch_events(agent_api: LoopbackAgentAPI, recorder) -> None:
    tools = tools_by_name(PerplexedToolSpec([broken, aweb], async_client=agent_api.async_client()))
    await tools["search"].acall(query="q")
    await tools["answer"].acall(query="q")
    assert [e.outcome for e in recorder.of(PerplexedAttemptEvent)] == ["error", "ok", "error", "ok"]
    assert len(recorder.of(PerplexedAgentEvent)) == 1


def _scripted_llm(tool_name: str) -> MockFunctionCallingLLM:
    """A mock function-calling LLM: first calls ``tool_name``, then answers with the tool's output."""

    def respond(messages: list[ChatMessage], **kwargs: object) -> ChatMessage:
        results = [m for m in messages if m.role == MessageRole.TOOL]
        if not results:
            call = ToolCallBlock(tool_call_id="call-1", tool_name=tool_name, tool_kwargs={"query": "alpha"})
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        return ChatMessage(role=MessageRole.ASSISTANT, content="Final: " + (results[-1].content or ""))

    return MockFunctionCallingLLM(response_generator=respond)


# llama-index's workflow runtime inspects pydantic models and trips pydantic's deprecation warnings (not ours)
AGENT_WARNINGS = pytest.mark.filterwarnings("ignore:.*(__fields|model_computed_fields|model_fields).*:DeprecationWarning")


@AGENT_WARNINGS
@pytest.mark.parametrize("tool_name", ["perplexed_search", "perplexed_answer"])
async def test_a_llamaindex_agent_calls_the_tools(agent_api: LoopbackAgentAPI, tool_name: str) -> None:
    spec = PerplexedToolSpec(aweb, async_client=agent_api.async_client())
    agent = FunctionAgent(tools=spec.to_tool_list(), llm=_scripted_llm(tool_name))
    handler = agent.run("tell me about alpha")
    results = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    output = await handler

    assert [(r.tool_name, r.tool_kwargs) for r in results] == [(tool_name, {"query": "alpha"})]
    expected = SEARCH_OUTPUT if tool_name == "perplexed_search" else ANSWER_OUTPUT
    assert results[0].tool_output.content == expected
    assert results[0].tool_output.is_error is False
    assert str(output.response.content) == "Final: " + expected


@AGENT_WARNINGS
async def test_a_failing_tool_is_reported_to_the_agent_as_an_error(agent_api: LoopbackAgentAPI) -> None:
    spec = PerplexedToolSpec([broken], async_client=agent_api.async_client())
    agent = FunctionAgent(tools=spec.to_tool_list(), llm=_scripted_llm("perplexed_search"))
    handler = agent.run("tell me about alpha")
    results = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    await handler
    assert results[0].tool_output.is_error is True
    assert "all_providers_failed" in results[0].tool_output.content


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("search", {"qury": "alpha"}, "unknown argument 'qury': did you mean 'query'?"),
        ("answer", {"query": "alpha", "max_result": 3}, "unknown argument 'max_result': did you mean 'max_results'?"),
        ("fetch", {"urls": "https://example.com/"}, "did you mean 'url'?"),
        ("fetch", {"url": "https://example.com/", "maxchars": 10}, "did you mean 'max_chars'?"),
        ("search", {}, "perplexed_search needs the argument 'query'"),
    ],
)
async def test_a_models_wrong_argument_is_named_in_words(
    agent_api: LoopbackAgentAPI, tool: str, arguments: dict[str, object], named: str
) -> None:
    """A model's misspelt or missing argument: a typed error in words, which the agent shows the model
    (it was Python's TypeError: "got an unexpected keyword argument"), before any search or fetch."""
    calls: list[str] = []

    def counted(query: str, options: SearchOptions) -> list[dict[str, object]]:
        calls.append(query)
        return web(query, options)

    spec = PerplexedToolSpec(perplexed.providers.FunctionProvider(counted, name="web"), client=agent_api.client())
    found = tools_by_name(spec)[tool]
    with pytest.raises(perplexed.InvalidRequest) as sync_error:
        found.call(**arguments)
    with pytest.raises(perplexed.InvalidRequest) as async_error:
        await found.acall(**arguments)
    for error in (sync_error, async_error):
        assert named in str(error.value)
    assert calls == [] and agent_api.server.requests == []
    # the schema the model reads is the catalogue's (issue 41: the MCP tools' optional arguments too)
    assert set(found.metadata.get_parameters_dict()["properties"]) <= {"query", "url", "max_chars", "start_index",
                                                                       "max_results", "include_domains",
                                                                       "exclude_domains", "recency"}
