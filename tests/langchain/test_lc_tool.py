"""PerplexedSearchTool: what the model sees, the artifact, errors as ToolException, the domain policy."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_perplexed import NO_RESULTS, PerplexedSearchTool
from lc_support import DEAD_URL, QUERY, mock_searxng, searxng_results
from perplexed import Hit, UpstreamError
from perplexed.providers import FunctionProvider, SearXNG


def call(args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": "perplexed_search", "args": args}


def test_name_description_schema() -> None:
    tool = PerplexedSearchTool()

    assert tool.name == "perplexed_search"
    assert "[n]" in tool.description and "search" in tool.description.lower()
    assert tool.response_format == "content_and_artifact"
    schema = convert_to_openai_tool(tool)["function"]
    assert schema["name"] == "perplexed_search"
    assert set(schema["parameters"]["properties"]) == {
        "query",
        "max_results",
        "include_domains",
        "exclude_domains",
        "recency",
    }
    assert schema["parameters"]["required"] == ["query"]
    for prop in schema["parameters"]["properties"].values():
        assert prop.get("description")


def test_content_is_a_numbered_list_and_the_artifact_is_documents(searxng_env: Any) -> None:
    tool = PerplexedSearchTool(provider="searxng", max_results=3)

    message = tool.invoke(call({"query": QUERY}))

    assert isinstance(message, ToolMessage) and message.tool_call_id == "call_1"
    docs = message.artifact
    assert len(docs) == 3
    blocks = message.content.split("\n\n")
    assert len(blocks) == 3
    for n, (block, doc) in enumerate(zip(blocks, docs, strict=True), start=1):
        head, snippet = block.split("\n")
        assert head == f"[{n}] {doc.metadata['title']} — {doc.metadata['url']}"
        assert snippet == doc.page_content
        assert doc.metadata["id"] == n


async def test_async_gives_the_same_content() -> None:
    # a deterministic upstream: a real SearXNG merges its engines in arrival order and, on a loaded machine,
    # may drop a slow engine from one of the two searches (the real server is covered by the tests above)
    tool = PerplexedSearchTool(provider=mock_searxng(searxng_results(6)), max_results=4)

    sync_message = tool.invoke(call({"query": QUERY}))
    async_message = await tool.ainvoke(call({"query": QUERY}))

    assert sync_message.content == async_message.content
    assert [d.metadata["url"] for d in sync_message.artifact] == [d.metadata["url"] for d in async_message.artifact]
    for message in (sync_message, async_message):
        assert [d.metadata["id"] for d in message.artifact] == [1, 2, 3, 4]


def test_plain_args_return_the_content() -> None:
    tool = PerplexedSearchTool(provider=mock_searxng(searxng_results(2)))

    content = tool.invoke({"query": "q"})

    assert content.startswith("[1] Title 1 — https://site.example/page1\nSnippet number 1.")


def test_long_snippets_are_shortened_for_the_model() -> None:
    def provider(query: str, options: Any) -> list[Hit]:
        return [Hit(url="https://long.example/", title="Long", content="word " * 1000)]

    message = PerplexedSearchTool(provider=FunctionProvider(provider)).invoke(call({"query": "q"}))

    assert len(message.content) < 500
    assert message.content.endswith("…")
    assert len(message.artifact[0].page_content) == len("word " * 1000)  # the artifact keeps it all


def test_empty_answer_is_no_results_not_an_error() -> None:
    tool = PerplexedSearchTool(provider=mock_searxng({"results": []}))

    message = tool.invoke(call({"query": "nothing"}))

    assert message.content == NO_RESULTS == "No results."
    assert message.artifact == []
    assert message.status == "success"


def test_max_results_default_and_from_the_model() -> None:
    tool = PerplexedSearchTool(provider=mock_searxng(searxng_results(10)), max_results=4)

    assert len(tool.invoke(call({"query": "q"})).artifact) == 4
    assert len(tool.invoke(call({"query": "q", "max_results": 2})).artifact) == 2


def test_model_arguments_reach_the_provider() -> None:
    requests: list[httpx.Request] = []
    tool = PerplexedSearchTool(provider=mock_searxng(searxng_results(5), requests=requests))

    message = tool.invoke(
        call({"query": "q", "recency": "week", "include_domains": ["site.example/page3"], "exclude_domains": []})
    )

    assert requests[-1].url.params["time_range"] == "week"
    assert [d.metadata["url"] for d in message.artifact] == ["https://site.example/page3"]


def test_the_tools_domains_are_a_policy_the_model_cannot_widen() -> None:
    tool = PerplexedSearchTool(
        provider=mock_searxng(searxng_results(5)),
        include_domains=["site.example"],
        exclude_domains=["site.example/page1"],
    )

    message = tool.invoke(
        call({"query": "q", "include_domains": ["evil.example"], "exclude_domains": ["site.example/page2"]})
    )

    urls = [d.metadata["url"] for d in message.artifact]
    assert urls == ["https://site.example/page3", "https://site.example/page4", "https://site.example/page5"]


def test_model_may_choose_domains_when_the_tool_has_none() -> None:
    tool = PerplexedSearchTool(provider=mock_searxng(searxng_results(5)))

    message = tool.invoke(call({"query": "q", "include_domains": ["site.example/page4"]}))

    assert [d.metadata["url"] for d in message.artifact] == ["https://site.example/page4"]


# --- errors ----------------------------------------------------------------------------------------------


def failing_tool(**kwargs: Any) -> PerplexedSearchTool:
    return PerplexedSearchTool(
        provider=[SearXNG(base_url=DEAD_URL, name="dead-searxng"), mock_searxng(500, name="broken")], **kwargs
    )


def check_error_text(text: str) -> None:
    assert "dead-searxng" in text and "connection" in text
    assert "broken" in text and "HTTP 500" in text


def test_all_providers_failed_raises_tool_exception_naming_every_provider() -> None:
    with pytest.raises(ToolException) as info:
        failing_tool().invoke(call({"query": "q"}))

    check_error_text(str(info.value))
    cause = info.value.__cause__
    assert isinstance(cause, UpstreamError) and len(cause.attempts) == 2  # the typed error, with every attempt


async def test_all_providers_failed_raises_tool_exception_async() -> None:
    with pytest.raises(ToolException) as info:
        await failing_tool().ainvoke(call({"query": "q"}))

    check_error_text(str(info.value))


def test_handle_tool_error_turns_the_failure_into_an_error_message() -> None:
    message = failing_tool(handle_tool_error=True).invoke(call({"query": "q"}))

    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    check_error_text(message.content)


async def test_handle_tool_error_async() -> None:
    message = await failing_tool(handle_tool_error=True).ainvoke(call({"query": "q"}))

    assert message.status == "error"
    check_error_text(message.content)


def test_invalid_model_arguments_are_a_tool_exception() -> None:
    tool = PerplexedSearchTool(provider=mock_searxng(searxng_results(2)))

    with pytest.raises(ToolException, match="invalid input: include_domains"):
        tool.invoke(call({"query": "q", "include_domains": ["not a domain"]}))


def test_a_dead_only_provider_is_an_error_not_an_empty_result(searxng_no_json: Any) -> None:
    tool = PerplexedSearchTool(provider=SearXNG(base_url=searxng_no_json.base_url, name="nojson"))

    with pytest.raises(ToolException, match=r"nojson.*403"):
        tool.invoke(call({"query": QUERY}))
