"""A LangChain agent (``langchain.agents.create_agent``, which runs on LangGraph) with perplexed's search and
fetch tools, driven offline by a scripted model, and its final answer's citations checked with ``verify``.

Run it from a clone after the quickstart (the sample corpus is indexed; no key, no network):

    .venv/bin/pip install -e ".[agents]"     # langchain (create_agent) and the adapters
    .venv/bin/python examples/agents/langgraph_agent.py

The scripted model stands in for a real chat model: it asks for a search on the local index, reads the first
hit's page (a ``file://`` URL), then replies citing it as ``[1]``; ``perplexed.verify`` then checks that hit
[1] supports the reply. To drive it with a real model instead, name one the way ``init_chat_model`` does:

    PERPLEXED_EXAMPLE_MODEL=openai:gpt-5.1 .venv/bin/python examples/agents/langgraph_agent.py

(it needs that model's package and key, e.g. ``pip install langchain-openai`` and ``OPENAI_API_KEY``; without
them the example says so in one line and exits with code 1). The tools are the same either way.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

try:
    from langchain.agents import create_agent
except ImportError:  # the agent runtime: the `agents` extra installs it
    raise SystemExit('this example needs the langchain package (create_agent): pip install -e ".[agents]" '
                     "(or pip install langchain)") from None
import perplexed
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_perplexed import PerplexedFetchTool, PerplexedSearchTool


class ScriptedModel(GenericFakeChatModel):
    """Answers from its script; ``bind_tools`` is accepted (a real model would see the tools' schemas)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


def scripted() -> ScriptedModel:
    first_url = perplexed.search("front yard setback", provider=["local"], max_results=1).hits[0].url
    return ScriptedModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "perplexed_search", "args": {"query": "front yard setback"},
                                   "id": "call_1"}]),
        AIMessage("", tool_calls=[{"name": "perplexed_fetch", "args": {"url": first_url}, "id": "call_2"}]),
        AIMessage("A setback is the minimum distance between a building and a property line [1]."),
    ]))


def real_model(name: str) -> Any:
    """The chat model ``name`` names (``provider:model``), or one line on stderr and exit code 1."""
    try:
        from langchain.chat_models import init_chat_model

        return init_chat_model(name)
    except Exception as exc:  # a missing package or key: the user's set-up, said in one line
        print(f"PERPLEXED_EXAMPLE_MODEL={name}: {type(exc).__name__}: {str(exc).splitlines()[0]}", file=sys.stderr)
        raise SystemExit(1) from None


def main() -> None:
    chain = ["local", "searxng"]  # searxng is only asked when the local index has nothing
    tools = [PerplexedSearchTool(provider=chain, max_results=3), PerplexedFetchTool(max_chars=2000)]
    name = os.environ.get("PERPLEXED_EXAMPLE_MODEL", "").strip()
    model = real_model(name) if name else scripted()
    agent = create_agent(model, tools)
    try:
        state = agent.invoke({"messages": [("user", "What is a front yard setback? Cite your source.")]})
    except Exception as exc:  # a real model's key refused, its service unreachable: one line, exit code 1
        print(f"the agent stopped: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
              file=sys.stderr)
        raise SystemExit(1) from None
    for message in state["messages"]:
        if isinstance(message, ToolMessage):
            first = message.content.splitlines()[0] if isinstance(message.content, str) and message.content else ""
            print(f"tool {message.name} ({message.status}): {first[:70]}")
    final = state["messages"][-1].content
    print("final:", final)
    searched = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "perplexed_search"]
    if searched and searched[0].artifact:
        hits = [perplexed.Hit(title=d.metadata["title"], url=d.metadata["url"], snippet=d.page_content)
                for d in searched[0].artifact]
        check = perplexed.verify(final, hits)
        print("verify:", ", ".join(f"{s.label}" for s in check.sentences))


if __name__ == "__main__":
    main()
