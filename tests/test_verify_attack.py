"""perplexed.verify against hostile and tricky content (issue 40: findings 8, 9, 10, 11, 16; issue 39: point 9).

Every test is written from the attacker's side: a sentence and a cited text that fooled or broke the checker on
1a4d34d. Numbers of any length never raise and ``answer(verify=True)`` never loses an answer; a changed name, an
antonym in any form, a negating prefix, a quantifier, a modal, a comparison's direction and a unit are never
``supported``; time is linear in the input; a callable checker's supported sentence carries its evidence; a table
row's value is compared within its row. The timing tests (``@pytest.mark.timing``) have bounds far above what the
code takes, and far below what the old code took.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import Hit, Verification
from perplexed.grounding import _verify  # private: injects failures into the check, which nothing public can
from test_answer_fakes import FakeAgentAPI, ok, provider, response_json

ROOT = Path(__file__).resolve().parents[1]
ZONING_MD = ROOT / "examples" / "corpus" / "zoning-setbacks.md"


def check(claim: str, passage: str, **kw: Any) -> perplexed.SentenceCheck:
    """The one sentence ``claim`` (citing [1]) checked against ``passage``."""
    text = claim[:-1] + " [1]." if claim.endswith(".") else claim + " [1]"
    v = perplexed.verify(text, [Hit(id=1, url="https://example.org/p", snippet=passage)], **kw)
    assert len(v.sentences) == 1, v.sentences
    return v.sentences[0]


# --- finding 8: numbers of any length ----------------------------------------------------------------------

BIG = "9" * 309  # past the largest float: float() gives inf, int(inf) raised OverflowError


@pytest.mark.parametrize(
    ("claim", "passage"),
    [
        (f"The register holds {BIG} entries.", "The register holds 12 entries."),
        ("The register holds 12 entries.", f"The register holds {BIG} entries."),
        (f"The fund holds ${BIG} million in bonds.", "The fund holds $5 million in bonds."),
        (f"The value is {'8' * 5000}.{'1' * 400} percent of the total.", "The value is 3 percent of the total."),
    ],
)
def test_a_number_of_any_length_is_checked_not_raised(claim: str, passage: str) -> None:
    s = check(claim, passage)
    assert s.label == "unsupported" and "where the sentence says" in s.reason


def test_long_numbers_are_compared_by_all_their_digits() -> None:
    long = "1234567890" * 4
    assert check(f"The ledger shows {long} units in stock.", f"The ledger shows {long} units in stock.").supported
    other = long[:-1] + "7"  # the same as a float, another number
    assert check(f"The ledger shows {other} units in stock.", f"The ledger shows {long} units in stock.").label == (
        "unsupported"
    )


def test_answer_verify_keeps_an_answer_with_a_309_digit_number() -> None:
    text = f"Typical residential front setbacks are {BIG} feet [2]. A setback is a minimum distance [1]."
    api = FakeAgentAPI(reply=ok(response_json(text)))
    ans = perplexed.answer("setbacks", provider=provider(), client=api.client(), verify=True)
    assert ans.text == text and api.requests  # paid for, and returned
    assert isinstance(ans.verification, Verification) and ans.verification.error is None
    assert ans.verification.sentences[0].label == "unsupported"


def test_answer_verify_returns_the_answer_marked_unchecked_when_the_check_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever goes wrong inside the check (here: an error injected into it), the paid answer comes back."""

    def broken(*args: Any, **kwargs: Any) -> Verification:
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(_verify, "check", broken)
    api = FakeAgentAPI()
    ans = perplexed.answer("setbacks", provider=provider(), client=api.client(), verify=True)
    assert ans.text and len(api.requests) == 1
    v = ans.verification
    assert v is not None and v.error and "OverflowError" in v.error
    assert v.sentences == [] and v.citation_recall is None and v.citation_precision is None
    assert v.report().startswith("citation check unavailable")
    assert ans.to_dict()["verification"]["error"] == v.error


