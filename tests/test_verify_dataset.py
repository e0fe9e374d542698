"""The default checker on the labelled set (tests/data/verify_pairs.yaml, written by hand for this project):
precision of ``supported`` >= 0.90, recall >= 0.70, and a changed number, date or name is never ``supported``.
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
    assert all(p.label in ("supported", "partial", "unsupported") and p.why for p in pairs)
    assert len({(p.claim, p.passage) for p in pairs}) == len(pairs)


def test_precision_and_recall_of_supported(predicted) -> None:  # type: ignore[no-untyped-def]
    labels, pairs = predicted
    s = score(labels, pairs)
    assert s.precision >= 0.90, s
    assert s.recall >= 0.70, s


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
