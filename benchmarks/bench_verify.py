"""perplexed.verify: quality of the default (lexical) checker on the labelled set, and its speed.

Quality: every pair of ``tests/data/verify_pairs.yaml`` (written by hand for this project) as a one-sentence
answer citing its passage: precision and recall of ``supported``, changed numbers/dates/names labelled
``supported`` (must be none), and the confusion per kind.

Speed: the time to verify one sentence-passage pair (every pair of the set, ``verify()`` end to end), and a
10-sentence answer over 10 hits (each sentence cites one hit; the hits are ten passages of the set). The
baseline, measured in the same run and interleaved round by round, is the floor any lexical check pays:
lower-casing and splitting the same claim and passage into words (``str.lower().split()``) and intersecting
the two word sets.

    .venv/bin/python benchmarks/bench_verify.py [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import perplexed
    from perplexed import Hit
    from testkit.verify_pairs import load_pairs, marked, score

    pairs = load_pairs()
    hits = [[Hit(id=1, url="https://example.org/p", snippet=p.passage)] for p in pairs]
    texts = [marked(p.claim) for p in pairs]

    labels = [perplexed.verify(t, h).sentences[0].label for t, h in zip(texts, hits, strict=True)]
    s = score(labels, pairs)
    per_kind: dict[str, Counter[str]] = {}
    for p, y in zip(pairs, labels, strict=True):
        per_kind.setdefault(f"{p.kind} ({p.label})", Counter())[y] += 1

    # a 10-sentence answer over 10 hits
    groups = sorted({p.group for p in pairs})[:10]
    firsts = [next(p for p in pairs if p.group == g and p.kind == "paraphrase") for g in groups]
    answer_hits = [
        Hit(id=i, url=f"https://example.org/{i}", snippet=p.passage) for i, p in enumerate(firsts, 1)
    ]
    answer_text = " ".join(marked(p.claim).replace("[1]", f"[{i}]") for i, p in enumerate(firsts, 1))
    assert len(perplexed.verify(answer_text, answer_hits).sentences) == 10

    def floor_pair(claim: str, passage: str) -> None:
        set(claim.lower().split()) & set(passage.lower().split())

    pair_us: list[float] = []
    floor_us: list[float] = []
    answer_ms: list[float] = []
    answer_floor_ms: list[float] = []
    for _ in range(args.rounds):
        for t, h, p in zip(texts, hits, pairs, strict=True):
            start = time.perf_counter()
            perplexed.verify(t, h)
            pair_us.append((time.perf_counter() - start) * 1e6)
            start = time.perf_counter()
            floor_pair(p.claim, p.passage)
            floor_us.append((time.perf_counter() - start) * 1e6)
        for _ in range(20):
            start = time.perf_counter()
            perplexed.verify(answer_text, answer_hits)
            answer_ms.append((time.perf_counter() - start) * 1e3)
            start = time.perf_counter()
            for p in firsts:
                floor_pair(p.claim, p.passage)
            answer_floor_ms.append((time.perf_counter() - start) * 1e3)

    # CPU time (what the machine's other load does not inflate): the whole set, and 200 answers
    cpu = time.process_time()
    for t, h in zip(texts, hits, strict=True):
        perplexed.verify(t, h)
    pair_cpu_us = (time.process_time() - cpu) / len(texts) * 1e6
    cpu = time.process_time()
    for _ in range(200):
        perplexed.verify(answer_text, answer_hits)
    answer_cpu_ms = (time.process_time() - cpu) / 200 * 1e3

    def p95(values: list[float]) -> float:
        return sorted(values)[int(len(values) * 0.95)]

    data = {
        "pairs": s.pairs,
        "precision": round(s.precision, 4),
        "recall": round(s.recall, 4),
        "changed_values_supported": len(s.changed_values_supported),
        "per_kind": {k: dict(v) for k, v in sorted(per_kind.items())},
        "pair_median_us": round(statistics.median(pair_us), 1),
        "pair_p95_us": round(p95(pair_us), 1),
        "pair_max_us": round(max(pair_us), 1),
        "pair_floor_median_us": round(statistics.median(floor_us), 2),
        "answer_median_ms": round(statistics.median(answer_ms), 3),
        "answer_p95_ms": round(p95(answer_ms), 3),
        "answer_floor_median_ms": round(statistics.median(answer_floor_ms), 4),
        "pair_cpu_us": round(pair_cpu_us, 1),
        "answer_cpu_ms": round(answer_cpu_ms, 3),
    }
    data["pair_ratio"] = round(data["pair_median_us"] / max(data["pair_floor_median_us"], 1e-9), 1)
    data["answer_ratio"] = round(data["answer_median_ms"] / max(data["answer_floor_median_ms"], 1e-9), 1)
    ok = (
        s.precision >= 0.90
        and s.recall >= 0.70
        and not s.changed_values_supported
        and data["pair_median_us"] <= 1000
        and data["answer_median_ms"] <= 20
    )
    if args.json:
        print(json.dumps(data))
    else:
        for key, value in data.items():
            print(f"{key}: {value}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
