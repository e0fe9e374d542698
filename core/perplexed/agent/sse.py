"""A Server-Sent Events decoder: bytes in, events out, no I/O.

Follows the WHATWG "event stream interpretation" rules literally (like h11 and httpx-sse): lines end in
CRLF, LF or CR (also when a CRLF pair is split across two chunks); a leading BOM is dropped; ``:`` lines are
comments (keep-alives); a line without a colon is a field name with an empty value; one leading space after
the colon is dropped; ``data`` lines are joined with ``\\n``; ``id`` persists across events (and is ignored
when it contains NUL); ``retry`` takes ASCII digits only; an event whose data buffer is empty is not
dispatched; an unterminated event at the end of the stream is discarded.

Feed it chunks of any size with :meth:`SSEDecoder.feed`, which returns the events completed by that chunk;
call :meth:`SSEDecoder.close` at the end of the stream. The caller owns sockets and time.

``data_filter`` (optional) bounds the memory of a huge ``data:`` line: once an unterminated ``data`` line
passes ``big_line`` bytes, its value is decoded as it arrives and handed piece by piece to a filter made by
``data_filter()`` (``feed(str)``, then ``finish() -> str`` at the end of the line), whose result becomes the
line's value: the raw line is never held whole. The Agent client uses it to keep a multi-megabyte
``response.completed`` out of memory (see ``_elide.py``).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any, NamedTuple, Protocol

from perplexed._errors import StreamError

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "DataFilter", "SSEDecoder", "ServerSentEvent", "aiter_sse", "iter_sse"]

DEFAULT_MAX_EVENT_BYTES = 32 * 1024 * 1024
_BOM = "\ufeff"


#: blocks at least this large (a multi-megabyte ``response.completed`` snapshot) are decoded line by line
_BIG_BLOCK = 1024 * 1024


class ServerSentEvent(NamedTuple):
    """One dispatched event (an immutable tuple: cheap to build, compares by value).

    ``event`` is the ``event:`` field, ``"message"`` when the stream sent none; ``data`` the joined
    ``data:`` lines; ``id`` the last event id seen so far (``""`` when none); ``retry`` the reconnection
    time in ms when this event set one.
    """

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None

    def json(self) -> Any:
        """``data`` parsed as JSON."""
        return json.loads(self.data)


_new_event = tuple.__new__  # builds a ServerSentEvent without the NamedTuple's Python-level __new__

#: an unterminated ``data`` line this long goes to the ``data_filter`` (when one is given)
DEFAULT_BIG_LINE = 256 * 1024
_BIG_STEP = 64 * 1024


class DataFilter(Protocol):
    """Receives the value of one huge ``data`` line piece by piece; ``finish()`` gives the value to keep."""

    def feed(self, text: str) -> None: ...

    def finish(self) -> str: ...


class _BigLine:
    """A huge ``data`` line in progress: bytes are decoded incrementally and handed to the filter."""

    __slots__ = ("decoder", "filter", "first")

    def __init__(self, data_filter: DataFilter) -> None:
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.filter = data_filter
        self.first = True  # the optional space after "data:" is still to be dropped

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self.decoder.decode(data, final)
        if self.first and text:
            self.first = False
            if text[0] == " ":
                text = text[1:]
        if text:
            self.filter.feed(text)


class SSEDecoder:
    """Incremental WHATWG SSE decoder over bytes.

    ``max_event_bytes`` bounds the memory one event (or one unterminated line) may take; crossing it
    raises :class:`perplexed.agent.StreamError`. ``None`` disables the bound.
    """

    __slots__ = (
        "_big",
        "_big_line",
        "_data",
        "_data_filter",
        "_data_size",
        "_event",
        "_last_id",
        "_max",
        "_pending",
        "_pending_size",
        "_retry",
        "_skip_lf",
        "_started",
    )

    def __init__(
        self,
        *,
        max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
        data_filter: Callable[[], DataFilter] | None = None,
        big_line: int = DEFAULT_BIG_LINE,
    ) -> None:
        self._max = max_event_bytes
        self._data_filter = data_filter
        self._big_line = big_line
        self._big: _BigLine | None = None  # the huge data line being filtered
        self._pending: list[bytes] = []  # bytes of an unterminated line
        self._pending_size = 0
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF completes that CRLF
        self._started = False  # the BOM check has been done
        self._event = ""
        self._data: list[str] = []
        self._data_size = 0
        self._last_id = ""
        self._retry: int | None = None

    @property
    def last_event_id(self) -> str:
        """The last ``id:`` seen (persists across events, as the spec says)."""
        return self._last_id

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Consume ``chunk`` and return the events it completed (possibly none)."""
        if not chunk:
            return []
        if self._big is not None:
            return self._feed_big(chunk)
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == 0x0A:  # "\n"
                chunk = chunk[1:]
                if not chunk:
                    return []
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if end < 0:
            self._pending.append(chunk)
            self._pending_size += len(chunk)
            self._check_size()
            crossed = self._pending_size - len(chunk) < self._big_line <= self._pending_size
            if crossed and self._data_filter is not None:
                self._start_big()
            return []
        if self._pending:
            self._pending.append(chunk[: end + 1])
            block = b"".join(self._pending)
            self._pending.clear()
        else:
            block = chunk[: end + 1] if end + 1 < len(chunk) else chunk
        rest = chunk[end + 1 :]
        if rest:
            self._pending.append(rest)
        self._pending_size = len(rest)
        if rest:
            self._check_size()
        if block[-1] == 0x0D:  # "\r": a following "\n" belongs to this line ending
            self._skip_lf = True
        text = block.decode("utf-8", "replace")
        big = len(block) >= _BIG_BLOCK
        del block  # a multi-megabyte event must not be held as bytes and str at once
        if not self._started:
            self._started = True
            if text.startswith(_BOM):
                text = text[1:]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        del text
        lines.pop()  # the block ends with a line terminator: the last piece is empty
        if big:  # huge lines: hand them over one at a time, so each is held once, not twice
            events: list[ServerSentEvent] = []
            lines.reverse()
            while lines:
                events += self._process([lines.pop()])
            return events
        return self._process(lines)

    def _start_big(self) -> None:
        """The unterminated line passed ``big_line`` bytes: filter it from now on, if it is a ``data`` line."""
        head = b"".join(self._pending)
        start = 0
        if not self._started and head.startswith(_BOM.encode()):
            start = len(_BOM.encode())
        if head[start : start + 5] != b"data:":
            return
        assert self._data_filter is not None
        self._started = True
        self._pending.clear()
        self._big = big = _BigLine(self._data_filter())
        view = memoryview(head)[start + 5 :]
        for k in range(0, len(view), _BIG_STEP):  # in steps: no copy of the whole head
            big.feed(bytes(view[k : k + _BIG_STEP]))

    def _feed_big(self, chunk: bytes) -> list[ServerSentEvent]:
        big = self._big
        assert big is not None
        cr, lf = chunk.find(b"\r"), chunk.find(b"\n")
        end = min(cr, lf) if cr >= 0 and lf >= 0 else max(cr, lf)
        if end < 0:
            self._pending_size += len(chunk)
            self._check_size()
            for k in range(0, len(chunk), _BIG_STEP):
                big.feed(chunk[k : k + _BIG_STEP] if len(chunk) > _BIG_STEP else chunk)
            return []
        self._pending_size += end
        self._check_size()
        big.feed(chunk[:end], final=True)
        self._big = None
        value = big.filter.finish()
        self._pending_size = 0
        events = self._process(["data: " + value])  # _process drops exactly this one space
        rest = chunk[end + 1 :]
        if chunk[end] == 0x0D:  # "\r": a following "\n" belongs to this line ending
            if rest[:1] == b"\n":
                rest = rest[1:]
            elif not rest:
                self._skip_lf = True
        return events + self.feed(rest) if rest else events

    def close(self) -> list[ServerSentEvent]:
        """Signal the end of the stream.

        Per the spec an unterminated event is discarded, so this returns ``[]``; it resets the line state
        so the decoder can be reused for a reconnection (``last_event_id`` is kept).
        """
        self._pending.clear()
        self._pending_size = 0
        self._big = None
        self._skip_lf = False
        self._started = False
        self._event = ""
        self._data = []
        self._data_size = 0
        self._retry = None
        return []

    @property
    def has_pending(self) -> bool:
        """True when bytes of an undispatched event are buffered (the stream stopped mid-event)."""
        return bool(self._pending or self._big or self._data or self._event or self._retry is not None)

    # --- internals ---------------------------------------------------------------------------------

    def _check_size(self) -> None:
        if self._max is not None and self._pending_size + self._data_size > self._max:
            raise StreamError(f"server-sent event larger than {self._max} bytes")

    def _process(self, lines: list[str]) -> list[ServerSentEvent]:
        # Hot loop: state in locals, written back once per block.
        events: list[ServerSentEvent] = []
        new = _new_event
        data = self._data
        size = self._data_size
        name = self._event
        retry = self._retry
        last_id = self._last_id
        for line in lines:
            if not line:  # blank line: dispatch
                if data:
                    value = data[0] if len(data) == 1 else "\n".join(data)
                    events.append(new(ServerSentEvent, (name or "message", value, last_id, retry)))
                    data = []
                    size = 0
                name = ""
                retry = None
            elif line[:6] == "data: ":
                data.append(line[6:])
                size += len(line)
            elif line[0] == ":":  # comment / keep-alive
                continue
            else:
                field, colon, value = line.partition(":")
                if colon and value[:1] == " ":
                    value = value[1:]
                if field == "data":
                    data.append(value)
                    size += len(value) + 1
                elif field == "event":
                    name = value
                elif field == "id":
                    if "\0" not in value:
                        last_id = value
                elif field == "retry":
                    if value.isascii() and value.isdigit():
                        retry = int(value)
                # any other field is ignored
        self._data = data
        self._data_size = size
        self._event = name
        self._retry = retry
        self._last_id = last_id
        if self._max is not None and size > self._max:
            raise StreamError(f"server-sent event larger than {self._max} bytes")
        return events


def iter_sse(chunks: Iterable[bytes], decoder: SSEDecoder | None = None) -> Iterator[ServerSentEvent]:
    """Decode an iterable of byte chunks into events."""
    decoder = decoder or SSEDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()


async def aiter_sse(
    chunks: AsyncIterable[bytes], decoder: SSEDecoder | None = None
) -> AsyncIterator[ServerSentEvent]:
    """Decode an async iterable of byte chunks into events."""
    decoder = decoder or SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event
