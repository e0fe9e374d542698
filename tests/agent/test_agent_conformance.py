"""Issue 16 (Agent API): reasoning.effort values, prompt_cache_key / service_tier, the /v1/responses alias,
and a 400 naming an unknown body field that says which perplexed option sent it."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from agent_helpers import FAKE_KEY, RESPONSE_COMPLETED, Recorder
from perplexed import InvalidRequest
from perplexed.agent import AgentClient, AgentRequest, AsyncAgentClient, BadRequestError, Reasoning
from perplexed.agent._outcome import explain_unknown_field  # private: the unknown-field note, tested alone
from perplexed.agent._request import build_request  # private: body merging, tested without I/O


def _client(rec: Recorder, **kwargs) -> AgentClient:
    return AgentClient(api_key=FAKE_KEY, base_url="https://api.test", transport=rec.transport, **kwargs)


def _unknown_field(name: str) -> httpx.Response:
    return httpx.Response(
        400,
        json={
            "error": {
                "message": f'invalid request body: json: unknown field "{name}"',
                "type": "invalid_request",
                "code": 400,
                "param": name,
            }
        },
    )


# --- reasoning.effort -----------------------------------------------------------------------------------


@pytest.mark.parametrize("effort", ["minimal", "low", "medium", "high", "xhigh", "max"])
@pytest.mark.parametrize("shape", ["string", "mapping", "model"])
def test_accepted_reasoning_efforts_are_sent(effort: str, shape: str) -> None:
    value = {"string": effort, "mapping": {"effort": effort}, "model": Reasoning(effort=effort)}[shape]
    rec = Recorder(httpx.Response(200, json=RESPONSE_COMPLETED))
    _client(rec).create(preset="fast", input="q", reasoning=value)
    assert rec.bodies()[0]["reasoning"] == {"effort": effort}


@pytest.mark.parametrize("effort", ["none", "fast", "LOW", "extreme", "", "low@2026-10-16.0"])
@pytest.mark.parametrize("shape", ["string", "mapping"])
def test_other_reasoning_efforts_are_invalid_before_sending(effort: str, shape: str) -> None:
    rec = Recorder(httpx.Response(200, json=RESPONSE_COMPLETED))
    value = effort if shape == "string" else {"effort": effort}
    with pytest.raises(InvalidRequest) as info:
        _client(rec).create(preset="fast", input="q", reasoning=value)
    assert info.value.param == "reasoning.effort"
    assert "minimal, low, medium, high, xhigh, max" in str(info.value)
    assert rec.requests == []


def test_reasoning_model_rejects_none_directly() -> None:
    with pytest.raises(InvalidRequest) as info:
        Reasoning(effort="none")
    assert info.value.param == "reasoning.effort"


@pytest.mark.parametrize("effort", ["fast", "low", "medium", "high", "xhigh", "xhigh@2026-10-16.0"])
def test_top_level_effort_is_unchanged(effort: str) -> None:
    rec = Recorder(httpx.Response(200, json=RESPONSE_COMPLETED))
    _client(rec).create(effort=effort, input="q")
    assert rec.bodies()[0]["effort"] == effort and "reasoning" not in rec.bodies()[0]


# --- prompt_cache_key, service_tier, api_path -----------------------------------------------------------


def test_prompt_cache_key_and_service_tier_are_typed_and_sent() -> None:
    rec = Recorder(httpx.Response(200, json=RESPONSE_COMPLETED))
    _client(rec).create(preset="fast", input="q", prompt_cache_key="tenant-42", service_tier="flex")
    body = rec.bodies()[0]
    assert body["prompt_cache_key"] == "tenant-42" and body["service_tier"] == "flex"
    req = AgentRequest(input="q", preset="fast")
    assert "prompt_cache_key" not in req.to_body() and "service_tier" not in req.to_body()


@pytest.mark.parametrize(
    ("field", "value"),
    [("service_tier", "gold"), ("service_tier", 1), ("prompt_cache_key", ""), ("prompt_cache_key", 5)],
)
def test_bad_prompt_cache_key_or_service_tier(field: str, value: object) -> None:
    with pytest.raises(InvalidRequest) as info:
        AgentRequest(input="q", preset="fast", **{field: value})
    assert info.value.param == field


def test_default_path_is_v1_agent_and_v1_responses_is_configurable() -> None:
    rec = Recorder(httpx.Response(200, json=RESPONSE_COMPLETED))
    _client(rec).create(preset="fast", input="q")
    _client(rec, api_path="/v1/responses").create(preset="fast", input="q")
    _client(rec, api_path="v1/responses/").retrieve("resp_abc")
    assert [r.url.path for r in rec.requests] == ["/v1/agent", "/v1/responses", "/v1/responses/resp_abc"]


# --- unknown body fields ----------------------------------------------------------------------------------

NOTE = "perplexed.answer(): grounding with a preset sends max_tool_calls=0"


def test_sent_by_is_never_sent() -> None:
    req = build_request(
        None, {"input": "q", "preset": "fast", "max_tool_calls": 0, "sent_by": {"max_tool_calls": NOTE}}
    )
    assert "sent_by" not in req.to_body() and req.sent_by == {"max_tool_calls": NOTE}
    merged = build_request(req, {"sent_by": {"store": "x"}})
    assert merged.sent_by == {"max_tool_calls": NOTE, "store": "x"}


def test_unknown_field_400_names_the_field_and_who_sent_it() -> None:
    rec = Recorder(_unknown_field("max_tool_calls"))
    with pytest.raises(BadRequestError) as info:
        _client(rec).create(preset="fast", input="q", max_tool_calls=0, sent_by={"max_tool_calls": NOTE})
    err = info.value
    assert err.param == "max_tool_calls" and err.status == 400
    assert str(err) == f'invalid request body: json: unknown field "max_tool_calls" (sent by {NOTE})'
    assert len(rec.requests) == 1  # a 400 is not retried


def test_unknown_field_from_a_stream_request_is_explained_too() -> None:
    rec = Recorder(_unknown_field("max_tool_calls"))
    with pytest.raises(BadRequestError) as info:
        list(
            _client(rec).stream(preset="fast", input="q", max_tool_calls=0, sent_by={"max_tool_calls": NOTE})
        )
    assert str(info.value).endswith(f"(sent by {NOTE})") and info.value.param == "max_tool_calls"


def test_unknown_field_without_a_note_says_where_it_came_from() -> None:
    rec = Recorder(_unknown_field("store"), _unknown_field("metadata"))
    with pytest.raises(BadRequestError) as typed:
        _client(rec).create(preset="fast", input="q", store=False)
    assert str(typed.value).endswith("(sent by the request field store=false)")
    with pytest.raises(BadRequestError) as extra:
        _client(rec).create(preset="fast", input="q", extra_body={"metadata": {"a": 1}})
    assert str(extra.value).endswith("(sent by extra_body)") and extra.value.param == "metadata"


def test_other_400s_are_left_as_they_are() -> None:
    original = BadRequestError("max_steps must be <= 100", status=400, param="max_steps")
    req = AgentRequest(input="q", preset="fast")
    assert explain_unknown_field(original, req) is original
    unknown = BadRequestError('invalid request body: json: unknown field "format"', status=400)
    assert (
        explain_unknown_field(unknown, req) is unknown
    )  # a nested field perplexed did not send at top level
    explained = explain_unknown_field(
        BadRequestError('json: unknown field "max_tool_calls"', status=400),
        req.model_copy(update={"max_tool_calls": 0, "sent_by": {"max_tool_calls": NOTE}}),
    )
    assert str(explained) == f'json: unknown field "max_tool_calls" (sent by {NOTE})'


def test_async_client_explains_unknown_fields() -> None:
    rec = Recorder(_unknown_field("prompt_cache_key"))

    async def main() -> BadRequestError:
        client = AsyncAgentClient(api_key=FAKE_KEY, base_url="https://api.test", transport=rec.transport)
        with pytest.raises(BadRequestError) as info:
            await client.create(preset="fast", input="q", prompt_cache_key="k")
        return info.value

    err = asyncio.run(main())
    assert str(err).endswith('(sent by the request field prompt_cache_key="k")')
    assert json.loads(rec.requests[0].content)["prompt_cache_key"] == "k"
