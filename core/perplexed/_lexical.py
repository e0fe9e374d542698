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

import functools
import re
from dataclasses import dataclass, field

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
_SPACED_MARKER = re.compile(r"[ \t]*" + _MARKER.pattern)
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

_STOP = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself
    now of off on once only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself yourselves may might
    must shall per via upon within whose whether yet around across along among including according
    many much several however thus therefore although though since onto toward towards
    one ones s t d ll m re ve""".split()
)
# common capitalised sentence starters that are not names
_STARTERS = frozenset(
    """researchers scientists officials experts studies critics users residents students patients visitors
    engineers workers farmers customers analysts authorities regulators investors companies governments doctors
    teachers parents children adults people scholars historians according under despite unlike like every
    today currently overall together instead additionally moreover furthermore meanwhile later earlier
    eventually initially originally recently previously finally first second third new older large small total
    average typical most several many some another both each either yes early late modern local national
    federal state public private global recent large larger smaller larger largest smallest major minor key
    common rare different similar members owners voters leaders""".split()
)
_NEGATIONS = frozenset(
    "not no never none neither nor nobody nothing nowhere without cannot cant dont doesnt didnt isnt arent "
    "wasnt werent wont wouldnt shouldnt couldnt hasnt havent hadnt rather".split()
)
# canonical forms: a claim word and its passage paraphrase count as the same word
_SYNONYMS: dict[str, str] = {}
for _group in (
    "buy buys bought buying purchase purchases purchased purchasing acquire acquires acquired acquiring",
    "big large huge",
    "small little tiny",
    "start starts started starting begin begins began begun beginning commence commenced launch launched launches",
    "end ends ended ending finish finished conclude concluded",
    "use uses used using utilize utilizes utilized employ employs employed",
    "show shows showed shown demonstrate demonstrates demonstrated reveal reveals revealed indicate indicates indicated",
    "make makes made produce produces produced manufacture manufactures manufactured",
    "rise rises rose risen grow grows grew grown increase increases increased climb climbed",
    "fall falls fell fallen decline declines declined decrease decreases decreased drop drops dropped",
    "help helps helped aid aids aided assist assists assisted",
    "need needs needed require requires required",
    "allow allows allowed permit permits permitted let lets",
    "build builds built construct constructs constructed",
    "say says said state states stated report reports reported",
    "car cars automobile automobiles vehicle vehicles",
    "company companies firm firms",
    "roughly about approximately nearly almost around some",
    "people persons individuals",
    "kid kids child children",
    "doctor doctors physician physicians",
    "rule rules regulation regulations",
    "law laws statute statutes",
    "scientist scientists researcher researchers",
    "study studies research",
    "city cities town towns",
    "fast quick rapid rapidly quickly",
    "create creates created establish establishes established found founded founding form formed",
    "die dies died death",
    "win wins won",
    "cut cuts reduce reduces reduced lower lowered",
    "get gets got obtain obtains obtained receive receives received",
    "main primary principal",
    "major significant",
    "ban bans banned prohibit prohibits prohibited forbid forbids forbidden",
    "yearly annual annually",
    "cost costs price prices",
    "world global worldwide",
    "home house homes houses",
    "job jobs employment",
    "earn earns earned make",
    "lead leads led head heads headed",
    "own owns owned",
    "kill kills killed",
    "hire hires hired recruit recruits recruited",
    "area region",
    "approve approves approved pass passes passed",
    "open opens opened",
    "hold holds held host hosts hosted",
):
    _words = _group.split()
    for _w in _words:
        _SYNONYMS.setdefault(_w, _words[0])
_ANTONYMS = {
    "rise": "fall",
    "fall": "rise",
    "before": "after",
    "after": "before",
    "more": "less",
    "less": "more",
    "higher": "lower",
    "lower": "higher",
    "above": "below",
    "below": "above",
    "larger": "smaller",
    "smaller": "larger",
    "first": "last",
    "last": "first",
    "gain": "loss",
    "loss": "gain",
    "win": "lose",
    "lose": "win",
    "approve": "reject",
    "reject": "approve",
    "open": "close",
    "close": "open",
    "north": "south",
    "south": "north",
    "east": "west",
    "west": "east",
    "minimum": "maximum",
    "maximum": "minimum",
    "earliest": "latest",
    "latest": "earliest",
    "oldest": "newest",
    "newest": "oldest",
}
# "more"/"less" weigh nothing (they are everywhere) but contradict each other
_COMPARATIVES = {"more": "~more", "less": "~less", "fewer": "~less"}
_ANTONYMS.update({"~more": "~less", "~less": "~more"})
_MONTHS = {
    m: i
    for i, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        start=1,
    )
    for m in names.split()
}
_WORD_NUMBERS: dict[str, float] = {
    w: n
    for n, w in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
    if w != "_"
}
_WORD_NUMBERS.update(
    {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
)
_WORD_NUMBERS.update({"dozen": 12, "hundred": 100, "thousand": 1000, "twice": 2, "half": 0.5})
_SCALES = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9}
_PERCENT_WORDS = frozenset({"percent", "per cent", "percentage"})
_CURRENCY = "$€£¥"

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
    canonical = _SYNONYMS.get(word)
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


def _number_value(raw: str) -> tuple[float, str] | None:
    """(value, kind) of a numeric token: kind is ``money``, ``pct``, ``year`` or ``num``."""
    kind = "num"
    s = raw
    if s and s[0] in _CURRENCY:
        kind, s = "money", s[1:]
    if s.endswith("%"):
        kind, s = "pct", s[:-1]
    s = re.sub(r"(st|nd|rd|th)$", "", s).replace(",", "")
    try:
        value = float(s)
    except ValueError:
        return None
    if kind == "num" and "." not in s and 1000 <= value <= 2100 and "," not in raw:
        kind = "year"
    return value, kind


def _key(value: float) -> str:
    return "#" + (str(int(value)) if value == int(value) else f"{value:.6g}")


@dataclass(frozen=True, slots=True)
class Token:
    """One content token: its match ``key``, its ``kind`` (WORD, NUMBER, NAME, MONTH), a value class for
    numbers (``year``, ``pct``, ``money``, ``num``) and its span in the analysed text."""

    key: str
    kind: int
    start: int
    end: int
    vclass: str = ""


def tokens(text: str, *, names: bool = True) -> tuple[list[Token], frozenset[str]]:
    """The content tokens of ``text`` and its negations: the key of the word each negation bears on (the
    next content word; ``""`` for none)."""
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
                if nxt in _SCALES and vclass != "year":
                    value *= _SCALES[nxt]
                    end = raw[i].end()
                    i += 1
                    vclass = "money" if vclass == "money" else "num"
                elif nxt in _PERCENT_WORDS:
                    vclass = "pct"
                    end = raw[i].end()
                    i += 1
            out.append(Token(_key(value), NUMBER, m.start(), end, vclass))
            if pending:
                negations.add(out[-1].key)
                pending = False
            continue
        first = sentence_start
        sentence_start = False
        info = _word(m.group("word"), first, names)
        if info is None:
            continue
        if info is _NEGATION:
            pending = True
            continue
        key, kind, vclass = info
        out.append(Token(key, kind, m.start(), m.end(), vclass))
        if pending:
            negations.add(out[-1].key)
            pending = False
    if pending:
        negations.add("")
    return out, frozenset(negations)


_NEGATION = ("", 0, "")


@functools.lru_cache(maxsize=16384)
def _word(original: str, first: bool, names: bool) -> tuple[str, int, str] | None:
    """What one word is: ``None`` (a stop word), :data:`_NEGATION`, or (key, kind, value class)."""
    word = original.lower().replace("\u2019", "'")
    if word.endswith("n't") or word in _NEGATIONS or word.replace("'", "") in _NEGATIONS:
        return _NEGATION
    word = word.split("'")[0] if word.endswith("'s") else word.replace("'", "")
    if word in _MONTHS and (original[0].isupper() or len(word) > 3):
        return "@" + str(_MONTHS[word]), MONTH, "month"
    if word in _WORD_NUMBERS and word not in _SCALES:
        return _key(float(_WORD_NUMBERS[word])), NUMBER, "num"
    if word in _COMPARATIVES:
        return _COMPARATIVES[word], WORD, ""  # weightless: only for antonyms
    if word in _STOP or len(word) < 2:
        return None
    kind = WORD
    if names and original[0].isupper() and (not first or word not in _STARTERS):
        kind = NAME if not first else -NAME  # a capitalised first word: maybe a name (the caller decides)
    return stem(word), kind, ""


# --- claims and passages ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim's content: ``weights`` per key, the ``values`` (numbers, dates, names) that must be found,
    its ``negations`` (see :func:`tokens`), and the words that would contradict it (antonyms)."""

    text: str
    weights: dict[str, float]
    values: dict[str, tuple[int, str, str, frozenset[str]]]  # key -> (kind, value class, spelling, anchors)
    negations: frozenset[str]
    antonyms: frozenset[str]

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
    weights: dict[str, float] = {}
    values: dict[str, tuple[int, str, str, frozenset[str]]] = {}
    antonyms: set[str] = set()
    subject = True  # the names the claim opens with: its subject, which the cited text may call "it" later
    for i, (t, kind) in enumerate(zip(toks, kinds, strict=True)):
        if t.key.startswith("~"):
            antonyms.add(_ANTONYMS[t.key])
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
                left = next(
                    (toks[j].key for j in range(i - 1, -1, -1) if toks[j].kind in (WORD, -NAME)), None
                )
                right = next(
                    (toks[j].key for j in range(i + 1, len(toks)) if toks[j].kind in (WORD, -NAME)), None
                )
                anchors = frozenset(a for a in (left, right) if a is not None)
            values[t.key] = (kind, t.vclass, text[t.start : t.end], anchors)
        opposite = _ANTONYMS.get(t.key) or _ANTONYMS.get(text[t.start : t.end].lower())
        if opposite is not None:
            antonyms.add(stem(opposite))
    mine = {t.key for t in toks}
    return Claim(text, weights, values, negations, frozenset(antonyms - mine))


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
    prefixes: frozenset[str]  # the first letters of its words: "Canadian" finds "Canada"
    order: tuple[str, ...]  # its keys in text order


