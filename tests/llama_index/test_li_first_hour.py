"""Issue 26 (points 3, 4, 7) and issue 22 (point 7) for the LlamaIndex adapter: the answer paths fail on a
missing Agent API key before any (paid) search; every component takes ``api_key=``/``base_url=`` for its
search provider and the chain's governance and strategy options as named, typed keywords; typos name the
closest valid word by meaning and case; the tools' descriptions are plain words. No socket: providers are
functions or run on ``httpx.MockTransport``."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import httpx
import pytest
from llama_index_perplexed import PerplexedQueryEngine, PerplexedRetriever, PerplexedToolSpec
from perplexed import ConfigError, Hit, InvalidRequest
from perplexed.agent import AgentClient
from perplexed.providers import FunctionProvider

COMPONENTS = (PerplexedRetriever, PerplexedToolSpec, PerplexedQueryEngine)
NAMED = {
    "max_results": int, "similarity_top_k": int, "api_key": str, "base_url": str, "provider_timeout_ms": int,
    "deadline_ms": int, "fallback_on": str, "cache_ttl_s": float, "cache_single_flight": bool,
    "budget_usd": float, "strategy": str, "hedge_after_ms": int, "merge_providers": int, "min_hits": int,
    "include_domains": None, "exclude_domains": None, "recency": str, "published_after": None,
    "published_before": None, "language": str, "country": str, "safe_search": str,
}


class Paid:
    """A paid provider that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, query: str, options: Any) -> list[Hit]:
        self.calls += 1
        return [Hit(url="https://paid.example/a", title="A", snippet="a")]


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)


def _paid() -> tuple[Paid, FunctionProvider]:
    fn = Paid()
    return fn, FunctionProvider(fn, name="paid", cost=0.01)


@pytest.mark.usefixtures("no_key")
@pytest.mark.parametrize("streaming", [False, True])
async def test_query_engine_checks_the_key_before_the_search(streaming: bool) -> None:
    fn, provider = _paid()
    engine = PerplexedQueryEngine(provider, streaming=streaming)
    with pytest.raises(ConfigError, match="PERPLEXITY_API_KEY"):
        engine.query("q")
    with pytest.raises(ConfigError, match="PERPLEXITY_API_KEY"):
        await engine.aquery("q")
    assert fn.calls == 0


@pytest.mark.usefixtures("no_key")
async def test_tool_spec_answer_checks_the_key_before_the_search() -> None:
    fn, provider = _paid()
    spec = PerplexedToolSpec(provider)
    with pytest.raises(ConfigError, match="PERPLEXITY_API_KEY"):
        spec.answer("q")
    with pytest.raises(ConfigError, match="PERPLEXITY_API_KEY"):
        await spec.aanswer("q")
    assert fn.calls == 0
    assert "paid.example" in spec.search("q")  # the search tool needs no Agent API key
    assert fn.calls == 1


@pytest.mark.usefixtures("no_key")
def test_a_given_client_without_a_key_fails_before_the_search_too() -> None:
    fn, provider = _paid()
    with pytest.raises(ConfigError, match="PERPLEXITY_API_KEY"):
        PerplexedQueryEngine(provider, client=AgentClient()).query("q")
    assert fn.calls == 0


@pytest.mark.parametrize("component", COMPONENTS)
def test_governance_and_strategy_options_are_named_and_typed(component: type) -> None:
    parameters = inspect.signature(component).parameters
    hints = typing.get_type_hints(component.__init__)
    for name, kind in NAMED.items():
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert parameters[name].default is None, name
        if kind is not None:
            assert kind in typing.get_args(hints[name]) or any(
                kind in typing.get_args(arg) for arg in typing.get_args(hints[name])
            ) or typing.get_origin(typing.get_args(hints[name])[0]) is typing.Literal, name


@pytest.mark.parametrize("component", COMPONENTS)
def test_named_options_reach_the_chain(component: type) -> None:
    paid_fn, paid = _paid()
    free_fn, free = Paid(), None
    free = FunctionProvider(free_fn, name="free")
    built = component([paid, free], budget_usd=0.001, cache_ttl_s=60, provider_timeout_ms=5000,
                      client=None if component is PerplexedRetriever else AgentClient(api_key="pplx-test-123456"))
    assert "budget_usd=0.001" in repr(built) and "cache_ttl_s=60" in repr(built)
    if component is PerplexedRetriever:
        built.retrieve("q")
        built.retrieve("q")
    elif component is PerplexedToolSpec:
        built.search("q")
        built.search("q")
    else:
        return  # the query engine runs the same SearchConfig (its answer path needs the Agent API)
    assert (paid_fn.calls, free_fn.calls) == (0, 1)  # over budget: skipped; cached: asked once


