"""perplexed.verify: sentence-level citation support (labels, offsets, evidence, ALCE recall/precision), its
inputs (an Answer, a Result, hits, dicts), the callable checker, bad input, and answer(verify=True).

The Agent API is :class:`FakeAgentAPI` (httpx.MockTransport, no socket); providers are plain functions.
"""

from __future__ import annotations

import json
from typing import Any

import perplexed
import pydantic
import pytest
from perplexed import Evidence, Hit, InvalidRequest, Result, SentenceCheck, Verification
from perplexed.grounding._lexical import split_sentences  # private: sentence offsets, table-style
from perplexed.integration import AnswerPlan, prepare_answer
from test_answer_fakes import ANSWER_TEXT, FakeAgentAPI, ok, provider, response_json

ZONING = Hit(
    id=1,
    url="https://example.org/zoning",
    title="Riverside zoning",
    snippet="The Riverside city council approved a new zoning plan on March 14, 2021. The plan raises the minimum "
    "front setback for residential lots from 20 to 25 feet and caps building height at 35 feet.",
)
TESLA = Hit(
    id=2,
    url="https://example.org/tesla",
    title="Tesla history",
    snippet="Tesla was founded in 2003 by Martin Eberhard and Marc Tarpenning. Elon Musk joined the company in 2004 "
    "as chairman of the board after leading its first funding round.",
)
HITS = [ZONING, TESLA]


def one(text: str, hits: Any = HITS, **kw: Any) -> SentenceCheck:
    v = perplexed.verify(text, hits, **kw)
    assert len(v.sentences) == 1, v.sentences
    return v.sentences[0]


# --- labels, table-style ---------------------------------------------------------------------------------

LABELS = [
    # (sentence, label, why)
    ("The Riverside council approved a new zoning plan in March 2021 [1].", "supported", "paraphrase"),
    ("Residential lots now need a front setback of at least 25 feet [1].", "supported", "paraphrase"),
    ("Martin Eberhard and Marc Tarpenning founded Tesla in 2003 [2].", "supported", "reordered"),
    (
        "The plan raises the minimum front setback to 30 feet [1].",
        "unsupported",
        "a different number in its place",
    ),
    ("The council approved the zoning plan in March 2019 [1].", "unsupported", "a different year"),
    ("The council approved the zoning plan in June 2021 [1].", "unsupported", "a different month"),
    (
        "Tesla was founded in 2004 by Martin Eberhard [2].",
        "unsupported",
        "2004 is when Musk joined, not the founding",
    ),
    (
        "Tesla was founded in 2003 by Martin Eberhard and Elon Musk [2].",
        "unsupported",
        "Musk was not a founder",
    ),
    ("The Riverside city council did not approve the zoning plan [1].", "unsupported", "negation added"),
    ("Elon Musk never led a funding round at Tesla [2].", "unsupported", "negation added"),
    (
        "The plan caps building height at 35 feet and requires solar panels, rain gardens and heat pumps on new homes [1].",
        "partial",
        "half of it is not in the source",
    ),
    (
        "The plan caps building height at 35 feet and takes effect in 2024 [1].",
        "partial",
        "a year the source lacks",
    ),
    ("Penguins live almost only in the Southern Hemisphere [1].", "unsupported", "unrelated passage"),
    ("Tesla makes electric cars in Texas [7].", "unsupported", "cites an id that is not among the hits"),
    ("The council approved the zoning plan in March 2021.", "uncited", "a claim citing nothing"),
    ("## Riverside zoning", "unverifiable", "a heading"),
    ("Yes [1].", "unverifiable", "one word"),
    ("Key points:", "unverifiable", "an introduction, not a claim"),
]


@pytest.mark.parametrize(("sentence", "label", "why"), LABELS, ids=[w for _, _, w in LABELS])
def test_labels(sentence: str, label: str, why: str) -> None:
    check = one(sentence)
    assert check.label == label, (check, why)
    assert 0.0 <= check.score <= 1.0
    if label == "supported":
        assert check.score >= 0.7 and check.evidence and not check.reason
    else:
        assert check.score < 0.7 and check.reason


def test_a_contradiction_scores_low_and_says_which_value() -> None:
    check = one("The plan raises the minimum front setback to 30 feet [1].")
    assert check.score < 0.3
    assert "30" in check.reason and ("25" in check.reason or "20" in check.reason)


def test_no_text_to_check_against_is_unverifiable() -> None:
    empty = Hit(id=1, url="https://example.org/empty")
    check = one("The council approved the zoning plan in March 2021 [1].", [empty])
    assert check.label == "unverifiable"


