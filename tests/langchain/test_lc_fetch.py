"""LangChain over perplexed.fetch: PerplexedLoader (lazy_load / alazy_load), PerplexedFetchTool (perplexed_fetch,
the standard tool suites against a loopback page), PerplexedRetriever(fetch_content=...)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.tools import BaseTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_perplexed import PerplexedFetchTool, PerplexedLoader, PerplexedRetriever
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests
from perplexed import Hit, InvalidRequest, UpstreamError, reset
from perplexed.providers import FunctionProvider
from testkit.loopback import Html, LoopbackServer, Status

sys.path.insert(0, str(Path(__file__).parents[1] / "fetch"))
from pages import ARTICLE_TITLE, article_html

LOOP = ["127.0.0.0/8"]
SERVER = LoopbackServer()  # one page server for the module (the standard suites build tools from properties)
SERVER.route("/robots.txt", Status(404, b""))
SERVER.route("/a", Html(article_html()))
SERVER.route("/b", Html(article_html(title="Second page")))
SERVER.route("/gone", Status(404, b"", content_type="text/html"))


@pytest.fixture(autouse=True)
def _fresh_robots() -> Any:
    reset()  # forgets the robots.txt rules too
    yield


class TestFetchToolUnit(ToolsUnitTests):
    @property
    def tool_constructor(self) -> type[BaseTool]:
        return PerplexedFetchTool

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {"provider": "http", "max_chars": 2000, "allow_private": LOOP}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"url": SERVER.url_for("/a"), "max_chars": 500, "start_index": 0}


class TestFetchToolIntegration(ToolsIntegrationTests):
    @property
    def tool_constructor(self) -> type[BaseTool]:
        return PerplexedFetchTool

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {"allow_private": LOOP}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"url": SERVER.url_for("/a"), "max_chars": 500}


def test_tool_schema_is_url_max_chars_start_index() -> None:
    tool = PerplexedFetchTool()
    schema = convert_to_openai_tool(tool)["function"]
    assert schema["name"] == "perplexed_fetch"
    assert set(schema["parameters"]["properties"]) == {"url", "max_chars", "start_index"}
    assert schema["parameters"]["required"] == ["url"]


async def test_tool_pages_through_a_long_page() -> None:
    tool = PerplexedFetchTool(allow_private=LOOP, max_chars=300)
    message = tool.invoke({"type": "tool_call", "id": "1", "name": "perplexed_fetch",
                           "args": {"url": SERVER.url_for("/a")}})
    assert ARTICLE_TITLE in message.content and "start_index=300" in message.content
    assert message.artifact[0].metadata["next_index"] == 300
    second = await tool.ainvoke({"url": SERVER.url_for("/a"), "start_index": 300})
    assert "start_index=600" in second or "Content cut" not in second


def test_tool_failures_are_tool_exceptions_for_the_model() -> None:
    tool = PerplexedFetchTool(allow_private=LOOP)
    with pytest.raises(ToolException) as info:
        tool.invoke({"url": SERVER.url_for("/gone")})
    assert "not_found" in str(info.value) and isinstance(info.value.__cause__, UpstreamError)
    with pytest.raises(ToolException) as info:
        PerplexedFetchTool().invoke({"url": "http://169.254.169.254/latest/meta-data/"})
    assert "Refused" in str(info.value)
    with pytest.raises(ToolException) as info:
        tool.invoke({"url": SERVER.url_for("/a"), "max_chars": 5})
    assert "max_chars" in str(info.value)
    handled = PerplexedFetchTool(handle_tool_error=True).invoke({"url": "http://10.0.0.1/"})
    assert "Refused" in handled
    with pytest.raises(ToolException, match="did you mean 'max_chars'"):  # not dropped without a word
        tool.invoke({"url": SERVER.url_for("/a"), "max_char": 500})


def test_loader_yields_documents_in_order_with_metadata() -> None:
    loader = PerplexedLoader([SERVER.url_for("/a"), SERVER.url_for("/b")], allow_private=LOOP, max_chars=1000)
    docs = loader.load()
    assert [d.metadata["title"] for d in docs] == [ARTICLE_TITLE, "Second page"]
    meta = docs[0].metadata
    assert meta["source"] == SERVER.url_for("/a") and meta["final_url"] == SERVER.url_for("/a")
    assert meta["provider"] == "http" and meta["cost"] == 0.0 and meta["attempts"][0]["outcome"] == "ok"
    assert isinstance(docs[0], Document) and len(docs[0].page_content) == 1000


async def test_loader_async_and_failures() -> None:
    loader = PerplexedLoader([SERVER.url_for("/a"), SERVER.url_for("/gone")], allow_private=LOOP)
    docs = []
    with pytest.raises(UpstreamError):
        async for doc in loader.alazy_load():
            docs.append(doc)
    assert len(docs) == 1
    skipping = PerplexedLoader([SERVER.url_for("/gone"), SERVER.url_for("/b")], allow_private=LOOP,
                               continue_on_failure=True)
    assert [d.metadata["title"] for d in await skipping.aload()] == ["Second page"]


def test_loader_checks_its_arguments_at_construction() -> None:
    with pytest.raises(InvalidRequest):
        PerplexedLoader(["http://127.0.0.1/"])
    with pytest.raises(InvalidRequest) as info:
        PerplexedLoader([SERVER.url_for("/a")], max_char=10)
    assert "max_chars" in str(info.value)


def test_retriever_fetch_content_puts_page_content_in_the_documents() -> None:
    def search(query: str, options: Any) -> list[Hit]:
        return [Hit(url=SERVER.url_for("/a"), title="hit", snippet="a snippet")]

    retriever = PerplexedRetriever(provider=FunctionProvider(search, name="web"), fetch_content=1,
                                   allow_private=LOOP)
    docs = retriever.invoke("setbacks")
    assert "front yard setback" in docs[0].page_content
    plain = PerplexedRetriever(provider=FunctionProvider(search, name="web")).invoke("setbacks")
    assert plain[0].page_content == "a snippet"


def test_documents_carry_the_page_type() -> None:
    """issue 36: a fetched page's type is in its Document's metadata, and in a search hit's when its page was
    fetched."""
    from perplexed import Page

    docs = PerplexedLoader([SERVER.url_for("/a")], allow_private=LOOP).load()
    assert docs[0].metadata["page_type"] == "article" and 0 <= docs[0].metadata["page_type_confidence"] <= 1
    page = Page(url="https://forum.example/t/1", final_url="https://forum.example/t/1", page_type="forum",
                page_type_confidence=0.9)
    hits = [Hit(id=1, title="A thread", url="https://forum.example/t/1", page=page),
            Hit(id=2, url="https://a.example")]
    fetched, plain = PerplexedRetriever(provider=FunctionProvider(lambda query, options: hits, name="exa")).invoke("q")
    assert fetched.metadata["page_type"] == "forum"
    assert "page_type" not in plain.metadata
