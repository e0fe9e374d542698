"""A huge data line is parsed with its long strings cut out (agent/_elide.py, the SSE decoder's data_filter):
the result equals json.loads of the whole text, for any chunking, escapes, surrogate pairs and malformed
input, and a long string equal to text the caller holds is that very object (the answer is held once)."""

from __future__ import annotations

import json
import random
import sys
import tracemalloc
from typing import Any

import httpx
import pytest
from agent_helpers import FAKE_KEY
from hypothesis import given, settings
from hypothesis import strategies as st
from perplexed.agent import AgentClient
from perplexed.agent._elide import (  # private: the string elider is unit-tested at its edges
    StringElider,
    _safe_cut,
    restore,
)
from perplexed.agent.sse import SSEDecoder  # private: the SSE decoder's data filter is internal

SETTINGS = settings(max_examples=120, deadline=None, database=None)


def _pieces(text: str, rng: random.Random, biggest: int = 3000) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, biggest)
        out.append(text[i : i + n])
        i += n
    return out


def _elide(text: str, known: list[str], seed: int, threshold: int = 50) -> Any:
    elider = StringElider(lambda: known, threshold=threshold)
    for piece in _pieces(text, random.Random(seed), 200):
        elider.feed(piece)
    compact, strings = elider.finish()
    return restore(json.loads(compact), strings), compact, strings


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=400),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@SETTINGS
@given(value=json_values, seed=st.integers(0, 10_000), ascii_only=st.booleans())
def test_elided_parse_equals_json_loads(value: Any, seed: int, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    got, compact, _ = _elide(text, [], seed)
    assert got == json.loads(text)
    assert len(compact) <= len(text) + 200 * max(1, text.count('"'))


@SETTINGS
@given(
    body=st.text(
        alphabet=st.sampled_from(list('ab"\\\n\t\u00e9\u4e2d\U0001f600\ud7ff/')), min_size=60, max_size=3000
    ),
    seed=st.integers(0, 10_000),
    ascii_only=st.booleans(),
)
def test_long_strings_with_every_kind_of_escape_round_trip(body: str, seed: int, ascii_only: bool) -> None:
    text = json.dumps({"a": body, "b": [body[::-1], 1]}, ensure_ascii=ascii_only)
    got, _, strings = _elide(text, [], seed)
    assert got == {"a": body, "b": [body[::-1], 1]} and strings


def test_a_long_string_equal_to_a_known_one_is_that_object() -> None:
    rng = random.Random(1)
    answer = "".join(rng.choice('lorem ipsum\n"é😀') for _ in range(200_000))
    known = [answer[:100], answer]  # the first candidate is a prefix: it is dropped on the way
    text = json.dumps(
        {"type": "response.completed", "response": {"output": [{"content": [{"text": answer}]}]}}
    )
    got, compact, _ = _elide(text, known, 7, threshold=1000)
    value = got["response"]["output"][0]["content"][0]["text"]
    assert value == answer and value is answer
    assert len(compact) < 300


@pytest.mark.parametrize("where", [0, 1, 99_999, 150_000, 199_999])
def test_a_long_string_that_differs_from_the_known_one_is_decoded(where: int) -> None:
    answer = "x" * 200_000
    other = answer[:where] + "y" + answer[where + 1 :]
    text = json.dumps([other, "short"])
    got, _, _ = _elide(text, [answer], 3, threshold=1000)
    assert got == [other, "short"] and got[0] is not answer
    shorter, _, _ = _elide(json.dumps([answer[:-5]]), [answer], 3, threshold=1000)
    assert shorter == [answer[:-5]]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "' + "x" * 500 + '\\q"}',  # a bad escape in a long string
        '{"a": "' + "x" * 500,  # an unterminated long string
        '{"a": "' + "x" * 500 + '\\u12"}',
        '{"a": "' + "x" * 20 + '\\q"}',  # a bad escape in a short one
    ],
)
def test_malformed_text_stays_malformed(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    elider = StringElider(threshold=50)
    for piece in _pieces(text, random.Random(5), 37):
        elider.feed(piece)
    compact, _ = elider.finish()
    with pytest.raises(ValueError):
        json.loads(compact)


@pytest.mark.parametrize(
    ("raw", "cut"),
    [
        ("abc", 3),
        ("abc\\n", 3),
        ("abc\\", 3),
        ("abc\\\\", 3),
        ("abc\\u00", 3),
        ("abc\\ud83d\\ude00", 3),  # never between the two halves of a surrogate pair
        ("abc\\\\ud83d\\ude00", 10),  # an escaped backslash then text: not a surrogate escape
        ("abc\\ud83dxyzxyzxyzxyz", 21),
    ],
)
def test_safe_cut(raw: str, cut: int) -> None:
    assert _safe_cut(raw) == cut


# --- the SSE decoder's data_filter ---------------------------------------------------------------------


class _Collect:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    def feed(self, text: str) -> None:
        self.pieces.append(text)

    def finish(self) -> str:
        return "".join(self.pieces)


@SETTINGS
@given(
    lines=st.lists(
        st.text(alphabet=st.sampled_from(list("ab :é\r\n")), max_size=300), min_size=1, max_size=6
    ),
    seed=st.integers(0, 10_000),
    big=st.integers(1, 200),
)
def test_a_filtered_decoder_gives_the_same_events(lines: list[str], seed: int, big: int) -> None:
    raw = ("\ufeff" if seed % 3 == 0 else "") + "".join(
        f"data:{' ' if i % 2 else ''}{line}\n" + ("\n" if i % 3 == 0 else "") for i, line in enumerate(lines)
    )
    data = raw.encode()
    plain, filtered = SSEDecoder(), SSEDecoder(data_filter=_Collect, big_line=big)
    rng = random.Random(seed)
    got_plain, got_filtered = [], []
    i = 0
    while i < len(data):
        n = rng.randint(1, 64)
        got_plain += plain.feed(data[i : i + n])
        got_filtered += filtered.feed(data[i : i + n])
        i += n
    assert got_filtered == got_plain


# --- the whole stream ------------------------------------------------------------------------------------


def _sse(events: list[dict[str, Any]], chunk: int) -> list[bytes]:
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return [body[i : i + chunk] for i in range(0, len(body), chunk)]


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self):  # type: ignore[override]
        for c in self.chunks:
            yield c


