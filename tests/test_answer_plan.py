"""One answer plan (issue 18 §2): perplexed.integration.prepare_answer() -> a frozen AnswerPlan that every
entry point runs; typed errors for bad answer() arguments (issue 12 §4); unknown keywords (issue 17 §2)."""

from __future__ import annotations

import dataclasses
from typing import Any

import perplexed
import pytest
from perplexed import ConfigError, Hit, InvalidRequest
from perplexed.agent import BadRequestError
from perplexed.integration import AnswerPlan, prepare_answer
from perplexed.providers import FunctionProvider, SearXNG
from test_answer_fakes import ANSWER_TEXT, FakeAgentAPI, provider

QUERY = "What are typical zoning setbacks?"


@pytest.fixture
def api() -> FakeAgentAPI:
    return FakeAgentAPI()


def test_prepare_answer_returns_a_frozen_plan(api: FakeAgentAPI) -> None:
    plan = prepare_answer(QUERY, provider(), client=api.client(), preset="low", max_results=3)
    assert isinstance(plan, AnswerPlan)
    assert plan.query == QUERY
    assert not plan.agent_mode
    assert plan.providers == ["web"]
    assert plan.search is not None and plan.search.options.max_results == 3
    assert plan.params["preset"] == "low" and plan.params["max_tool_calls"] == 0
    assert plan.deadline_ms is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.query = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.params["preset"] = "high"  # type: ignore[index]
    assert api.requests == []  # nothing was called


@pytest.mark.parametrize("run", ["answer", "stream_answer"])
def test_every_sync_entry_point_runs_a_plan(api: FakeAgentAPI, run: str) -> None:
    plan = prepare_answer(QUERY, provider(), client=api.client())
    if run == "answer":
        ans = perplexed.answer(plan)
    else:
        *deltas, ans = list(perplexed.stream_answer(plan))
        assert "".join(deltas) == ANSWER_TEXT
    assert ans.text == ANSWER_TEXT
    assert [c.n for c in ans.citations] == [1, 2]


async def test_every_async_entry_point_runs_a_plan(api: FakeAgentAPI) -> None:
    plan = prepare_answer(QUERY, provider(), async_client=api.async_client())
    ans = await perplexed.aanswer(plan)
    items = [item async for item in perplexed.astream_answer(plan)]
    assert ans.text == items[-1].text == ANSWER_TEXT
    assert len(api.requests) == 2  # a plan runs as often as it is given


def test_a_plan_is_complete(api: FakeAgentAPI) -> None:
    plan = prepare_answer(QUERY, provider(), client=api.client())
    with pytest.raises(InvalidRequest, match="pass it alone") as info:
        perplexed.answer(plan, preset="high")
    assert info.value.param == "preset"


@pytest.mark.parametrize(
    ("spec", "agent"),
    [
        ("perplexity-agent", True),
        (" Perplexity-Agent ", True),
        (["perplexity-agent"], True),
        (("PERPLEXITY-AGENT",), True),
        ("searxng", False),
        (["searxng", "local"], False),
        ({"name": "searxng"}, False),
    ],
)
def test_agent_mode_is_decided_in_one_place(spec: Any, agent: bool) -> None:
    assert AnswerPlan.is_agent_mode(spec) is agent


def test_agent_mode_inside_a_chain_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot be part of a chain"):
        AnswerPlan.is_agent_mode(["searxng", "perplexity-agent"])


def test_agent_mode_plan_has_no_search(api: FakeAgentAPI) -> None:
    plan = prepare_answer(QUERY, ["Perplexity-Agent"], client=api.client(), recency="week")
    assert plan.agent_mode and plan.search is None
    assert plan.providers == ["perplexity-agent"]
    assert plan.params["tools"][0]["filters"] == {"search_recency_filter": "week"}


# --- typed errors naming the argument (issue 12 §4) -----------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"models": 5}, "models"),
        ({"models": "openai/gpt-5.1"}, "models"),
        ({"agent_options": "x"}, "agent_options"),
        ({"agent_options": ["temperature"]}, "agent_options"),
        ({"on_empty": "ignore"}, "on_empty"),
        ({"max_source_chars": -1}, "max_source_chars"),
        ({"deadline_ms": float("nan")}, "deadline_ms"),
        ({"client": object()}, "client"),
        ({"on_attempt": "print"}, "on_attempt"),
        ({"strip_unmatched": "yes"}, "strip_unmatched"),
    ],
)
def test_bad_answer_arguments_are_typed_errors(api: FakeAgentAPI, kwargs: dict[str, Any], param: str) -> None:
    kwargs.setdefault("client", api.client())
    with pytest.raises(InvalidRequest) as info:
        perplexed.answer(QUERY, provider(), **kwargs)
    assert info.value.param == param
    assert api.requests == []


