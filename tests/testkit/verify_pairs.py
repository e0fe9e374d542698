"""The labelled sentence/passage pairs of ``tests/data/verify_pairs.yaml`` (perplexed.verify's default checker),
and how the checker scores on them. Used by ``tests/test_verify_dataset.py`` and ``benchmarks/bench_verify.py``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parents[1] / "data" / "verify_pairs.yaml"
#: Each group's first claim is also paired with the passage of the group this many places on: unrelated.
UNRELATED_SHIFT = 25


@dataclass(frozen=True)
class Pair:
    group: int
    claim: str
    passage: str
    label: str  # supported / partial / unsupported
    kind: str  # paraphrase, partial, number, date, name, negation, unrelated
    why: str


def load_pairs() -> list[Pair]:
    groups = yaml.safe_load(DATA.read_text(encoding="utf-8"))["groups"]
    pairs: list[Pair] = []
    for g, group in enumerate(groups):
        for label, kind, claim, why in group["claims"]:
            pairs.append(Pair(g, claim, group["passage"], label, kind, why))
    for g, group in enumerate(groups):
        other = (g + UNRELATED_SHIFT) % len(groups)
        label, kind, claim, why = group["claims"][0]
        pairs.append(
            Pair(
                g,
                claim,
                groups[other]["passage"],
                "unsupported",
                "unrelated",
                f"the passage is about something else (group {other + 1})",
            )
        )
    return pairs


@dataclass(frozen=True)
class Scores:
    pairs: int
    precision: float  # of "supported"
    recall: float  # of "supported"
    changed_values_supported: list[Pair]  # number/date/name pairs labelled supported (must be empty)
    confusion: dict[tuple[str, str], int]  # (gold, predicted) -> count


def score(predicted: list[str], pairs: list[Pair]) -> Scores:
    tp = sum(1 for p, y in zip(pairs, predicted, strict=True) if p.label == "supported" and y == "supported")
    said = sum(1 for y in predicted if y == "supported")
    gold = sum(1 for p in pairs if p.label == "supported")
    confusion: dict[tuple[str, str], int] = {}
    for p, y in zip(pairs, predicted, strict=True):
        confusion[(p.label, y)] = confusion.get((p.label, y), 0) + 1
    changed = [
        p
        for p, y in zip(pairs, predicted, strict=True)
        if p.kind in ("number", "date", "name") and y == "supported"
    ]
    return Scores(len(pairs), tp / said if said else 0.0, tp / gold if gold else 0.0, changed, confusion)


def marked(claim: str) -> str:
    """The claim as an answer sentence citing hit 1."""
    return claim[:-1] + " [1]." if claim.endswith(".") else claim + " [1]"
