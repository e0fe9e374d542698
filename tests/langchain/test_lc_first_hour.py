"""Issue 26 (point 4) for the LangChain adapter: a misspelt constructor keyword is still pydantic's
ValidationError, and it names the closest valid word, by meaning and case, as the core and the LlamaIndex
adapter do; the answer components check the Agent API key before any (paid) search."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_perplexed import (
    PerplexedAnswerRetriever,
    PerplexedAnswerTool,
    PerplexedRetriever,
    PerplexedSearchTool,
)
from perplexed import ConfigError, Hit
from perplexed.providers import FunctionProvider
from pydantic import ValidationError

COMPONENTS = (PerplexedRetriever, PerplexedAnswerRetriever, PerplexedSearchTool, PerplexedAnswerTool)


@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize(
    ("given", "closest"),
    [({"topk": 2}, "max_results"), ({"providers": "local"}, "provider"), ({"recncy": "day"}, "recency"),
     ({"cache_ttl": 30}, "cache_ttl_s"), ({"Provider": "local"}, "provider")],
)
def test_constructor_typos_are_validation_errors_naming_the_closest(
    component: type, given: dict[str, Any], closest: str
) -> None:
    with pytest.raises(ValidationError, match=f"did you mean '{closest}'"):
        component(**given)


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_provider_name_in_another_case_names_the_registered_one(component: type) -> None:
    with pytest.raises(ValidationError, match="did you mean 'tavily'"):
        component(provider="Tavily")


@pytest.mark.parametrize("component", COMPONENTS)
def test_the_fields_and_their_aliases_are_still_accepted(component: type) -> None:
    built = component(provider=FunctionProvider(lambda q, o: [], name="f"), max_results=2, cache_ttl_s=30)
    assert built.k == 2 if hasattr(built, "k") else built.max_results == 2


@pytest.mark.parametrize("component", [PerplexedAnswerRetriever, PerplexedAnswerTool])
def test_answer_components_check_the_key_before_the_search(component: type, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)
    calls: list[str] = []

    def paid(query: str, options: Any) -> list[Hit]:
        calls.append(query)
        return [Hit(url="https://paid.example/a", title="A", snippet="a")]

    built = component(provider=FunctionProvider(paid, name="paid", cost=0.01))
    with pytest.raises(ConfigError, match="PERPLEXITY_API_KEY"):
        built.invoke("q") if component is PerplexedAnswerRetriever else built.invoke({"query": "q"})
    assert calls == []


@pytest.mark.parametrize("component", [PerplexedAnswerRetriever, PerplexedAnswerTool])
def test_a_missing_key_is_named_in_the_components_words(component: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """The component takes ``api_key=``: its missing-key error says so (not the core's ``client=AgentClient``)."""
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)
    built = component(provider=FunctionProvider(lambda q, o: [], name="free"))
    with pytest.raises(ConfigError) as info:
        built.invoke("q") if component is PerplexedAnswerRetriever else built.invoke({"query": "q"})
    assert "pass api_key=" in str(info.value) and "PERPLEXITY_API_KEY" in str(info.value)
    assert "AgentClient" not in str(info.value)