# --- finding 9: names as whole words -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "passage"),
    [
        ("Austria joined the European Union in 1995.", "Australia joined the European Union in 1995."),
        ("Microsoft reported record revenue in the quarter.", "Micron reported record revenue in the quarter."),
        ("The bill was sponsored by Senator Johnston of Ohio.", "The bill was sponsored by Senator Johnson of Ohio."),
        ("Australia joined the European Union in 1995.", "Austria joined the European Union in 1995."),
    ],
)
def test_a_name_sharing_its_first_letters_is_another_name(claim: str, passage: str) -> None:
    s = check(claim, passage)
    assert s.label == "unsupported", s
    assert s.score < 0.5


@pytest.mark.parametrize(
    ("claim", "passage"),
    [
        ("The Canadian coastline is the longest in the world.", "Canada has the longest coastline in the world."),
        ("Austria's Alpine villages attract skiers every winter.", "Austrian Alpine villages attract skiers every winter."),
        ("Italian farms produce most of the olive oil sold in the region.", "Farms in Italy produce most of the olive oil sold in the region."),
    ],
)
def test_a_name_and_its_adjective_are_still_one_name(claim: str, passage: str) -> None:
    assert check(claim, passage).supported


# --- findings 9 and 10: one-word reversals -----------------------------------------------------------------

REVERSALS = [
    # (claim, passage): the claim reverses the passage in one word
    ("The home team lost the championship game in overtime.", "The home team won the championship game in overtime."),
    ("The home team loses the championship game in overtime.", "The home team won the championship game in overtime."),
    ("The home team won the championship game in overtime.", "The home team lost the championship game in overtime."),
    ("The home team is winning the championship game in overtime.", "The home team is losing the championship game in overtime."),
    ("The museum is closed on Mondays during winter.", "The museum is open on Mondays during winter."),
    ("The museum opens on Mondays during winter.", "The museum is closed on Mondays during winter."),
    ("Selling raw milk is illegal in the state of Ohio.", "Selling raw milk is legal in the state of Ohio."),
    ("Selling raw milk is legal in the state of Ohio.", "Selling raw milk is illegal in the state of Ohio."),
    ("The parliament repealed the data protection law in 2019.", "The parliament enacted the data protection law in 2019."),
    ("All members of the committee voted for the proposal.", "Some members of the committee voted for the proposal."),
    ("Some members of the committee voted for the proposal.", "All members of the committee voted for the proposal."),
    ("Tenants must register their bicycles with the building office.", "Tenants may register their bicycles with the building office."),
    ("Tenants may register their bicycles with the building office.", "Tenants must register their bicycles with the building office."),
    ("Fences in the front yard must be under 35 feet tall.", "Fences in the front yard must be over 35 feet tall."),
    ("Fences in the front yard must be over 35 feet tall.", "Fences in the front yard must be under 35 feet tall."),
    ("Applicants must be at least 18 years old to register.", "Applicants must be at most 18 years old to register."),
    ("Applicants must be at most 18 years old to register.", "Applicants must be at least 18 years old to register."),
    ("The tower is 300 meters tall according to the city.", "The tower is 300 feet tall according to the city."),
    ("The lake is 40 kilometres long according to the survey.", "The lake is 40 miles long according to the survey."),
    ("The company confirmed the merger talks with its rival.", "The company denied the merger talks with its rival."),
    ("The company denied the merger talks with its rival.", "The company confirmed the merger talks with its rival."),
    ("The drug is unsafe for children under twelve.", "The drug is safe for children under twelve."),
    ("The agency disapproved the new vaccine last spring.", "The agency approved the new vaccine last spring."),
    ("The road is nonpublic and maintained by residents.", "The road is public and maintained by residents."),
    ("The road is non-public and maintained by residents.", "The road is public and maintained by residents."),
    ("The results were inconclusive according to the authors.", "The results were conclusive according to the authors."),
    ("The old mountain pass is impassable in winter.", "The old mountain pass is passable in winter."),
]


