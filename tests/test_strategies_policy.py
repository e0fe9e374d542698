"""The strategies' pure policy, table-style: the quality floor's verdict, which answer is the result when
none is ``ok``, reciprocal rank fusion, the hedge delay, the p95 estimate, and the option checks."""

from __future__ import annotations

from typing import Any

import perplexed
import pytest
from perplexed import Hit, InvalidRequest, Outcome, Result
from perplexed.engine._strategies import (  # private: the strategies' pure ordering and merging rules
    DEFAULT_HEDGE_AFTER_MS,
    RRF_K,
    Candidate,
    best_answer,
    fuse,
    hedge_delay_ms,
    judge,
)
from perplexed.engine.chain import prepare  # private: the validated options of a prepared search


def hits(*urls: str, provider: str = "") -> list[Hit]:
    return [Hit(id=i, url=u, title=f"t{i}", provider=provider) for i, u in enumerate(urls, start=1)]


def result_of(h: list[Hit]) -> Result:
    return Result(query="q", provider="p", hits=h)


# --- judge ------------------------------------------------------------------------------------------------

ACCEPT_ALL = lambda r: True  # noqa: E731
REJECT = lambda r: False  # noqa: E731


@pytest.mark.parametrize(
    ("n_hits", "min_hits", "accept", "verdict"),
    [
        (3, None, None, None),  # no floor
        (3, 3, None, None),  # exactly enough
        (2, 3, None, "min_hits"),  # too few
        (1, 1, None, None),
        (5, 3, ACCEPT_ALL, None),
        (5, 3, REJECT, "rejected"),  # False -> "rejected"
        (5, None, lambda r: None, "rejected"),  # another false value
        (5, None, lambda r: 0, "rejected"),
        (5, None, lambda r: 1, None),  # a true value accepts
        (5, None, lambda r: "off topic", "off topic"),  # a string is the reason
        (5, None, lambda r: "  ", "rejected"),  # a blank reason
        (5, None, lambda r: "", "rejected"),
        (2, 3, lambda r: "never asked", "min_hits"),  # accept runs only when min_hits passed
        (4, None, lambda r: len(r.hits) >= 4, None),  # accept sees the answer's hits
        (3, None, lambda r: len(r.hits) >= 4, "rejected"),
    ],
)
def test_judge(n_hits: int, min_hits: int | None, accept: Any, verdict: str | None) -> None:
    h = hits(*(f"https://e.example/{i}" for i in range(n_hits)))
    assert judge(h, min_hits, accept, lambda: result_of(h)) == verdict


def test_judge_builds_the_result_only_for_accept() -> None:
    built: list[int] = []

    def make() -> Result:
        built.append(1)
        return result_of([])

    assert judge(hits("https://a.example/"), 1, None, make) is None
    assert built == []
    judge(hits("https://a.example/"), None, ACCEPT_ALL, make)
    assert built == [1]


def test_judge_lets_an_exception_from_accept_through() -> None:
    def boom(r: Result) -> bool:
        raise ValueError("bad gate")

    with pytest.raises(ValueError, match="bad gate"):
        judge(hits("https://a.example/"), None, boom, lambda: result_of([]))


# --- best_answer ------------------------------------------------------------------------------------------

INS, E = Outcome.INSUFFICIENT, Outcome.EMPTY


def cand(order: int, outcome: Outcome, n: int = 0) -> Candidate:
    return Candidate(order, f"p{order}", hits(*(f"https://x.example/{order}/{i}" for i in range(n))), outcome)


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        ([], None),
        ([cand(0, E)], 0),
        ([cand(0, E), cand(1, E)], 0),  # the first empty answer
        ([cand(1, E), cand(0, E)], 0),  # earliest in chain order, whatever the order they came in
        ([cand(0, E), cand(1, INS, 1)], 1),  # an insufficient answer beats an empty one
        ([cand(0, INS, 1), cand(1, E)], 0),
        ([cand(0, INS, 1), cand(1, INS, 2)], 1),  # the most hits
        ([cand(0, INS, 2), cand(1, INS, 2)], 0),  # the earliest on a tie
        ([cand(1, INS, 2), cand(0, INS, 2)], 0),  # chain order, not arrival order
        ([cand(0, INS, 2), cand(1, INS, 4), cand(2, INS, 4), cand(3, E)], 1),
    ],
)
def test_best_answer(candidates: list[Candidate], chosen: int | None) -> None:
    best = best_answer(candidates)
    assert (best.order if best is not None else None) == chosen


# --- fuse -------------------------------------------------------------------------------------------------


