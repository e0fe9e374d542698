"""The text analysis behind :func:`perplexed.verify`: sentences, content words, values, and the offline
lexical support check. Pure functions over strings: no I/O, no model weights, deterministic.

A claim is *covered* by a window of the cited text (one to three consecutive sentences of it) when its
content words appear there (after light stemming and a small synonym table); numbers, dates and names
weigh more than other words. On top of the coverage, three checks can only lower a verdict:

- a number, date or name of the claim the window lacks (``missing``), or where the window gives another
  value of the same kind (``contradiction``: a different year, percentage, amount, month or name);
- a negation on one side and not on the other (``contradiction``);
- an antonym in place of a claim word (``increase``/``decrease``, ``before``/``after``, ...).
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from dataclasses import dataclass, field

from perplexed.grounding._lexicon import (
    COMPARATIVES,
    CURRENCY,
    DIRECTION_AFTER,
    DIRECTIONS,
    MODALS,
    MONTHS,
    NAME_ENDINGS,
    NEGATING_PREFIXES,
    NEGATIONS,
    NOT_NEGATED,
    OPPOSITES,
    PERCENT_WORDS,
    SCALES,
    SHOWN,
    STARTERS,
    STOP,
    SYNONYMS,
    UNITS,
    WORD_NUMBERS,
)

__all__ = [
    "Claim",
    "Passage",
    "Window",
    "analyse_claim",
    "analyse_passage",
    "best_window",
    "claim_text",
    "split_sentences",
]

# --- sentences -------------------------------------------------------------------------------------------

_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs mr mrs ms dr prof st jr sr inc ltd co corp no nos fig figs approx est dept univ gen "
    "col lt sgt rev mt ft al ca cf jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n p.m a.m".split()
)
# a sentence end: terminators, closing quotes/brackets, then (optionally) citation markers that belong to it
_END = re.compile(
    r"[.!?\u2026\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]\u300d\u300f]{0,4}((?:[ \t]{0,4}\[[ \t]{0,4}\d[\d \t,\-\u2013]{0,40}\]){0,20})"
)
_MARKER = re.compile(
    r"\[\s*\d{1,4}(?:\s*[-\u2013]\s*\d{1,4})?(?:\s*,\s*\d{1,4}(?:\s*[-\u2013]\s*\d{1,4})?)*\s*\]"
)
_SPACED_MARKER = re.compile(r"(?<![ \t])[ \t]*" + _MARKER.pattern)  # from a run's start only: linear
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]{0,10})$")
_NEXT = re.compile(r"\s*(\S)")
_CJK_ENDS = "\u3002\uff01\uff1f"  # the CJK full stop, exclamation and question marks


def _is_abbreviation(text: str, dot: int) -> bool:
    m = _WORD_BEFORE.search(text, max(0, dot - 12), dot)  # bounded: no scan from the start of the text
    if m is None or (m.start() > 0 and text[m.start() - 1].isalpha()):
        return False
    word = m.group(1).rstrip(".").lower()
    if word in _ABBREVIATIONS:
        return True
    return len(m.group(1)) == 1 and m.group(1).isupper()  # an initial: "J. K. Rowling"


def split_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text`` as ``(start, end)`` offsets (``text[start:end]`` is the sentence, trimmed).

    A line break always ends a sentence (headings, list items); inside a line a sentence ends at ``.``,
    ``!``, ``?`` followed by a space and not after a known abbreviation or an initial. Citation markers
    right after the end (``... 2020.[1] Next``, ``... 2020. [1][2] Next``) belong to the sentence they follow.
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        _split_line(line, pos, spans)
        pos += len(line) + 1
    return spans


def _split_line(line: str, offset: int, spans: list[tuple[int, int]]) -> None:
    start = 0
    for m in _END.finditer(line):
        end = m.end()
        if end < len(line) and not line[end].isspace() and line[m.start()] not in _CJK_ENDS:
            continue  # "3.5", "example.com", "U.S.-based" (a CJK full stop needs no space after it)
        if (
            line[m.start()] == "."
            and m.end() - m.start() - len(m.group(1)) == 1
            and _is_abbreviation(line, m.start())
        ):
            continue
        following = _NEXT.match(line, end)
        first = following.group(1) if following else ""
        if first and not (first.isupper() or first.isdigit() or first in "\"'\u201c([*-#>|" or _CJK.match(first)):
            continue  # "... approx. three", a lower-case continuation
        _add(line, offset, start, end, spans)
        start = end
    _add(line, offset, start, len(line), spans)


def _add(line: str, offset: int, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    chunk = line[start:end]
    stripped = chunk.strip()
    if not stripped:
        return
    lead = len(chunk) - len(chunk.lstrip())
    s = offset + start + lead
    spans.append((s, s + len(stripped)))


_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d{1,3}[.)]\s+|>\s*)")


def claim_text(sentence: str) -> str:
    """The claim of a sentence: without citation markers, list bullets and emphasis marks."""
    text = _SPACED_MARKER.sub("", sentence)
    text = _MARKUP.sub("", text)
    return text.replace("**", "").replace("__", "").strip()


def is_heading(sentence: str) -> bool:
    """A Markdown heading (``# ...``) or a line that only introduces what follows (``Key points:``)."""
    s = sentence.strip()
    return s.startswith("#") or (s.endswith(":") and not _MARKER.search(s))


# --- words -----------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"(?P<num>[$€£¥]?\d+(?:,\d{3})*(?:\.\d+)?(?:st|nd|rd|th)?%?)|(?P<cjk>[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+)"
    r"|(?P<word>[^\W\d_]+(?:['\u2019][^\W\d_]+)?)",
)
# Chinese, Japanese and Korean runs have no spaces between words: they are matched as character bigrams
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_SUFFIXES = (
    "ational", "ization", "ations", "ation", "ition", "ments", "ment", "ness", "ities", "ity", "ously", "ously",
    "ingly", "ings", "ing", "edly", "ies", "ied", "ers", "er", "est", "ed", "ly", "es", "s", "e", "y",
)  # fmt: skip

