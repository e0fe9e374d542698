"""The components in LCEL chains and in a tool-calling loop, with langchain-core's fake chat models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel, ParrotFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_perplexed import PerplexedAnswerRetriever, PerplexedRetriever, PerplexedSearchTool
from lc_support import QUERY

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from the sources and cite them as [n]."),
        ("human", "Sources:\n{context}\n\nQuestion: {question}"),
    ]
)


def format_docs(docs: Sequence[Document]) -> str:
    return "\n\n".join(f"[{d.metadata['id']}] {d.metadata['title']} ({d.metadata['url']})\n{d.page_content}" for d in docs)


def rag_chain(retriever: Runnable[str, list[Document]]) -> Runnable[str, str]:
    # ParrotFakeChatModel answers with the last message it got: the chain's output is the prompt it built.
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | ParrotFakeChatModel()
        | StrOutputParser()
    )


def test_lcel_rag_chain(searxng_env: Any) -> None:
    chain = rag_chain(PerplexedRetriever(provider="searxng", k=3))

    prompt_seen = chain.invoke(QUERY)

    assert prompt_seen.startswith("Sources:\n[1] ")
    assert "] Zoning setbacks explained (https://docs.example.org/zoning-setbacks)\nA setback is" in prompt_seen
    assert "\n\n[3] " in prompt_seen and "[4] " not in prompt_seen
    assert prompt_seen.endswith(f"Question: {QUERY}")


async def test_lcel_rag_chain_async_and_batch(searxng_env: Any) -> None:
    chain = rag_chain(PerplexedRetriever(provider="searxng", k=2))

    single = await chain.ainvoke(QUERY)
    batch = await chain.abatch([QUERY, "rust ownership"])

    assert batch[0].count("\n\n[") == single.count("\n\n[") == 1  # two sources each
    assert batch[0].endswith(f"Question: {QUERY}")
    assert "https://docs.example.org/rust-ownership" in batch[1]


def test_lcel_with_the_answer_retriever(searxng_env: Any, agent_api: Any) -> None:
    def cited_answer(docs: list[Document]) -> str:
        answer, *sources = docs
        by_id = {d.metadata["id"]: d.metadata["url"] for d in sources}
        notes = "\n".join(f"[{c['n']}] {by_id[c['n']]}" for c in answer.metadata["citations"])
        return f"{answer.page_content}\n{notes}"

    chain = PerplexedAnswerRetriever(provider="searxng", k=3) | RunnableLambda(cited_answer)

    text = chain.invoke(QUERY)

    first, note1, note2 = text.split("\n")
    assert first == f"Grounded answer about {QUERY} [1][2]."
    assert note1.startswith("[1] https://") and note2.startswith("[2] https://")
    assert note1 != note2


class ToolCallingFakeChatModel(GenericFakeChatModel):
    """GenericFakeChatModel that accepts ``bind_tools`` (it answers from its scripted messages anyway) and
    records the messages it was given."""

    seen: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def run_agent_loop(model: Any, tools: Sequence[BaseTool], question: str, max_turns: int = 4) -> list[BaseMessage]:
    """The classic tool-calling loop: call the model, run the tools it asks for, feed the results back."""
    by_name = {tool.name: tool for tool in tools}
    bound = model.bind_tools(list(tools))
    messages: list[BaseMessage] = [HumanMessage(question)]
    for _ in range(max_turns):
        reply = bound.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            messages.append(by_name[call["name"]].invoke(call))
    return messages


def scripted_model() -> ToolCallingFakeChatModel:
    return ToolCallingFakeChatModel(
        seen=[],
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "perplexed_search", "args": {"query": QUERY, "max_results": 2}, "id": "call_1"}
                    ],
                ),
                AIMessage(content="A setback is the minimum distance to the property line [1]."),
            ]
        ),
    )


def test_tool_calling_loop(searxng_env: Any) -> None:
    model = scripted_model()

    messages = run_agent_loop(model, [PerplexedSearchTool(provider="searxng")], "What is a zoning setback?")

    _, call, result, final = messages
    assert isinstance(call, AIMessage) and call.tool_calls[0]["name"] == "perplexed_search"
    assert isinstance(result, ToolMessage) and result.tool_call_id == "call_1"
    assert result.content.startswith("[1] ") and "\n\n[2] " in result.content
    assert result.content.split("\n")[0] == f"[1] {result.artifact[0].metadata['title']} — {result.artifact[0].metadata['url']}"
    assert [d.metadata["id"] for d in result.artifact] == [1, 2]
    assert final.content.endswith("[1].")
    # the model's second turn saw the tool's numbered results
    assert model.seen[1][-1].content == result.content


async def test_tool_calling_loop_async_with_an_error_handled(searxng_no_json: Any) -> None:
    from perplexed.providers import SearXNG

    tool = PerplexedSearchTool(provider=SearXNG(base_url=searxng_no_json.base_url, name="nojson"), handle_tool_error=True)
    model = scripted_model()
    messages: list[BaseMessage] = [HumanMessage("What is a zoning setback?")]

    reply = await model.bind_tools([tool]).ainvoke(messages)
    result = await tool.ainvoke(reply.tool_calls[0])

    assert isinstance(result, ToolMessage) and result.status == "error"
    assert "nojson" in result.content and "403" in result.content