# --- unknown keywords (issue 17 §2) ---------------------------------------------------------------------


def _hits(query: str, options: Any) -> list[Hit]:
    return [Hit(title="t", url="https://example.org/")]


@pytest.mark.parametrize(
    ("typo", "closest"),
    [
        ("max_result", "max_results"),
        ("top_k", "max_results"),
        ("num_results", "max_results"),
        ("include_domain", "include_domains"),
        ("recency_filter", "recency"),
        ("deadline", "deadline_ms"),
        ("engine", "engines"),  # SearXNG's own option
    ],
)
def test_search_rejects_an_unknown_keyword_naming_the_closest(typo: str, closest: str) -> None:
    with pytest.raises(InvalidRequest, match=f"did you mean '{closest}'") as info:
        perplexed.search("q", provider=["local", SearXNG(base_url="http://127.0.0.1:9")], **{typo: 2})
    assert info.value.param == typo


async def test_asearch_rejects_unknown_keywords_before_any_call() -> None:
    calls: list[str] = []
    searx = SearXNG(base_url="http://127.0.0.1:9")
    with pytest.raises(InvalidRequest, match="did you mean 'max_results'"):
        await perplexed.asearch("q", provider=searx, max_result=2, on_attempt=lambda a: calls.append(a.provider))
    assert calls == []


def test_declared_options_of_a_member_are_known() -> None:
    # engines is SearXNG's; the request never goes out (port 9 refuses), the keyword was accepted
    with pytest.raises(perplexed.UpstreamError):
        perplexed.search("q", provider=[SearXNG(base_url="http://127.0.0.1:9")], engines=["wikipedia"],
                         provider_timeout_ms=2000)


def test_a_chain_with_a_function_accepts_any_keyword() -> None:
    seen: list[dict[str, Any]] = []

    def fn(query: str, options: Any) -> list[Hit]:
        seen.append(dict(options.extra))
        return _hits(query, options)

    result = perplexed.search("q", provider=["local", FunctionProvider(fn)], my_flag=True, fallback_on="error")
    assert result.hits
    assert seen == [{"my_flag": True}]


def test_answer_rejects_unknown_keywords_including_its_own_typos(api: FakeAgentAPI) -> None:
    searx = SearXNG(base_url="http://127.0.0.1:9")
    with pytest.raises(InvalidRequest, match="did you mean 'preset'"):
        perplexed.answer(QUERY, searx, client=api.client(), presets="fast")
    with pytest.raises(InvalidRequest, match="did you mean 'max_results'"):
        perplexed.answer(QUERY, "perplexity-agent", client=api.client(), max_result=3)
    with pytest.raises(InvalidRequest, match="perplexity-agent takes no provider-specific options"):
        perplexed.answer(QUERY, "perplexity-agent", client=api.client(), engines=["x"])
    assert api.requests == []


def test_check_options_validates_without_a_query() -> None:
    from perplexed.engine.chain import check_options  # private: the option check alone, with no query to run

    check_options("searxng", engines=["wikipedia"], max_results=3)
    with pytest.raises(InvalidRequest, match="did you mean 'engines'"):
        check_options("searxng", engine=["wikipedia"])


# --- who sent a field the API rejects (helper "agent"'s AgentRequest.sent_by) -----------------------------


def test_an_unknown_field_400_names_the_perplexed_option_behind_it() -> None:
    from test_answer_fakes import status

    api = FakeAgentAPI(reply=status(400, "invalid_request_error",
                                    'invalid request body: json: unknown field "max_tool_calls"'))
    with pytest.raises(BadRequestError) as info:
        perplexed.answer(QUERY, provider(cost=0.001), client=api.client(), preset="low")
    assert info.value.param == "max_tool_calls"
    assert "grounding with a preset sends max_tool_calls=0" in str(info.value)
    assert [a.provider for a in info.value.attempts] == ["web"]  # the search is kept, with its cost
    assert info.value.cost == pytest.approx(0.001)
    assert "sent_by" not in api.body  # a note for errors, never sent


def test_the_default_preset_is_noted_as_answers_own() -> None:
    api = FakeAgentAPI()
    plan = prepare_answer(QUERY, provider(), client=api.client())
    assert plan.params["preset"] == "fast"
    assert "default" in plan.params["sent_by"]["preset"]
    named = prepare_answer(QUERY, provider(), client=api.client(), preset="fast")
    assert "preset" not in named.params["sent_by"]


def test_a_plan_is_hashable_and_its_repr_shows_no_client(api: FakeAgentAPI) -> None:
    plan = prepare_answer(QUERY, provider(), client=api.client())
    assert {plan: 1}[plan] == 1
    text = repr(plan)
    assert "AnswerPlan(query=" in text and "client" not in text and "pplx-" not in text