@pytest.mark.parametrize(("claim", "passage"), REVERSALS)
def test_a_one_word_reversal_is_unsupported(claim: str, passage: str) -> None:
    s = check(claim, passage)
    assert s.label == "unsupported", s
    assert s.score <= 0.3 and ("opposite" in s.reason or "where the sentence says" in s.reason)


CONTROLS = [
    # the same words where nothing is reversed: still supported
    ("The home team won the championship game in overtime.", "The home team won the championship game in overtime."),
    ("Winning the championship game, the home team celebrated in overtime.", "The home team won the championship game and celebrated in overtime."),
    ("Selling raw milk is illegal in the state of Ohio.", "Selling raw milk is illegal in the state of Ohio."),
    ("Front yard fences must be under 4 feet tall.", "Fences in the front yard must be under 4 feet tall, while backyard fences may reach 6 feet."),
    ("About 2,000 people attended the rally in Lisbon.", "Some 2,000 people attended the rally in Lisbon."),
    ("The tower is 300 metres tall according to the city.", "The tower is 300 meters tall according to the city."),
    ("Rear setbacks are 20 to 25 ft in most districts.", "Rear setbacks are 20 to 25 feet in most districts."),
    ("Divers discovered the wreck in 2012 near the harbour.", "Divers discovered the wreck in 2012 near the harbour, and the museum will cover the costs."),
    ("The company will invest $5 million in a new plant.", "The company will invest $5 million in a new plant."),
    ("Not all members of the committee voted for the proposal.", "Not all members of the committee voted for the proposal."),
]


@pytest.mark.parametrize(("claim", "passage"), CONTROLS)
def test_the_same_words_unreversed_stay_supported(claim: str, passage: str) -> None:
    s = check(claim, passage)
    assert s.supported, s


# --- finding 11: linear time; averify off the event loop ---------------------------------------------------


@pytest.mark.timing
def test_a_run_of_spaces_inside_a_sentence_is_linear() -> None:
    hits = [Hit(id=1, url="https://example.org/cats", snippet="Cats sleep twelve hours a day.")]
    text = "Cats sleep" + " " * 160_000 + "twelve hours a day [1]."
    started = time.perf_counter()
    v = perplexed.verify(text, hits)
    assert time.perf_counter() - started < 3.0  # 32.7 s on 1a4d34d; about 0.05 s now
    assert v.sentences[0].label == "supported"


@pytest.mark.timing
def test_a_sentence_of_many_numbers_is_linear() -> None:
    claim = "Readings " + " ".join(str(n) for n in range(5000)) + " [1]."
    hit = Hit(id=1, url="https://example.org/r", snippet="Readings " + " ".join(str(n) for n in range(5000, 10000)) + ".")
    started = time.perf_counter()
    v = perplexed.verify(claim, [hit])
    assert time.perf_counter() - started < 5.0
    assert v.sentences[0].label == "unsupported"


def _big_hit(chars: int) -> str:
    rng = random.Random(7)
    words = [f"w{rng.randrange(1_000_000):06d}" for _ in range(40_000)]
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(words) for _ in range(14)).capitalize() + f" {rng.randrange(1, 999)}."
        out.append(sentence)
        size += len(sentence) + 1
    return " ".join(out)


@pytest.mark.timing
def test_each_sentence_against_a_687_kb_hit_costs_what_its_words_occur() -> None:
    """The text is analysed once; then a sentence looks only at the hit's sentences holding its words."""
    hits = [Hit(id=1, url="https://example.org/big", snippet=_big_hit(687_000))]
    one = "The council approved the zoning plan in 2021 [1]."
    many = " ".join(f"The council approved zoning plan number {n} in 2021 [1]." for n in range(200))
    started = time.perf_counter()
    perplexed.verify(one, hits)
    single = time.perf_counter() - started
    started = time.perf_counter()
    v = perplexed.verify(many, hits)
    extra = (time.perf_counter() - started - single) / 199
    assert len(v.sentences) == 200
    assert extra < 0.010, f"{extra * 1000:.1f} ms a sentence"  # 22 ms on 1a4d34d (each scanned the hit); 0.1 ms now


