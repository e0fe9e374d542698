"""LlamaIndex over perplexed.fetch: PerplexedReader (load_data / aload_data) and perplexed_fetch in
PerplexedToolSpec."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from llama_index_perplexed import PerplexedReader, PerplexedToolSpec
from perplexed import InvalidRequest, UpstreamError, reset
from testkit.loopback import Html, LoopbackServer, Status

sys.path.insert(0, str(Path(__file__).parents[1] / "fetch"))
from pages import ARTICLE_TITLE, article_html

LOOP = ["127.0.0.0/8"]


@pytest.fixture
def site(loopback: LoopbackServer) -> LoopbackServer:
    reset()  # forgets the robots.txt rules too
    loopback.route("/robots.txt", Status(404, b""))
    loopback.route("/a", Html(article_html()))
    loopback.route("/b", Html(article_html(title="Second page")))
    loopback.route("/gone", Status(404, b"", content_type="text/html"))
    return loopback


def test_reader_loads_documents_in_order(site: LoopbackServer) -> None:
    reader = PerplexedReader(allow_private=LOOP, max_chars=1000)
    docs = reader.load_data([site.url_for("/a"), site.url_for("/b")])
    assert [d.metadata["title"] for d in docs] == [ARTICLE_TITLE, "Second page"]
    assert docs[0].metadata["source"] == site.url_for("/a") and len(docs[0].text) == 1000
    assert docs[0].metadata["provider"] == "http" and docs[0].metadata["cost"] == 0.0
    assert "attempts" not in docs[0].get_content(metadata_mode="llm")  # type: ignore[arg-type]


async def test_reader_async_and_failures(site: LoopbackServer) -> None:
    reader = PerplexedReader(allow_private=LOOP)
    with pytest.raises(UpstreamError):
        await reader.aload_data([site.url_for("/a"), site.url_for("/gone")])
    docs = await reader.aload_data([site.url_for("/gone"), site.url_for("/b")], continue_on_failure=True)
    assert [d.metadata["title"] for d in docs] == ["Second page"]


def test_reader_validates_options_at_construction() -> None:
    with pytest.raises(InvalidRequest) as info:
        PerplexedReader(max_char=3)
    assert "max_chars" in str(info.value)


@pytest.mark.parametrize(
    ("call", "named", "suggested"),
    [
        ({"url": "https://example.com/"}, "url", "urls"),
        ({"urls": "https://example.com/", "continue_on_falure": True}, "continue_on_falure", "continue_on_failure"),
        ({"urls": "https://example.com/", "max_char": 10}, "max_char", "max_chars"),
        ({}, "urls", None),
    ],
    ids=["url", "continue_on_falure", "max_char", "no urls"],
)
async def test_reader_calls_name_a_misspelt_argument_before_fetching(
    site: LoopbackServer, call: dict[str, Any], named: str, suggested: str | None
) -> None:
    reader = PerplexedReader(allow_private=LOOP)
    for load in (reader.load_data, reader.aload_data):
        with pytest.raises(InvalidRequest) as info:
            out = load(**call)
            if hasattr(out, "__await__"):
                await out
        assert info.value.param == named, info.value
        if suggested:
            assert f"did you mean {suggested!r}" in str(info.value)
    assert site.requests == []


async def test_reader_call_options_override_the_readers(site: LoopbackServer) -> None:
    reader = PerplexedReader(allow_private=LOOP, max_chars=1000)
    docs = reader.load_data(site.url_for("/a"), max_chars=100)
    assert len(docs[0].text) == 100
    docs = await reader.aload_data(site.url_for("/a"))
    assert len(docs[0].text) == 1000


async def test_tool_spec_has_perplexed_fetch(site: LoopbackServer) -> None:
    spec = PerplexedToolSpec(provider=lambda q, o: [], allow_private=LOOP, fetch_options={"max_chars": 300})
    tools = {t.metadata.name: t for t in spec.to_tool_list()}
    assert set(tools) == {"perplexed_search", "perplexed_answer", "perplexed_fetch"}
    schema: dict[str, Any] = tools["perplexed_fetch"].metadata.get_parameters_dict()
    assert set(schema["properties"]) == {"url", "max_chars", "start_index"} and schema["required"] == ["url"]
    text = spec.perplexed_fetch(site.url_for("/a"))
    assert text.startswith(ARTICLE_TITLE) and "start_index=300" in text
    more = await spec.aperplexed_fetch(site.url_for("/a"), start_index=300)
    assert "Paragraph" in more
    with pytest.raises(InvalidRequest):
        PerplexedToolSpec().perplexed_fetch("http://169.254.169.254/")


def test_documents_and_nodes_carry_the_page_type(site: LoopbackServer) -> None:
    """issue 36: a fetched page's type is in its Document's metadata, and in a hit's node when its page was
    fetched."""
    from llama_index_perplexed import PerplexedRetriever
    from perplexed import Hit, Page
    from perplexed.providers import FunctionProvider

    docs = PerplexedReader(allow_private=LOOP).load_data([site.url_for("/a")])
    assert docs[0].metadata["page_type"] == "article"
    page = Page(url="https://shop.example/p/1", final_url="https://shop.example/p/1", page_type="product")
    hits = [Hit(id=1, url="https://shop.example/p/1", page=page), Hit(id=2, url="https://shop.example/p/2")]
    fetched, plain = PerplexedRetriever(provider=FunctionProvider(lambda query, options: hits, name="exa")).retrieve("q")
    assert fetched.node.metadata["page_type"] == "product"
    assert "page_type" not in plain.node.metadata
