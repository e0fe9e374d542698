"""Issue 17 for the LlamaIndex adapter: unknown options name the closest valid one, ``similarity_top_k`` is
accepted, ``api_key=``/``base_url=`` beside one provider (a missing key fails at construction, a chain warns
once), useful reprs, and issue 18: the adapter imports no private ``perplexed._`` module and keeps no copy of
the answer signature. Providers run on ``httpx.MockTransport`` (no socket)."""

from __future__ import annotations

import inspect
import pathlib
import warnings

import httpx
import llama_index_perplexed
import pytest
from llama_fakes import web
from llama_index_perplexed import PerplexedQueryEngine, PerplexedRetriever, PerplexedToolSpec
from perplexed import ConfigError, InvalidRequest
from perplexed.providers import SearXNG


def _searxng(n: int = 4) -> SearXNG:
    body = {"results": [{"url": f"https://s.example/{i}", "title": f"T{i}", "content": "c"} for i in range(n)]}
    return SearXNG(base_url="http://searxng.mock", transport=httpx.MockTransport(lambda r: httpx.Response(200, json=body)))


@pytest.mark.parametrize(("typo", "closest"), [("top_k", "max_results"), ("max_result", "max_results"),
                                               ("recency_days", "recency"), ("engine", "engines")])
def test_unknown_options_fail_at_construction_naming_the_closest(typo: str, closest: str) -> None:
    with pytest.raises(InvalidRequest, match=f"did you mean '{closest}'") as info:
        PerplexedRetriever(_searxng(), **{typo: 2})
    assert info.value.param == typo
    with pytest.raises(InvalidRequest, match=f"did you mean '{closest}'"):
        PerplexedToolSpec(_searxng(), client=object(), **{typo: 2})


def test_similarity_top_k_and_declared_options_are_accepted() -> None:
    retriever = PerplexedRetriever(_searxng(6), similarity_top_k=2, engines=["wikipedia"])
    assert len(retriever.retrieve("q")) == 2
    assert retriever.similarity_top_k == 2


def test_a_function_member_accepts_any_option() -> None:
    assert len(PerplexedRetriever([web], my_option=1).retrieve("alpha")) == 3


def test_api_key_and_base_url_beside_one_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    seen: list[httpx.Request] = []

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"results": [{"url": "https://t.example/a", "title": "A", "content": "a"}]})

    retriever = PerplexedRetriever({"name": "tavily", "transport": httpx.MockTransport(reply)},
                                   api_key="tvly-test-key-abcdef", base_url="https://tavily.mock")
    nodes = retriever.retrieve("q")
    assert nodes[0].node.metadata["url"] == "https://t.example/a"
    assert seen[0].headers["authorization"] == "Bearer tvly-test-key-abcdef"
    assert seen[0].url.host == "tavily.mock"
    assert "tvly-test-key-abcdef" not in repr(retriever)


def test_a_missing_key_fails_at_construction_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXA_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="EXA_API_KEY"):
        PerplexedRetriever("exa")
    with pytest.raises(ConfigError, match="naming one provider"):
        PerplexedRetriever(["exa", "searxng"], api_key="k-123456789")


def test_a_chain_warns_once_and_runs_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXA_API_KEY", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        retriever = PerplexedRetriever(["exa", _searxng(2)])
    assert len([w for w in caught if "EXA_API_KEY" in str(w.message)]) == 1
    assert len(retriever.retrieve("q")) == 2


def test_reprs_say_what_the_component_is() -> None:
    assert repr(PerplexedRetriever([web], max_results=3)) == "PerplexedRetriever(provider='web', max_results=3)"
    engine = PerplexedQueryEngine("perplexity-agent", client=object(), preset="low")
    assert repr(engine) == "PerplexedQueryEngine(provider='perplexity-agent', preset='low', streaming=False)"
    spec = PerplexedToolSpec({"name": "tavily", "api_key": "tvly-secret-abcdef"}, client=object())
    text = repr(spec)
    assert "tvly-secret-abcdef" not in text
    assert "'perplexed_search'" in text and "'perplexed_answer'" in text


def test_no_private_core_import_and_no_copy_of_the_answer_signature() -> None:
    folder = pathlib.Path(llama_index_perplexed.__file__).parent
    for path in folder.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "perplexed._" not in source.replace("llama_index_perplexed._", ""), path.name
    for component in (PerplexedQueryEngine, PerplexedToolSpec):
        params = inspect.signature(component.__init__).parameters
        assert "preset" not in params and "agent_options" not in params


def test_a_misspelt_answer_option_names_the_answer_option() -> None:
    with pytest.raises(InvalidRequest, match="did you mean 'preset'"):
        PerplexedQueryEngine(_searxng(), client=object(), presets="low")
