"""The SSE decoder: WHATWG rules, any chunking, no I/O."""

from __future__ import annotations

import pytest
from agent_helpers import cassette_body, chunks_of
from hypothesis import given, settings
from hypothesis import strategies as st
from perplexed import PerplexedError
from perplexed.agent.sse import (  # private: the SSE decoder is tested on raw byte streams
    ServerSentEvent,
    SSEDecoder,
    aiter_sse,
    iter_sse,
)


def decode(data: bytes, sizes: list[int] | None = None) -> list[ServerSentEvent]:
    dec = SSEDecoder()
    out: list[ServerSentEvent] = []
    for chunk in chunks_of(data, sizes) if sizes else [data]:
        out.extend(dec.feed(chunk))
    out.extend(dec.close())
    return out


def test_basic_data_frames():
    events = decode(b'data: {"a":1}\n\ndata: {"b":2}\n\n')
    assert [e.data for e in events] == ['{"a":1}', '{"b":2}']
    assert events[0].event == "message"
    assert events[0].json() == {"a": 1}


def test_event_line_optional():
    events = decode(b"event: response.created\ndata: x\n\ndata: y\n\n")
    assert [(e.event, e.data) for e in events] == [("response.created", "x"), ("message", "y")]


def test_multiline_data_joined_with_newline():
    assert decode(b"data: a\ndata: b\ndata:\ndata: c\n\n")[0].data == "a\nb\n\nc"


def test_comments_and_keepalives_ignored():
    data = b": hello\n\n: keep-alive\n\n\n\ndata: x\n: inside\n\n\n"
    events = decode(data)
    assert [e.data for e in events] == ["x"]


def test_line_endings_crlf_cr_lf():
    for sep in (b"\n", b"\r\n", b"\r"):
        events = decode(b"data: a" + sep + b"data: b" + sep + sep + b"data: c" + sep + sep)
        assert [e.data for e in events] == ["a\nb", "c"], sep


def test_crlf_split_across_chunks_is_one_line_ending():
    dec = SSEDecoder()
    assert dec.feed(b"data: a\r") == []
    assert dec.feed(b"\n") == []  # completes the CRLF: not an empty line
    assert [e.data for e in dec.feed(b"\r\n")] == ["a"]


def test_space_after_colon_only_one_stripped():
    assert decode(b"data:  two\n\n")[0].data == " two"
    assert decode(b"data:none\n\n")[0].data == "none"


def test_field_without_colon():
    # "data" alone is a data line with an empty value; an unknown field is ignored
    assert decode(b"data\ndata: x\n\n")[0].data == "\nx"
    assert decode(b"foo\ndata: y\n\n")[0].data == "y"


def test_event_without_data_not_dispatched_and_event_type_reset():
    events = decode(b"event: lonely\n\ndata: x\n\n")
    assert [(e.event, e.data) for e in events] == [("message", "x")]


def test_id_persists_and_nul_ignored_retry_digits_only():
    events = decode(b"id: 7\ndata: a\n\ndata: b\n\nid: x\0y\nretry: 150\ndata: c\n\nretry: 1x\ndata: d\n\n")
    assert [e.id for e in events] == ["7", "7", "7", "7"]
    assert [e.retry for e in events] == [None, None, 150, None]


def test_bom_stripped_once():
    events = decode(b"\xef\xbb\xbfdata: a\n\n\xef\xbb\xbfdata: b\n\n")
    assert events[0].data == "a"
    assert len(events) == 1  # the second BOM makes an unknown field name


def test_unterminated_event_discarded_at_end():
    dec = SSEDecoder()
    assert dec.feed(b"data: complete\n\ndata: partial") != []
    assert dec.has_pending
    assert dec.close() == []


def test_utf8_split_inside_multibyte_char():
    data = "data: Ünïcödé ✓ 😀\n\n".encode()
    for cut in range(1, len(data)):
        dec = SSEDecoder()
        events = dec.feed(data[:cut]) + dec.feed(data[cut:])
        assert [e.data for e in events] == ["Ünïcödé ✓ 😀"]


def test_done_sentinel_is_just_data():
    assert decode(b"data: [DONE]\n\n")[0].data == "[DONE]"


def test_max_event_bytes():
    dec = SSEDecoder(max_event_bytes=100)
    with pytest.raises(PerplexedError):
        dec.feed(b"data: " + b"x" * 200)
    dec = SSEDecoder(max_event_bytes=100)
    with pytest.raises(PerplexedError):
        for _ in range(30):
            dec.feed(b"data: xxxxxxx\n")


@pytest.mark.parametrize(
    "name",
    ["stream_normal", "stream_reasoning", "stream_event_lines", "stream_unknown_event", "stream_failed"],
)
@pytest.mark.parametrize("sizes", [[1], [2, 3], [7], [13, 1, 64], [4096]])
def test_cassette_transcripts_any_chunking(name, sizes):
    body = cassette_body(name)
    whole = decode(body)
    assert whole and all(e.data.startswith("{") for e in whole)
    assert decode(body, sizes) == whole


def test_every_split_point():
    body = cassette_body("stream_event_lines")[:3000].replace(b"\n", b"\r\n")
    whole = decode(body)
    for cut in range(0, len(body), 7):
        dec = SSEDecoder()
        assert dec.feed(body[:cut]) + dec.feed(body[cut:]) + dec.close() == whole


def test_iter_helpers():
    body = b"data: 1\n\ndata: 2\n\n"
    assert [e.data for e in iter_sse(chunks_of(body, [3]))] == ["1", "2"]


async def test_aiter_helper():
    async def gen():
        for c in chunks_of(b"data: 1\n\ndata: 2\n\n", [5]):
            yield c

    assert [e.data async for e in aiter_sse(gen())] == ["1", "2"]


frame = st.one_of(
    st.text(
        alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=20
    ).map(lambda t: "data: " + t),
    st.sampled_from([": comment", "event: e", "id: 3", "retry: 10", "data", "", "x: y"]),
)


@settings(max_examples=200, deadline=None, database=None)
@given(
    lines=st.lists(frame, max_size=30),
    sep=st.sampled_from(["\n", "\r\n", "\r"]),
    sizes=st.lists(st.integers(1, 17), min_size=1, max_size=5),
)
def test_fuzz_chunking_never_changes_events(lines, sep, sizes):
    body = (sep.join(lines) + sep + sep).encode()
    assert decode(body, sizes) == decode(body)


def test_same_events_as_official_sdk_decoder():
    sdk = pytest.importorskip("perplexity._streaming")
    body = cassette_body("stream_event_lines") + b"id: 5\nretry: 20\ndata: a\ndata: b\n\n"
    theirs = [
        (e.event or "message", e.data, e.id or "", e.retry) for e in sdk.SSEDecoder().iter_bytes(iter([body]))
    ]
    ours = [(e.event, e.data, e.id, e.retry) for e in decode(body, [3, 11])]
    assert ours == theirs
