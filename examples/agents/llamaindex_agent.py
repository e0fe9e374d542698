"""A LlamaIndex FunctionAgent with perplexed's tool spec, driven offline by a scripted function-calling LLM, and
its final answer's citations checked with ``verify``.

Run it from a clone after the quickstart (the sample corpus is indexed; no key, no network):

    .venv/bin/pip install -e ".[agents]"
    .venv/bin/python examples/agents/llamaindex_agent.py

The scripted LLM stands in for a real one: it calls the search tool on the local index, reads the first hit's
page (a ``file://`` URL) with the fetch tool, then replies citing it as ``[1]``; ``perplexed.verify`` then checks
that hit [1] supports the reply. With a real LLM (``FunctionAgent(tools=..., llm=OpenAI(...))``) the tools are
the same; the spec's third tool, ``perplexed_answer``, calls the Perplexity Agent API (``PERPLEXITY_API_KEY``).
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from typing import Any

import perplexed
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index_perplexed import PerplexedToolSpec

warnings.filterwarnings("ignore", category=DeprecationWarning)  # llama-index's runtime trips pydantic's

REPLY = "A setback is the minimum distance between a building and a property line [1]."


def scripted_llm() -> MockFunctionCallingLLM:
    first_url = perplexed.search("front yard setback", provider=["local"], max_results=1).hits[0].url
    script = [("perplexed_search", {"query": "front yard setback"}), ("perplexed_fetch", {"url": first_url})]

    def respond(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        done = len([m for m in messages if m.role == MessageRole.TOOL])
        if done < len(script):
            name, args = script[done]
            block = ToolCallBlock(tool_call_id=f"call-{done + 1}", tool_name=name, tool_kwargs=args)
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])
        return ChatMessage(role=MessageRole.ASSISTANT, content=REPLY)

    return MockFunctionCallingLLM(response_generator=respond)


async def main() -> None:
    chain = ["local", "searxng"]  # searxng is only asked when the local index has nothing
    tools = PerplexedToolSpec(chain, max_results=3).to_tool_list()  # search, answer, fetch
    agent = FunctionAgent(tools=tools, llm=scripted_llm())
    handler = agent.run("What is a front yard setback? Cite your source.")
    failed: list[str] = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            first = event.tool_output.content.splitlines()[0]
            print(f"tool {event.tool_name} (error={event.tool_output.is_error}): {first[:70]}")
            if event.tool_output.is_error:
                failed.append(f"{event.tool_name}: {event.tool_output.content.splitlines()[0]}")
    output = await handler
    final = str(output.response.content)
    print("final:", final)
    if failed:  # the model was told; the one running the example is told too, in one line, and exit code 1
        print("a tool failed: " + "; ".join(failed), file=sys.stderr)
        raise SystemExit(1)
    hits = (await perplexed.asearch("front yard setback", provider=["local"], max_results=3)).hits
    check = perplexed.verify(final, hits)
    print("verify:", ", ".join(s.label for s in check.sentences))


if __name__ == "__main__":
    asyncio.run(main())
