"""A LlamaIndex FunctionAgent with perplexed's tool spec, driven offline by a scripted function-calling LLM.

Run it from a clone after the quickstart (the sample corpus is indexed):

    .venv/bin/python examples/agents/llamaindex_agent.py

The scripted LLM stands in for a real one: it calls the search tool, then the answer tool, then replies with
what the answer tool returned (the spec's third tool, ``perplexed_fetch``, reads a page). With a real LLM (``FunctionAgent(tools=..., llm=OpenAI(...))``) the tools are
the same. The answer tool calls the Perplexity Agent API and needs ``PERPLEXITY_API_KEY``.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM

from llama_index_perplexed import PerplexedToolSpec

warnings.filterwarnings("ignore", category=DeprecationWarning)  # llama-index's runtime trips pydantic's


def scripted_llm(search_tool: str, answer_tool: str) -> MockFunctionCallingLLM:
    def respond(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        results = [m for m in messages if m.role == MessageRole.TOOL]
        if len(results) < 2:
            name, query = (search_tool, "front yard setback") if not results else (answer_tool, "what is a setback?")
            block = ToolCallBlock(tool_call_id=f"call-{len(results) + 1}", tool_name=name, tool_kwargs={"query": query})
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])
        return ChatMessage(role=MessageRole.ASSISTANT, content="Final: " + (results[-1].content or "")[:80])

    return MockFunctionCallingLLM(response_generator=respond)


async def main() -> None:
    tools = PerplexedToolSpec(["local", "searxng"], max_results=3).to_tool_list()  # search, answer, fetch
    agent = FunctionAgent(tools=tools, llm=scripted_llm("perplexed_search", "perplexed_answer"))
    handler = agent.run("What is a front yard setback?")
    failed: list[str] = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            first = event.tool_output.content.splitlines()[0]
            print(f"tool {event.tool_name} (error={event.tool_output.is_error}): {first[:70]}")
            if event.tool_output.is_error:
                failed.append(f"{event.tool_name}: {event.tool_output.content}")
    output = await handler
    print("final:", str(output.response.content)[:60])
    if failed:  # the model was told; the one running the example is told too, and the exit code says so
        raise SystemExit("a tool failed: " + "; ".join(failed))


if __name__ == "__main__":
    asyncio.run(main())
