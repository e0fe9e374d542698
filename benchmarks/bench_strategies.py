"""Hedged and merged searches against the sequential chain, measured in one run (issue 15's targets).

Run:  .venv/bin/python benchmarks/bench_strategies.py [--searches 2000] [--json]

1. **Hedged tail latency.** A first provider with heavy-tailed latency (log-normal, median 30 ms, sigma 0.99:
   p99 = 10 x median) in front of a normal second one (mean 20 ms, sd 4 ms). The same latency draws (keyed
   by the query) are served to a sequential chain and to a hedged one with ``hedge_after_ms="auto"`` (the
   first provider's observed p95 from the state store, after a warm-up of hedged searches); the two run in
   alternating chunks. Reported: p50/p95/p99 of each, the p99 ratio (target <= 0.5) and the extra provider
   calls of the hedged chain per search (target <= 10 %). For comparison, the same with a fixed hedge delay
   at the first provider's true p90.
2. **Merge latency.** Two providers with normal latencies (A: 30 +- 3 ms, B: 40 +- 4 ms, the same draws in
   every mode): ``strategy="merge"`` of both against B (the slower) alone; ratio of medians and of p95s
   (target <= 1.05).
3. **Merge recall.** A synthetic set of 300 queries with 10 relevant pages each; each provider finds each
   relevant page with probability 0.6 and fills its 10 results with its own irrelevant pages (relevant ones
   ranked higher on average). Mean recall@10 of the merge against the best single provider (target >=).

Providers are async functions that sleep (no sockets), run 10 searches at a time on one event loop, so the
figures measure the strategies, not HTTP. Sleep timing on a loaded machine adds a few ms to both sides alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "core")]

import perplexed  # noqa: E402
from perplexed import Hit, SearchOptions  # noqa: E402
from perplexed.engine import _governance  # noqa: E402
from perplexed.providers import FunctionProvider  # noqa: E402

WORKERS = 10
MEDIAN1_MS, SIGMA1 = 30.0, 0.99  # log-normal: p99 / median = exp(2.326 * 0.99) = 10.0
MEAN2_MS, SD2_MS = 20.0, 4.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


async def run_all(queries: list[str], one: Callable[[str], Awaitable[float]]) -> list[float]:
    """Run ``one(query)`` for every query, WORKERS at a time; the elapsed ms of each, in query order."""
    out: dict[str, float] = {}
    it = iter(queries)

    async def worker() -> None:
        for q in it:
            out[q] = await one(q)

    await asyncio.gather(*(worker() for _ in range(WORKERS)))
    return [out[q] for q in queries]


def latency_provider(name: str, draws: dict[str, float], calls: list[int]) -> FunctionProvider:
    async def fn(query: str, options: SearchOptions) -> list[Hit]:
        calls[0] += 1
        await asyncio.sleep(draws[query] / 1000)
        return [Hit(url=f"https://{name}.example/{query}")]

    return FunctionProvider(fn, name=name)


async def timed_search(query: str, providers: list[FunctionProvider], **options: Any) -> float:
    start = time.perf_counter()
    await perplexed.asearch(query, providers, provider_timeout_ms=60_000, deadline_ms=120_000, **options)
    return (time.perf_counter() - start) * 1000


async def hedged(searches: int, seed: int = 15) -> dict[str, Any]:
    rng = random.Random(seed)
    warm = [f"w{i}" for i in range(300)]
    queries = [f"q{i}" for i in range(searches)]
    d1 = {q: MEDIAN1_MS * math.exp(rng.gauss(0, SIGMA1)) for q in warm + queries}
    d2 = {q: max(1.0, rng.gauss(MEAN2_MS, SD2_MS)) for q in warm + queries}
    calls1, calls2, calls2_fixed = [0], [0], [0]
    first, second = latency_provider("heavy", d1, calls1), latency_provider("normal", d2, calls2)
    chain = [first, second]
    # the fixed-delay comparison under other names: its cancelled calls must not feed "heavy"'s p95
    chain_fixed = [latency_provider("heavy-fixed", d1, [0]), latency_provider("normal-fixed", d2, calls2_fixed)]
    true_p90 = MEDIAN1_MS * math.exp(1.2816 * SIGMA1)

    _governance.reset()
    await run_all(warm, lambda q: timed_search(q, chain, strategy="hedged"))  # the store learns the p95
    seq: list[float] = []
    hed: list[float] = []
    fixed: list[float] = []
    extra = 0
    extra_fixed = 0
    chunk = max(1, searches // 10)
    p95_seen: list[float] = []
    for start in range(0, searches, chunk):
        part = queries[start : start + chunk]
        seq += await run_all(part, lambda q: timed_search(q, chain))
        before = calls2[0]
        observed = await _governance.latency_p95(first)
        if observed is not None:
            p95_seen.append(observed)
        hed += await run_all(part, lambda q: timed_search(q, chain, strategy="hedged", hedge_after_ms="auto"))
        extra += calls2[0] - before
        before = calls2_fixed[0]
        fixed += await run_all(part, lambda q: timed_search(q, chain_fixed, strategy="hedged",
                                                            hedge_after_ms=round(true_p90)))
        extra_fixed += calls2_fixed[0] - before
    n = len(queries)
    return {
        "searches": n,
        "first_provider": f"log-normal median {MEDIAN1_MS:.0f} ms sigma {SIGMA1} (true p95 "
                          f"{MEDIAN1_MS * math.exp(1.645 * SIGMA1):.0f} ms, p99 {MEDIAN1_MS * math.exp(2.326 * SIGMA1):.0f} ms)",
        "second_provider": f"normal mean {MEAN2_MS:.0f} ms sd {SD2_MS:.0f} ms",
        "observed_p95_ms_median": statistics.median(p95_seen) if p95_seen else None,
        "sequential_ms": {"p50": pct(seq, 0.5), "p95": pct(seq, 0.95), "p99": pct(seq, 0.99)},
        "hedged_auto_ms": {"p50": pct(hed, 0.5), "p95": pct(hed, 0.95), "p99": pct(hed, 0.99)},
        "hedged_auto_p99_ratio": pct(hed, 0.99) / pct(seq, 0.99),
        "hedged_auto_extra_calls": extra / n,
        "hedged_p90_ms": {"p50": pct(fixed, 0.5), "p95": pct(fixed, 0.95), "p99": pct(fixed, 0.99)},
        "hedged_p90_hedge_after_ms": round(true_p90),
        "hedged_p90_p99_ratio": pct(fixed, 0.99) / pct(seq, 0.99),
        "hedged_p90_extra_calls": extra_fixed / n,
    }


async def merge_latency(searches: int, seed: int = 16) -> dict[str, Any]:
    rng = random.Random(seed)
    queries = [f"m{i}" for i in range(searches)]
    da = {q: max(1.0, rng.gauss(30.0, 3.0)) for q in queries}
    db = {q: max(1.0, rng.gauss(40.0, 4.0)) for q in queries}
    a, b = latency_provider("a", da, [0]), latency_provider("b", db, [0])
    merged: list[float] = []
    alone: list[float] = []
    chunk = max(1, searches // 10)
    for start in range(0, searches, chunk):
        part = queries[start : start + chunk]
        alone += await run_all(part, lambda q: timed_search(q, [b]))
        merged += await run_all(part, lambda q: timed_search(q, [a, b], strategy="merge"))
    return {
        "searches": len(queries),
        "slower_alone_ms": {"p50": statistics.median(alone), "p95": pct(alone, 0.95)},
        "merge_ms": {"p50": statistics.median(merged), "p95": pct(merged, 0.95)},
        "median_ratio": statistics.median(merged) / statistics.median(alone),
        "p95_ratio": pct(merged, 0.95) / pct(alone, 0.95),
    }


def recall_set(queries: int, seed: int = 17) -> tuple[dict[str, set[str]], dict[str, list[str]], dict[str, list[str]]]:
    """Relevant pages per query, and each provider's ranked 10 results."""
    rng = random.Random(seed)
    relevant: dict[str, set[str]] = {}
    lists: dict[str, dict[str, list[str]]] = {"a": {}, "b": {}}
    for i in range(queries):
        q = f"r{i}"
        rel = [f"https://rel.example/{i}/{j}" for j in range(10)]
        relevant[q] = set(rel)
        for name in ("a", "b"):
            found = [u for u in rel if rng.random() < 0.6]
            noise = [f"https://{name}-noise.example/{i}/{j}" for j in range(10)]
            # a noisy ranking: relevant pages score higher on average
            scored = [(rng.gauss(1.0, 0.8), u) for u in found] + [(rng.gauss(0.0, 0.8), u) for u in noise]
            lists[name][q] = [u for _, u in sorted(scored, reverse=True)][:10]
    return relevant, lists["a"], lists["b"]


