"""Request models: every field of the reference, validation before sending, the wire body."""

from __future__ import annotations

from datetime import date, datetime

import pytest
from perplexed import InvalidRequest, PerplexedError
from perplexed.agent import (
    AgentRequest,
    FetchUrl,
    FinanceSearch,
    FunctionCallInput,
    FunctionCallItem,
    FunctionCallOutput,
    FunctionTool,
    ImageSearch,
    InputImage,
    InputMessage,
    InputText,
    McpTool,
    PeopleSearch,
    Sandbox,
    UserLocation,
    WebSearch,
)
from perplexed.agent._request import (  # private: the request body builder is tested table-style
    build_request,
    to_mdy,
)
from pydantic import BaseModel


def body(**kwargs):
    kwargs.setdefault("input", "hi")
    if not any(k in kwargs for k in ("preset", "effort", "model", "models", "profile")):
        kwargs["preset"] = "fast"
    return build_request(None, kwargs).to_body()


def test_only_set_fields_are_sent():
    assert body() == {"input": "hi", "preset": "fast"}
    assert body(instructions=None, max_steps=None, tools=None) == {"input": "hi", "preset": "fast"}


def test_every_top_level_field():
    b = body(
        preset="low",
        effort="high@2026-10-16.0",
        model="openai/gpt-5.1",
        models=["openai/gpt-5.1", "xai/grok-4"],
        profile={"type": "custom", "id": "prof_1"},
        instructions="Cite sources.",
        tools=[WebSearch()],
        tool_choice={"type": "web_search"},
        max_output_tokens=2000,
        max_steps=4,
        max_tool_calls=3,
        reasoning={"effort": "low"},
        response_format={"type": "json_schema", "json_schema": {"name": "out", "schema": {"type": "object"}}},
        temperature=0.2,
        top_p=0.9,
        stream=False,
        background=True,
        store=True,
        previous_response_id="resp_prev",
        language_preference="fr",
        skills=[{"type": "builtin", "name": "office/pdf"}],
    )
    assert b == {
        "input": "hi",
        "preset": "low",
        "effort": "high@2026-10-16.0",
        "model": "openai/gpt-5.1",
        "models": ["openai/gpt-5.1", "xai/grok-4"],
        "profile": {"type": "custom", "id": "prof_1"},
        "instructions": "Cite sources.",
        "tools": [{"type": "web_search"}],
        "tool_choice": {"type": "web_search"},
        "max_output_tokens": 2000,
        "max_steps": 4,
        "max_tool_calls": 3,
        "reasoning": {"effort": "low"},
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "out", "schema": {"type": "object"}},
        },
        "temperature": 0.2,
        "top_p": 0.9,
        "stream": False,
        "background": True,
        "store": True,
        "previous_response_id": "resp_prev",
        "language_preference": "fr",
        "skills": [{"type": "builtin", "name": "office/pdf"}],
    }


def test_reference_full_request_example():
    b = body(
        preset="low",
        input=[{"role": "user", "content": "Summarize this week's news on solid-state batteries."}],
        instructions="Cite sources. Be concise.",
        max_output_tokens=2000,
        max_steps=4,
        tools=[
            WebSearch(
                search_recency_filter="week",
                search_domain_filter=["-reddit.com"],
                search_context_size="medium",
            )
        ],
        reasoning="low",
        stream=False,
    )
    assert b == {
        "preset": "low",
        "input": [{"role": "user", "content": "Summarize this week's news on solid-state batteries."}],
        "instructions": "Cite sources. Be concise.",
        "max_output_tokens": 2000,
        "max_steps": 4,
        "tools": [
            {
                "type": "web_search",
                "filters": {"search_recency_filter": "week", "search_domain_filter": ["-reddit.com"]},
                "search_context_size": "medium",
            }
        ],
        "reasoning": {"effort": "low"},
        "stream": False,
    }


def test_extra_body_carries_unverified_fields_and_wins():
    b = body(extra_body={"metadata": {"k": "v"}, "parallel_tool_calls": False, "preset": "medium"})
    assert b["metadata"] == {"k": "v"}
    assert b["parallel_tool_calls"] is False
    assert b["preset"] == "medium"


def test_unknown_kwarg_refused_before_sending():
    with pytest.raises(InvalidRequest) as info:
        build_request(None, {"input": "x", "preset": "fast", "foo": 1})
    assert info.value.param == "foo"
    assert "extra_body" in str(info.value)


