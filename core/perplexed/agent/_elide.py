"""Huge strings in a JSON text, kept out of it while the text streams in. Pure, no I/O.

The Agent API ends a stream with ``response.completed`` carrying the whole response, so a 10 MB answer arrives
twice: once as text deltas, once inside that event. Parsed the plain way, the event's raw text, its parsed
copy and the deltas are alive at once (three copies of the answer). :class:`StringElider` takes the JSON text
of such an event piece by piece (as the SSE decoder reads it) and writes a compact copy in which every string
literal longer than ``threshold`` characters is a placeholder; each long string is decoded piece by piece by
a :class:`_Blob`, which compares it with the strings the caller already holds (the text gathered from the
deltas) and, when one is equal, keeps *that* object instead of a copy. :func:`restore` puts the strings back
into the parsed compact JSON. The result is equal to ``json.loads`` of the whole text (tested against it
with random chunkings); only the memory differs.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["StringElider", "restore"]

#: string literals longer than this (in raw characters) are cut out of the compact text
DEFAULT_THRESHOLD = 256 * 1024
#: a long string is decoded in steps of about this many raw characters
_STEP = 64 * 1024

#: the body of a JSON string up to its closing quote (or a backslash ending the text), escapes skipped;
#: possessive (no backtracking state: a plain ``*`` keeps some for every escape, megabytes per piece)
_STRING_BODY = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)
_HIGH_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")


class StringElider:
    """Feed the pieces of one JSON text with :meth:`feed`; :meth:`finish` returns ``(compact, strings)``.

    ``known`` returns strings the caller already holds: a long string equal to one of them is that object.
    The compact text parses (``json.loads``) to the original with placeholders, which :func:`restore` swaps
    for ``strings[placeholder]``. A malformed string escape makes the compact text malformed too, so parsing
    it fails as parsing the original would.
    """

    def __init__(
        self, known: Callable[[], Sequence[str]] = tuple, *, threshold: int = DEFAULT_THRESHOLD
    ) -> None:
        self._known = known
        self._threshold = threshold
        self._out: list[str] = []
        self._in_string = False
        self._escaped = False  # the last piece ended inside an escape (after a backslash)
        self._literal: list[str] = []  # raw characters of the current string literal (while it is short)
        self._literal_size = 0
        self._blob: _Blob | None = None  # the current string literal, once it is long
        self._token = secrets.token_hex(4)
        self.strings: dict[str, str] = {}
        self.broken = False

    def feed(self, text: str) -> None:
        """Consume the next piece of the JSON text."""
        i, n = 0, len(text)
        while i < n:
            if not self._in_string:
                j = text.find('"', i)
                if j < 0:
                    self._out.append(text[i:])
                    return
                self._out.append(text[i : j + 1])
                self._in_string = True
                i = j + 1
                continue
            if self._escaped:  # the character after a backslash that ended the previous piece
                self._content(text[i])
                self._escaped = False
                i += 1
                continue
            end = _STRING_BODY.match(text, i).end()  # type: ignore[union-attr]  # always matches
            if end == n:  # the string goes on in the next piece
                self._content(text[i:])
                return
            if text[end] == "\\":  # a backslash ending the piece: the next piece starts with what it escapes
                self._content(text[i:])
                self._escaped = True
                return
            self._content(text[i:end])  # text[end] is the closing quote
            self._close()
            i = end + 1

    def finish(self) -> tuple[str, dict[str, str]]:
        """The compact JSON text and the long strings by placeholder."""
        if self._in_string:  # an unterminated string: keep the text malformed, as it was
            self._out.append("".join(self._literal))
            self.broken = True
        compact = "".join(self._out)
        self._out = []
        return compact, self.strings

    def _content(self, raw: str) -> None:
        if not raw:
            return
        if self._blob is not None:
            self._blob.feed(raw)
            return
        self._literal.append(raw)
        self._literal_size += len(raw)
        if self._literal_size > self._threshold:
            self._blob = _Blob(self._known())
            self._blob.feed("".join(self._literal))
            self._literal, self._literal_size = [], 0

    def _close(self) -> None:
        if self._blob is None:
            self._out.append("".join(self._literal))
            self._literal, self._literal_size = [], 0
        else:
            blob, self._blob = self._blob, None
            value = blob.finish()
            if value is None:  # a malformed escape: make the compact text malformed as well
                self.broken = True
                self._out.append("\\x")
            else:
                key = f"\x00perplexed-elided-{self._token}-{len(self.strings)}\x00"
                self.strings[key] = value
                self._out.append(json.dumps(key)[1:-1])
        self._out.append('"')
        self._in_string = False


class _Blob:
    """One long JSON string, decoded piece by piece: equal to a known string (kept, no copy) or built."""

    def __init__(self, known: Sequence[str]) -> None:
        self._raw = ""
        self._candidates = list(known)
        self._pos = 0  # characters decoded so far, all equal to the candidates' prefix
        self._own: str | None = None  # the decoded value, once no candidate is equal
        self._bad = False

    def feed(self, raw: str) -> None:
        buffered = self._raw
        self._raw = ""
        buffered += raw
        start = 0
        while len(buffered) - start >= _STEP:  # decode in steps: no temporary copy is larger than a step
            window = buffered[start : start + _STEP]
            cut = _safe_cut(window)
            if cut == 0:  # a step of nothing but backslashes: wait for more
                break
            self._decode(window[:cut])
            start += cut
        self._raw = buffered[start:] if start else buffered

    def finish(self) -> str | None:
        self._decode(self._raw)
        self._raw = ""
        if self._bad:
            return None
        if self._own is not None:
            return self._own
        for candidate in self._candidates:
            if len(candidate) == self._pos:
                return candidate  # the very object the caller holds: no second copy
        return self._candidates[0][: self._pos] if self._candidates else ""

    def _decode(self, raw: str) -> None:
        if not raw or self._bad:
            return
        try:
            piece = json.loads('"' + raw + '"')
        except ValueError:
            self._bad = True
            return
        if self._own is not None:
            own, self._own = self._own, None
            own += piece  # grows in place: ``own`` is the only reference
            self._own = own
            return
        end = self._pos + len(piece)
        same = [c for c in self._candidates if c[self._pos : end] == piece]
        if same:
            self._candidates = same
            self._pos = end
            return
        own = self._candidates[0][: self._pos] if self._candidates else ""
        self._candidates = []
        own += piece
        self._own = own


def _safe_cut(raw: str) -> int:
    """A position in ``raw`` where it can be split without splitting an escape (or a surrogate pair)."""
    cut = len(raw)
    k = raw.rfind("\\", max(0, cut - 12))
    if k >= 0:
        while k > 0 and raw[k - 1] == "\\":  # the start of the run of backslashes
            k -= 1
        cut = k
    # a \\uD8xx escape right before the cut may pair with a \\uDCxx after it: keep the pair together
    if cut >= 6 and _HIGH_SURROGATE_ESCAPE.search(raw, cut - 6, cut):
        start = cut - 6
        run = 0
        while start - run - 1 >= 0 and raw[start - run - 1] == "\\":
            run += 1
        if run % 2 == 0:  # the backslash at ``start`` begins an escape (it is not itself escaped)
            cut = start
    return cut


def restore(value: Any, strings: dict[str, str]) -> Any:
    """``value`` (parsed compact JSON) with every placeholder replaced by its string (in place for
    containers; returns the value)."""
    if not strings:
        return value
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in list(node.items()):
                if isinstance(item, str):
                    if item in strings:
                        node[key] = strings[item]
                elif isinstance(item, dict | list):
                    stack.append(item)
                if key in strings:
                    node[strings[key]] = node.pop(key)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    if item in strings:
                        node[index] = strings[item]
                elif isinstance(item, dict | list):
                    stack.append(item)
    if isinstance(value, str) and value in strings:
        return strings[value]
    return value