def test_averify_checks_a_large_input_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    real = _verify.check

    def recording(*args: Any, **kwargs: Any) -> Verification:
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(_verify, "check", recording)
    small = [Hit(id=1, url="https://example.org/s", snippet="Cats sleep twelve hours a day.")]
    large = [Hit(id=1, url="https://example.org/l", snippet="Cats sleep twelve hours a day. " * 3000)]

    async def main() -> tuple[Verification, Verification, str]:
        a = await perplexed.averify("Cats sleep twelve hours a day [1].", small)
        b = await perplexed.averify("Cats sleep twelve hours a day [1].", large)
        return a, b, threading.current_thread().name

    a, b, loop_thread = asyncio.run(main())
    assert a.sentences[0].supported and b.sentences[0].supported
    assert threads[0] == loop_thread  # small: inline, no thread hop
    assert threads[1] != loop_thread  # large: off the event loop


@pytest.mark.timing
def test_averify_of_a_large_input_leaves_the_event_loop_free() -> None:
    hits = [Hit(id=1, url="https://example.org/big", snippet=_big_hit(1_000_000))]
    text = " ".join(f"The council approved zoning plan number {n} in 2021 [1]." for n in range(50))

    async def main() -> float:
        gaps: list[float] = []
        done = asyncio.Event()

        async def beat() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        ticker = asyncio.create_task(beat())
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        await perplexed.averify(text, hits)
        took = time.perf_counter() - started
        done.set()
        await ticker
        assert took > 0.3, took  # long enough for a blocked loop to show
        return max(gaps) / took

    # on 1a4d34d the loop stood still for the whole check (the share is about 1); the loop now keeps ticking,
    # its longest pause a thread switch under load (about 0.3 s beside other processes)
    assert asyncio.run(main()) < 0.5


# --- finding 16: a callable checker's evidence -------------------------------------------------------------


def test_a_callable_checker_that_supports_a_sentence_gives_its_evidence_span() -> None:
    hit = Hit(id=1, url="https://example.org/cats", snippet="Felines doze through most of the daytime.")

    def nli(claim: str, passage: str) -> float:  # a model that sees the paraphrase the words do not share
        return 0.93

    s = perplexed.verify("Cats are asleep for much of the day [1].", [hit], checker=nli).sentences[0]
    assert s.label == "supported"
    assert [e.hit_id for e in s.evidence] == [1]
    e = s.evidence[0]
    assert e.text == hit.text[e.start : e.end] == "Felines doze through most of the daytime."


def test_a_callable_checker_evidence_per_cited_hit_and_none_for_an_unsupported_sentence() -> None:
    hits = [
        Hit(id=1, url="https://example.org/a", snippet="Felines doze through most of the daytime."),
        Hit(id=2, url="https://example.org/b", snippet="Domestic cats are asleep for much of the day. They hunt at dusk."),
    ]
    v = perplexed.verify("Cats are asleep for much of the day [1][2].", hits, checker=lambda c, p: 0.9)
    assert {e.hit_id for e in v.sentences[0].evidence} == {1, 2}
    assert all(e.text == hits[e.hit_id - 1].text[e.start : e.end] for e in v.sentences[0].evidence)
    assert v.sentences[0].evidence[1].text == "Domestic cats are asleep for much of the day."
    no = perplexed.verify("Cats are asleep for much of the day [1].", hits[:1], checker=lambda c, p: 0.05)
    assert no.sentences[0].label == "unsupported" and no.sentences[0].evidence == []


# --- issue 39, point 9: values in a table are compared within their row ------------------------------------


def _rows_as_indexed() -> str:
    """The zoning table as the local index's hit gives it (pipes and rules dropped: one line a row)."""
    from perplexed.providers import Local
    from perplexed.providers.local import build_index

    return _local_hit_text(build_index, Local)


_INDEX_TEXT: dict[str, str] = {}