def test_web_search_every_field():
    tool = WebSearch(
        search_domain_filter=["nature.com", "-reddit.com"],
        search_after_date_filter=date(2025, 3, 1),
        search_before_date_filter="3/31/2025",
        last_updated_after_filter=datetime(2025, 1, 1, 12, 0),
        last_updated_before_filter="2025-12-31",
        search_context_size="high",
        max_tokens=8000,
        max_tokens_per_page=3000,
        max_results=10,
        search_type="fast",
        user_location=UserLocation(
            country="US", region="CA", city="San Francisco", latitude=37.7, longitude=-122.4
        ),
    )
    assert tool.to_wire() == {
        "type": "web_search",
        "filters": {
            "search_domain_filter": ["nature.com", "-reddit.com"],
            "search_after_date_filter": "03/01/2025",
            "search_before_date_filter": "03/31/2025",
            "last_updated_after_filter": "01/01/2025",
            "last_updated_before_filter": "12/31/2025",
        },
        "search_context_size": "high",
        "max_tokens": 8000,
        "max_tokens_per_page": 3000,
        "max_results": 10,
        "search_type": "fast",
        "user_location": {
            "country": "US",
            "region": "CA",
            "city": "San Francisco",
            "latitude": 37.7,
            "longitude": -122.4,
        },
    }


def test_web_search_from_wire_shape_dict():
    b = body(tools=[{"type": "web_search", "filters": {"search_recency_filter": "day"}, "max_results": 5}])
    assert b["tools"] == [
        {"type": "web_search", "filters": {"search_recency_filter": "day"}, "max_results": 5}
    ]


def test_issue_example_tools():
    b = body(
        instructions="...",
        input="What changed in the EU AI Act?",
        tools=[WebSearch(search_recency_filter="month", search_domain_filter=["europa.eu"])],
    )
    assert b["tools"] == [
        {
            "type": "web_search",
            "filters": {"search_recency_filter": "month", "search_domain_filter": ["europa.eu"]},
        }
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (date(2025, 3, 1), "03/01/2025"),
        (datetime(2025, 12, 31, 23, 59), "12/31/2025"),
        ("3/1/2025", "03/01/2025"),
        ("03/01/2025", "03/01/2025"),
        ("2025-03-01", "03/01/2025"),
    ],
)
def test_dates_sent_as_mm_dd_yyyy(value, expected):
    assert to_mdy(value) == expected
    assert (
        WebSearch(search_after_date_filter=value).to_wire()["filters"]["search_after_date_filter"] == expected
    )


@pytest.mark.parametrize("value", ["13/01/2025", "2/30/2025", "yesterday", "2025/03/01", 20250301])
def test_bad_dates(value):
    with pytest.raises(InvalidRequest) as info:
        WebSearch(search_after_date_filter=value)
    assert info.value.param == "search_after_date_filter"


def test_recency_exclusive_with_date_bounds():
    with pytest.raises(InvalidRequest, match="search_recency_filter"):
        WebSearch(search_recency_filter="month", search_after_date_filter=date(2025, 1, 1))
    with pytest.raises(InvalidRequest, match="search_recency_filter"):
        WebSearch(search_recency_filter="week", search_before_date_filter="1/1/2025")
    # the same through create()'s keyword path
    with pytest.raises(InvalidRequest):
        body(
            tools=[
                {
                    "type": "web_search",
                    "filters": {"search_recency_filter": "day", "search_after_date_filter": "1/1/2025"},
                }
            ]
        )


def test_date_bounds_ordered():
    with pytest.raises(InvalidRequest):
        WebSearch(search_after_date_filter="3/2/2025", search_before_date_filter="3/1/2025")


def test_domain_filter_limits():
    WebSearch(search_domain_filter=[f"d{i}.com" for i in range(20)])
    with pytest.raises(InvalidRequest) as info:
        WebSearch(search_domain_filter=[f"d{i}.com" for i in range(21)])
    assert info.value.param == "search_domain_filter"
    for bad in ["https://europa.eu", "http://x.com/path", "", "a" * 254 + ".com", "two words.com"]:
        with pytest.raises(InvalidRequest):
            WebSearch(search_domain_filter=[bad])


def test_max_steps_bounds():
    assert body(max_steps=1)["max_steps"] == 1
    assert body(max_steps=100)["max_steps"] == 100
    for bad in (0, 101, -1):
        with pytest.raises(InvalidRequest) as info:
            body(max_steps=bad)
        assert info.value.param == "max_steps"


def test_anthropic_requires_max_output_tokens():
    with pytest.raises(InvalidRequest) as info:
        body(model="anthropic/claude-sonnet-4-5")
    assert info.value.param == "max_output_tokens"
    with pytest.raises(InvalidRequest):
        body(models=["openai/gpt-5.1", "anthropic/claude-sonnet-4-5"])
    assert body(model="anthropic/claude-sonnet-4-5", max_output_tokens=500)["max_output_tokens"] == 500


def test_something_must_choose_what_runs():
    with pytest.raises(InvalidRequest):
        build_request(None, {"input": "x"})


def test_numeric_ranges():
    for kwargs in ({"temperature": 2.5}, {"top_p": 1.5}, {"max_output_tokens": 0}, {"models": ["a/b"] * 6}):
        with pytest.raises(InvalidRequest):
            body(**kwargs)


def test_input_validation():
    for bad in ("", "   ", [], 42):
        with pytest.raises(InvalidRequest):
            body(input=bad)


