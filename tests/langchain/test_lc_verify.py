"""LangChain: verify=True on the answer components (the cited-answer Document's metadata["verification"]), and
the VerifyCitations runnable over the Documents a perplexed retriever returned."""

from __future__ import annotations

import json

import perplexed
import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_perplexed import (
    PerplexedAnswerRetriever,
    PerplexedAnswerTool,
    PerplexedRetriever,
    VerifyCitations,
)
from perplexed import InvalidRequest, Verification
from perplexed.providers import FunctionProvider
from test_answer_fakes import ANSWER_TEXT, FakeAgentAPI, ok, provider, response_json
from testkit.hits import ZONING_HITS

QUERY = "What are typical zoning setbacks?"
HITS = [h.model_copy(update={"id": i}) for i, h in enumerate(ZONING_HITS, start=1)]


def retrieved() -> list[Document]:
    """The Documents a PerplexedRetriever returns when its provider answers with HITS."""
    docs = PerplexedRetriever(provider=FunctionProvider(lambda query, options: HITS, name="web")).invoke("q")
    assert [d.metadata["url"] for d in docs] == [h.url for h in HITS]
    return docs


def test_answer_retriever_verify_puts_the_json_in_the_answer_metadata() -> None:
    api = FakeAgentAPI()
    retriever = PerplexedAnswerRetriever(provider=provider(), client=api.client(), verify=True)
    answer, *sources = retriever.invoke(QUERY)
    data = answer.metadata["verification"]
    assert isinstance(data, dict) and json.loads(json.dumps(data)) == data
    assert data == perplexed.verify(ANSWER_TEXT, HITS).model_dump(mode="json")
    assert [s["label"] for s in data["sentences"]] == ["supported", "supported"]
    assert all("verification" not in d.metadata for d in sources)


async def test_verify_is_also_a_call_time_option() -> None:
    api = FakeAgentAPI()
    retriever = PerplexedAnswerRetriever(provider=provider(), client=api.client())
    assert "verification" not in retriever.invoke(QUERY)[0].metadata
    assert "verification" in retriever.invoke(QUERY, verify=True)[0].metadata
    docs = await retriever.ainvoke(QUERY, verify=True)
    assert docs[0].metadata["verification"]["citation_recall"] == 1.0


def test_flat_metadata_carries_the_verification_as_a_json_string() -> None:
    api = FakeAgentAPI(reply=ok(response_json("Front setbacks are 90 feet [2].")))
    retriever = PerplexedAnswerRetriever(
        provider=provider(), client=api.client(), verify=True, flat_metadata=True
    )
    data = json.loads(retriever.invoke(QUERY)[0].metadata["verification"])
    assert data["sentences"][0]["label"] == "unsupported" and data["citation_recall"] == 0.0


def test_answer_tool_accepts_verify() -> None:
    api = FakeAgentAPI()
    tool = PerplexedAnswerTool(provider=provider(), client=api.client(), verify=True)
    assert tool.verify is True
    assert "[1]" in tool.invoke({"query": QUERY})


def test_verify_citations_runnable_over_retriever_documents() -> None:
    docs = retrieved()
    text = "Typical front setbacks are 20 to 25 feet [2]. Front setbacks are always 90 feet [2]. Zoning rules differ between cities."
    v = VerifyCitations().invoke({"text": text, "documents": docs})
    assert isinstance(v, Verification)
    assert [s.label for s in v.sentences] == ["supported", "unsupported", "uncited"]
    assert v.sentences[0].evidence[0].hit_id == 2 and v.sentences[0].evidence[0].text == HITS[1].snippet
    assert v == perplexed.verify(text, docs) == perplexed.verify(text, HITS)


async def test_verify_citations_in_an_lcel_chain_and_async() -> None:
    docs = retrieved()
    my_llm = RunnableLambda(lambda question: "A setback is the minimum distance to the property line [1].")
    chain = {"text": my_llm, "documents": RunnableLambda(lambda _: docs)} | VerifyCitations()
    v = chain.invoke(QUERY)
    assert v.sentences[0].label == "supported" and v.citation_precision == 1.0
    assert await chain.ainvoke(QUERY) == v


def test_verify_citations_takes_an_answer_retrievers_documents() -> None:
    api = FakeAgentAPI()
    docs = PerplexedAnswerRetriever(provider=provider(), client=api.client()).invoke(QUERY)
    v = VerifyCitations().invoke(docs)
    assert v.citation_recall == 1.0 and [s.citations for s in v.sentences] == [[1], [2]]


def test_verify_citations_options_and_bad_input() -> None:
    docs = retrieved()

    def always(claim: str, passage: str) -> float:
        return 1.0

    v = VerifyCitations(checker=always).invoke({"text": "Setbacks vary by town [1].", "documents": docs})
    assert v.checker == "always" and v.sentences[0].label == "supported"
    with pytest.raises(InvalidRequest) as info:
        VerifyCitations().invoke({"documents": docs})
    assert info.value.param == "text"
    with pytest.raises(InvalidRequest) as info:
        VerifyCitations().invoke({"text": "x [1]."})
    assert info.value.param == "documents"
    with pytest.raises(InvalidRequest) as info:
        VerifyCitations(threshold=2.0).invoke({"text": "x [1].", "documents": docs})
    assert info.value.param == "threshold"


def test_answer_tool_with_verify_tells_the_model_which_sentences_are_unsupported() -> None:
    api = FakeAgentAPI(reply=ok(response_json("Front setbacks are 90 feet [2].")))
    tool = PerplexedAnswerTool(provider=provider(), client=api.client(), verify=True)
    content = tool.invoke({"query": QUERY})
    assert "Citation check:\n✗ [unsupported] Front setbacks are 90 feet [2]." in content
    assert content.rstrip().endswith("citation recall 0.00, citation precision 0.00 (lexical checker)")
    plain = PerplexedAnswerTool(provider=provider(), client=api.client()).invoke({"query": QUERY})
    assert "Citation check" not in plain
