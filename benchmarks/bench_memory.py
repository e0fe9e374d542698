"""Peak memory: streaming a 10 MB answer, and reading a capped body (a 100 MB response refused at the cap).

Run:  .venv/bin/python benchmarks/bench_memory.py [--json]

Each case runs in a fresh interpreter (so one case's high-water mark cannot hide another's), after imports
and a warm-up call. Two figures over that baseline: the peak of traced Python allocations (``tracemalloc``)
and the growth of the process's peak RSS (``ru_maxrss``). Target: <= 20 MB over baseline.

* ``stream_10mb``: ``AsyncAgentClient.stream`` over a loopback server sending a 10 MB answer as 1 KB
  ``response.output_text.delta`` events, then ``response.completed`` carrying the whole response (as the
  Agent API does); every event is consumed and the final response assembled.
* ``capped_body``: ``asearch`` against a server streaming 100 MB chunked (no Content-Length); the default
  8 MB cap refuses it while reading.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "core"), str(ROOT / "tests")]

CASES = ("stream_10mb", "capped_body")
TARGET_MB = 20.0


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


async def _child(case: str) -> dict[str, float]:
    import perplexed
    from perplexed.agent import AsyncAgentClient
    from perplexed.providers import SearXNG
    from testkit.fault_process import fault_servers

    with fault_servers(["sse_10mb", "body_100mb_chunked", "good", "agent_sse_ok"]) as urls:
        # warm up: imports, pooled client, TLS context, pydantic models
        await perplexed.asearch("warm", SearXNG(base_url=urls["good"]))
        async with AsyncAgentClient(api_key="k", base_url=urls["agent_sse_ok"]).stream(
            preset="fast", input="w"
        ) as s:
            async for _ in s:
                pass
        rss_before = _maxrss_mb()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        detail: dict[str, float] = {}
        if case == "stream_10mb":
            client = AsyncAgentClient(api_key="k", base_url=urls["sse_10mb"], timeout=60)
            events = 0
            async with client.stream(preset="fast", input="write a lot") as stream:
                async for _ in stream:
                    events += 1
                final = stream.response
            assert final is not None and len(final.output_text) >= 10 * 1024 * 1024 - 1000, (
                "answer not assembled"
            )
            detail = {"events": events, "answer_mb": len(final.output_text) / 1e6}
        else:
            try:
                await perplexed.asearch(
                    "q", SearXNG(base_url=urls["body_100mb_chunked"]), provider_timeout_ms=60_000
                )
            except perplexed.UpstreamError as exc:
                assert exc.attempts[0].reason == "body_too_large", exc
            else:
                raise AssertionError("the 100 MB body was not refused")
        peak = (tracemalloc.get_traced_memory()[1] - base) / 1e6
        tracemalloc.stop()
        return {"traced_peak_mb": peak, "rss_growth_mb": _maxrss_mb() - rss_before, **detail}


def measure() -> dict[str, dict[str, float]]:
    out = {}
    for case in CASES:
        proc = subprocess.run([sys.executable, __file__, "--child", case], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{case} failed:\n{proc.stderr[-3000:]}")
        out[case] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main() -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.child))))
        return {}
    out = measure()
    if args.json:
        print(json.dumps(out))
    else:
        for case, figures in out.items():
            print(
                f"{case}: traced peak {figures['traced_peak_mb']:.1f} MB, peak RSS growth "
                f"{figures['rss_growth_mb']:.1f} MB over baseline (target <= {TARGET_MB:g} MB)"
            )
    return out


if __name__ == "__main__":
    main()
