"""The default checker on the labelled set (tests/data/verify_pairs.yaml, written by hand for this project):
precision of ``supported`` >= 0.90, recall >= 0.80, and a changed number, date or name, a one-word reversal
(antonym, quantifier or modal, comparison, unit) or a changed table row value is never ``supported``.
(Speed is measured in benchmarks/bench_verify.py, not here.)"""

from __future__ import annotations

from collections import Counter

import perplexed
import pytest
from perplexed import Hit
from testkit.verify_pairs import load_pairs, marked, score


@pytest.fixture(scope="module")
def predicted() -> tuple[list[str], list]:  # type: ignore[type-arg]
    pairs = load_pairs()
    labels = []
    for p in pairs:
        v = perplexed.verify(marked(p.claim), [Hit(id=1, url="https://example.org/p", snippet=p.passage)])
        assert len(v.sentences) == 1, p.claim
        labels.append(v.sentences[0].label)
    return labels, pairs


def test_the_set_is_large_and_varied() -> None:
    pairs = load_pairs()
    assert len(pairs) >= 300
    kinds = Counter(p.kind for p in pairs)
    assert {"paraphrase", "partial", "number", "date", "name", "negation", "unrelated"} <= set(kinds)
    assert {"antonym", "quantifier", "comparison", "unit"} <= set(kinds)
    assert all(p.label in ("supported", "partial", "unsupported") and p.why for p in pairs)
    assert len({(p.claim, p.passage) for p in pairs}) == len(pairs)


def test_precision_and_recall_of_supported(predicted) -> None:  # type: ignore[no-untyped-def]
    labels, pairs = predicted
    s = score(labels, pairs)
    assert s.precision >= 0.90, s
    assert s.recall >= 0.80, s


def test_changed_numbers_dates_and_names_are_never_supported(predicted) -> None:  # type: ignore[no-untyped-def]
    labels, pairs = predicted
    assert score(labels, pairs).changed_values_supported == []


def test_negations_and_unrelated_passages_are_never_supported(predicted) -> None:  # type: ignore[no-untyped-def]
    labels, pairs = predicted
    wrong = [
        p.claim
        for p, y in zip(pairs, labels, strict=True)
        if p.kind in ("negation", "unrelated") and y == "supported"
    ]
    assert wrong == []


def test_one_word_reversals_are_never_supported(predicted) -> None:  # type: ignore[no-untyped-def]
    """Issue 40 (findings 9, 10): won/lost, open/closed, legal/illegal, enacted/repealed, confirmed/denied,
    some/all, may/must, under/over, at least/at most, meters/feet; and their controls stay supported."""
    labels, pairs = predicted
    kinds = ("antonym", "quantifier", "comparison", "unit")
    wrong = [p.claim for p, y in zip(pairs, labels, strict=True) if p.kind in kinds and y == "supported"]
    assert wrong == []
    reversed_groups = {p.group for p in pairs if p.kind in kinds}
    controls = [
        (p.claim, y)
        for p, y in zip(pairs, labels, strict=True)
        if p.group in reversed_groups and p.kind == "paraphrase" and y != "supported"
    ]
    assert controls == []


def test_table_rows_are_compared_within_their_row(predicted) -> None:  # type: ignore[no-untyped-def]
    """Issue 39 (point 9): "Rear setbacks are often 20 to 25 feet" is supported by the row "Rear 20-25 ft"
    beside other rows; another row's values in its place are not."""
    labels, pairs = predicted
    rows = [(p, y) for p, y in zip(pairs, labels, strict=True) if "Rear 20\u201325 ft" in p.passage or "| Rear |" in p.passage]
    assert len(rows) >= 10
    assert [(p.claim, y) for p, y in rows if (p.label == "supported") != (y == "supported")] == []