def test_input_items_and_input_image():
    b = body(
        input=[
            {"role": "system", "content": "Answer in French."},
            InputMessage(
                role="user",
                content=[
                    InputText(text="Describe this chart"),
                    InputImage(image_url="https://x.example/c.png"),
                ],
            ),
            {"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]},
            {"role": "assistant", "content": "previous answer text"},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            },
            FunctionCallOutput(call_id="call_1", output='{"temp":21}', name="get_weather"),
            {"type": "mcp_approval_response", "approval_request_id": "a1", "approve": True},
        ]
    )
    assert b["input"] == [
        {"role": "system", "content": "Answer in French."},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Describe this chart"},
                {"type": "input_image", "image_url": "https://x.example/c.png"},
            ],
        },
        {"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]},
        {"role": "assistant", "content": "previous answer text"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": '{"temp":21}', "name": "get_weather"},
        {"type": "mcp_approval_response", "approval_request_id": "a1", "approve": True},
    ]


def test_input_image_limits():
    with pytest.raises(InvalidRequest):
        InputImage(image_url="ftp://x/y.png")
    with pytest.raises(InvalidRequest):
        InputImage(image_url="https://x/" + "a" * 2048)
    with pytest.raises(InvalidRequest):
        body(
            input=[{"role": "user", "content": [{"type": "input_image", "image_url": "file:///etc/passwd"}]}]
        )


def test_function_call_item_replayed_as_input():
    item = FunctionCallItem(call_id="c1", name="f", arguments="{}", thought_signature="sig")
    assert body(input=[item])["input"] == [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "thought_signature": "sig"}
    ]
    assert FunctionCallInput(call_id="c", name="f", arguments="{}").to_wire()["type"] == "function_call"


def test_other_tools():
    tools = [
        FetchUrl(max_urls=3),
        FunctionTool(name="get_weather", description="Weather", parameters={"type": "object"}, strict=True),
        PeopleSearch(),
        FinanceSearch(),
        ImageSearch(max_results=5, filters={"format_filter": ["png"], "safe_search": True}),
        Sandbox(),
        McpTool(server_label="docs", server_url="https://mcp.example", authorization="secret-token-123"),
        {"type": "connector", "id": "c1", "server_label": "x"},
    ]
    assert body(tools=tools)["tools"] == [
        {"type": "fetch_url", "max_urls": 3},
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather",
            "parameters": {"type": "object"},
            "strict": True,
        },
        {"type": "people_search"},
        {"type": "finance_search"},
        {
            "type": "image_search",
            "max_results": 5,
            "filters": {"format_filter": ["png"], "safe_search": True},
        },
        {"type": "sandbox"},
        {
            "type": "mcp",
            "server_label": "docs",
            "server_url": "https://mcp.example",
            "authorization": "secret-token-123",
        },
        {"type": "connector", "id": "c1", "server_label": "x"},
    ]
    assert "secret-token-123" not in repr(tools[6])


def test_tools_empty_list_is_sent():
    assert body(tools=[], max_tool_calls=0)["tools"] == []


def test_tool_validation():
    with pytest.raises(InvalidRequest):
        FetchUrl(max_urls=11)
    with pytest.raises(InvalidRequest, match="reserved"):
        FunctionTool(name="web_search")
    with pytest.raises(InvalidRequest):
        FunctionTool(name="has space")
    with pytest.raises(InvalidRequest):
        McpTool(server_label="bad label!", server_url="https://x")
    with pytest.raises(InvalidRequest):
        WebSearch(max_results=51)
    with pytest.raises(InvalidRequest):
        WebSearch(bogus=1)
    with pytest.raises(InvalidRequest):
        body(tools=[{"type": "function", "function": {"name": "fetch_url"}}])


def test_function_tool_chat_completions_shape():
    tool = FunctionTool(**{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}})
    assert tool.to_wire() == {"type": "function", "name": "f", "parameters": {"type": "object"}}


def test_reasoning_effort_values():
    assert body(reasoning="high")["reasoning"] == {"effort": "high"}
    with pytest.raises(InvalidRequest):
        body(reasoning="extreme")


def test_response_format_json_schema_and_pydantic_model():
    class Answer(BaseModel):
        title: str
        related_questions: list[str]

    b = body(response_format=Answer)
    assert b["response_format"]["type"] == "json_schema"
    assert b["response_format"]["json_schema"]["name"] == "Answer"
    assert "related_questions" in b["response_format"]["json_schema"]["schema"]["properties"]


def test_response_format_regex_rejected():
    with pytest.raises(InvalidRequest) as info:
        body(response_format={"type": "regex", "regex": {"regex": "a+"}})
    assert isinstance(info.value, PerplexedError)
    with pytest.raises(InvalidRequest):
        body(response_format={"type": "json_schema", "json_schema": {"name": "bad name!", "schema": {}}})


def test_request_object_plus_overrides():
    req = AgentRequest(input="x", preset="fast", instructions="a")
    merged = build_request(req, {"instructions": "b", "max_steps": 2})
    assert merged.to_body() == {"input": "x", "preset": "fast", "instructions": "b", "max_steps": 2}


def test_background_with_store_false_refused():
    with pytest.raises(InvalidRequest):
        body(background=True, store=False)