def test_every_label_in_one_text_with_offsets_and_evidence() -> None:
    text = (
        "## Riverside\n"
        "The Riverside council approved a new zoning plan in March 2021 [1]. "
        "The plan raises the minimum front setback to 30 feet [1].\n"
        "- It caps building height at 35 feet and bans short-term rentals in every district [1].\n"
        "Tesla was founded in 2003 by Martin Eberhard and Marc Tarpenning. [2] "
        "Many cities are revising their zoning codes this decade."
    )
    v = perplexed.verify(text, HITS)
    labels = [s.label for s in v.sentences]
    assert labels == ["unverifiable", "supported", "unsupported", "partial", "supported", "uncited"]
    for s in v.sentences:
        assert text[s.start : s.end] == s.text
        for e in s.evidence:
            hit = {h.id: h for h in HITS}[e.hit_id]
            assert hit.text[e.start : e.end] == e.text and e.source == "snippet"
    assert v.sentences[4].citations == [2]  # a marker after the full stop belongs to the sentence it follows
    assert v.sentences[1].evidence[0].text == ZONING.snippet[: ZONING.snippet.index(".") + 1]
    assert [s.label for s in v.unsupported] == ["unsupported", "partial", "uncited"]
    assert v.citation_recall == pytest.approx(2 / 5)  # 5 claims (all but the heading), 2 supported
    assert v.citation_precision == pytest.approx(2 / 4)  # 4 citations, 2 of them support their sentence
    assert v.checker == "lexical" and v.threshold == 0.7 and v.cost == 0.0


def test_precision_counts_a_citation_that_adds_nothing_as_imprecise() -> None:
    v = perplexed.verify("Martin Eberhard and Marc Tarpenning founded Tesla in 2003 [1][2].", HITS)
    check = v.sentences[0]
    assert check.label == "supported" and check.citations == [1, 2]
    assert [e.hit_id for e in check.evidence] == [2]  # nothing in hit 1 supports it
    assert v.citation_recall == 1.0 and v.citation_precision == 0.5


def test_support_split_over_two_citations_counts_both_as_needed() -> None:
    a = Hit(id=1, url="https://a.example", snippet="The Saltmarsh wind farm has 48 turbines.")
    b = Hit(id=2, url="https://b.example", snippet="The Saltmarsh wind farm supplies about 600,000 homes.")
    v = perplexed.verify(
        "The Saltmarsh wind farm has 48 turbines and supplies about 600,000 homes [1][2].", [a, b]
    )
    assert v.sentences[0].label == "supported"
    assert v.citation_precision == 1.0  # neither supports it alone; removing either loses the support
    alone = perplexed.verify(
        "The Saltmarsh wind farm has 48 turbines and supplies about 600,000 homes [1].", [a, b]
    )
    assert alone.sentences[0].label == "partial"


def test_nothing_to_count_gives_none() -> None:
    v = perplexed.verify("## Heading\nOk.", HITS)
    assert [s.label for s in v.sentences] == ["unverifiable", "unverifiable"]
    assert v.citation_recall is None and v.citation_precision is None and v.unsupported == []
    empty = perplexed.verify("", HITS)
    assert empty.sentences == [] and empty.citation_recall is None
    uncited = perplexed.verify("The council approved a zoning plan for Riverside.", HITS)
    assert uncited.citation_recall == 0.0 and uncited.citation_precision is None


def test_a_number_the_source_lacks_is_never_supported() -> None:
    check = one("The Riverside council approved the zoning plan with 7 votes in March 2021 [1].")
    assert check.label in ("partial", "unsupported") and "7" in check.reason


def test_scales_and_percent_words_match_their_figures() -> None:
    hit = Hit(
        id=1, url="https://x.example", snippet="Revenue reached $4,200,000 in 2023, a rise of 12 percent."
    )
    assert one("Revenue reached $4.2 million in 2023, up 12% [1].", [hit]).label == "supported"
    assert one("Revenue reached $4.2 billion in 2023, up 12% [1].", [hit]).label == "unsupported"


# --- sentences -------------------------------------------------------------------------------------------

SPLITS = [
    ("One is here. Two is there.", ["One is here.", "Two is there."]),
    (
        "Dr. Smith paid $3.50 on Jan. 5 for the U.S. version. It works.",
        ["Dr. Smith paid $3.50 on Jan. 5 for the U.S. version.", "It works."],
    ),
    (
        "A claim [1]. Another [2][3]. A third.[4] Last. [5]",
        ["A claim [1].", "Another [2][3].", "A third.[4]", "Last. [5]"],
    ),
    ("# Title\n\n- item one\n- item two", ["# Title", "- item one", "- item two"]),
    (
        "J. K. Rowling wrote it. See example.com for more.",
        ["J. K. Rowling wrote it.", "See example.com for more."],
    ),
    ("Is it? Yes! Sure.", ["Is it?", "Yes!", "Sure."]),
]


