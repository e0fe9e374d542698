"""A stream does not hold the answer twice: the raw data of an event is released once parsed, and the text
gathered from deltas once an authoritative terminal response arrives. The results stay identical."""

from __future__ import annotations

import copy
import json

from agent_helpers import FAKE_KEY, cassette_events
from agent_sse_server import Reply, serve
from perplexed.agent import AgentClient, UnknownEvent
from perplexed.agent._response import (  # private: the stream assembler's memory is measured directly
    StreamAssembler,
    parse_event,
)


def _assemble(events: list[dict]) -> StreamAssembler:
    asm = StreamAssembler()
    for e in events:
        asm.feed(parse_event(copy.deepcopy(e)))
    return asm


def test_completed_with_output_releases_the_gathered_text_and_gives_the_same_response():
    events = cassette_events("stream_normal")
    asm = _assemble(events)
    assert not asm._text and not asm._items
    final = parse_event(events[-1]).response  # type: ignore[union-attr]
    assert final is not None and final.output
    assert asm.response().output_text == final.output_text
    assert asm.response().model_dump() == _assemble(events).response().model_dump()


def test_terminal_without_output_still_rebuilds_from_deltas():
    events = cassette_events("stream_normal")
    expected = _assemble(events).response().output_text
    events[-1]["response"]["output"] = []
    asm = _assemble(events)
    assert asm.response().output_text == expected


def test_non_json_events_in_one_chunk_are_kept_raw_in_order():
    events = cassette_events("stream_normal")
    body = b"data: not json\n\ndata: [also not]\n\n" + b"".join(
        ("data: " + json.dumps(e) + "\n\n").encode() for e in events
    )
    with serve(lambda req: Reply(steps=[body])) as server:
        got = list(AgentClient(api_key=FAKE_KEY, base_url=server.url).stream(preset="fast", input="x"))
    assert [type(e) for e in got[:2]] == [UnknownEvent, UnknownEvent]
    assert [e.raw for e in got[:2]] == [{"data": "not json"}, {"data": "[also not]"}]  # type: ignore[union-attr]
    assert [e.sequence_number for e in got[2:]] == [e["sequence_number"] for e in events]