def test_fuse_scores_by_reciprocal_rank_and_records_sources() -> None:
    exa = hits("https://a.example/1", "https://b.example/2", "https://c.example/3", provider="exa")
    brave = hits("https://c.example/3", "https://d.example/4", "https://a.example/1", provider="brave")

    fused = fuse([("exa", exa), ("brave", brave)], limit=10)

    # a: 1/61 + 1/63; c: 1/63 + 1/61 (tie: best rank 1 both, then chain order: a from exa first); b: 1/62; d: 1/62
    assert [h.url for h in fused] == [
        "https://a.example/1", "https://c.example/3", "https://b.example/2", "https://d.example/4"
    ]
    assert [h.id for h in fused] == [1, 2, 3, 4]
    assert fused[0].sources == [{"provider": "exa", "rank": 1}, {"provider": "brave", "rank": 3}]
    assert fused[1].sources == [{"provider": "exa", "rank": 3}, {"provider": "brave", "rank": 1}]
    assert fused[2].sources == [{"provider": "exa", "rank": 2}]
    assert fused[3].sources == [{"provider": "brave", "rank": 2}]
    assert [h.provider for h in fused] == ["exa", "exa", "exa", "brave"]
    assert [h.score for h in fused] == [round(s, 6) for s in (1 / 61 + 1 / 63, 1 / 63 + 1 / 61, 1 / 62, 1 / 62)]
    # the inputs are untouched
    assert all(h.sources == [] for h in exa + brave)
    assert [h.id for h in brave] == [1, 2, 3]


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        # a page both providers found outranks each provider's own first hit
        ({"p": ["u1", "u2"], "q": ["u3", "u2"]}, ["u2", "u1", "u3"]),
        # one list: its own order
        ({"p": ["u1", "u2", "u3"]}, ["u1", "u2", "u3"]),
        # equal scores: the best rank first, then chain order
        ({"p": ["u1", "u2"], "q": ["u3", "u4"]}, ["u1", "u3", "u2", "u4"]),
        # an empty list adds nothing
        ({"p": [], "q": ["u1"]}, ["u1"]),
        ({}, []),
    ],
)
def test_fuse_order(lists: dict[str, list[str]], expected: list[str]) -> None:
    ranked = [(name, hits(*(f"https://e.example/{u}" for u in urls))) for name, urls in lists.items()]
    assert [h.url.rsplit("/", 1)[1] for h in fuse(ranked, limit=10)] == expected


def test_fuse_dedupes_by_normalised_url_and_fills_empty_fields() -> None:
    first = [Hit(url="https://www.Example.com/page/", title="", snippet="from p")]
    second = [Hit(url="http://example.com/page#top", title="The page", snippet="from q", score=9.5)]

    (hit,) = fuse([("p", first), ("q", second)], limit=10)

    assert hit.url == "https://www.Example.com/page/"  # the first list's fields
    assert hit.snippet == "from p"
    assert hit.title == "The page"  # filled from the other list
    assert hit.score == round(2 / 61, 6)  # the fused score, not a provider's
    assert hit.provider == "p"
    # the filled field is attributed to the provider it came from (issue 22 point 11)
    assert hit.sources == [{"provider": "p", "rank": 1}, {"provider": "q", "rank": 1, "filled": ["title"]}]


def test_fuse_counts_a_provider_once_per_page_and_caps_at_limit() -> None:
    dup = hits("https://a.example/", "https://a.example", "https://b.example/")
    fused = fuse([("p", dup), ("q", hits("https://c.example/"))], limit=2)
    assert [h.url for h in fused] == ["https://a.example/", "https://c.example/"]
    assert fused[0].sources == [{"provider": "p", "rank": 1}]
    assert [h.id for h in fused] == [1, 2]


def test_fuse_scores_use_k_60() -> None:
    # with k = 60, rank 1 + rank 60 in two lists (1/61 + 1/120 = 0.02473) beats rank 1 in one (1/61 = 0.01639)
    # and rank 2 + rank 2 (2/62 = 0.03226) beats rank 1 + rank 30 (1/61 + 1/90 = 0.02750)
    assert RRF_K == 60
    p = [f"https://e.example/p{i}" for i in range(1, 61)]
    q = ["https://e.example/x", *[f"https://e.example/q{i}" for i in range(2, 60)], "https://e.example/p1"]
    fused = fuse([("p", hits(*p)), ("q", hits(*q))], limit=3)
    assert [h.url for h in fused][:2] == ["https://e.example/p1", "https://e.example/x"]


# --- hedge delay ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "observed", "delay"),
    [
        (0, None, 0.0),
        (250, None, 250.0),
        (250, 40.0, 250.0),  # a fixed setting ignores observations
        ("auto", None, float(DEFAULT_HEDGE_AFTER_MS)),  # too few samples: the documented default
        ("auto", 87.5, 87.5),  # the observed p95
        ("auto", float("nan"), float(DEFAULT_HEDGE_AFTER_MS)),
        ("auto", -1.0, float(DEFAULT_HEDGE_AFTER_MS)),
    ],
)
def test_hedge_delay(setting: Any, observed: float | None, delay: float) -> None:
    assert hedge_delay_ms(setting, observed) == delay


# --- option checks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "param"),
    [
        ({"strategy": "fastest"}, "strategy"),
        ({"hedge_after_ms": -1}, "hedge_after_ms"),
        ({"hedge_after_ms": "soon"}, "hedge_after_ms"),
        ({"merge_providers": 0}, "merge_providers"),
        ({"merge_providers": 2.5}, "merge_providers"),
        ({"min_hits": 0}, "min_hits"),
        ({"min_hits": True}, "min_hits"),
        ({"min_hits": 11}, "min_hits"),  # more than max_results (10) can never be met
        ({"min_hits": 5, "max_results": 3}, "min_hits"),
        ({"accept": "yes"}, "accept"),
    ],
)
def test_bad_options_name_the_argument(options: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        prepare("q", lambda q, o: [], **options)
    assert info.value.param == param
    with pytest.raises(InvalidRequest):
        perplexed.search("q", lambda q, o: [], **options)


def test_good_options_prepare() -> None:
    prepared = prepare("q", lambda q, o: [], strategy="hedged", hedge_after_ms=120.0, min_hits=10)
    assert prepared.chain.strategy == "hedged"
    assert prepared.chain.hedge_after_ms == 120
    assert prepare("q", lambda q, o: [], strategy="merge", merge_providers=3).chain.merge_providers == 3