def _local_hit_text(build_index: Any, local: Any) -> str:
    if "zoning" not in _INDEX_TEXT:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "index.db"
            build_index(ROOT / "examples" / "corpus", path)
            result = perplexed.search("typical zoning setbacks", provider=local(index=path))
            (hit,) = [h for h in result.hits if h.url.endswith("zoning-setbacks.md")]
            _INDEX_TEXT["zoning"] = hit.text
    return _INDEX_TEXT["zoning"]


TABLE_CASES = [
    ("Rear setbacks are often 20 to 25 feet.", "supported"),  # the row "Rear 20-25 ft" (the issue's case)
    ("The rear setback is usually 20 to 25 feet.", "supported"),
    ("Side setbacks are often 5 to 10 feet.", "supported"),
    ("Front setbacks are typically 20 to 30 feet.", "supported"),
    ("Rear setbacks are often 5 to 10 feet.", "unsupported"),  # the Side row's values: a changed row value
    ("Front setbacks are typically 20 to 25 feet.", "unsupported"),  # the Rear row's values
    ("Side setbacks are often 20 to 25 feet.", "unsupported"),
    ("The rear setback is usually 30 to 40 feet.", "unsupported"),
    ("Rear setbacks are often 20 to 25 meters.", "unsupported"),  # the right row, the wrong unit
]


@pytest.mark.parametrize(("claim", "expected"), TABLE_CASES)
@pytest.mark.parametrize("form", ["markdown", "indexed"])
def test_a_table_value_is_compared_within_its_row(claim: str, expected: str, form: str) -> None:
    text = ZONING_MD.read_text(encoding="utf-8") if form == "markdown" else _rows_as_indexed()
    assert "Rear" in text and "20\u201325 ft" in text
    s = check(claim, text)
    if expected == "supported":
        assert s.supported, s
        assert any("Rear" in e.text or "Side" in e.text or "Front" in e.text for e in s.evidence)
    else:
        assert s.label == "unsupported", s


def test_the_issue_39_sentence_through_a_local_search_and_an_answer_text() -> None:
    text = _rows_as_indexed()
    hits = [Hit(id=1, url="file:///corpus/zoning-setbacks.md", snippet=text)]
    v = perplexed.verify(
        "Rear setbacks are often 20 to 25 feet [1]. Side setbacks are 5 to 10 feet [1]. "
        "Rear setbacks are often 5 to 10 feet [1].",
        hits,
    )
    assert [s.label for s in v.sentences] == ["supported", "supported", "unsupported"]
    assert "'20'" not in v.sentences[0].reason and v.sentences[0].reason == ""


# --- verify never raises on content ------------------------------------------------------------------------

PIECES = [
    "Austria", "Australia", "illegal", "legal", "at least", "at most", "some", "all", "may", "must", "under", "over",
    "9" * 400, "1,000,000", "0.000000000000000000001", "$", "%", "million", "percent", "ft", "meters", "May",
    "Rear", "20\u201325", "[1]", "[2-4]", "[9999]", "[1", " " * 50, "\n", "\t", ". ", "? ", "non-", "un", "dis",
    "\u6771\u4eac", "\u0301", "\ufeff", "|", "#", "**", "won", "lost", "closed", "not", "never", "the", "a",
]  # fmt: skip


def test_verify_never_raises_on_content() -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    piece = st.one_of(st.sampled_from(PIECES), st.text(max_size=12))
    text = st.lists(piece, max_size=40).map("".join)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text, st.lists(text, min_size=1, max_size=3))
    def run(sentence: str, passages: list[str]) -> None:
        hits = [Hit(id=i, url=f"https://example.org/{i}", snippet=p) for i, p in enumerate(passages, start=1)]
        v = perplexed.verify(sentence, hits)
        for s in v.sentences:
            assert sentence[s.start : s.end] == s.text
            for e in s.evidence:
                assert hits[e.hit_id - 1].text[e.start : e.end] == e.text
        perplexed.verify(sentence, hits, checker=lambda c, p: 0.6)

    run()