@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize(("name", "value"), [("budget_usd", -1), ("cache_ttl_s", "soon"), ("strategy", "fastest"),
                                             ("hedge_after_ms", -5), ("min_hits", 0)])
def test_bad_named_values_fail_at_construction_naming_the_argument(component: type, name: str, value: Any) -> None:
    with pytest.raises((InvalidRequest, ConfigError), match=name):
        component(FunctionProvider(Paid(), name="p"), **{name: value})


@pytest.mark.parametrize("component", COMPONENTS)
def test_suggestions_by_meaning_and_case(component: type) -> None:
    with pytest.raises(InvalidRequest, match="did you mean 'provider'"):
        component(providers="local")
    with pytest.raises(ConfigError, match="did you mean 'tavily'"):
        component(provider="Tavily")
    with pytest.raises(InvalidRequest, match="did you mean 'max_results'"):
        component("local", topk=2)


@pytest.mark.parametrize("component", [PerplexedToolSpec, PerplexedQueryEngine])
def test_api_key_and_base_url_for_the_search_provider(component: type, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    seen: list[httpx.Request] = []

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"results": [{"url": "https://t.example/a", "title": "A", "content": "a"}]})

    with pytest.raises(ConfigError, match="TAVILY_API_KEY"):  # a missing key fails at construction
        component("tavily")
    built = component({"name": "tavily", "transport": httpx.MockTransport(reply)}, api_key="tvly-test-key-abcdef",
                      base_url="https://tavily.mock", client=AgentClient(api_key="pplx-test-123456"))
    assert "tvly-test-key-abcdef" not in repr(built)
    search = built._search.search_kwargs()
    import perplexed

    result = perplexed.search("q", **search)  # what each query of the component runs
    assert result.hits[0].url == "https://t.example/a"
    assert seen[0].headers["authorization"] == "Bearer tvly-test-key-abcdef"
    assert seen[0].url.host == "tavily.mock"


def test_tool_spec_search_uses_its_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    seen: list[httpx.Request] = []

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"results": [{"url": "https://t.example/a", "title": "A", "content": "a"}]})

    spec = PerplexedToolSpec({"name": "tavily", "transport": httpx.MockTransport(reply)}, api_key="tvly-test-key-abcdef")
    assert "https://t.example/a" in spec.search("q")
    assert seen[0].headers["authorization"] == "Bearer tvly-test-key-abcdef"


@pytest.mark.parametrize("component", [PerplexedToolSpec, PerplexedQueryEngine])
def test_api_key_with_a_chain_says_where_the_agent_key_goes(component: type) -> None:
    with pytest.raises(ConfigError, match=r"naming one provider.*client=AgentClient\(api_key=") as info:
        component(["local", "searxng"], api_key="pplx-test-123456")
    assert "pplx-test-123456" not in str(info.value)


def test_agent_mode_api_key_builds_the_agent_client(no_key: None) -> None:
    engine = PerplexedQueryEngine("perplexity-agent", api_key="pplx-test-123456", base_url="https://agent.mock")
    assert engine.client.base_url == "https://agent.mock"
    with pytest.raises(InvalidRequest, match="api_key"):
        PerplexedQueryEngine("perplexity-agent", api_key="pplx-test-123456", client=AgentClient())


def test_tool_descriptions_are_plain_words() -> None:
    for tool in PerplexedToolSpec(FunctionProvider(Paid(), name="p")).to_tool_list():
        description = tool.metadata.description
        for python in ("typing.", "Annotated", "FieldInfo", "NoneType", "-> str", "`"):
            assert python not in description, (tool.metadata.name, description)
        assert description[0].isupper() and description.endswith(".")
        params = tool.metadata.get_parameters_dict()
        for name in params["required"]:  # query (search, answer) or url (fetch): typed and described
            assert params["properties"][name]["type"] == "string" and params["properties"][name]["description"]
