"""from_sonar: one test row per row of the Sonar → Agent migration table."""

from __future__ import annotations

from typing import Any

import pytest
from perplexed import InvalidRequest, PerplexedError
from perplexed.agent import AgentRequest, MigrationWarning, from_sonar
from perplexed.agent.sonar import SKILL_PRESET_MAP  # private: every skill in the migration map gets a row

USER = [{"role": "user", "content": "What is new in fusion energy?"}]

# (row id, Sonar kwargs, expected subset of the Agent body, Sonar fields expected among the warnings)
ROWS: list[tuple[str, dict[str, Any], dict[str, Any], set[str]]] = [
    ("model sonar", {"model": "sonar"}, {"preset": "fast"}, set()),
    ("model sonar-pro", {"model": "sonar-pro"}, {"preset": "fast"}, set()),
    ("model sonar-reasoning-pro", {"model": "sonar-reasoning-pro"}, {"preset": "low"}, set()),
    ("model sonar-deep-research", {"model": "sonar-deep-research"}, {"preset": "high"}, set()),
    ("model provider slug", {"model": "openai/gpt-5.1"}, {"model": "openai/gpt-5.1"}, set()),
    (
        "messages and system",
        {
            "model": "sonar",
            "messages": [
                {"role": "system", "content": "Be concise."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "What is new?"},
            ],
        },
        {
            "instructions": "Be concise.",
            "input": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "What is new?"},
            ],
        },
        set(),
    ),
    ("max_tokens", {"model": "sonar", "max_tokens": 500}, {"max_output_tokens": 500}, set()),
    (
        "response_format json_schema",
        {
            "model": "sonar",
            "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}},
        },
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": {"type": "object"}},
            }
        },
        set(),
    ),
    (
        "search filters",
        {
            "model": "sonar",
            "search_domain_filter": ["nature.com"],
            "search_recency_filter": "week",
            "last_updated_after_filter": "1/1/2025",
            "last_updated_before_filter": "2/1/2025",
        },
        {
            "tools": [
                {
                    "type": "web_search",
                    "filters": {
                        "search_domain_filter": ["nature.com"],
                        "search_recency_filter": "week",
                        "last_updated_after_filter": "01/01/2025",
                        "last_updated_before_filter": "02/01/2025",
                    },
                }
            ]
        },
        set(),
    ),
    (
        "date filters",
        {"model": "sonar", "search_after_date_filter": "3/1/2025", "search_before_date_filter": "3/31/2025"},
        {
            "tools": [
                {
                    "type": "web_search",
                    "filters": {
                        "search_after_date_filter": "03/01/2025",
                        "search_before_date_filter": "03/31/2025",
                    },
                }
            ]
        },
        set(),
    ),
    (
        "web_search_options context size and location",
        {
            "model": "sonar",
            "web_search_options": {
                "search_context_size": "high",
                "user_location": {"country": "FR", "city": "Paris", "latitude": 48.85, "longitude": 2.35},
            },
        },
        {
            "tools": [
                {
                    "type": "web_search",
                    "search_context_size": "high",
                    "user_location": {"country": "FR", "city": "Paris", "latitude": 48.85, "longitude": 2.35},
                }
            ]
        },
        set(),
    ),
    (
        "num_search_results",
        {"model": "sonar", "num_search_results": 7},
        {"tools": [{"type": "web_search", "max_results": 7}]},
        {"num_search_results"},
    ),
    (
        "reasoning_effort",
        {"model": "sonar-reasoning-pro", "reasoning_effort": "high"},
        {"reasoning": {"effort": "high"}},
        set(),
    ),
    (
        "enable_search_classifier",
        {"model": "sonar", "enable_search_classifier": True},
        {"tools": [{"type": "web_search"}]},
        {"enable_search_classifier"},
    ),
    ("disable_search", {"model": "sonar", "disable_search": True}, {"max_tool_calls": 0}, {"disable_search"}),
    (
        "search_mode academic",
        {"model": "sonar", "search_mode": "academic"},
        {"preset": "fast"},
        {"search_mode"},
    ),
    (
        "search_mode sec",
        {"model": "sonar", "search_mode": "sec"},
        {"tools": [{"type": "finance_search"}]},
        {"search_mode"},
    ),
    (
        "search_type fast",
        {"model": "sonar-pro", "web_search_options": {"search_type": "fast"}},
        {"preset": "fast"},
        {"search_type"},
    ),
    (
        "search_type pro",
        {"model": "sonar", "web_search_options": {"search_type": "pro"}},
        {"preset": "low"},
        {"search_type"},
    ),
    (
        "return_related_questions",
        {"model": "sonar", "return_related_questions": True},
        {
            "instructions": "After the answer, add a section titled 'Related questions:' listing three follow-up questions."
        },
        {"return_related_questions"},
    ),
    ("stream", {"model": "sonar", "stream": True}, {"stream": True}, set()),
    (
        "image_url",
        {
            "model": "sonar",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Describe"},
                        {"type": "image_url", "image_url": {"url": "https://x.example/c.png"}},
                    ],
                }
            ],
        },
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "Describe"},
                        {"type": "input_image", "image_url": "https://x.example/c.png"},
                    ],
                }
            ]
        },
        set(),
    ),
    ("images", {"model": "sonar", "return_images": True}, {"preset": "fast"}, {"return_images"}),
    ("videos", {"model": "sonar", "return_videos": True}, {"preset": "fast"}, {"return_videos"}),
    (
        "search_language_filter",
        {"model": "sonar", "search_language_filter": ["fr"]},
        {"preset": "fast"},
        {"search_language_filter"},
    ),
    (
        "stream_mode",
        {"model": "sonar", "stream": True, "stream_mode": "concise"},
        {"stream": True},
        {"stream_mode"},
    ),
]


