"""The MCP server's tools through the SDK's own client, connected in-process (the same server object
``perplexed mcp`` runs): schemas, structured results, lenient arguments, errors a model can act on,
fallback, cache, truncation, progress and cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import jsonschema
import perplexed
import pytest
from mcp import Client
from perplexed import Hit
from perplexed.mcp_server import create_server
from test_answer_fakes import FakeAgentAPI
from testkit.hits import searxng_json
from testkit.loopback import Hang, Json, LoopbackServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SECRET = "tvly-SECRETKEY0123456789"


def hits_provider(n: int = 3, snippet: str = "A setback is the minimum distance {i}.") -> Any:
    def search(query: str, options: Any) -> list[Hit]:
        return [Hit(title=f"Page {i}", url=f"https://example.com/{i}", snippet=snippet.format(i=i))
                for i in range(1, n + 1)]

    return search


def failing(query: str, options: Any) -> list[Hit]:
    raise RuntimeError("upstream exploded")


def nothing(query: str, options: Any) -> list[Hit]:
    return []


async def tools_of(server: Any) -> dict[str, Any]:
    async with Client(server) as client:
        listed = await client.list_tools()
    return {tool.name: tool for tool in listed.tools}


async def call(server: Any, name: str, args: dict[str, Any], **kw: Any) -> Any:
    async with Client(server) as client:
        await client.list_tools()
        return await client.call_tool(name, args, **kw)


def check_structured(tool: Any, result: Any) -> None:
    assert not result.is_error, result.content[0].text
    assert tool.output_schema is not None
    jsonschema.validate(result.structured_content, tool.output_schema)


async def test_tools_listed_with_schemas_and_annotations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)
    tools = await tools_of(create_server(hits_provider()))
    assert "web_search" in tools
    # web_fetch is the fetch chain: listed exactly when this version has perplexed.afetch (never a stub)
    assert ("web_fetch" in tools) == callable(getattr(perplexed, "afetch", None))
    search = tools["web_search"]
    props = search.input_schema["properties"]
    assert set(props) == {"query", "max_results", "include_domains", "exclude_domains", "recency"}
    assert search.input_schema["required"] == ["query"]
    assert props["max_results"]["minimum"] == 1 and props["max_results"]["maximum"] == 20
    assert props["recency"]["enum"] == ["day", "week", "month", "year"]
    assert search.annotations.read_only_hint is True and search.annotations.open_world_hint is True
    assert "cost" in search.description and "max_results" in search.description
    assert set(search.output_schema["properties"]) >= {"hits", "provider", "cost", "cached", "attempts",
                                                       "truncated", "next_index"}


async def test_answer_absent_without_a_key_and_the_instructions_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)
    server = create_server(hits_provider())
    tools = await tools_of(server)
    assert "answer" not in tools
    assert "answer tool is not available" in server.instructions and "PERPLEXITY_API_KEY" in server.instructions
    assert "pass client=" not in server.instructions  # words for whoever runs the server, not Python hints


async def test_web_search_text_and_structured_content() -> None:
    server = create_server(hits_provider())
    tool = (await tools_of(server))["web_search"]
    result = await call(server, "web_search", {"query": "front yard setback", "max_results": 2})
    check_structured(tool, result)
    data = result.structured_content
    assert [h["id"] for h in data["hits"]] == [1, 2]
    assert data["hits"][0] == {"id": 1, "title": "Page 1", "url": "https://example.com/1",
                               "snippet": "A setback is the minimum distance 1.", "provider": "search"}
    assert data["provider"] == "search" and data["cost"] == 0 and data["cached"] is False
    assert data["attempts"][0]["outcome"] == "ok" and data["attempts"][0]["cached"] is False
    assert data["truncated"] is False and data["next_index"] is None
    text = result.content[0].text
    assert "[1] Page 1 — https://example.com/1" in text and "[2] Page 2" in text and "[3]" not in text


async def test_arguments_sent_as_strings_are_accepted() -> None:
    seen: list[Any] = []

    def provider(query: str, options: Any) -> list[Hit]:
        seen.append(options)
        return [Hit(title="A", url="https://example.com/a", snippet="s")]

    server = create_server(provider)
    result = await call(server, "web_search", {"query": "q", "max_results": "4",
                                               "include_domains": '["example.com", "example.org"]',
                                               "exclude_domains": "spam.com", "recency": "Week"})
    assert not result.is_error, result.content[0].text
    options = seen[-1]
    assert options.max_results == 4
    assert options.include_domains == ["example.com", "example.org"]
    assert options.exclude_domains == ["spam.com"]
    assert options.recency == "week"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"query": "q", "max_results": 50}, "max_results must be a whole number from 1 to 20; got 50"),
        ({"query": "q", "max_results": 0}, "from 1 to 20"),
        ({"query": "q", "max_results": "lots"}, "from 1 to 20"),
        ({"query": "q", "recency": "decade"}, "'day', 'week', 'month', 'year'"),
        ({"query": "q", "include_domains": {"a": 1}}, "list of domains"),
        ({"query": ""}, "query must be a non-empty string"),
        ({}, "query must be a non-empty string"),
        ({"query": "q", "include_domains": ["not a domain!"]}, "include_domains"),
    ],
)
async def test_bad_arguments_are_error_results_a_model_can_act_on(args: dict[str, Any], words: str) -> None:
    result = await call(create_server(hits_provider()), "web_search", args)
    assert result.is_error
    text = result.content[0].text
    assert words in text
    assert "Traceback" not in text and "pydantic" not in text


async def test_no_results_is_not_an_error() -> None:
    server = create_server(nothing)
    tool = (await tools_of(server))["web_search"]
    result = await call(server, "web_search", {"query": "nothing matches"})
    check_structured(tool, result)
    assert result.structured_content["hits"] == []
    assert "No results" in result.content[0].text


async def test_fallback_is_visible_in_attempts() -> None:
    server = create_server([failing, hits_provider(1)])
    result = await call(server, "web_search", {"query": "q"})
    assert not result.is_error
    attempts = result.structured_content["attempts"]
    assert [a["outcome"] for a in attempts] == ["error", "ok"]
    assert attempts[0]["provider"] == "failing" and attempts[0]["reason"]
    assert "failing error" in result.content[0].text


async def test_every_provider_failing_is_an_error_without_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", SECRET)

    def leaky(query: str, options: Any) -> list[Hit]:
        raise RuntimeError(f"bad key {SECRET}")

    result = await call(create_server([leaky, "tavily"], provider_timeout_ms=2000), "web_search",
                        {"query": "q"})
    assert result.is_error
    text = result.content[0].text
    assert "Every provider in the chain failed" in text and "leaky" in text and "tavily" in text
    assert SECRET not in text and "Traceback" not in text


async def test_a_cached_answer_says_so() -> None:
    calls: list[str] = []

    def provider(query: str, options: Any) -> list[Hit]:
        calls.append(query)
        return [Hit(title="A", url="https://example.com/a", snippet="s")]

    server = create_server(provider, cache_ttl_s=60)
    first = await call(server, "web_search", {"query": "cache me"})
    second = await call(server, "web_search", {"query": "cache me"})
    assert first.structured_content["cached"] is False
    assert second.structured_content["cached"] is True
    assert second.structured_content["attempts"][0]["cached"] is True
    assert calls == ["cache me"]


async def test_text_is_cut_at_max_chars_with_truncated_and_next_index() -> None:
    server = create_server(hits_provider(10, snippet="word " * 150 + "{i}"), max_chars=500)
    result = await call(server, "web_search", {"query": "q", "max_results": 10})
    assert not result.is_error
    assert len(result.content[0].text) == 500
    assert result.structured_content["truncated"] is True
    assert result.structured_content["next_index"] == 500
    snippet = result.structured_content["hits"][0]["snippet"]
    assert len(snippet) <= 1000  # structured hits are bounded too


async def test_bad_server_options_fail_before_serving() -> None:
    with pytest.raises(perplexed.InvalidRequest):
        create_server(hits_provider(), max_results=0)
    with pytest.raises(perplexed.InvalidRequest):
        create_server(hits_provider(), max_chars=5)


async def test_answer_tool_streams_progress_and_returns_cited_sources() -> None:
    api = FakeAgentAPI()
    server = create_server(hits_provider(3), answer_options={"async_client": api.async_client()})
    tools = await tools_of(server)
    assert "answer" in tools
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    result = await call(server, "answer", {"question": "What is a setback?"}, progress_callback=on_progress)
    check_structured(tools["answer"], result)
    data = result.structured_content
    assert "[1]" in data["text"]
    assert [s["id"] for s in data["sources"]] == [1, 2, 3]
    assert data["cost"] > 0 and data["attempts"][0]["outcome"] == "ok"
    assert "[1] Page 1 — https://example.com/1" in result.content[0].text
    assert len(progress) >= 2 and progress[-1][1] == "writing the answer"
    assert [p for p, _ in progress] == sorted(p for p, _ in progress)


async def test_cancelling_a_call_cancels_the_provider_call(loopback: LoopbackServer) -> None:
    loopback.route("/search", Hang())
    server = create_server({"name": "searxng", "base_url": loopback.url}, provider_timeout_ms=60_000,
                           deadline_ms=60_000)
    async with Client(server) as client:
        await client.list_tools()
        with anyio.move_on_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "web_search", {"query": "hang"})
                assert await asyncio.to_thread(loopback.wait_requests, 1, 20)
                group.cancel_scope.cancel()
    # the server closed the provider's connection: the call in flight was cancelled, no socket left
    assert await asyncio.to_thread(loopback.wait_disconnect, 20)


async def test_searxng_shaped_upstream(loopback: LoopbackServer) -> None:
    loopback.route("/search", Json(searxng_json(3)))
    server = create_server({"name": "searxng", "base_url": loopback.url})
    tool = (await tools_of(server))["web_search"]
    result = await call(server, "web_search", {"query": "zoning", "max_results": 3})
    check_structured(tool, result)
    assert [h["url"] for h in result.structured_content["hits"]] == [
        f"https://example.com/page{i}" for i in (1, 2, 3)
    ]
    assert result.structured_content["provider"] == "searxng"


ARTICLE = (
    "<html><head><title>Zoning setbacks explained</title></head><body><article><h1>Zoning setbacks explained</h1>"
    + "".join(f"<p>Paragraph {i}: a setback is the minimum distance between a building and the property line, "
              f"and codes set separate minimums for the front, side and rear of a lot.</p>" for i in range(30))
    + "</article></body></html>"
)


@pytest.mark.skipif(not callable(getattr(perplexed, "afetch", None)), reason="this version has no fetch chain")
async def test_web_fetch_pages_through_a_long_page(loopback: LoopbackServer) -> None:
    from testkit.loopback import Html

    loopback.route("/article", Html(ARTICLE))
    server = create_server(hits_provider(), fetch_options={"allow_private": True})
    tool = (await tools_of(server))["web_fetch"]
    assert set(tool.input_schema["properties"]) == {"url", "max_chars", "start_index"}
    assert tool.annotations.read_only_hint is True
    first = await call(server, "web_fetch", {"url": loopback.url + "/article", "max_chars": 500})
    check_structured(tool, first)
    data = first.structured_content
    assert data["provider"] == "http" and data["status"] == 200 and data["title"] == "Zoning setbacks explained"
    assert len(data["content"]) == 500 and data["truncated"] is True and data["next_index"] == 500
    assert data["total_chars"] > 1000
    assert "start_index=500" in first.content[0].text  # the model is told how to read on
    second = await call(server, "web_fetch", {"url": loopback.url + "/article", "max_chars": "500",
                                              "start_index": data["next_index"]})
    check_structured(tool, second)
    assert second.structured_content["content"] != data["content"]
    assert second.structured_content["next_index"] in (None, 1000)


@pytest.mark.skipif(not callable(getattr(perplexed, "afetch", None)), reason="this version has no fetch chain")
@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://169.254.169.254/latest/meta-data/", "private"),
        ("http://127.0.0.1:9/", "private"),
        ("ftp://example.com/file", "http"),
        ("", "url must be a non-empty string"),
    ],
)
async def test_web_fetch_refusals_are_error_results(url: str, words: str) -> None:
    result = await call(create_server(hits_provider()), "web_fetch", {"url": url})
    assert result.is_error
    assert words in result.content[0].text
    assert "Traceback" not in result.content[0].text


def test_allowed_hosts_name_the_bound_host_and_port() -> None:
    from perplexed.mcp_server import _allowed_hosts  # private: the host allow-list has no public reader

    assert _allowed_hosts("127.0.0.1", 8000) == {"127.0.0.1:8000", "localhost:8000", "[::1]:8000"}
    assert _allowed_hosts("::1", 9000) == {"[::1]:9000", "localhost:9000", "127.0.0.1:9000"}
    assert _allowed_hosts("10.1.2.3", 80) == {"10.1.2.3:80", "10.1.2.3"}
