"""Response, output-item and event models: dispatch on the raw type, unknowns kept raw, the assembler."""

from __future__ import annotations

from agent_helpers import RESPONSE_COMPLETED, cassette_events
from perplexed.agent import (
    FunctionCallItem,
    MessageItem,
    Response,
    SearchResult,
    SearchResultsItem,
    UnknownEvent,
    UnknownOutputItem,
)
from perplexed.agent._response import (  # private: event and output-item parsing is tested per event class
    ErrorEvent,
    OutputItemAddedEvent,
    OutputTextDeltaEvent,
    ReasoningEvent,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFailedEvent,
    ResponseIncompleteEvent,
    StreamAssembler,
    parse_event,
    parse_output_item,
)


def test_response_computed_fields():
    resp = Response.model_validate(RESPONSE_COMPLETED)
    assert resp.id == "resp_abc"
    assert resp.model == "openai/gpt-5.1"
    assert resp.output_text == "Answer [1][2] and [9]."
    assert [(r.id, r.url) for r in resp.search_results] == [
        (1, "https://a.example/1"),
        (2, "https://b.example/2"),
    ]
    r1 = resp.search_results[0]
    assert (r1.title, r1.snippet, r1.date, r1.last_updated) == ("A", "a", "2026-03-01", None)
    assert resp.cost == 0.0123
    assert resp.usage is not None and resp.usage.total_tokens == 15
    cites = resp.citations
    assert [c.number for c in cites] == [1, 2]
    assert [c.number for c in cites.unmatched] == [9]
    assert cites.sources == resp.search_results


def test_cost_absent():
    assert Response.model_validate({"id": "r", "status": "completed"}).cost is None
    assert Response.model_validate({"id": "r", "usage": {"input_tokens": 1}}).cost is None


def test_output_text_concatenates_messages_and_parts():
    resp = Response.model_validate(
        {
            "output": [
                {
                    "type": "message",
                    "content": [{"type": "output_text", "text": "a"}, {"type": "refusal", "x": 1}],
                },
                {"type": "search_results", "results": []},
                {"type": "message", "content": [{"type": "output_text", "text": "b"}]},
            ]
        }
    )
    assert resp.output_text == "ab"
    assert resp.output[0].content[1] == {"type": "refusal", "x": 1}


def test_unknown_output_items_kept_raw_not_mislabelled():
    raw = {"type": "sandbox_results", "call_id": "c", "code": "print(1)", "status": "completed"}
    resp = Response.model_validate({"output": [raw, {"type": "message", "content": []}]})
    item = resp.output[0]
    assert isinstance(item, UnknownOutputItem)
    assert item.type == "sandbox_results"
    assert item.raw == raw
    assert not isinstance(item, MessageItem)
    # and it round-trips
    assert resp.model_dump()["output"][0]["raw"] == raw


def test_known_item_that_does_not_fit_is_kept_raw():
    item = parse_output_item({"type": "search_results", "results": "not a list"})
    assert isinstance(item, UnknownOutputItem) and item.type == "search_results"


def test_function_call_item():
    item = parse_output_item(
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        }
    )
    assert isinstance(item, FunctionCallItem)
    assert item.parsed_arguments() == {"city": "Paris"}
    assert Response(output=[item]).function_calls == [item]


def test_extra_fields_survive():
    resp = Response.model_validate({"id": "r", "completed_at": 5, "brand_new_field": {"x": 1}})
    assert resp.model_extra == {"brand_new_field": {"x": 1}}
    result = SearchResult.model_validate({"id": 1, "url": "u", "title": "t", "snippet": "s", "favicon": "f"})
    assert result.model_extra == {"favicon": "f"}


def test_event_dispatch_on_raw_type():
    assert isinstance(
        parse_event({"type": "response.created", "sequence_number": 0, "response": {"id": "r"}}),
        ResponseCreatedEvent,
    )
    delta = parse_event(
        {"type": "response.output_text.delta", "sequence_number": 3, "delta": "Hi", "item_id": "m"}
    )
    assert isinstance(delta, OutputTextDeltaEvent) and delta.delta == "Hi" and delta.sequence_number == 3
    reasoning = parse_event(
        {"type": "response.reasoning.search_queries", "sequence_number": 1, "queries": ["q"]}
    )
    assert isinstance(reasoning, ReasoningEvent) and reasoning.type == "response.reasoning.search_queries"
    inc = parse_event(
        {"type": "response.incomplete", "sequence_number": 9, "response": {"status": "incomplete"}}
    )
    assert isinstance(inc, ResponseIncompleteEvent)
    err = parse_event({"type": "error", "error": {"message": "boom", "code": "x"}})
    assert isinstance(err, ErrorEvent) and err.info.message == "boom"
    flat = parse_event({"type": "error", "message": "flat", "code": 500})
    assert isinstance(flat, ErrorEvent) and flat.info.message == "flat" and flat.info.code == 500