@pytest.mark.parametrize(("text", "want"), SPLITS)
def test_sentence_splitting(text: str, want: list[str]) -> None:
    assert [text[s:e] for s, e in split_sentences(text)] == want


# --- inputs ----------------------------------------------------------------------------------------------


def test_a_result_a_list_of_hits_and_dicts_give_the_same_verification() -> None:
    text = "Martin Eberhard and Marc Tarpenning founded Tesla in 2003 [2]."
    base = perplexed.verify(text, HITS)
    result = Result(query="q", provider="web", hits=HITS)
    assert perplexed.verify(text, result) == base
    assert perplexed.verify(text, [h.model_dump() for h in HITS]) == base


def test_hits_without_ids_are_numbered_by_position() -> None:
    hits = [Hit(url="https://a.example", snippet="Cats sleep for 12 to 16 hours a day on average.")]
    assert one("Cats sleep 12 to 16 hours a day [1].", hits).label == "supported"


def test_content_is_checked_when_known() -> None:
    hit = Hit(
        id=1,
        url="https://a.example",
        snippet="Short teaser.",
        content="Octopuses have three hearts and blue blood.",
    )
    check = one("Octopuses have three hearts [1].", [hit])
    assert (
        check.label == "supported" and check.evidence[0].text == "Octopuses have three hearts and blue blood."
    )


BAD = [
    ({"answer_or_text": "text [1]."}, "hits"),
    ({"answer_or_text": 42, "hits": HITS}, "answer_or_text"),
    ({"answer_or_text": "text [1].", "hits": "not hits"}, "hits"),
    ({"answer_or_text": "text [1].", "hits": [object()]}, "hits"),
    ({"answer_or_text": "text [1].", "hits": HITS, "checker": "nli"}, "checker"),
    ({"answer_or_text": "text [1].", "hits": HITS, "checker": 3}, "checker"),
    ({"answer_or_text": "text [1].", "hits": HITS, "threshold": 0}, "threshold"),
    ({"answer_or_text": "text [1].", "hits": HITS, "threshold": 1.5}, "threshold"),
    ({"answer_or_text": "text [1].", "hits": HITS, "threshold": True}, "threshold"),
    ({"answer_or_text": "text [1].", "hits": HITS, "threshold": float("nan")}, "threshold"),
    ({"answer_or_text": "text [1].", "hits": HITS, "fetch": "yes"}, "fetch"),
]


@pytest.mark.parametrize(("kwargs", "param"), BAD, ids=[p for _, p in BAD])
async def test_bad_input_names_the_argument(kwargs: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        perplexed.verify(**kwargs)
    assert info.value.param == param
    with pytest.raises(InvalidRequest):
        await perplexed.averify(**kwargs)


# --- the models ------------------------------------------------------------------------------------------


def test_models_are_frozen_and_dump_to_plain_json() -> None:
    v = perplexed.verify("The plan raises the minimum front setback to 30 feet [1]. Tesla exists.", HITS)
    data = v.model_dump(mode="json")
    assert json.loads(json.dumps(data)) == data
    assert set(data) >= {
        "sentences",
        "citation_recall",
        "citation_precision",
        "unsupported",
        "checker",
        "cost",
    }
    assert data["unsupported"] == [s.model_dump(mode="json") for s in v.unsupported]
    sentence = data["sentences"][0]
    assert set(sentence) >= {"text", "start", "end", "citations", "label", "score", "evidence"}
    assert set(sentence["evidence"][0]) >= {"hit_id", "start", "end", "text", "source"}
    assert Verification.model_validate(data) == v
    with pytest.raises(pydantic.ValidationError):
        v.sentences[0].label = "supported"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        v.checker = "x"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        Evidence(hit_id=1, start=0, end=1, text="x", source="web")  # type: ignore[arg-type]


def test_deterministic() -> None:
    text = (
        "The Riverside council approved a new zoning plan in March 2021 [1]. Tesla was founded in 2004 [2]."
    )
    assert perplexed.verify(text, HITS).model_dump() == perplexed.verify(text, HITS).model_dump()


async def test_averify_matches_verify() -> None:
    text = (
        "The Riverside council approved a new zoning plan in March 2021 [1]. Tesla was founded in 2004 [2]."
    )
    assert await perplexed.averify(text, HITS) == perplexed.verify(text, HITS)


# --- a callable checker ----------------------------------------------------------------------------------


def test_a_callable_checker_scores_each_claim_against_the_cited_text() -> None:
    calls: list[tuple[str, str]] = []

    def my_nli(claim: str, passage: str) -> float:
        calls.append((claim, passage))
        return 0.9 if "Eberhard" in passage else 0.1

    v = perplexed.verify("Tesla had two founders [2]. The plan is new [1].", HITS, checker=my_nli)
    assert v.checker == "my_nli" and v.threshold == 0.5
    assert [s.label for s in v.sentences] == ["supported", "unsupported"]
    assert [s.score for s in v.sentences] == [0.9, 0.1]
    assert calls[0] == (
        "Tesla had two founders.",
        TESLA.text,
    )  # the claim without its markers, the hit's text
    custom = perplexed.verify("Tesla had two founders [2].", HITS, checker=my_nli, threshold=0.95)
    assert custom.sentences[0].label == "partial" and custom.threshold == 0.95


@pytest.mark.parametrize("value", [1.5, -0.1, "high", None, float("nan")])
def test_a_checker_returning_no_probability_is_a_clear_error(value: object) -> None:
    with pytest.raises(InvalidRequest) as info:
        perplexed.verify("Tesla had two founders [2].", HITS, checker=lambda c, p: value)
    assert info.value.param == "checker"


async def test_averify_runs_a_callable_checker_off_the_event_loop() -> None:
    import threading

    threads: list[str] = []

    def scorer(claim: str, passage: str) -> float:
        threads.append(threading.current_thread().name)
        return 1.0

    v = await perplexed.averify("Tesla had two founders [2].", HITS, checker=scorer)
    assert v.sentences[0].label == "supported" and threads and threads[0] != threading.current_thread().name


# --- verify=True where answers are made ------------------------------------------------------------------

QUERY = "What are typical zoning setbacks?"


def _numbered() -> list[Hit]:
    from testkit.hits import ZONING_HITS

    return [h.model_copy(update={"id": i}) for i, h in enumerate(ZONING_HITS, start=1)]


async def test_aanswer_verify_attaches_the_verification() -> None:
    api = FakeAgentAPI()
    ans = await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client(), verify=True)
    assert isinstance(ans.verification, Verification)
    assert ans.verification == perplexed.verify(ans.text, _numbered())
    assert [s.label for s in ans.verification.sentences] == ["supported", "supported"]
    assert ans.to_dict()["verification"] == ans.verification.model_dump(mode="json")
    plain = await perplexed.aanswer(QUERY, provider=provider(), client=api.async_client())
    assert plain.verification is None and "verification" not in plain.to_dict()