WORD, NUMBER, NAME, MONTH = 1, 2, 3, 4
WEIGHTS = {WORD: 1.0, NAME: 2.0, NUMBER: 3.0, MONTH: 3.0}


@functools.lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A light, deterministic stem (``expanded``/``expands``/``expanding`` → ``expand``)."""
    canonical = SYNONYMS.get(word)
    if canonical is not None:
        return canonical
    w = word
    if len(w) <= 3:
        return w
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if len(w) > 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # "planned" -> "plann" -> "plan"
    return w


#: Numbers with more significant digits than a float holds exactly are compared by their digits.
EXACT_DIGITS = 15


def _number_value(raw: str) -> tuple[float | str, str] | None:
    """(value, kind) of a numeric token: kind is ``money``, ``pct``, ``year`` or ``num``. The value is a float,
    or for a number longer than :data:`EXACT_DIGITS` digits its normalised digits (any length: no overflow)."""
    kind = "num"
    s = raw
    if s and s[0] in CURRENCY:
        kind, s = "money", s[1:]
    if s.endswith("%"):
        kind, s = "pct", s[:-1]
    if s.endswith(("st", "nd", "rd", "th")):
        s = s[:-2]
    s = s.replace(",", "")
    if not s or not s[0].isdigit():
        return None
    if len(s) > EXACT_DIGITS:
        whole, _, fraction = s.partition(".")
        whole, fraction = whole.lstrip("0"), fraction.rstrip("0")
        if len(whole) + len(fraction) > EXACT_DIGITS:
            return whole + ("." + fraction if fraction else ""), kind
    try:
        value = float(s)
    except ValueError:
        return None
    if kind == "num" and "." not in s and 1000 <= value <= 2100 and "," not in raw:
        kind = "year"
    return value, kind


def _key(value: float | str) -> str:
    if isinstance(value, str):
        return "#" + value
    if not math.isfinite(value):
        return "#" + repr(value)
    return "#" + (str(int(value)) if value == int(value) else f"{value:.6g}")


def _scaled(value: float | str, scale: float) -> float | str:
    if isinstance(value, str):
        return f"{value}e{round(math.log10(scale))}"
    return value * scale


@dataclass(frozen=True, slots=True)
class Token:
    """One content token: its match ``key``, its ``kind`` (WORD, NUMBER, NAME, MONTH), a value class for
    numbers (``year``, ``pct``, ``money``, ``num``), its span in the analysed text, and for a number the unit
    written right after it (``unit``: its key in :data:`perplexed.grounding._lexicon.UNITS`; ``""`` for none)."""

    key: str
    kind: int
    start: int
    end: int
    vclass: str = ""
    unit: str = ""
    unit_end: int = 0


def _unit_after(text: str, raw: list[re.Match[str]], i: int, end: int) -> tuple[str, int]:
    """(the unit key, its end) of the word right after a number (``300 meters``, ``20-25 ft``), or ("", 0)."""
    if i >= len(raw) or raw[i].group("word") is None:
        return "", 0
    gap = text[end : raw[i].start()]
    if len(gap) > 2 or gap.strip(" -\u00a0"):
        return "", 0
    unit = UNITS.get(raw[i].group("word").lower())
    return (unit[0], raw[i].end()) if unit is not None else ("", 0)


_LOOKAHEAD = frozenset(DIRECTIONS) | {"some"}  # the words read with the token after them


def _direction(raw: list[re.Match[str]], i: int, word: str) -> str | None:
    """The direction key (``~more``/``~less``) of a comparison word standing right before a number."""
    direction = DIRECTIONS.get(word)
    if direction is None or i >= len(raw) or raw[i].group("num") is None:
        return None
    before = DIRECTION_AFTER.get(word)
    if before is not None:
        previous = raw[i - 2].group("word") if i >= 2 else None
        if previous is None or previous.lower() != before:
            return None
    return direction


def tokens(text: str, *, names: bool = True) -> tuple[list[Token], frozenset[str]]:
    """The content tokens of ``text`` and its negations: the key of the word each negation bears on (the
    next content word; ``""`` for none). Weightless keys (``~more``, ``~all``, ``~may``: comparisons,
    quantifiers, modals) are tokens too, for antonyms only: a negation bears on the word after them."""
    out: list[Token] = []
    negations: set[str] = set()
    pending = False
    raw = list(_TOKEN.finditer(text))
    i = 0
    sentence_start = True
    while i < len(raw):
        m = raw[i]
        i += 1
        if m.group("cjk") is not None:
            run = m.group("cjk")
            for k in range(max(len(run) - 1, 1)):
                out.append(Token(run[k : k + 2], WORD, m.start() + k, m.start() + min(k + 2, len(run))))
            sentence_start = False
            continue
        if m.group("num") is not None:
            parsed = _number_value(m.group("num"))
            sentence_start = False
            if parsed is None:
                continue
            value, vclass = parsed
            end = m.end()
            if (
                i < len(raw)
                and raw[i].group("word") is not None
                and text[m.end() : raw[i].start()].strip() == ""
            ):
                nxt = raw[i].group("word").lower()
                if nxt in SCALES and vclass != "year":
                    value = _scaled(value, SCALES[nxt])
                    end = raw[i].end()
                    i += 1
                    vclass = "money" if vclass == "money" else "num"
                elif nxt in PERCENT_WORDS:
                    vclass = "pct"
                    end = raw[i].end()
                    i += 1
            unit, unit_end = _unit_after(text, raw, i, end)
            out.append(Token(_key(value), NUMBER, m.start(), end, vclass, unit, unit_end))
            if pending:
                negations.add(out[-1].key)
                pending = False
            continue
        first = sentence_start
        sentence_start = False
        word = m.group("word")
        if word in _LOOKAHEAD or word.lower() in _LOOKAHEAD:
            lower = word.lower()
            direction = _direction(raw, i, lower)
            if direction is not None:
                out.append(Token(direction, WORD, m.start(), m.end()))
                continue
            if lower == "some" and i < len(raw) and raw[i].group("num") is not None:
                continue  # "some 2,000 people": about
        info = _word(word, first, names)
        if info is None:
            continue
        if info is _NEGATION:
            pending = True
            continue
        key, kind, vclass = info
        out.append(Token(key, kind, m.start(), m.end(), vclass))
        if pending and not key.startswith("~"):
            negations.add(key)
            pending = False
    if pending:
        negations.add("")
    return out, frozenset(negations)


_NEGATION = ("", 0, "")


@functools.lru_cache(maxsize=16384)
def _word(original: str, first: bool, names: bool) -> tuple[str, int, str] | None:
    """What one word is: ``None`` (a stop word), :data:`_NEGATION`, or (key, kind, value class)."""
    word = original.lower().replace("\u2019", "'")
    if word.endswith("n't") or word in NEGATIONS or word.replace("'", "") in NEGATIONS:
        return _NEGATION
    word = word.split("'")[0] if word.endswith("'s") else word.replace("'", "")
    if word in MONTHS and (original[0].isupper() or len(word) > 3):
        return "@" + str(MONTHS[word]), MONTH, "month"
    if word in WORD_NUMBERS and word not in SCALES:
        return _key(float(WORD_NUMBERS[word])), NUMBER, "num"
    if word in COMPARATIVES:
        return COMPARATIVES[word], WORD, ""  # weightless: only for antonyms
    if word in MODALS:
        return MODALS[word], WORD, ""  # weightless: quantifiers and modals, for antonyms only
    if word in STOP or len(word) < 2:
        return None
    kind = WORD
    if names and original[0].isupper() and (not first or word not in STARTERS):
        kind = NAME if not first else -NAME  # a capitalised first word: maybe a name (the caller decides)
    return stem(word), kind, ""


# --- claims and passages ---------------------------------------------------------------------------------

#: A claim's values (numbers, dates, names) checked against the cited text: the first this many.
MAX_VALUES = 24


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim's content: ``weights`` per key, the ``values`` (numbers, dates, names) that must be found,
    its ``negations`` (see :func:`tokens`), the words that would contradict it (``antonyms``; ``negated``: a
    word with or without a negating prefix, key -> (the claim's key, its spelling)), the other forms of its
    names (``aliases``: ``Canadian`` for ``Canada``; whole words, never a shared beginning), the units
    written after its numbers (``units``: key -> (unit, spelling)) and the keys that place a value in a row
    of the cited text (``context``: its words and names)."""

    text: str
    weights: dict[str, float]
    values: dict[str, tuple[int, str, str, frozenset[str]]]  # key -> (kind, value class, spelling, anchors)
    negations: frozenset[str]
    antonyms: frozenset[str]
    negated: dict[str, tuple[str, str]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    units: dict[str, tuple[str, str]] = field(default_factory=dict)
    context: frozenset[str] = frozenset()

    @property
    def total(self) -> float:
        return sum(self.weights.values())

    @property
    def size(self) -> int:
        return len(self.weights)


def analyse_claim(text: str) -> Claim:
    """The :class:`Claim` of a sentence (already stripped of markers: :func:`claim_text`).

    Each value (number, date, name) has *anchors*: the nearest plain content word on each side of it. In
    the cited text the value must stand in a sentence with one of them when one is there at all ("founded
    in 2004" is not supported by "founded in 2003 ... joined in 2004")."""
    toks, negations = tokens(text)
    lower = {t.key for t in toks if t.kind == WORD}
    kinds = [(WORD if t.key in lower else NAME) if t.kind == -NAME else t.kind for t in toks]
    plain = [t.kind in (WORD, -NAME) and not t.key.startswith("~") for t in toks]
    left: list[str | None] = []  # the nearest plain word before each token, and after it: linear
    last: str | None = None
    for t, is_plain in zip(toks, plain, strict=True):
        left.append(last)
        last = t.key if is_plain else last
    right: list[str | None] = [None] * len(toks)
    last = None
    for i in range(len(toks) - 1, -1, -1):
        right[i] = last
        last = toks[i].key if plain[i] else last
    weights: dict[str, float] = {}
    values: dict[str, tuple[int, str, str, frozenset[str]]] = {}
    units: dict[str, tuple[str, str]] = {}
    antonyms: set[str] = set()
    negated: dict[str, tuple[str, str]] = {}
    aliases: dict[str, str] = {}
    subject = True  # the names the claim opens with: its subject, which the cited text may call "it" later
    for i, (t, kind) in enumerate(zip(toks, kinds, strict=True)):
        spelling = text[t.start : t.end]
        if t.key.startswith("~"):
            antonyms.update(OPPOSITES.get(t.key, ()))
            continue
        weights[t.key] = max(weights.get(t.key, 0.0), WEIGHTS[kind])
        subject = subject and kind == NAME
        if kind in (NUMBER, MONTH, NAME) and t.key not in values:
            if subject or (
                kind == NUMBER
                and i > 0
                and kinds[i - 1] == NAME
                and text[toks[i - 1].end : t.start].strip(" -") == ""
            ):
                anchors: frozenset[str] = frozenset()  # the subject, or a model number ("Python 3.12")
            else:
                anchors = frozenset(a for a in (left[i], right[i]) if a is not None)
            values[t.key] = (kind, t.vclass, spelling, anchors)
            if kind == NAME and len(values) <= MAX_VALUES:
                aliases.update(dict.fromkeys(_name_forms(t.key, spelling.lower()), t.key))
        if kind == NUMBER and t.unit and t.key not in units:
            units[t.key] = (t.unit, text[t.start : t.unit_end])
        for opposite in OPPOSITES.get(t.key, frozenset()) | OPPOSITES.get(spelling.lower(), frozenset()):
            antonyms.add(stem(opposite))
        if kind == WORD:
            for opposite in _prefix_opposites(spelling.lower().replace("\u2019", "'").replace("'", "")):
                negated.setdefault(opposite, (t.key, spelling))
    mine = {t.key for t in toks}
    for key in mine:
        negated.pop(key, None)
        aliases.pop(key, None)
    context = frozenset(k for k, w in weights.items() if w < WEIGHTS[NUMBER])
    return Claim(
        text, weights, values, negations, frozenset(antonyms - mine), negated, aliases, units, context
    )


@functools.lru_cache(maxsize=16384)
def _name_forms(key: str, word: str) -> frozenset[str]:
    """The keys of a name's other forms: ``canadian`` for ``canada`` and back (never a shared beginning:
    ``Austria`` is not ``Australia``, ``Microsoft`` not ``Micron``)."""
    forms: set[str] = set()
    for base in {key, word}:
        if len(base) < 4:
            continue
        for root in {base, base[:-1]} if base[-1] in "aeiouy" else {base}:
            forms.update(stem(root + ending) for ending in NAME_ENDINGS)
        for ending in NAME_ENDINGS:
            if base.endswith(ending) and len(base) - len(ending) >= 3:
                root = base[: -len(ending)]
                forms.update(stem(root + vowel) for vowel in ("", "a", "e", "o", "y", "ia"))
    forms.discard(key)
    return frozenset(forms)


@functools.lru_cache(maxsize=16384)
def _prefix_opposites(word: str) -> frozenset[str]:
    """The keys of a word's opposite by a negating prefix: ``legal`` -> ``illegal`` and back, ``safe`` ->
    ``unsafe``, ``approved`` -> ``disapproved``, ``public`` -> ``nonpublic``."""
    out: set[str] = set()
    for prefix, letters in NEGATING_PREFIXES.items():
        base = word[len(prefix) :].lstrip("-")
        if word.startswith(prefix) and len(base) >= 4 and base not in NOT_NEGATED and (not letters or base[0] in letters):
            out.add(stem(base))
        if len(word) >= 4 and word not in NOT_NEGATED and (not letters or word[0] in letters):
            out.add(stem(prefix + word))
    return frozenset(out)


@dataclass(slots=True)
class _Sentence:
    start: int
    end: int
    keys: frozenset[str]
    numbers: dict[str, str]  # key -> value class
    months: frozenset[str]
    names: frozenset[str]
    negations: frozenset[str]
    spelled: dict[str, str]  # key -> spelling, for reasons
    order: tuple[str, ...]  # its keys in text order
    units: dict[str, dict[str, str]]  # number key -> {unit: "300 feet"}
    row: bool  # a line without a full stop: a table's row, a list item


@dataclass(slots=True)
class Passage:
    """A cited text split into analysed sentences (computed once per text, reused for every claim), with
    ``index``: key -> the sentences holding it (so a claim's windows cost what its words occur, not the
    text's length)."""

    text: str
    sentences: list[_Sentence] = field(default_factory=list)
    keys: frozenset[str] = frozenset()
    index: dict[str, list[int]] = field(default_factory=dict)


def analyse_passage(text: str) -> Passage:
    """The :class:`Passage` of a cited text."""
    sentences: list[_Sentence] = []
    index: dict[str, list[int]] = {}
    for start, end in split_sentences(text):
        toks, negations = tokens(text[start:end])
        keys = frozenset(t.key for t in toks)
        for key in keys:
            index.setdefault(key, []).append(len(sentences))
        units: dict[str, dict[str, str]] = {}
        for t in toks:
            if t.unit:
                units.setdefault(t.key, {})[t.unit] = text[start + t.start : start + t.unit_end]
        sentences.append(
            _Sentence(
                start,
                end,
                keys,
                {t.key: t.vclass for t in toks if t.kind == NUMBER},
                frozenset(t.key for t in toks if t.kind == MONTH),
                frozenset(t.key for t in toks if t.kind in (NAME, -NAME)),
                negations,
                {
                    t.key: text[start + t.start : start + t.end]
                    for t in toks
                    if t.kind in (NUMBER, MONTH, NAME, -NAME)
                },
                tuple(t.key for t in toks),
                units,
                text[end - 1] not in _FULL_STOPS,
            )
        )
    return Passage(text, sentences, frozenset(index), index)


_FULL_STOPS = ".!?\u2026\u3002\uff01\uff1f\"'\u201d\u2019)]"


# --- windows ---------------------------------------------------------------------------------------------

MAX_WINDOW = 3  # sentences


@dataclass(frozen=True, slots=True)
class Window:
    """The best window of a passage for a claim: its span, the claim keys it covers, the claim's values it
    lacks (``missing``: key -> the claim's spelling) or gives differently (``conflicts``: key -> reason), and
    other contradictions (``flags``: a one-sided negation, an antonym)."""

    start: int
    end: int
    matched: frozenset[str]
    coverage: float
    missing: dict[str, str]
    conflicts: dict[str, str]
    flags: tuple[str, ...]


EMPTY_WINDOW = Window(0, 0, frozenset(), 0.0, {}, {}, ())


def best_window(claim: Claim, passage: Passage) -> Window:
    """The one to three consecutive sentences of ``passage`` that cover most of ``claim`` (by weight; the
    shorter, earlier window on a tie), with the value, negation and antonym checks made against it. Only
    the sentences holding a word of the claim are looked at (the passage's index)."""
    total = claim.total
    if total <= 0 or not passage.sentences:
        return EMPTY_WINDOW
    wanted = claim.weights
    aliases = claim.aliases
    per: dict[int, set[str]] = {}
    for key in wanted.keys() | aliases.keys():
        for n in passage.index.get(key, ()):
            per.setdefault(n, set()).add(aliases.get(key, key))
    best: tuple[float, int, int, frozenset[str]] | None = None
    for i in sorted(per):
        if best is not None and best[0] >= total - 1e-9:
            break  # everything is covered: no later window can do better
        union: frozenset[str] = frozenset()
        for j in range(i, i + MAX_WINDOW):
            keys = per.get(j)
            if keys is None:
                break
            union = union | keys
            weight = sum(wanted[key] for key in union)
            if best is None or weight > best[0] + 1e-9:
                best = (weight, i, j, union)
    if best is None:
        return EMPTY_WINDOW
    weight, i, j, matched = best
    window = passage.sentences[i : j + 1]
    matched, missing, conflicts = _value_checks(claim, window, matched)
    weight = sum(wanted[key] for key in matched)
    flags: list[str] = []
    # a negation on one side only: in the sentences carrying most of the match, bearing on a word of the claim
    theirs = frozenset().union(*(s.negations for s in window)) & wanted.keys()
    mine = claim.negations
    seen = frozenset().union(*(s.keys for s in window))
    if weight / total >= 0.4 and ((mine & seen) != theirs or (mine and not theirs)):
        side = "the sentence" if mine else "the cited text"
        flags.append(f"{side} has a negation the other lacks: they say opposite things")
    # a quantifier, modal or direction counts when the cited text lacks the claim's own ("must ... may" is both)
    flips = {o for o in claim.antonyms & seen if not (o.startswith("~") and OPPOSITES.get(o, frozenset()) & seen)}
    if flips:
        flip = sorted(flips)[0]
        flags.append(f"the cited text says {SHOWN.get(flip, flip)!r}, the opposite of the sentence")
    for opposite, (own, spelling) in sorted(claim.negated.items()):
        if opposite in seen and own not in seen:
            flags.append(f"the sentence says {spelling!r}, the opposite of the cited text")
            break
    return Window(window[0].start, window[-1].end, matched, weight / total, missing, conflicts, tuple(flags))


def _value_checks(
    claim: Claim, window: list[_Sentence], matched: frozenset[str]
) -> tuple[frozenset[str], dict[str, str], dict[str, str]]:
    """(the matches that hold, the values missing, the values given differently).

    A value of the claim is looked for first in the window's sentences that hold most of its anchors (the
    words around it in the claim): when it is not there but another value of the same kind is, the cited text
    gives a different value in its place (``founded in 2004`` against ``founded in 2003 ... joined in 2004``).
    The value is *placed* by its context (the claim's words and names in each sentence): where the sentence
    holding it carries more of the claim than the one giving another value, as a table's row does (``Rear
    20-25 ft`` among ``Side 5-10 ft``), the other value is another row's, not a contradiction; where the
    sentence giving another value carries more, it is one. A number written with a different unit of the
    same kind (``300 feet`` for ``300 meters``) is given differently too.
    """
    missing: dict[str, str] = {}
    conflicts: dict[str, str] = {}
    aliases = claim.aliases
    kept = set(matched)
    present = [s.keys | {aliases[a] for a in s.keys & aliases.keys()} if aliases else s.keys for s in window]
    context = [sum(claim.weights[k] for k in keys & claim.context) for keys in present]
    cache: dict[tuple[int, int, str], list[str]] = {}
    nearest: dict[tuple[int, int, frozenset[str], str], tuple[float, int, str]] = {}
    for n, (key, (kind, vclass, spelling, anchors)) in enumerate(claim.values.items()):
        if n >= MAX_VALUES:
            if key not in matched:
                missing[key] = spelling
            continue
        near = list(range(len(window)))
        if anchors:  # none of its words in the window: nothing stands in its place, it is just missing
            counts = [len(s.keys & anchors) for s in window]
            most = max(counts)
            near = [k for k, c in enumerate(counts) if c == most] if most else []
        holders = [k for k, keys in enumerate(present) if key in keys]
        here = key in matched and (not near or any(k in holders for k in near))
        rivals = {k: found for k in near if (found := _rivals(claim, window, k, kind, vclass, cache))}
        weight = claim.weights[key] if key in claim.context else 0.0  # its own weight does not place it
        own = max((context[k] - weight for k in holders), default=-1.0)
        placed = {k: context[k] - weight * (key in present[k]) for k in rivals}
        theirs = max(placed.values(), default=-1.0)
        if rivals and (
            (not here and not (key in matched and own > theirs))
            # a table: the value stands in another row than the one the claim's words are in
            or (
                here
                and theirs > own
                and all(window[k].row for k in holders)
                and any(window[k].row for k, p in placed.items() if p == theirs)
            )
        ):
            kept.discard(key)
            # the other value: in the sentences that place it, the one nearest the claim's words around it
            best, k = max(
                (_nearest(window, k, rivals[k], anchors, nearest, key if kind == NAME else ""), k)
                for k, p in placed.items()
                if p == theirs
            )
            other = best[2]
            shown = window[k].spelled.get(other, other)
            conflicts[key] = f"the cited text gives {shown!r} where the sentence says {spelling!r}"
        elif key not in matched:
            missing[key] = spelling
        elif key in claim.units:
            unit, written = claim.units[key]
            given = {u: w for k in holders for u, w in window[k].units.get(key, {}).items()}
            if given and unit not in given and any(_DIMENSION.get(u) == _DIMENSION.get(unit) for u in given):
                kept.discard(key)
                conflicts[key] = (
                    f"the cited text gives {min(given.values())!r} where the sentence says {written!r}"
                )
    return frozenset(kept), missing, conflicts


_DIMENSION = {unit: dimension for unit, dimension in UNITS.values()}


def _rivals(
    claim: Claim,
    window: list[_Sentence],
    k: int,
    kind: int,
    vclass: str,
    cache: dict[tuple[int, int, str], list[str]],
) -> list[str]:
    """The values of a sentence of the window that could stand in place of a claim value of that kind (not
    the claim's own), computed once per sentence and kind."""
    group = vclass if kind == NUMBER else ""
    found = cache.get((k, kind, group))
    if found is None:
        s = window[k]
        if kind == NUMBER:
            found = [o for o, c in s.numbers.items() if o not in claim.weights and _comparable(c, vclass)]
        elif kind == MONTH:
            found = [o for o in s.months if o not in claim.weights]
        else:
            found = [o for o in s.names if o not in claim.weights and o not in claim.aliases]
        cache[(k, kind, group)] = found
    return found


def _nearest(
    window: list[_Sentence],
    k: int,
    keys: list[str],
    anchors: frozenset[str],
    memo: dict[tuple[int, int, frozenset[str], str], tuple[float, int, str]],
    name: str = "",
) -> tuple[float, int, str]:
    """Of ``keys`` in sentence ``k`` of the window, the one nearest the anchors (see :func:`_closeness`;
    for a ``name``, then the one sharing most of its first letters: ``Austria`` for ``Australia``), computed
    once per sentence, list of values and anchors."""
    memo_key = (k, id(keys), anchors, name)
    if memo_key not in memo:
        memo[memo_key] = max(
            _closeness(window[k].order, keys, anchors), key=lambda c: (c[0], _shared(c[2], name), c[1], c[2])
        )
    return memo[memo_key]


def _shared(a: str, b: str) -> int:
    """How many first letters two keys share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _closeness(
    order: tuple[str, ...], keys: list[str], anchors: frozenset[str]
) -> list[tuple[float, int, str]]:
    """How near each of ``keys`` stands to the claim's anchors in a sentence: the sum, per anchor, of 1 /
    distance to its nearest occurrence (then the later position, then the key: deterministic). Linear in the
    sentence (one pass for the positions, a binary search per key and anchor)."""
    wanted = set(keys)
    first: dict[str, int] = {}
    places: dict[str, list[int]] = {a: [] for a in anchors}
    for i, k in enumerate(order):
        if k in wanted and k not in first:
            first[k] = i
        if k in places:
            places[k].append(i)
    out: list[tuple[float, int, str]] = []
    for key in keys:
        at = first.get(key, 0)
        near = 0.0
        for positions in places.values():
            j = bisect.bisect_left(positions, at)
            gaps = [abs(positions[x] - at) for x in (j - 1, j, j + 1) if 0 <= x < len(positions)]
            gaps = [g for g in gaps if g]
            near += 1 / min(gaps) if gaps else 0.0
        out.append((near, at, key))
    return out


def _comparable(a: str, b: str) -> bool:
    return a == b or ("num" in (a, b) and "year" not in (a, b))