@dataclass(slots=True)
class Passage:
    """A cited text split into analysed sentences (computed once per text, reused for every claim)."""

    text: str
    sentences: list[_Sentence] = field(default_factory=list)
    keys: frozenset[str] = frozenset()


def analyse_passage(text: str) -> Passage:
    """The :class:`Passage` of a cited text."""
    sentences: list[_Sentence] = []
    every: set[str] = set()
    for start, end in split_sentences(text):
        toks, negations = tokens(text[start:end])
        keys = frozenset(t.key for t in toks)
        every |= keys
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
                frozenset(
                    t.key[:PREFIX] for t in toks if t.kind in (WORD, NAME, -NAME) and len(t.key) >= PREFIX
                ),
                tuple(t.key for t in toks),
            )
        )
    return Passage(text, sentences, frozenset(every))


# --- windows ---------------------------------------------------------------------------------------------

MAX_WINDOW = 3  # sentences
PREFIX = 5  # a name matches a word sharing its first five letters ("Canadian", "Canada")


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
    shorter, earlier window on a tie), with the value, negation and antonym checks made against it."""
    total = claim.total
    if total <= 0 or not passage.sentences:
        return EMPTY_WINDOW
    wanted = claim.weights
    names = {k[:PREFIX]: k for k, v in claim.values.items() if v[0] == NAME and len(k) >= PREFIX}
    per = [s.keys & wanted.keys() for s in passage.sentences]
    if names:
        per = [
            keys | {names[p] for p in s.prefixes & names.keys()}
            for keys, s in zip(per, passage.sentences, strict=True)
        ]
    best: tuple[float, int, int, frozenset[str]] | None = None
    n = len(per)
    for i in range(n):
        if not per[i]:
            continue
        if best is not None and best[0] >= total - 1e-9:
            break  # everything is covered: no later window can do better
        union: frozenset[str] = frozenset()
        for j in range(i, min(i + MAX_WINDOW, n)):
            if j > i and not per[j]:
                break
            union = union | per[j]
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
    flips = claim.antonyms & seen
    if flips:
        flags.append(f"the cited text says {sorted(flips)[0]!r}, the opposite of the sentence")
    return Window(window[0].start, window[-1].end, matched, weight / total, missing, conflicts, tuple(flags))


def _value_checks(
    claim: Claim, window: list[_Sentence], matched: frozenset[str]
) -> tuple[frozenset[str], dict[str, str], dict[str, str]]:
    """(the matches that hold, the values missing, the values given differently).

    A value of the claim is looked for first in the window's sentences that hold most of its anchors (the
    words around it in the claim): when it is not there but another value of the same kind is, the cited text
    gives a different value in its place (``founded in 2004`` against ``founded in 2003 ... joined in 2004``).
    """
    missing: dict[str, str] = {}
    conflicts: dict[str, str] = {}
    claim_keys = claim.weights.keys()
    claim_prefixes = {k[:PREFIX] for k, v in claim.values.items() if v[0] == NAME}
    kept = set(matched)
    for key, (kind, vclass, spelling, anchors) in claim.values.items():
        near = window
        if anchors:  # none of its words in the window: nothing stands in its place, it is just missing
            most = max(len(s.keys & anchors) for s in window)
            near = [s for s in window if len(s.keys & anchors) == most] if most else []
        if key in matched and (not near or any(_holds(s, key, kind) for s in near)):
            continue
        others: list[tuple[float, int, str]] = []  # (closeness to the anchors, position, key)
        spelled: dict[str, str] = {}
        for s in near:
            found: list[str] = []
            spelled.update(s.spelled)
            if kind == NUMBER:
                found = [k for k, c in s.numbers.items() if k not in claim_keys and _comparable(c, vclass)]
            elif kind == MONTH:
                found = [k for k in s.months if k not in claim_keys]
            else:
                found = [k for k in s.names if k not in claim_keys and k[:PREFIX] not in claim_prefixes]
            others += [_closeness(s.order, k, anchors) for k in found]
        if others:
            kept.discard(key)
            other = max(others)[2]  # the one standing nearest the claim's words around it
            conflicts[key] = (
                f"the cited text gives {spelled.get(other, other)!r} where the sentence says {spelling!r}"
            )
        elif key not in matched:
            missing[key] = spelling
    return frozenset(kept), missing, conflicts


def _closeness(order: tuple[str, ...], key: str, anchors: frozenset[str]) -> tuple[float, int, str]:
    """How near ``key`` stands to the claim's anchors in a sentence: the sum, per anchor, of 1 / distance to
    its nearest occurrence (then the later position, then the key: deterministic)."""
    at = order.index(key) if key in order else 0
    near = 0.0
    for anchor in anchors:
        near += max((1 / abs(i - at) for i, k in enumerate(order) if k == anchor and i != at), default=0.0)
    return near, at, key


def _holds(sentence: _Sentence, key: str, kind: int) -> bool:
    return key in sentence.keys or (kind == NAME and len(key) >= PREFIX and key[:PREFIX] in sentence.prefixes)


def _comparable(a: str, b: str) -> bool:
    return a == b or ("num" in (a, b) and "year" not in (a, b))