def _events(answer: str, final_text: str | None) -> list[dict[str, Any]]:
    created = {"id": "resp_big", "object": "response", "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "sequence_number": 0, "response": created}]
    for i in range(0, len(answer), 1000):
        events.append(
            {
                "type": "response.output_text.delta",
                "sequence_number": len(events),
                "output_index": 0,
                "content_index": 0,
                "delta": answer[i : i + 1000],
            }
        )
    output = (
        []
        if final_text is None
        else [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": final_text}]}
        ]
    )
    final = {**created, "status": "completed", "output": output, "usage": {"cost": {"total_cost": 0.5}}}
    events.append({"type": "response.completed", "sequence_number": len(events), "response": final})
    return events


@pytest.mark.parametrize("case", ["same", "different", "no_output"])
def test_a_big_stream_gives_the_same_response_as_before(case: str) -> None:
    rng = random.Random(11)
    answer = "".join(rng.choice('ab cd\n"é😀\\') for _ in range(20_000)) * 60  # 1.2 M characters
    final_text = {"same": answer, "different": answer[:-10] + "0123456789", "no_output": None}[case]
    events = _events(answer, final_text)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Chunks(_sse(events, 65536))
        )

    client = AgentClient(
        api_key=FAKE_KEY, base_url="https://api.test", transport=httpx.MockTransport(handler)
    )
    stream = client.stream(preset="fast", input="q")
    got = list(stream)
    assert [e.sequence_number for e in got] == [e["sequence_number"] for e in events]
    final = stream.response
    assert final is not None and final.cost == 0.5
    assert final.output_text == (answer if final_text is None else final_text)


def test_a_big_stream_holds_the_answer_once() -> None:
    """The peak of a 2 MB answer stream stays under twice the answer (it was three copies and more)."""
    rng = random.Random(12)
    answer = "".join(rng.choice('ab cd\n"é\\') for _ in range(20_000)) * 100  # 2 M characters, 1 byte each
    events = _events(answer, answer)
    chunks = _sse(events, 65536)
    del events

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Chunks(chunks))

    client = AgentClient(
        api_key=FAKE_KEY, base_url="https://api.test", transport=httpx.MockTransport(handler)
    )
    client.create(preset="fast", input="warm up", stream=True)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        final = client.create(preset="fast", input="q", stream=True)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert final.output_text == answer
    size = sys.getsizeof(answer)
    assert peak < 2 * size, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB answer"