def test_unknown_events_kept_raw():
    raw = {"type": "response.future_feature", "sequence_number": 4, "payload": [1]}
    event = parse_event(raw)
    assert isinstance(event, UnknownEvent)
    assert event.type == "response.future_feature"
    assert event.sequence_number == 4
    assert event.raw == raw


def test_event_type_from_sse_event_name_when_json_has_none():
    event = parse_event({"sequence_number": 1, "delta": "x"}, "response.output_text.delta")
    assert isinstance(event, OutputTextDeltaEvent)


def test_output_item_added_with_unknown_item_type():
    event = parse_event(
        {
            "type": "response.output_item.added",
            "sequence_number": 2,
            "output_index": 5,
            "item": {"type": "hologram"},
        }
    )
    assert isinstance(event, OutputItemAddedEvent)
    assert isinstance(event.item, UnknownOutputItem) and event.item.type == "hologram"


def assemble(events):
    asm = StreamAssembler()
    for e in events:
        asm.feed(parse_event(e))
    return asm


def test_assembler_uses_terminal_response():
    asm = assemble(cassette_events("stream_normal"))
    final = asm.response()
    assert final.id == "resp_s1"
    assert final.status == "completed"
    assert final.output_text.startswith("The EU AI Act's obligations")
    assert final.cost == 0.0111
    assert asm.last_sequence_number == cassette_events("stream_normal")[-1]["sequence_number"]


def test_assembler_rebuilds_output_when_terminal_has_none():
    events = cassette_events("stream_normal")
    events[-1] = {
        "type": "response.completed",
        "sequence_number": 99,
        "response": {"id": "resp_s1", "status": "completed", "usage": {"cost": {"total_cost": 1.5}}},
    }
    final = assemble(events).response()
    assert (
        final.output_text
        == "The EU AI Act's obligations for general-purpose AI models now apply [1][2]. Ünïcödé ✓"
    )
    assert [r.id for r in final.search_results] == [1, 2, 3]
    assert final.cost == 1.5
    assert final.model == "openai/gpt-5.1"  # kept from response.created


def test_assembler_from_deltas_only():
    events = [
        {"type": "response.created", "sequence_number": 0, "response": {"id": "r", "status": "in_progress"}},
        {
            "type": "response.reasoning.search_results",
            "sequence_number": 1,
            "results": [{"id": 1, "url": "https://u", "title": "T", "snippet": "s"}],
        },
        {
            "type": "response.output_text.delta",
            "sequence_number": 2,
            "output_index": 0,
            "content_index": 0,
            "delta": "Hi ",
        },
        {
            "type": "response.output_text.delta",
            "sequence_number": 3,
            "output_index": 0,
            "content_index": 0,
            "delta": "[1]",
        },
        {"type": "response.completed", "sequence_number": 4},
    ]
    final = assemble(events).response()
    assert final.status == "completed"
    assert final.output_text == "Hi [1]"
    assert [c.url for c in final.citations] == ["https://u"]
    assert isinstance(final.output[0], SearchResultsItem)


def test_assembler_failed_and_incomplete():
    asm = assemble(cassette_events("stream_failed"))
    assert isinstance(asm.terminal, ResponseFailedEvent)
    assert asm.response().status == "failed"
    assert asm.response().error is not None and asm.response().error.message == "upstream model error"
    final = assemble(cassette_events("stream_incomplete")).response()
    assert final.status == "incomplete"
    assert final.incomplete_details is not None and final.incomplete_details.reason == "max_output_tokens"


def test_completed_event_model():
    event = parse_event(cassette_events("stream_normal")[-1])
    assert isinstance(event, ResponseCompletedEvent)
    assert event.response is not None and event.response.status == "completed"