def test_answer_verify_flags_a_wrong_number_and_an_unknown_source() -> None:
    text = "Typical residential front setbacks are 40 feet [2]. Variances are common [9]."
    api = FakeAgentAPI(reply=ok(response_json(text)))
    ans = perplexed.answer(QUERY, provider=provider(), client=api.client(), verify=True)
    assert ans.verification is not None
    assert [s.label for s in ans.verification.sentences] == ["unsupported", "unsupported"]
    assert ans.verification.citation_recall == 0.0
    assert perplexed.verify(ans) == ans.verification


def test_stream_answer_verify_comes_with_the_final_answer() -> None:
    api = FakeAgentAPI(reply=ok(response_json(ANSWER_TEXT), deltas=None))
    items = list(perplexed.stream_answer(QUERY, provider=provider(), client=api.client(), verify=True))
    final = items[-1]
    assert isinstance(final, perplexed.Answer) and final.verification is not None
    assert all(isinstance(i, str) for i in items[:-1])
    assert final.verification.citation_recall == 1.0


async def test_astream_answer_verify() -> None:
    api = FakeAgentAPI(reply=ok(response_json(ANSWER_TEXT)))
    items = [
        i
        async for i in perplexed.astream_answer(
            QUERY, provider=provider(), client=api.async_client(), verify=True
        )
    ]
    assert isinstance(items[-1], perplexed.Answer) and items[-1].verification is not None


def test_answer_verify_must_be_a_bool_and_fails_before_any_call() -> None:
    api = FakeAgentAPI()
    calls: list[str] = []
    with pytest.raises(InvalidRequest) as info:
        perplexed.answer(QUERY, provider=provider(calls=calls), client=api.client(), verify="yes")
    assert info.value.param == "verify" and calls == [] and api.requests == []
    plan = prepare_answer(QUERY, provider=provider(), client=api.client(), verify=True)
    assert plan.verify is True and "verify" in AnswerPlan.ARGUMENTS


def test_chinese_and_japanese_text_is_split_and_matched_by_character_pairs() -> None:
    passage = "東京タワーは1958年に完成した。高さは333メートルである。"
    hits = [Hit(id=1, url="https://example.jp/tower", snippet=passage)]
    v = perplexed.verify("東京タワーは1958年に完成した[1]。高さは400メートルである[1]。大阪城は古い城である。", hits)
    assert [s.text for s in v.sentences] == ["東京タワーは1958年に完成した[1]。", "高さは400メートルである[1]。", "大阪城は古い城である。"]
    assert [s.label for s in v.sentences] == ["supported", "unsupported", "uncited"]
    assert "333" in v.sentences[1].reason
