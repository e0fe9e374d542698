"""PerplexedAnswerRetriever / PerplexedAnswerTool: the answer Document, every [n] resolving to a source
Document, Agent options, empty and failing searches, Agent API errors, keys, events, the Agent API cassette."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
import vcr
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.tools import ToolException
from langchain_perplexed import (
    ANSWER_EVENT,
    ATTEMPT_EVENT,
    NO_RESULTS,
    PerplexedAnswerRetriever,
    PerplexedAnswerTool,
)
from lc_support import (
    AGENT_COST,
    DEAD_URL,
    FAKE_KEY,
    QUERY,
    AsyncEventRecorder,
    EventRecorder,
    mock_searxng,
    searxng_results,
)
from perplexed import ConfigError, UpstreamError
from perplexed.agent import AgentClient, AsyncAgentClient, AuthenticationError
from perplexed.providers import SearXNG

ANSWER_KEYS = {"type", "citations", "cost", "attempts", "response_id", "model"}
CASSETTES = Path(__file__).resolve().parents[2] / "cassettes" / "synthesized" / "agent"


def markers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", text)]


def check_answer_documents(docs: list[Document], n_sources: int) -> None:
    answer, *sources = docs
    assert answer.metadata["type"] == "answer"
    assert ANSWER_KEYS <= set(answer.metadata)
    assert len(sources) == n_sources
    assert [d.metadata["id"] for d in sources] == list(range(1, n_sources + 1))
    assert all(d.metadata["type"] == "source" for d in sources)
    by_id = {d.metadata["id"]: d for d in sources}
    cited = markers(answer.page_content)
    assert cited, answer.page_content
    for n in cited:  # every marker resolves to a Document
        assert n in by_id
    for citation in answer.metadata["citations"]:
        assert set(citation) == {"n", "url", "title"}
        assert by_id[citation["n"]].metadata["url"] == citation["url"]
    json.dumps([d.metadata for d in docs])


# --- the retriever ---------------------------------------------------------------------------------------


def test_answer_first_then_sources(searxng_env: Any, agent_api: Any) -> None:
    docs = PerplexedAnswerRetriever(provider="searxng", k=3).invoke(QUERY)

    check_answer_documents(docs, 3)
    answer = docs[0]
    assert answer.page_content == f"Grounded answer about {QUERY} [1][2]."
    meta = answer.metadata
    assert [c["n"] for c in meta["citations"]] == [1, 2]
    assert meta["citations"][0] == {
        "n": 1,
        "url": docs[1].metadata["url"],
        "title": docs[1].metadata["title"],
    }
    assert meta["response_id"] == "resp_fake1" and meta["model"] == "openai/gpt-5.1"
    assert meta["cost"] == pytest.approx(AGENT_COST)  # SearXNG is free; the Agent API's usage.cost
    assert [(a["provider"], a["outcome"]) for a in meta["attempts"]] == [("searxng", "ok")]
    assert meta["answered_by"] == "searxng"
    # the model got exactly these sources, numbered as the Documents are
    sent = agent_api.bodies[-1]["input"]
    for doc in docs[1:]:
        assert f"[{doc.metadata['id']}] {doc.metadata['title']}\nURL: {doc.metadata['url']}" in sent


async def test_sync_and_async_give_the_same_answer(agent_api: Any) -> None:
    # a deterministic upstream: a real SearXNG merges its engines in arrival order and, on a loaded machine,
    # may drop a slow engine from one of the two searches (the real server is covered by the tests above)
    retriever = PerplexedAnswerRetriever(provider=mock_searxng(searxng_results(5)), k=3)

    sync_docs = await asyncio.to_thread(retriever.invoke, QUERY)
    async_docs = await retriever.ainvoke(QUERY)

    assert sync_docs[0].page_content == async_docs[0].page_content == f"Grounded answer about {QUERY} [1][2]."
    assert [d.page_content for d in sync_docs[1:]] == [d.page_content for d in async_docs[1:]]
    assert [d.metadata["url"] for d in sync_docs[1:]] == [d.metadata["url"] for d in async_docs[1:]]
    for docs in (sync_docs, async_docs):
        check_answer_documents(docs, 3)


def test_k_is_the_number_of_sources(agent_api: Any) -> None:
    retriever = PerplexedAnswerRetriever(provider=mock_searxng(searxng_results(8)), k=4)

    assert len(retriever.invoke("q")) == 5
    assert len(retriever.invoke("q", k=2)) == 3
    check_answer_documents(retriever.invoke("q", k=2), 2)


def test_agent_options_and_per_call_overrides_reach_the_request(agent_api: Any) -> None:
    retriever = PerplexedAnswerRetriever(
        provider=mock_searxng(searxng_results(3)),
        preset="low",
        instructions="Answer in one sentence, citing [n].",
        max_output_tokens=300,
        agent_options={"temperature": 0},
    )

    retriever.invoke("q")
    retriever.invoke("q", preset="medium", max_output_tokens=50)

    first, second = agent_api.bodies[-2:]
    assert first["preset"] == "low" and first["instructions"] == "Answer in one sentence, citing [n]."
    assert first["max_output_tokens"] == 300 and first["temperature"] == 0
    assert second["preset"] == "medium" and second["max_output_tokens"] == 50


def test_source_documents_keep_the_full_text(agent_api: Any) -> None:
    body = searxng_results(2)
    body["results"][0]["content"] = "long text " * 200
    retriever = PerplexedAnswerRetriever(provider=mock_searxng(body), max_source_chars=100)

    docs = retriever.invoke("q")

    assert docs[1].page_content == "long text " * 200  # the Document has it all
    assert len(agent_api.bodies[-1]["input"]) < 600  # the model got the shortened text


def test_flat_metadata(agent_api: Any) -> None:
    docs = PerplexedAnswerRetriever(provider=mock_searxng(searxng_results(2)), flat_metadata=True).invoke("q")

    for doc in docs:
        assert all(isinstance(v, str | int | float | bool) for v in doc.metadata.values()), doc.metadata
    assert json.loads(docs[0].metadata["citations"])[0]["n"] == 1
    assert docs[0].metadata["response_id"] == "resp_fake1"


def test_empty_search_returns_nothing_and_does_not_call_the_model(agent_api: Any) -> None:
    retriever = PerplexedAnswerRetriever(provider=mock_searxng({"results": []}))

    assert retriever.invoke("q") == []
    assert agent_api.bodies == []


def test_empty_search_with_on_empty_answer(agent_api: Any) -> None:
    retriever = PerplexedAnswerRetriever(provider=mock_searxng({"results": []}), on_empty="answer")

    docs = retriever.invoke("q")

    assert len(docs) == 1
    assert docs[0].metadata["type"] == "answer" and docs[0].metadata["citations"] == []
    assert "No sources were found" in docs[0].page_content


def test_failed_search_raises_and_does_not_call_the_model(agent_api: Any) -> None:
    retriever = PerplexedAnswerRetriever(provider=[SearXNG(base_url=DEAD_URL, name="dead"), mock_searxng(500, name="b")])

    with pytest.raises(UpstreamError) as info:
        retriever.invoke("q")

    assert [a.provider for a in info.value.attempts] == ["dead", "b"]
    assert agent_api.bodies == []


async def test_agent_api_error_is_typed_and_keeps_the_search_attempts(agent_api: Any) -> None:
    agent_api.fail_with(401)
    retriever = PerplexedAnswerRetriever(provider=mock_searxng(searxng_results(2)))

    with pytest.raises(AuthenticationError) as info:
        await retriever.ainvoke("q")

    assert [a.provider for a in info.value.attempts] == ["searxng"]


# --- keys and clients ------------------------------------------------------------------------------------


def test_api_key_field_is_secret_and_reaches_the_api(agent_api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_API_KEY")
    key = "pplx-field-key-abcdefgh12345"
    retriever = PerplexedAnswerRetriever(provider=mock_searxng(searxng_results(2)), api_key=key)

    retriever.invoke("q")

    assert agent_api.server.requests[-1].headers["authorization"] == f"Bearer {key}"
    for text in (repr(retriever), str(retriever), retriever.model_dump_json()):
        assert key not in text


def test_no_key_anywhere_is_a_config_error(agent_api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_API_KEY")
    tool = PerplexedAnswerTool(provider=mock_searxng(searxng_results(2)))

    with pytest.raises(ConfigError, match="PERPLEXITY_API_KEY"):  # a setup error, not a ToolException
        tool.invoke({"query": "q"})


@pytest.mark.parametrize("client_class", [AgentClient, AsyncAgentClient])
async def test_client_field(client_class: type, fake_agent_server: Any) -> None:
    key = "pplx-client-key-abcdefgh12345"
    client = client_class(api_key=key, base_url=fake_agent_server.url)
    retriever = PerplexedAnswerRetriever(provider=mock_searxng(searxng_results(2)), client=client)

    sync_docs = await asyncio.to_thread(retriever.invoke, "q")
    async_docs = await retriever.ainvoke("q")

    assert sync_docs[0].page_content == async_docs[0].page_content
    assert fake_agent_server.server.requests[-1].headers["authorization"] == f"Bearer {key}"
    assert key not in repr(retriever)


async def test_client_for_sync_and_async_client_for_async(fake_agent_server: Any) -> None:
    sync_key, async_key = "pplx-sync-key-abcdefgh12345", "pplx-async-key-abcdefgh12345"
    retriever = PerplexedAnswerRetriever(
        provider=mock_searxng(searxng_results(2)),
        client=AgentClient(api_key=sync_key, base_url=fake_agent_server.url),
        async_client=AsyncAgentClient(api_key=async_key, base_url=fake_agent_server.url),
    )

    await asyncio.to_thread(retriever.invoke, "q")
    await retriever.ainvoke("q")

    sync_request, async_request = fake_agent_server.server.requests[-2:]
    assert sync_request.headers["authorization"] == f"Bearer {sync_key}"
    assert async_request.headers["authorization"] == f"Bearer {async_key}"


# --- the Agent API cassette (perplexity-agent mode: the Agent API searches by itself) --------------------


def test_perplexity_agent_mode_from_the_cassette(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_BASE_URL", raising=False)
    replay = vcr.VCR(
        cassette_library_dir=str(CASSETTES),
        record_mode="none",
        match_on=["method", "scheme", "host", "port", "path"],
    )
    retriever = PerplexedAnswerRetriever(provider="perplexity-agent", api_key=FAKE_KEY, k=3)

    with replay.use_cassette("create_completed.yaml"):
        docs = retriever.invoke("What changed in the EU AI Act?")

    answer, *sources = docs
    assert answer.metadata["answered_by"] == "perplexity-agent"
    assert answer.metadata["response_id"] == "resp_abc" and answer.metadata["model"] == "openai/gpt-5.1"
    assert answer.metadata["cost"] == pytest.approx(0.0111)
    assert answer.metadata["attempts"] == []  # no chain ran
    assert [d.metadata["id"] for d in sources] == [1, 2, 3]
    assert [c["n"] for c in answer.metadata["citations"]] == [1, 2, 3]
    assert answer.metadata["unmatched"] == [4]  # "[4]" cites nothing the API returned
    assert sources[1].metadata["url"] == "https://artificialintelligenceact.eu/implementation-timeline/"
    assert sources[0].metadata["published"] == "2026-02-10"


# --- events ----------------------------------------------------------------------------------------------


def test_attempt_and_answer_events(agent_api: Any, recorder: EventRecorder) -> None:
    retriever = PerplexedAnswerRetriever(provider=[SearXNG(base_url=DEAD_URL, name="dead"), mock_searxng(searxng_results(2))])

    retriever.invoke("q", config={"callbacks": [recorder]})

    assert [(e["provider"], e["outcome"]) for e in recorder.named(ATTEMPT_EVENT)] == [("dead", "error"), ("searxng", "ok")]
    [agent_call] = recorder.named(ANSWER_EVENT)
    assert agent_call["response_id"] == "resp_fake1" and agent_call["model"] == "openai/gpt-5.1"
    assert agent_call["cost"] == pytest.approx(AGENT_COST) and agent_call["duration_ms"] >= 0
    assert [name for name, _, _ in recorder.events] == [ATTEMPT_EVENT, ATTEMPT_EVENT, ANSWER_EVENT]


async def test_attempt_and_answer_events_async(agent_api: Any) -> None:
    handler = AsyncEventRecorder()
    tool = PerplexedAnswerTool(provider=mock_searxng(searxng_results(2)))

    await tool.ainvoke({"query": "q"}, config={"callbacks": [handler]})

    assert [name for name, _, _ in handler.events] == [ATTEMPT_EVENT, ANSWER_EVENT]


# --- the tool --------------------------------------------------------------------------------------------


def call(args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": "call_9", "name": "perplexed_answer", "args": args}


def test_tool_content_is_the_answer_then_the_numbered_sources(searxng_env: Any, agent_api: Any) -> None:
    tool = PerplexedAnswerTool(provider="searxng", max_results=3)

    message = tool.invoke(call({"query": QUERY}))

    assert isinstance(message, ToolMessage) and message.name == "perplexed_answer"
    text, sources = message.content.split("\n\nSources:\n")
    assert text == f"Grounded answer about {QUERY} [1][2]."
    docs = message.artifact
    assert [d.metadata["id"] for d in docs] == [1, 2, 3]
    assert sources.splitlines() == [f"[{d.metadata['id']}] {d.metadata['title']} — {d.metadata['url']}" for d in docs]


async def test_tool_async(agent_api: Any) -> None:
    tool = PerplexedAnswerTool(provider=mock_searxng(searxng_results(4)), max_results=2)

    message = await tool.ainvoke(call({"query": "q", "max_results": 3}))

    assert len(message.artifact) == 3
    assert message.content.startswith("Grounded answer about q [1][2].\n\nSources:\n[1] Title 1 — ")


def test_tool_empty_search_is_no_results(agent_api: Any) -> None:
    message = PerplexedAnswerTool(provider=mock_searxng({"results": []})).invoke(call({"query": "q"}))

    assert message.content == NO_RESULTS and message.artifact == []
    assert agent_api.bodies == []


def test_tool_failed_search_names_every_provider(agent_api: Any) -> None:
    tool = PerplexedAnswerTool(provider=[SearXNG(base_url=DEAD_URL, name="dead"), mock_searxng(500, name="broken")])

    with pytest.raises(ToolException) as info:
        tool.invoke(call({"query": "q"}))

    text = str(info.value)
    assert "dead" in text and "connection" in text and "broken" in text and "HTTP 500" in text


def test_tool_agent_api_error_is_a_tool_exception(agent_api: Any) -> None:
    agent_api.fail_with(401)
    tool = PerplexedAnswerTool(provider=mock_searxng(searxng_results(2)), handle_tool_error=True)

    message = tool.invoke(call({"query": "q"}))

    assert message.status == "error"
    assert "AuthenticationError" in message.content and "fake failure 401" in message.content
    assert FAKE_KEY not in message.content
