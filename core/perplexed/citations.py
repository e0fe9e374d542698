"""Inline citation markers (``[1]``, ``[1][2]``, ``[1, 2]``, ``[1-3]``) and the sources they point at.

Pure functions over text: no I/O. Generic over any source with an integer ``id`` and ``url``/``title``
(the Agent API's :class:`perplexed.agent.SearchResult`, perplexed's own :class:`perplexed.Hit`, ...):
marker ``[n]`` cites the source whose ``id`` is ``n``. A marker with no such source is reported in
:attr:`Citations.unmatched`, never linked to something else.

>>> from perplexed.citations import parse_citations
>>> cites = parse_citations(text, sources)
>>> cites.sources            # cited sources, in order of first use
>>> cites.renumber()         # (text with markers renumbered 1..k, those sources)
>>> cites.footnotes()        # "[1] Title — https://..." lines
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar, overload

__all__ = [
    "Citation",
    "Citations",
    "Marker",
    "Source",
    "cited_sources",
    "find_markers",
    "format_footnotes",
    "parse_citations",
    "renumber",
]

MAX_RANGE = 100  # "[1-1000]" is not a citation marker


class Source(Protocol):
    """What a citable source needs: an integer ``id`` (the ``n`` of ``[n]``), a ``url`` and a ``title``."""

    @property
    def id(self) -> int | None: ...

    @property
    def url(self) -> str: ...

    @property
    def title(self) -> str: ...


S = TypeVar("S", bound=Source)

# One bracket group: numbers and ranges separated by commas, e.g. "[1]", "[1, 2]", "[1-3]", "[2-4, 7]" (an en dash works too).
_GROUP = re.compile(
    r"\[\s*(\d{1,4}(?:\s*[-\u2013]\s*\d{1,4})?(?:\s*,\s*\d{1,4}(?:\s*[-\u2013]\s*\d{1,4})?)*)\s*\]"
)
_PART = re.compile(r"(\d+)(?:\s*[-\u2013]\s*(\d+))?")


@dataclass(frozen=True, slots=True)
class Marker:
    """One bracket group in the text: its span ``text[start:end]`` and the numbers it cites, in order."""

    start: int
    end: int
    text: str
    numbers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Citation(Generic[S]):
    """One cited number: ``number`` from the marker at ``text[start:end]``, and its ``source`` (or ``None``)."""

    number: int
    start: int
    end: int
    marker: str
    source: S | None

    @property
    def matched(self) -> bool:
        """True when a source with ``id == number`` exists."""
        return self.source is not None

    @property
    def url(self) -> str | None:
        """The source's URL, when matched."""
        return self.source.url if self.source is not None else None

    @property
    def title(self) -> str | None:
        """The source's title, when matched."""
        return self.source.title if self.source is not None else None


def _parse_group(body: str) -> tuple[int, ...] | None:
    numbers: list[int] = []
    for part in body.split(","):
        m = _PART.fullmatch(part.strip())
        if m is None:
            return None
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if lo < 1 or hi < lo or hi - lo >= MAX_RANGE:
            return None
        for n in range(lo, hi + 1):
            if n not in numbers:
                numbers.append(n)
    return tuple(numbers)


def find_markers(text: str) -> list[Marker]:
    """Every citation marker in ``text``, in order. ``[1][2]`` is two markers; ``[0]`` or ``[3-1]`` none."""
    markers: list[Marker] = []
    for m in _GROUP.finditer(text):
        numbers = _parse_group(m.group(1))
        if numbers:
            markers.append(Marker(m.start(), m.end(), m.group(0), numbers))
    return markers


