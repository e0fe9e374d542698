"""Issue 16: parsers and request bodies conform to what the live APIs send and accept (not only to the docs).

Firecrawl's body has no ``safe`` (see test_provider_requests), SearXNG keeps ``answers``/``infoboxes`` and
does not need ``number_of_results``, Exa's ``author`` reaches the adapters' metadata, ``Hit.updated`` is
filled where a provider reports an update date.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import httpx
import perplexed
import pytest
import yaml
from perplexed import Hit, Outcome, Result, SearchOptions
from perplexed.providers import Exa, Firecrawl, FunctionProvider, PerplexitySearch, SearXNG
from testkit.cassettes import FAKE_KEYS, SYNTHESIZED, cassette

QUERY = "california rental laws"


def _searx(body: dict[str, Any]) -> Any:
    provider = SearXNG(base_url="http://127.0.0.1:9")
    return provider.parse_response(httpx.Response(200, json=body), "q", SearchOptions.build())


async def test_searxng_answers_and_infoboxes_go_into_detail() -> None:
    provider = SearXNG(base_url="https://searx.example.org")
    with cassette("searxng/answers_infoboxes.yaml") as cas:
        result = await perplexed.asearch(QUERY, provider=[provider])
    assert cas.all_played
    [attempt] = result.attempts
    assert attempt.outcome is Outcome.OK and len(result.hits) == 1  # answers and infoboxes are not hits
    detail = attempt.detail or ""
    assert detail.startswith("unresponsive engines: brave: timeout")
    assert (
        "answers: Deposits are capped at one month's rent since July 2024. (https://tenants.example.org/deposits)"
        in detail
    )
    assert (
        "infoboxes: California Civil Code: The Civil Code of California governs landlord and tenant relations. "
        "(https://en.example.org/wiki/California_Civil_Code)" in detail
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # number_of_results present (older SearXNG) or absent (upstream since 2026-05): same answer
        ({"number_of_results": 0, "results": [{"url": "https://a.example", "title": "A"}]}, None),
        ({"results": [{"url": "https://a.example", "title": "A"}]}, None),
        ({"results": [], "answers": ["42"]}, "answers: 42"),  # old SearXNG: plain strings
        ({"results": [], "answers": [{"answer": "  x\n y  "}]}, "answers: x y"),
        ({"results": [], "answers": [{"url": "https://no.text"}, 7, None]}, None),
        (
            {"results": [], "infoboxes": [{"infobox": "T", "id": "not-a-url", "urls": [{"url": "https://u"}]}]},
            "infoboxes: T (https://u)",
        ),
        ({"results": [], "infoboxes": [{"infobox": "", "content": ""}, "junk"]}, None),
        ({"results": [], "answers": "not a list", "infoboxes": {"not": "a list"}}, None),
        ({"results": [], "answers": [{"answer": "y" * 400}]}, "answers: " + "y" * 299 + "…"),
    ],
)
def test_searxng_detail_table(body: dict[str, Any], expected: str | None) -> None:
    answer = _searx(body)
    assert answer.detail == expected


def test_exa_parses_a_real_shaped_result_without_score() -> None:
    exa = Exa(api_key=FAKE_KEYS["exa"])
    item = {
        "id": "https://a.example/x",
        "url": "https://a.example/x",
        "title": "X",
        "publishedDate": "2025-01-02T00:00:00.000Z",
        "author": "Ann Author",
        "image": "https://a.example/i.png",
        "favicon": "https://a.example/f.ico",
    }
    answer = exa.parse_response(
        httpx.Response(200, json={"results": [item], "costDollars": {"total": 0.007, "search": {"neural": 0.007}}}),
        "q",
        SearchOptions.build(max_results=50),
    )
    [hit] = answer.hits
    assert hit.score is None and hit.published == date(2025, 1, 2) and hit.raw == item
    assert answer.cost == pytest.approx(0.007)  # reported total, not the 50-result list price


def test_perplexity_last_updated_never_becomes_published() -> None:
    provider = PerplexitySearch(api_key=FAKE_KEYS["perplexity"])
    body = {"results": [{"url": "https://a.example", "title": "A", "date": None, "last_updated": "2025-07-01"}]}
    [hit] = provider.parse_response(httpx.Response(200, json=body), "q", SearchOptions.build()).hits
    assert hit.published is None and hit.updated == date(2025, 7, 1)


@pytest.mark.parametrize("key", ["modifiedTime", "article:modified_time", "dateModified"])
def test_firecrawl_modified_time_is_updated(key: str) -> None:
    provider = Firecrawl(api_key=FAKE_KEYS["firecrawl"])
    item = {"url": "https://a.example", "title": "A", "metadata": {key: "2025-08-09T10:00:00Z"}}
    body = {"success": True, "data": {"web": [item]}, "creditsUsed": 2}
    [hit] = provider.parse_response(httpx.Response(200, json=body), "q", SearchOptions.build()).hits
    assert hit.updated == date(2025, 8, 9) and hit.published is None


def _result(author: Any) -> Result:
    raw = {"url": "https://a.example", "author": author} if author is not ... else {"url": "https://a.example"}
    hit = Hit(id=1, title="A", url="https://a.example", snippet="s", provider="exa", raw=raw)
    return Result(query="q", provider="exa", hits=[hit])


def _provider(author: Any) -> FunctionProvider:
    """A search provider answering with the one hit of :func:`_result`, as an adapter's retriever calls it."""
    return FunctionProvider(lambda query, options: _result(author).hits, name="exa")


@pytest.mark.parametrize(("author", "expected"), [("Jane Doe", "Jane Doe"), (None, None), ("", None), (..., None)])
def test_author_reaches_langchain_documents(author: Any, expected: str | None) -> None:
    pytest.importorskip("langchain_core")
    from langchain_perplexed import PerplexedRetriever

    [doc] = PerplexedRetriever(provider=_provider(author)).invoke("q")
    metadata = doc.metadata
    if expected is None:
        assert "author" not in metadata  # omitted when null
    else:
        assert metadata["author"] == expected


@pytest.mark.parametrize(("author", "expected"), [("Jane Doe", "Jane Doe"), (None, None), (..., None)])
def test_author_reaches_llama_index_nodes(author: Any, expected: str | None) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index_perplexed import PerplexedRetriever

    [node] = PerplexedRetriever(provider=_provider(author)).retrieve("q")
    if expected is None:
        assert "author" not in node.node.metadata
    else:
        assert node.node.metadata["author"] == expected


async def test_exa_cassette_author_reaches_a_langchain_retriever() -> None:
    pytest.importorskip("langchain_core")
    from langchain_perplexed import PerplexedRetriever

    with cassette("exa/ok.yaml"):
        docs = await PerplexedRetriever(provider=[Exa(api_key=FAKE_KEYS["exa"])]).ainvoke(QUERY)
    assert docs[0].metadata["author"] == "Jane Doe"
    assert "author" not in docs[1].metadata


def test_exa_cassette_cost_breakdown_is_what_a_live_text_request_was_billed() -> None:
    """A live call asking for text (10 results) was billed only ``costDollars.search.neural`` = 0.007."""
    data = yaml.safe_load((SYNTHESIZED / "exa" / "ok.yaml").read_text(encoding="utf-8"))
    [interaction] = data["interactions"]
    assert json.loads(interaction["request"]["body"])["contents"]["text"]  # the request asks for text
    body = json.loads(interaction["response"]["body"]["string"])
    assert body["costDollars"] == {"total": 0.007, "search": {"neural": 0.007}}
    assert all("score" not in r for r in body["results"])