@pytest.mark.parametrize(("row", "sonar", "expected", "warned"), ROWS, ids=[r[0] for r in ROWS])
def test_migration_table(row, sonar, expected, warned):
    sonar.setdefault("messages", USER)
    request, warnings = from_sonar(**sonar)
    assert isinstance(request, AgentRequest)
    body = request.to_body()
    for key, value in expected.items():
        assert body[key] == value, (row, key, body)
    assert all(isinstance(w, MigrationWarning) and isinstance(w, str) for w in warnings)
    assert {w.field for w in warnings} == warned, warnings
    # nothing Sonar-only leaks into the body
    leaked = set(body) & {
        "messages",
        "max_tokens",
        "search_mode",
        "disable_search",
        "web_search_options",
        "return_images",
    }
    assert not leaked


@pytest.mark.parametrize("part", ["file_url", "pdf_url", "video_url"])
def test_file_parts_are_errors(part):
    messages = [{"role": "user", "content": [{"type": part, part: {"url": "https://x.example/doc"}}]}]
    with pytest.raises(PerplexedError) as info:
        from_sonar(model="sonar", messages=messages)
    assert part in str(info.value)


def test_regex_response_format_is_an_error():
    with pytest.raises(PerplexedError, match="regex"):
        from_sonar(
            model="sonar", messages=USER, response_format={"type": "regex", "regex": {"regex": "[a-z]+"}}
        )


def test_disable_search_warning_says_preset_tools_stay():
    _, warnings = from_sonar(model="sonar", messages=USER, disable_search=True)
    assert "stay" in warnings[0] and "max_tool_calls" in warnings[0]


def test_academic_warning_suggests_a_pattern():
    _, warnings = from_sonar(model="sonar", messages=USER, search_mode="academic")
    assert "search_domain_filter" in warnings[0]


def test_mapping_is_overridable():
    request, _ = from_sonar(model="sonar-pro", messages=USER, preset_map={"sonar-pro": "low"})
    assert request.preset == "low"
    request, _ = from_sonar(model="sonar", messages=USER, preset_map=SKILL_PRESET_MAP)
    body = request.to_body()
    assert body["model"] == "perplexity/sonar" and body["tools"] == [{"type": "web_search"}]


def test_anthropic_without_max_tokens_is_refused():
    with pytest.raises(InvalidRequest):
        from_sonar(model="anthropic/claude-sonnet-4-5", messages=USER)
    request, _ = from_sonar(model="anthropic/claude-sonnet-4-5", messages=USER, max_tokens=100)
    assert request.max_output_tokens == 100


def test_unknown_and_unsupported_fields_dropped_with_warnings():
    _, warnings = from_sonar(
        model="sonar",
        messages=USER,
        presence_penalty=0.5,
        bogus_field=1,
        web_search_options={"image_search_relevance_enhanced": True},
    )
    assert {w.field for w in warnings} == {
        "presence_penalty",
        "bogus_field",
        "web_search_options.image_search_relevance_enhanced",
    }


def test_kept_fields_and_function_tools():
    request, warnings = from_sonar(
        model="sonar",
        messages=USER,
        temperature=0.3,
        top_p=0.8,
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
        tool_choice="auto",
    )
    body = request.to_body()
    assert (body["temperature"], body["top_p"], body["tool_choice"]) == (0.3, 0.8, "auto")
    assert body["tools"] == [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
    assert warnings == []


def test_translation_unpacks_and_has_attributes():
    translation = from_sonar(model="sonar", messages=USER)
    assert translation.request.preset == "fast" and translation.warnings == []
    request = translation.request
    assert request["preset"] == "fast" and "tools" not in request and request.get("input")