class Citations(Sequence[Citation[S]], Generic[S]):
    """The citations of one text.

    Iterating (or indexing) gives the *matched* citations, one per cited number per marker, in text order;
    :attr:`unmatched` lists markers' numbers that have no source. :attr:`sources` is the cited sources in
    order of first use.
    """

    def __init__(self, text: str, sources: Iterable[S]) -> None:
        self.text = text
        by_id: dict[int, S] = {}
        for source in sources:
            sid = source.id
            if isinstance(sid, int) and sid not in by_id:
                by_id[sid] = source
        self._by_id = by_id
        self.markers: list[Marker] = find_markers(text)
        self.all: list[Citation[S]] = [
            Citation(n, m.start, m.end, m.text, by_id.get(n)) for m in self.markers for n in m.numbers
        ]
        self.matched: list[Citation[S]] = [c for c in self.all if c.source is not None]
        self.unmatched: list[Citation[S]] = [c for c in self.all if c.source is None]

    # Sequence protocol over the matched citations
    @overload
    def __getitem__(self, index: int) -> Citation[S]: ...

    @overload
    def __getitem__(self, index: slice) -> list[Citation[S]]: ...

    def __getitem__(self, index: int | slice) -> Citation[S] | list[Citation[S]]:
        return self.matched[index]

    def __len__(self) -> int:
        return len(self.matched)

    def __iter__(self) -> Iterator[Citation[S]]:
        return iter(self.matched)

    def __repr__(self) -> str:
        return (
            f"Citations(matched={len(self.matched)}, unmatched={len(self.unmatched)}, "
            f"sources={len(self.sources)})"
        )

    @property
    def numbers(self) -> list[int]:
        """The distinct cited numbers (matched or not), in order of first use."""
        return list(dict.fromkeys(c.number for c in self.all))

    @property
    def unmatched_numbers(self) -> list[int]:
        """The distinct numbers that have no source, in order of first use."""
        return list(dict.fromkeys(c.number for c in self.unmatched))

    @property
    def sources(self) -> list[S]:
        """The cited sources, each once, in order of first use."""
        seen: dict[int, S] = {}
        for c in self.matched:
            if c.number not in seen and c.source is not None:
                seen[c.number] = c.source
        return list(seen.values())

    def renumber(self, *, unmatched: Literal["drop", "keep", "mark"] = "drop") -> tuple[str, list[S]]:
        """The text with markers renumbered ``1..k`` in order of first use, and those ``k`` sources.

        ``unmatched`` says what happens to numbers without a source: ``"drop"`` removes them (a marker left
        empty disappears with the spaces before it), ``"keep"`` leaves the original number (which may then
        collide with a new one), ``"mark"`` writes ``?``.
        """
        new_number = {id(s): i for i, s in enumerate(self.sources, start=1)}
        out: list[str] = []
        pos = 0
        for marker in self.markers:
            parts: list[str] = []
            for n in marker.numbers:
                source = self._by_id.get(n)
                if source is not None:
                    label = str(new_number[id(source)])
                elif unmatched == "keep":
                    label = str(n)
                elif unmatched == "mark":
                    label = "?"
                else:
                    continue
                if label not in parts:
                    parts.append(label)
            chunk = self.text[pos : marker.start]
            if not parts:
                chunk = chunk.rstrip(" \t")
                out.append(chunk)
            else:
                out.append(chunk)
                out.append("[" + ", ".join(parts) + "]")
            pos = marker.end
        out.append(self.text[pos:])
        return "".join(out), self.sources

    def footnotes(self, *, style: Literal["plain", "markdown"] = "plain", renumbered: bool = True) -> str:
        """Footnote lines for the cited sources.

        Numbered ``1..k`` in order of first use (matching :meth:`renumber`) when ``renumbered``, else by
        each source's own ``id`` (matching the original text).
        """
        sources = self.sources
        numbers = list(range(1, len(sources) + 1)) if renumbered else [int(s.id or 0) for s in sources]
        return format_footnotes(sources, style=style, numbers=numbers)

    def render(self, *, style: Literal["plain", "markdown"] = "plain") -> str:
        """Renumbered text followed by a blank line and its footnotes (just the text when nothing is cited)."""
        text, sources = self.renumber()
        if not sources:
            return text
        return text.rstrip() + "\n\n" + self.footnotes(style=style)


def parse_citations(text: str, sources: Iterable[S]) -> Citations[S]:
    """Parse the markers of ``text`` and map each number to the source whose ``id`` it is."""
    return Citations(text, sources)


def cited_sources(text: str, sources: Iterable[S]) -> list[S]:
    """The sources ``text`` cites, each once, in order of first use."""
    return Citations(text, sources).sources


def renumber(
    text: str, sources: Iterable[S], *, unmatched: Literal["drop", "keep", "mark"] = "drop"
) -> tuple[str, list[S]]:
    """``text`` with its markers renumbered ``1..k`` in order of first use, and the ``k`` cited sources."""
    return Citations(text, sources).renumber(unmatched=unmatched)


def format_footnotes(
    sources: Sequence[Source],
    *,
    style: Literal["plain", "markdown"] = "plain",
    numbers: Sequence[int] | None = None,
) -> str:
    """Footnote lines, one per source, numbered ``1..k`` (or by ``numbers``).

    ``plain``: ``[1] Title — https://...``. ``markdown``: reference definitions ``[1]: https://... "Title"``,
    so the ``[1]`` markers in the text render as links.
    """
    if numbers is None:
        numbers = range(1, len(sources) + 1)
    lines: list[str] = []
    for n, source in zip(numbers, sources, strict=True):
        title = (source.title or "").strip()
        url = (source.url or "").strip()
        if style == "markdown":
            escaped = title.replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'[{n}]: <{url}> "{escaped}"' if title else f"[{n}]: <{url}>")
        else:
            lines.append(f"[{n}] {title} — {url}" if title else f"[{n}] {url}")
    return "\n".join(lines)
