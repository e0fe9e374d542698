"""perplexed.evaluate throughput and the adaptive strategy's ordering cost (issue 37's targets).

Run:  .venv/bin/python benchmarks/bench_eval.py [--queries 40] [--rounds 4000] [--json]

1. **Eval throughput.** Two providers that answer in 50 ms (async functions sleeping, no sockets), ``--queries``
   queries each: ``perplexed.evaluate`` at ``concurrency=8`` against ``concurrency=1`` (sequential). Target: the
   concurrent run is >= 6x faster (8x is the ceiling).
2. **Adaptive ordering cost.** A chain of three function providers answering at once (the first one ``ok``),
   with the default memory store: ``asearch`` with ``strategy="adaptive"`` against ``strategy="sequential"``,
   in alternating chunks on one event loop; the difference of the medians per call (the store read, the
   scoring and sort, the record of the attempt, ``Result.route``), in wall time and in this process's CPU time
   (per chunk): the CPU figure is the one checked, since a loaded machine inflates wall times by the time spent
   waiting for a CPU. Target: <= 20 us per call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "core")]

import perplexed  # noqa: E402
from perplexed import Hit  # noqa: E402
from perplexed.providers import FunctionProvider  # noqa: E402

DELAY_S = 0.05


def throughput(n_queries: int) -> dict[str, float]:
    async def slow_a(query: str, options: object) -> list[Hit]:
        await asyncio.sleep(DELAY_S)
        return [Hit(url=f"https://a.example/{query}")]

    async def slow_b(query: str, options: object) -> list[Hit]:
        await asyncio.sleep(DELAY_S)
        return [Hit(url=f"https://b.example/{query}")]

    providers = [FunctionProvider(slow_a, name="a"), FunctionProvider(slow_b, name="b")]
    queries = [{"id": str(i), "query": f"q{i}", "expected_urls": [f"https://a.example/q{i}"]}
               for i in range(n_queries)]
    perplexed.evaluate(queries[:4], providers, concurrency=4)  # warm-up
    out = {}
    for concurrency in (1, 8):
        start = time.perf_counter()
        report = perplexed.evaluate(queries, providers, concurrency=concurrency)
        out[f"concurrency_{concurrency}_s"] = time.perf_counter() - start
        assert report.score("a").hit_at_k == 1.0
    out["speedup"] = out["concurrency_1_s"] / out["concurrency_8_s"]
    out["searches"] = 2 * n_queries
    return out


async def ordering(rounds: int, chunk: int = 200) -> dict[str, float]:
    async def first(query: str, options: object) -> list[Hit]:
        return [Hit(url="https://one.example/1")]

    async def second(query: str, options: object) -> list[Hit]:
        return [Hit(url="https://two.example/1")]

    async def third(query: str, options: object) -> list[Hit]:
        return [Hit(url="https://three.example/1")]

    chain = [FunctionProvider(first, name="one"), FunctionProvider(second, name="two"),
             FunctionProvider(third, name="three")]
    samples: dict[str, list[float]] = {"sequential": [], "adaptive": []}  # wall, per call
    cpu: dict[str, list[float]] = {"sequential": [], "adaptive": []}  # this process's CPU, per call, per chunk
    clock = time.perf_counter

    async def run(strategy: str, n: int, keep: bool) -> None:
        out = samples[strategy]
        cpu_start = time.process_time()
        for _ in range(n):
            t0 = clock()
            await perplexed.asearch("zoning setbacks", chain, strategy=strategy)
            if keep:
                out.append(clock() - t0)
        if keep:
            cpu[strategy].append((time.process_time() - cpu_start) / n)

    for strategy in samples:  # warm-up
        await run(strategy, 300, False)
    done = 0
    while done < rounds:
        for strategy in samples:
            await run(strategy, chunk, True)
        done += chunk
    seq = statistics.median(samples["sequential"]) * 1e6
    ada = statistics.median(samples["adaptive"]) * 1e6
    seq_cpu = statistics.median(cpu["sequential"]) * 1e6
    ada_cpu = statistics.median(cpu["adaptive"]) * 1e6
    return {"sequential_us": seq, "adaptive_us": ada, "overhead_us": ada - seq, "sequential_cpu_us": seq_cpu,
            "adaptive_cpu_us": ada_cpu, "overhead_cpu_us": ada_cpu - seq_cpu, "calls": done}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=4000)
    parser.add_argument("--json", action="store_true", help="print one JSON line at the end")
    args = parser.parse_args()
    speed = throughput(args.queries)
    order = asyncio.run(ordering(args.rounds))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"eval throughput: {speed['searches']} searches of 50 ms, concurrency 1 {speed['concurrency_1_s']:.2f} s, "
          f"concurrency 8 {speed['concurrency_8_s']:.2f} s: {speed['speedup']:.2f}x (target >= 6x)")
    print(f"adaptive ordering: {order['adaptive_us']:.1f} us vs sequential {order['sequential_us']:.1f} us per "
          f"call (wall, median): +{order['overhead_us']:.1f} us; CPU {order['adaptive_cpu_us']:.1f} vs "
          f"{order['sequential_cpu_us']:.1f} us: +{order['overhead_cpu_us']:.1f} us (target <= 20 us); "
          f"load average {load}")
    # the CPU figure is the one a loaded machine does not inflate (wall time includes waiting for a CPU)
    ok = speed["speedup"] >= 6 and order["overhead_cpu_us"] <= 20
    if args.json:
        print(json.dumps({"throughput": speed, "ordering": order, "load_average": load, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
