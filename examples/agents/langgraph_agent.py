"""A LangChain agent (``langchain.agents.create_agent``, which runs on LangGraph) with perplexed's search and
answer tools, driven offline by a scripted model.

Run it from a clone after the quickstart (the sample corpus is indexed):

    .venv/bin/python examples/agents/langgraph_agent.py

The scripted model stands in for a real chat model: it asks for a search, then for a grounded answer, then
replies. With a real model, pass it instead (``create_agent(ChatOpenAI(...), tools)`` or
``create_agent("openai:gpt-5.1", tools)``): the tools are the same. ``create_agent`` is the current agent API
(LangGraph's ``create_react_agent`` is deprecated in its favour); it needs the ``langchain`` package
(``pip install langchain``). ``PerplexedAnswerTool`` calls the Perplexity Agent API and needs
``PERPLEXITY_API_KEY``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    from langchain.agents import create_agent
except ImportError:  # langchain (the agent runtime) is not an extra of perplexed's: the user installs it
    raise SystemExit("this example needs the langchain package (create_agent): pip install langchain") from None
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage

from langchain_perplexed import PerplexedAnswerTool, PerplexedSearchTool


class ScriptedModel(GenericFakeChatModel):
    """Answers from its script; ``bind_tools`` is accepted (a real model would see the tools' schemas)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


def call(name: str, query: str, n: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": {"query": query}, "id": f"call_{n}"}])


def main() -> None:
    chain = ["local", "searxng"]
    tools = [
        PerplexedSearchTool(provider=chain, max_results=3),
        PerplexedAnswerTool(provider=chain, max_results=3),  # needs PERPLEXITY_API_KEY
    ]
    model = ScriptedModel(messages=iter([
        call("perplexed_search", "front yard setback", 1),
        call("perplexed_answer", "what is a front yard setback?", 2),
        AIMessage("A front yard setback is the minimum distance from the front lot line [1]."),
    ]))
    agent = create_agent(model, tools)
    state = agent.invoke({"messages": [("user", "What is a front yard setback?")]})
    for message in state["messages"]:
        if isinstance(message, ToolMessage):
            first = message.content.splitlines()[0] if message.content else ""
            print(f"tool {message.name} ({message.status}): {first[:70]}")
    print("final:", state["messages"][-1].content)


if __name__ == "__main__":
    main()
