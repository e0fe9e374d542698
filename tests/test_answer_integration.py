"""Grounded answers over the REAL local SearXNG (``searxng`` fixture) with a fake Agent API (MockTransport).

The fake model answers from what it receives: one sentence per numbered source, citing it, so the citations
can only resolve if the hits SearXNG returned went into the request numbered as ``ans.sources``.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import perplexed
import pytest
from perplexed import Answer, NoSourcesError
from perplexed.providers import SearXNG
from test_answer_fakes import FakeAgentAPI, response_json, sse_bytes, sse_events
from testkit.searxng import CORPUS, SearxngServer

pytestmark = pytest.mark.integration

SOURCE = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)


def echo_model(body: dict[str, Any]) -> httpx.Response:
    """Cite every numbered source of the input once: '<title> [n].'"""
    text = " ".join(f"{title.strip()} [{n}]." for n, title in SOURCE.findall(body["input"])) or "No sources."
    resp = response_json(text, rid="resp_echo", cost=0.0001)
    if body.get("stream"):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=sse_bytes(sse_events(resp)))
    return httpx.Response(200, json=resp)


def test_answer_grounded_in_real_searxng_hits(searxng: SearxngServer) -> None:
    api = FakeAgentAPI(reply=echo_model)
    ans = perplexed.answer(
        "zoning setbacks", provider=[SearXNG(base_url=searxng.base_url)], client=api.client(), preset="fast", max_results=8
    )
    assert ans.search is not None and ans.search.provider == "searxng"
    assert [a.outcome.value for a in ans.search.attempts] == ["ok"]
    corpus = {d.url for d in CORPUS}
    assert {h.url for h in ans.sources} & corpus  # the sqlite corpus answered
    assert [h.id for h in ans.sources] == list(range(1, len(ans.sources) + 1))
    assert [c.n for c in ans.citations] == [h.id for h in ans.sources]
    for c in ans.citations:
        assert c.hit.title in ans.text[: c.span[0]]  # the sentence before [n] names the hit it cites
    body = api.body
    assert body["max_tool_calls"] == 0 and "tools" not in body
    assert ans.cost == pytest.approx(0.0001)  # SearXNG is free


async def test_stream_over_real_searxng(searxng: SearxngServer) -> None:
    api = FakeAgentAPI(reply=echo_model)
    items = [
        x
        async for x in perplexed.astream_answer(
            "zoning setbacks", provider=SearXNG(base_url=searxng.base_url), client=api.async_client()
        )
    ]
    final = items[-1]
    assert isinstance(final, Answer)
    assert "".join(x for x in items[:-1] if isinstance(x, str)) == final.text
    assert final.citations and final.unmatched == []


def test_upstream_failure_still_answers_from_the_corpus(searxng: SearxngServer) -> None:
    searxng.upstream.set_mode("500")
    api = FakeAgentAPI(reply=echo_model)
    ans = perplexed.answer("zoning setbacks", provider=SearXNG(base_url=searxng.base_url), client=api.client())
    assert ans.sources and all(h.url.startswith("https://docs.example.org/") for h in ans.sources)


def test_nothing_found_raises_no_sources_and_never_calls_the_model(searxng: SearxngServer) -> None:
    searxng.upstream.set_mode("empty")
    api = FakeAgentAPI(reply=echo_model)
    with pytest.raises(NoSourcesError) as info:
        perplexed.answer("quokka", provider=[SearXNG(base_url=searxng.base_url)], client=api.client())
    assert [a.provider for a in info.value.attempts] == ["searxng"]
    assert info.value.attempts[0].outcome.value == "empty"
    assert api.requests == []