async def merge_recall(queries: int = 300) -> dict[str, Any]:
    relevant, la, lb = recall_set(queries)

    def provider(name: str, table: dict[str, list[str]]) -> FunctionProvider:
        async def fn(query: str, options: SearchOptions) -> list[Hit]:
            return [Hit(url=u) for u in table[query]]

        return FunctionProvider(fn, name=name)

    pa, pb = provider("a", la), provider("b", lb)

    async def recall(q: str, chain: list[FunctionProvider], **kw: Any) -> float:
        result = await perplexed.asearch(q, chain, max_results=10, **kw)
        return len({h.url for h in result.hits[:10]} & relevant[q]) / len(relevant[q])

    qs = sorted(relevant)
    ra = [await recall(q, [pa]) for q in qs]
    rb = [await recall(q, [pb]) for q in qs]
    rm = [await recall(q, [pa, pb], strategy="merge") for q in qs]
    best = max(statistics.mean(ra), statistics.mean(rb))
    return {
        "queries": len(qs),
        "recall_at_10_a": statistics.mean(ra),
        "recall_at_10_b": statistics.mean(rb),
        "recall_at_10_merge": statistics.mean(rm),
        "recall_ratio": statistics.mean(rm) / best,
    }


async def main_async(searches: int) -> dict[str, Any]:
    return {
        "hedged": await hedged(searches),
        "merge_latency": await merge_latency(max(200, searches // 2)),
        "merge_recall": await merge_recall(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = asyncio.run(main_async(args.searches))
    if args.json:
        print(json.dumps(data))
    else:
        print(json.dumps(data, indent=1))
    h, m, r = data["hedged"], data["merge_latency"], data["merge_recall"]
    ok = (h["hedged_auto_p99_ratio"] <= 0.5 and h["hedged_auto_extra_calls"] <= 0.10
          and max(m["median_ratio"], m["p95_ratio"]) <= 1.05 and r["recall_ratio"] >= 1.0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
