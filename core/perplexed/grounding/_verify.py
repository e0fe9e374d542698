"""Citation checking: does hit ``[n]`` support the sentence that cites it?

    v = perplexed.verify(ans)                      # an Answer: its text and its sources
    v = perplexed.verify(text, result)             # any text with [n] markers, and the hits they cite
    v.sentences[0].label, v.citation_recall, v.citation_precision, v.unsupported

One :class:`SentenceCheck` per sentence: its ``label`` (``supported``, ``partial``, ``unsupported``,
``uncited``, ``unverifiable``), ``score`` and ``evidence`` (the best supporting span of each cited hit).
``citation_recall`` and ``citation_precision`` follow ALCE (Gao et al., 2023). The default checker
(``"lexical"``, :mod:`perplexed.grounding._lexical`) is offline and deterministic; ``checker=`` also takes a callable
``(claim, passage) -> float`` (an NLI model the user has). Pure policy: the only I/O is ``fetch=True``
(the cited pages' content through :func:`perplexed.afetch`).
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from perplexed._errors import InvalidRequest, PerplexedError
from perplexed._logs import get_logger
from perplexed._models import Hit, Result
from perplexed.citations import find_markers
from perplexed.net import _portal

if TYPE_CHECKING:  # the lexicon (_lexical) is imported by the first check, not with `import perplexed`
    from perplexed.grounding._lexical import Claim, Passage, Window

__all__ = [
    "DEFAULT_THRESHOLD",
    "LEXICAL_THRESHOLD",
    "Evidence",
    "Label",
    "SentenceCheck",
    "Verification",
    "averify",
    "check",
    "verify",
]

logger = get_logger("perplexed.verify")

Label = Literal["supported", "partial", "unsupported", "uncited", "unverifiable"]
TextSource = Literal["snippet", "page"]
Checker = Callable[[str, str], float]

#: The lexical checker's default ``threshold``: the share of the sentence's content (by weight: numbers and
#: dates 3, names 2, other words 1) a window of the cited text must cover.
LEXICAL_THRESHOLD = 0.7
#: The default ``threshold`` of a callable checker (an entailment probability).
DEFAULT_THRESHOLD = 0.5
#: Below this share of the threshold a sentence is ``unsupported`` rather than ``partial``.
PARTIAL_SHARE = 0.55
#: A callable checker sees a hit's whole text up to this length, else the best windows around the claim.
CALLABLE_PASSAGE_CHARS = 2000
#: ``averify`` runs the lexical check in a worker thread above this many characters (text and cited texts).
THREAD_CHARS = 50_000
#: Pages fetched at once with ``fetch=True``.
FETCH_CONCURRENCY = 8
#: A claim needs this many content words; fewer (a heading, "Yes.", one word) is ``unverifiable``.
MIN_CLAIM_WORDS = 2
MIN_UNCITED_WORDS = 3
#: ``supported`` needs at least this many content words found (or all of a shorter claim's).
MIN_MATCHED = 3


class Evidence(BaseModel):
    """The best supporting span of one cited hit: ``text == <that hit's text>[start:end]``. The hit's text is
    its ``content`` when known, else its ``snippet`` (``source="snippet"``), or the fetched page's content
    with ``fetch=True`` (``source="page"``)."""

    model_config = ConfigDict(frozen=True)

    hit_id: int
    start: int
    end: int
    text: str
    source: TextSource = "snippet"


class SentenceCheck(BaseModel):
    """The verdict on one sentence: ``text == <verified text>[start:end]``, the ids it ``citations`` cites,
    its ``label`` and ``score`` (0 to 1), the ``evidence`` per cited hit (empty when nothing supports it) and
    ``reason``, a short explanation when it is not supported."""

    model_config = ConfigDict(frozen=True)

    text: str
    start: int
    end: int
    citations: list[int] = Field(default_factory=list)
    label: Label
    score: float = 0.0
    evidence: list[Evidence] = Field(default_factory=list)
    reason: str = ""

    @property
    def supported(self) -> bool:
        """Whether the label is ``supported``."""
        return self.label == "supported"


_NOT_SUPPORTED = ("partial", "unsupported", "uncited")


class Verification(BaseModel):
    """Sentence-level citation support of a text.

    ``sentences``: one :class:`SentenceCheck` per sentence, in text order. ``citation_recall``: the share of
    claim sentences (all but ``unverifiable``) whose cited texts together support them (``uncited`` ones
    count as not supported). ``citation_precision``: the share of citations that support their sentence on
    their own or are needed for its support. Both are ``None`` when there is nothing to count.
    ``unsupported``: the sentences labelled ``partial``, ``unsupported`` or ``uncited``, in text order.
    ``checker``: ``"lexical"`` or the callable's ``__name__``; ``threshold`` the score at or above which a
    sentence is ``supported``; ``cost`` what fetching pages cost (USD; ``fetch=True`` only). ``error``:
    ``None``, or why the check could not be made (the verification is unavailable: ``sentences`` empty, both
    measures ``None``; only :func:`perplexed.answer`'s ``verify=True`` returns one, keeping the answer).
    """

    model_config = ConfigDict(frozen=True)

    sentences: list[SentenceCheck] = Field(default_factory=list)
    citation_recall: float | None = None
    citation_precision: float | None = None
    checker: str = "lexical"
    threshold: float = LEXICAL_THRESHOLD
    cost: float = 0.0
    error: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unsupported(self) -> list[SentenceCheck]:
        """The sentences labelled ``partial``, ``unsupported`` or ``uncited``, in text order."""
        return [s for s in self.sentences if s.label in _NOT_SUPPORTED]

    def count(self, label: Label) -> int:
        """How many sentences carry ``label``."""
        return sum(1 for s in self.sentences if s.label == label)

    def report(self, *, width: int = 100) -> str:
        """Plain text: each sentence that is not supported, marked ``✗ [label]`` with why (cut to ``width``
        characters), then citation recall and precision (what ``perplexed answer --verify`` prints, and what
        the adapters' answer tools add for the model)."""
        if self.error is not None:
            return f"citation check unavailable: {self.error}"
        lines: list[str] = []
        for s in self.unsupported:
            text = " ".join(s.text.split())
            if len(text) > width:
                text = text[: width - 1] + "…"
            why = f" ({s.reason})" if s.reason else ""
            lines.append(f"✗ [{s.label}] {text}{why}")
        if not lines and self.sentences:
            lines.append("✓ every claim is supported by its citations")
        recall = "n/a" if self.citation_recall is None else f"{self.citation_recall:.2f}"
        precision = "n/a" if self.citation_precision is None else f"{self.citation_precision:.2f}"
        lines.append(f"citation recall {recall}, citation precision {precision} ({self.checker} checker)")
        return "\n".join(lines)


# --- inputs ----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Text:
    """One hit's text to check against: its id, the text, where it came from, its analysis (lazy)."""

    hit_id: int
    text: str
    source: TextSource = "snippet"
    _passage: Passage | None = None

    @property
    def passage(self) -> Passage:
        if self._passage is None:
            from perplexed.grounding._lexical import analyse_passage

            self._passage = analyse_passage(self.text)
        return self._passage


def _is_answer(obj: object) -> bool:
    return isinstance(getattr(obj, "text", None), str) and isinstance(getattr(obj, "sources", None), list)


def _inputs(answer_or_text: object, hits: object) -> tuple[str, list[Hit]]:
    """(the text to verify, the hits its markers cite)."""
    if isinstance(answer_or_text, str):
        if hits is None:
            raise InvalidRequest(
                "hits is required with a text: pass the hits its [n] markers cite (a Result, a list of Hit, or "
                "the Documents/nodes a perplexed retriever returned)",
                param="hits",
            )
        return answer_or_text, _hits(hits)
    if _is_answer(answer_or_text):
        text = answer_or_text.text  # type: ignore[attr-defined]
        return text, _hits(hits if hits is not None else answer_or_text.sources)  # type: ignore[attr-defined]
    raise InvalidRequest(
        f"answer_or_text must be a perplexed.Answer or a str with [n] markers, not {type(answer_or_text).__name__}",
        param="answer_or_text",
    )


def _hits(hits: object) -> list[Hit]:
    if isinstance(hits, Result):
        items: Sequence[object] = hits.hits
    elif isinstance(hits, Hit):
        items = [hits]
    elif isinstance(hits, Sequence) and not isinstance(hits, str | bytes):
        items = hits
    else:
        raise InvalidRequest(
            f"hits must be a Result, a list of Hit or a list of Documents/nodes, not {type(hits).__name__}",
            param="hits",
        )
    out: list[Hit] = []
    seen: set[int] = set()
    for position, item in enumerate(items, start=1):
        hit = _hit(item, position)
        if hit is None or hit.id in seen:
            continue  # an answer Document, or a repeated id (the first one counts)
        seen.add(hit.id)
        out.append(hit)
    return out


def _hit(item: object, position: int) -> Hit | None:
    if isinstance(item, Hit):
        return item if item.id > 0 else item.model_copy(update={"id": position})
    if isinstance(item, Mapping):
        try:
            hit = Hit.model_validate(dict(item))
        except ValueError as exc:
            raise InvalidRequest(f"hits[{position - 1}] is not a hit: {exc}", param="hits") from None
        return hit if hit.id > 0 else hit.model_copy(update={"id": position})
    return _document_hit(item, position)


def _document_hit(item: object, position: int) -> Hit | None:
    """A LangChain Document or LlamaIndex node made by perplexed's adapters (``metadata["id"]`` is the hit's id)."""
    node = getattr(item, "node", None)  # a LlamaIndex NodeWithScore
    target = node if node is not None else item
    metadata = getattr(target, "metadata", None)
    if not isinstance(metadata, Mapping):
        raise InvalidRequest(
            f"hits[{position - 1}] is a {type(item).__name__}: pass Hits, a Result, or the Documents/nodes a "
            "perplexed retriever returned",
            param="hits",
        )
    if metadata.get("type") == "answer":
        return None  # the answer Document of PerplexedAnswerRetriever: not a source
    text = getattr(target, "page_content", None)
    if not isinstance(text, str):
        get_content = getattr(target, "get_content", None)
        text = get_content() if callable(get_content) else getattr(target, "text", None)
    raw_id = metadata.get("id")
    try:
        hit_id = int(raw_id) if raw_id is not None and not isinstance(raw_id, bool) else 0
    except (TypeError, ValueError):
        hit_id = 0
    if hit_id <= 0:
        raise InvalidRequest(
            f"hits[{position - 1}] has no metadata['id']: only the Documents/nodes perplexed's adapters make carry "
            "the hit id its [n] markers cite",
            param="hits",
        )
    url = metadata.get("url") or metadata.get("source") or ""
    return Hit(
        id=hit_id,
        url=str(url),
        title=str(metadata.get("title") or ""),
        snippet=text if isinstance(text, str) else "",
        provider=str(metadata.get("provider") or ""),
    )


def _check_options(checker: object, threshold: object) -> tuple[Checker | None, str, float]:
    """(the callable or None for lexical, the checker's name, the threshold)."""
    if isinstance(checker, str):
        if checker != "lexical":
            raise InvalidRequest(
                f"checker must be 'lexical' or a callable (claim, passage) -> float, got {checker!r}",
                param="checker",
            )
        fn: Checker | None = None
        name = "lexical"
        default = LEXICAL_THRESHOLD
    elif callable(checker):
        fn = checker
        name = str(getattr(checker, "__name__", None) or type(checker).__name__)
        default = DEFAULT_THRESHOLD
    else:
        raise InvalidRequest(
            f"checker must be 'lexical' or a callable (claim, passage) -> float, got {checker!r}",
            param="checker",
        )
    if threshold is None:
        value = default
    elif (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not math.isfinite(threshold)
        or not 0 < threshold <= 1
    ):
        raise InvalidRequest(f"threshold must be a number in (0, 1], got {threshold!r}", param="threshold")
    else:
        value = float(threshold)
    return fn, name, value


# --- judging ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Verdict:
    label: Label
    score: float
    reason: str = ""


class _Judge:
    """Judges a claim against a set of cited texts (one checker, one threshold, memoised per claim)."""

    def __init__(self, fn: Checker | None, threshold: float) -> None:
        self.fn = fn
        self.threshold = threshold
        self.floor = threshold * PARTIAL_SHARE

    # lexical ------------------------------------------------------------------------------------------------

    def windows(self, claim: Claim, texts: Sequence[_Text]) -> list[Window]:
        from perplexed.grounding._lexical import best_window

        return [best_window(claim, t.passage) for t in texts]

    def lexical(self, claim: Claim, windows: Sequence[Window]) -> _Verdict:
        """The verdict of the windows together (their matches are pooled, the checks combined)."""
        from perplexed.grounding._lexical import EMPTY_WINDOW

        matched = frozenset().union(*(w.matched for w in windows)) if windows else frozenset()
        total = claim.total
        coverage = sum(claim.weights[k] for k in matched) / total if total else 0.0
        t = self.threshold
        conflicts = [reason for w in windows for key, reason in w.conflicts.items() if key not in matched]
        if conflicts:
            return _Verdict("unsupported", _round(min(coverage, t) * 0.3), conflicts[0])
        leader = max(windows, key=lambda w: w.coverage) if windows else EMPTY_WINDOW
        if leader.flags:
            return _Verdict("unsupported", _round(min(coverage, t) * 0.3), leader.flags[0])
        missing = [value[2] for key, value in claim.values.items() if key not in matched]
        capped = _round(min(coverage, t * 0.99))
        if missing:
            label: Label = "partial" if coverage >= self.floor else "unsupported"
            shown = ", ".join(repr(m) for m in missing[:3])
            return _Verdict(label, capped, f"the cited text does not mention {shown}")
        if coverage >= t and len(matched) >= min(MIN_MATCHED, claim.size):
            return _Verdict("supported", _round(coverage))
        if coverage >= self.floor:
            return _Verdict("partial", capped, "the cited text supports only part of the sentence")
        return _Verdict("unsupported", capped, "the cited text does not support the sentence")

    # callable -----------------------------------------------------------------------------------------------

    def passage_for(self, claim: Claim, text: _Text, window: Window) -> str:
        """What a callable checker reads of one hit: its whole text when short, else the best window widened
        by a sentence on each side."""
        start, end = self.span_for(text, window)
        return text.text[start:end]

    def span_for(self, text: _Text, window: Window) -> tuple[int, int]:
        """The span of a hit's text a callable checker reads (see :meth:`passage_for`)."""
        from perplexed.grounding._lexical import EMPTY_WINDOW

        if window is EMPTY_WINDOW:
            return 0, min(len(text.text), CALLABLE_PASSAGE_CHARS)
        if len(text.text) <= CALLABLE_PASSAGE_CHARS:
            return 0, len(text.text)
        sentences = text.passage.sentences
        first = next(i for i, s in enumerate(sentences) if s.start == window.start)
        last = next(i for i, s in enumerate(sentences) if s.end == window.end)
        return sentences[max(first - 1, 0)].start, sentences[min(last + 1, len(sentences) - 1)].end

    def call(self, claim: str, passage: str) -> float:
        assert self.fn is not None
        value = self.fn(claim, passage)
        if inspect.isawaitable(value):
            raise InvalidRequest(
                "checker must return a float, not an awaitable (wrap an async model yourself)",
                param="checker",
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            try:
                value = float(value)  # numpy scalars, 0-d tensors
            except (TypeError, ValueError):
                raise InvalidRequest(
                    f"checker returned {value!r}, not a number in [0, 1]", param="checker"
                ) from None
        if not 0.0 <= value <= 1.0:
            raise InvalidRequest(f"checker returned {value!r}, not a number in [0, 1]", param="checker")
        return float(value)

    def scored(self, score: float) -> _Verdict:
        t = self.threshold
        if score >= t:
            return _Verdict("supported", _round(score))
        if score >= self.floor:
            return _Verdict("partial", _round(score), "the checker found only partial support")
        return _Verdict("unsupported", _round(score), "the checker found no support")


def _round(x: float) -> float:
    return round(max(0.0, min(1.0, x)), 4)


@dataclass(slots=True)
class _Sentence:
    start: int
    end: int
    text: str
    citations: list[int] = field(default_factory=list)


def _sentences(text: str) -> list[_Sentence]:
    from perplexed.grounding._lexical import split_sentences

    spans = split_sentences(text)
    out = [_Sentence(s, e, text[s:e]) for s, e in spans]
    markers = find_markers(text)
    k = 0
    for sentence in out:
        while k < len(markers) and markers[k].start < sentence.start:
            k += 1
        j = k
        cited: set[int] = set()  # a set beside the list: linear in the markers
        while j < len(markers) and markers[j].start < sentence.end:
            for n in markers[j].numbers:
                if n not in cited:
                    cited.add(n)
                    sentence.citations.append(n)
            j += 1
        k = j
    return out


def _check_sentence(
    sentence: _Sentence, texts: Mapping[int, _Text], judge: _Judge
) -> tuple[SentenceCheck, int, int | None]:
    """(the check, citations counted, precise citations) — the last two for ``citation_precision``;
    ``None`` precise citations: not a claim, nothing to count."""
    from perplexed.grounding._lexical import analyse_claim, claim_text, is_heading

    claim_str = claim_text(sentence.text)
    claim = analyse_claim(claim_str)
    base = {
        "text": sentence.text,
        "start": sentence.start,
        "end": sentence.end,
        "citations": sentence.citations,
    }
    words = claim.size
    if (
        is_heading(sentence.text)
        or words < MIN_CLAIM_WORDS
        or (not sentence.citations and (words < MIN_UNCITED_WORDS or claim_str.endswith("?")))
    ):
        return SentenceCheck(**base, label="unverifiable", reason="too short to be a claim"), 0, None
    if not sentence.citations:
        return SentenceCheck(**base, label="uncited", reason="it makes a claim and cites nothing"), 0, 0
    known = [n for n in sentence.citations if n in texts]
    if not known:
        shown = ", ".join(f"[{n}]" for n in sentence.citations)
        return (
            SentenceCheck(
                **base, label="unsupported", reason=f"it cites {shown}, which is not among the hits"
            ),
            len(sentence.citations),
            0,
        )
    cited = [texts[n] for n in known if texts[n].text.strip()]
    if not cited:
        return (
            SentenceCheck(
                **base, label="unverifiable", reason="the cited hits have no text to check against"
            ),
            0,
            None,
        )
    windows = judge.windows(claim, cited)
    verdict, singles = _verdicts(claim_str, claim, cited, windows, judge)
    evidence = [
        Evidence(hit_id=t.hit_id, start=start, end=end, text=t.text[start:end], source=t.source)
        for t, w, v in zip(cited, windows, singles, strict=True)
        for start, end in _evidence_span(t, w, v, judge)
    ]
    check = SentenceCheck(
        **base, label=verdict.label, score=verdict.score, evidence=evidence, reason=verdict.reason
    )
    return check, len(sentence.citations), _precise(claim_str, claim, cited, windows, verdict, singles, judge)


def _evidence_span(text: _Text, window: Window, single: _Verdict, judge: _Judge) -> list[tuple[int, int]]:
    """The best supporting span of one cited hit (none when it does not support the sentence): the lexical
    window; for a hit a callable checker finds supporting where no window is, the passage it read."""
    from perplexed.grounding._lexical import EMPTY_WINDOW

    if window is not EMPTY_WINDOW:
        if single.label == "supported" or window.coverage >= judge.floor:
            return [(window.start, window.end)]
        return []
    if judge.fn is None or single.label != "supported":
        return []
    start, end = judge.span_for(text, window)
    passage = text.text[start:end]
    if not passage.strip():
        return []
    return [(start + len(passage) - len(passage.lstrip()), start + len(passage.rstrip()))]


def _verdicts(
    claim_str: str, claim: Claim, cited: Sequence[_Text], windows: Sequence[Window], judge: _Judge
) -> tuple[_Verdict, list[_Verdict]]:
    """(the verdict of all cited texts together, each one's own verdict)."""
    if judge.fn is None:
        singles = [judge.lexical(claim, [w]) for w in windows]
        together = singles[0] if len(windows) == 1 else judge.lexical(claim, windows)
        return together, singles
    passages = [judge.passage_for(claim, t, w) for t, w in zip(cited, windows, strict=True)]
    singles = [judge.scored(judge.call(claim_str, p)) for p in passages]
    together = (
        singles[0] if len(passages) == 1 else judge.scored(judge.call(claim_str, "\n\n".join(passages)))
    )
    return together, singles


def _precise(
    claim_str: str,
    claim: Claim,
    cited: Sequence[_Text],
    windows: Sequence[Window],
    together: _Verdict,
    singles: Sequence[_Verdict],
    judge: _Judge,
) -> int:
    """ALCE: a citation is precise when it supports the sentence alone, or the sentence is supported and
    loses its support without it. (Citations of ids not among the hits, or of empty texts, are not.)"""
    precise = 0
    for i, single in enumerate(singles):
        if single.label == "supported":
            precise += 1
        elif together.label == "supported":
            rest_texts = [t for j, t in enumerate(cited) if j != i]
            rest_windows = [w for j, w in enumerate(windows) if j != i]
            rest, _ = _verdicts(claim_str, claim, rest_texts, rest_windows, judge)
            precise += rest.label != "supported"
    return precise


def check(
    text: str,
    hits: Sequence[Hit],
    *,
    checker: Checker | None = None,
    threshold: float = LEXICAL_THRESHOLD,
    pages: Mapping[int, str] | None = None,
    checker_name: str = "lexical",
    cost: float = 0.0,
) -> Verification:
    """The verification of ``text`` against ``hits`` (validated arguments; no I/O). ``pages`` replaces some
    hits' text by their fetched page (evidence ``source="page"``)."""
    pages = pages or {}
    texts = {
        h.id: _Text(h.id, pages[h.id], "page") if h.id in pages else _Text(h.id, h.text or "", "snippet")
        for h in hits
    }
    judge = _Judge(checker, threshold)
    checks: list[SentenceCheck] = []
    claims = supported = counted = precise = 0
    for sentence in _sentences(text):
        result, n_citations, n_precise = _check_sentence(sentence, texts, judge)
        checks.append(result)
        if n_precise is None:
            continue
        claims += 1
        supported += result.label == "supported"
        counted += n_citations
        precise += n_precise
    return Verification(
        sentences=checks,
        citation_recall=_round(supported / claims) if claims else None,
        citation_precision=_round(precise / counted) if counted else None,
        checker=checker_name,
        threshold=threshold,
        cost=cost,
    )


# --- public API ------------------------------------------------------------------------------------------


async def averify(
    answer_or_text: Any,
    hits: Any = None,
    *,
    checker: str | Checker = "lexical",
    threshold: float | None = None,
    fetch: bool | Mapping[str, Any] = False,
) -> Verification:
    """Check, sentence by sentence, that the hits a text cites support it (see :func:`verify`).

    A callable ``checker`` runs in a worker thread, so a model does not block the event loop; so does the
    lexical check of a large input (more than :data:`THREAD_CHARS` characters of text and cited texts).
    """
    text, hit_list = _inputs(answer_or_text, hits)
    fn, name, value = _check_options(checker, threshold)
    fetch_options = _fetch_options(fetch)
    pages: dict[int, str] = {}
    cost = 0.0
    if fetch_options is not None:
        pages, cost = await _fetch_pages(text, hit_list, fetch_options)
    if fn is None and _size(text, hit_list, pages) <= THREAD_CHARS:
        return check(text, hit_list, threshold=value, pages=pages, checker_name=name, cost=cost)
    return await asyncio.to_thread(
        check, text, hit_list, checker=fn, threshold=value, pages=pages, checker_name=name, cost=cost
    )


def verify(
    answer_or_text: Any,
    hits: Any = None,
    *,
    checker: str | Checker = "lexical",
    threshold: float | None = None,
    fetch: bool | Mapping[str, Any] = False,
) -> Verification:
    """Check, sentence by sentence, that the hits a text cites support it.

    ``answer_or_text`` is a :class:`perplexed.Answer` (its text and sources), or any text with ``[n]``
    markers plus ``hits``: a :class:`perplexed.Result`, a list of :class:`perplexed.Hit`, or the LangChain
    Documents / LlamaIndex nodes a perplexed retriever returned (their ``metadata["id"]`` is the hit id).

    ``checker="lexical"`` (default) is offline and deterministic, ``threshold`` defaulting to
    :data:`LEXICAL_THRESHOLD`; a callable ``(claim, passage) -> float`` in ``[0, 1]`` replaces it (default
    threshold :data:`DEFAULT_THRESHOLD`). ``fetch=True`` checks the cited pages' content instead (fetched
    through the fetch chain, :func:`perplexed.afetch_many`; the cost in :attr:`Verification.cost`; evidence
    ``source="page"``) and falls back to a hit's own text when its page cannot be fetched
    (``source="snippet"``). ``fetch`` may also be a dict of fetch options: ``{"provider": ["http", "jina"],
    "max_chars": 50000, ...}``.

    Raises :class:`~perplexed.InvalidRequest` naming the argument on bad input.
    """
    text, hit_list = _inputs(answer_or_text, hits)
    fn, name, value = _check_options(checker, threshold)
    if _fetch_options(fetch) is not None:  # I/O: the same coroutine on perplexed's portal loop
        return _portal.run(averify, answer_or_text, hits, checker=checker, threshold=threshold, fetch=fetch)
    return check(text, hit_list, checker=fn, threshold=value, checker_name=name)


def verify_answer(answer: Any) -> Verification:
    """:func:`verify` of an answer already paid for, which it never loses: whatever goes wrong in the check
    (a bug, a hostile text) gives a :class:`Verification` marked unavailable (``error``), never an exception."""
    try:
        return verify(answer)
    except Exception as exc:  # the answer is worth more than its check
        logger.warning("verify: the citation check of an answer failed: %s: %s", type(exc).__name__, exc)
        return Verification(
            error=f"the citation check failed ({type(exc).__name__}); the answer is unchecked"
        )


def _size(text: str, hits: Sequence[Hit], pages: Mapping[int, str]) -> int:
    return len(text) + sum(len(pages.get(h.id) or h.text or "") for h in hits)


async def _fetch_pages(
    text: str, hits: Sequence[Hit], options: Mapping[str, Any]
) -> tuple[dict[int, str], float]:
    """The content of every cited hit's page, by hit id, and what fetching cost (failed fetches included). A
    page that cannot be fetched, or comes back empty, is left out: its hit's own text is used."""
    cited = {n for s in _sentences(text) for n in s.citations}
    targets = [h for h in hits if h.id in cited and h.url.startswith(("http://", "https://"))]
    if not targets:
        return {}, 0.0
    from perplexed.operations._fetch import afetch, prepare_fetch

    kwargs = dict(options)
    provider = kwargs.pop("provider", None)
    try:  # bad options fail here, before anything is fetched (a bad URL only skips its page)
        prepare_fetch(targets[0].url, provider, **kwargs)
    except InvalidRequest as exc:
        if exc.param != "url":
            raise
    gate = asyncio.Semaphore(FETCH_CONCURRENCY)

    async def one(hit: Hit) -> tuple[str | None, float]:
        async with gate:
            try:
                page = await afetch(hit.url, provider, **kwargs)
            except PerplexedError as exc:  # not fetched (failed, refused address): the snippet is used
                logger.debug("verify: page %s not fetched: %s", hit.url, exc)
                return None, exc.cost
        return (page.content if page.content.strip() else None), page.cost

    results = await asyncio.gather(*(one(h) for h in targets))
    texts = {hit.id: text for hit, (text, _) in zip(targets, results, strict=True) if text is not None}
    return texts, float(sum(cost for _, cost in results))


def _fetch_options(fetch: object) -> Mapping[str, Any] | None:
    """``fetch`` as the options of :func:`perplexed.afetch_many` (``None``: do not fetch)."""
    if fetch is False:
        return None
    if fetch is True:
        return {}
    if isinstance(fetch, Mapping) and all(isinstance(k, str) for k in fetch):
        return fetch
    raise InvalidRequest(
        f"fetch must be True, False or a dict of fetch options (provider=..., max_chars=...), got {fetch!r}",
        param="fetch",
    )
