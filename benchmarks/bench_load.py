"""Load and fallback costs: 500 concurrent ``asearch`` vs raw ``httpx.AsyncClient``; a refused and a hung
provider in front of a good one.

Run:  .venv/bin/python benchmarks/bench_load.py [--rounds 5] [--concurrency 500] [--json]

Servers: single-threaded asyncio servers in a child process (``tests/testkit/fault_process.py``), so
they do not compete with the measured event loop for the GIL.

1. **Throughput.** ``--concurrency`` calls at once, ``--rounds`` times, interleaved: ``perplexed.asearch``
   (SearXNG provider) vs a raw ``httpx.AsyncClient`` with the same pool limits sending the same request,
   reading the body and parsing it with the same provider's ``parse_response``. Reported: calls/s of each
   (best round) and the ratio (target >= 0.9x).
2. **Refused provider cost.** ``asearch(q, [refused, good])`` minus ``asearch(q, good)``, median of paired
   rounds (target < 2 ms).
3. **Hung provider cost.** ``asearch(q, [hung, good], provider_timeout_ms=B)`` minus ``asearch(q, good)``
   (target: B +- 20 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "core"), str(ROOT / "tests")]

import perplexed  # noqa: E402
from perplexed.net._http import DEFAULT_LIMITS  # noqa: E402
from perplexed.policy._options import SearchOptions  # noqa: E402
from perplexed.providers import SearXNG  # noqa: E402
from testkit.fault_process import fault_servers  # noqa: E402

HANG_BUDGET_MS = 200


async def throughput(url: str, concurrency: int, rounds: int) -> dict[str, float]:
    provider = SearXNG(base_url=url)
    options = SearchOptions.build()
    raw = httpx.AsyncClient(limits=DEFAULT_LIMITS, timeout=None)

    async def raw_one() -> int:
        request = provider.build_request("zoning", options)
        response = await raw.send(request, stream=True)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return len(provider.parse_response(response, "zoning", options).hits)

    async def ours_one() -> int:
        return len((await perplexed.asearch("zoning", provider, provider_timeout_ms=60_000)).hits)

    async def batch(fn: object) -> float:
        start = time.perf_counter()
        results = await asyncio.gather(*(fn() for _ in range(concurrency)))  # type: ignore[operator]
        elapsed = time.perf_counter() - start
        assert all(r == 3 for r in results), results[:5]
        return concurrency / elapsed

    await batch(raw_one)
    await batch(ours_one)  # warm both pools
    raw_rates, our_rates = [], []
    for _ in range(rounds):  # interleaved: machine noise hits both alike
        raw_rates.append(await batch(raw_one))
        our_rates.append(await batch(ours_one))
    await raw.aclose()
    return {
        "raw_calls_per_s": max(raw_rates),
        "perplexed_calls_per_s": max(our_rates),
        "throughput_ratio": max(our_rates) / max(raw_rates),
        "throughput_ratio_median": statistics.median(
            o / r for o, r in zip(our_rates, raw_rates, strict=True)
        ),
    }


async def fallback_costs(urls: dict[str, str], rounds: int) -> dict[str, float]:
    good = SearXNG(base_url=urls["good"], name="good")
    refused = SearXNG(base_url=urls["refused"], name="refused")
    hung = SearXNG(base_url=urls["accept_hang"], name="hung")

    async def timed(spec: object, budget: int = 10_000) -> float:
        start = time.perf_counter()
        result = await perplexed.asearch("zoning", spec, provider_timeout_ms=budget)
        elapsed = time.perf_counter() - start
        assert result.provider == "good"
        return elapsed

    for _ in range(20):
        await timed(good)
        await timed([refused, good])
    refused_extra, hung_extra = [], []
    for _ in range(rounds):
        base = await timed(good)
        refused_extra.append(await timed([refused, good]) - base)
    for _ in range(max(5, rounds // 10)):
        base = await timed(good)
        hung_extra.append(await timed([hung, good], HANG_BUDGET_MS) - base)
    return {
        "refused_extra_ms": statistics.median(refused_extra) * 1000,
        "hung_extra_ms": statistics.median(hung_extra) * 1000,
        "hung_budget_ms": HANG_BUDGET_MS,
    }


async def run(concurrency: int, rounds: int) -> dict[str, float]:
    with fault_servers(["good", "refused", "accept_hang"]) as urls:
        out = await throughput(urls["good"], concurrency, rounds)
        out.update(await fallback_costs(urls, 200))
    return out


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    out = asyncio.run(run(args.concurrency, args.rounds))
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"{args.concurrency} concurrent asearch: {out['perplexed_calls_per_s']:.0f} calls/s vs raw httpx "
            f"{out['raw_calls_per_s']:.0f} calls/s: {out['throughput_ratio']:.2f}x (target >= 0.9x)"
        )
        print(f"refused provider in front: +{out['refused_extra_ms']:.2f} ms (target < 2 ms)")
        print(
            f"hung provider in front, budget {HANG_BUDGET_MS} ms: +{out['hung_extra_ms']:.1f} ms "
            f"(target {HANG_BUDGET_MS} +- 20 ms)"
        )
    return out


if __name__ == "__main__":
    main()
