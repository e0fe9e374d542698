"""What the usage ledger and the OpenTelemetry bridge cost (issue 38).

Run:  .venv/bin/python benchmarks/bench_usage.py [--rounds 2000] [--json]

* **ledger**: a governed search (``budget_usd`` set, a priced async function provider, the memory store) with
  the ledger on, against the same search with the engine's ledger hook made a no-op; interleaved rounds, the
  median of per-round differences. Target: <= 10 us per search.
* **tracing off**: in a child interpreter where ``opentelemetry`` cannot be imported, what the tracing hooks of
  one single-provider search cost (the chain span's attributes, entering the chain and attempt spans, the
  metrics hook), per call. Target: <= 2 us.
* **tracing on**: a loopback SearXNG-shaped search (the server of bench_engine.py) with an SDK tracer provider
  (a ``BatchSpanProcessor`` and an exporter that drops everything) against the same search with no provider
  installed; interleaved rounds. Target: <= 5 % of the search.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "core"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import perplexed  # noqa: E402
from bench_engine import SERVER  # noqa: E402
from perplexed.engine import _engine  # noqa: E402
from perplexed.providers import FunctionProvider, SearXNG  # noqa: E402
from perplexed.store import MemoryStore  # noqa: E402

TRACING_OFF = r"""
import sys, time
sys.modules["opentelemetry"] = None  # not installed
sys.path.insert(0, sys.argv[1])
from perplexed import _otel, telemetry
n = int(sys.argv[2])
class Op:  # an operation as the chain span reads it
    name = "search"; subject_key = "query"; subject = "q"
    class members_item: label = "p"
    members = [members_item]
op = Op()
class A:  # an attempt as record_metrics reads it
    provider = "p"; cost = 0.0; duration_ms = 1; reason = None
    class outcome: value = "ok"
a = A()
best = float("inf")
for _ in range(5):
    t = time.perf_counter()
    for _ in range(n):
        with _otel.chain_span(op, None):
            with _otel.attempt_span("search", "p", 15000):
                pass
        _otel.record_metrics("search", a)
    best = min(best, (time.perf_counter() - t) / n)
assert "opentelemetry.trace" not in sys.modules
print(best * 1e6)
"""


def paired_us(a: list[float], b: list[float]) -> float:
    return statistics.median(x - y for x, y in zip(a, b, strict=True)) * 1e6


async def ledger_cost(rounds: int) -> dict[str, float]:
    async def answer(query: str, options: object) -> list[dict[str, str]]:
        return [{"url": "https://example.org/a", "title": "A"}]

    provider = FunctionProvider(answer, name="priced", cost=0.001)
    perplexed.configure(store=MemoryStore())
    on = _engine.Engine.ledger
    off_hook = lambda self, order, attempt: None  # noqa: E731
    with_ledger, without = [], []
    for i in range(rounds + 200):
        pair = []
        for variant in ((on, off_hook) if i % 2 else (off_hook, on)):
            _engine.Engine.ledger = variant  # type: ignore[method-assign]
            t = time.perf_counter()
            await perplexed.asearch(f"q{i}", provider, budget_usd=1000.0)
            pair.append((variant is on, time.perf_counter() - t))
        if i >= 200:
            for is_on, dt in pair:
                (with_ledger if is_on else without).append(dt)
    _engine.Engine.ledger = on  # type: ignore[method-assign]
    perplexed.reset()
    return {"ledger_us": paired_us(with_ledger, without),
            "governed_search_us": statistics.median(without) * 1e6}


async def tracing_on_cost(base: str, rounds: int) -> dict[str, float]:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    searx = SearXNG(base_url=base)
    traced, plain = [], []
    for i in range(rounds + 100):
        pair = []
        for on in ((True, False) if i % 2 else (False, True)):
            trace._TRACER_PROVIDER = provider if on else None  # type: ignore[attr-defined]
            t = time.perf_counter()
            await perplexed.asearch("zoning setbacks", searx)
            pair.append((on, time.perf_counter() - t))
        if i >= 100:
            for on, dt in pair:
                (traced if on else plain).append(dt)
    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
    provider.shutdown()
    extra = paired_us(traced, plain)
    search = statistics.median(plain) * 1e6
    return {"tracing_on_extra_us": extra, "loopback_search_us": search, "tracing_on_ratio": extra / search}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out: dict[str, float] = {}
    out.update(asyncio.run(ledger_cost(args.rounds)))
    child = subprocess.run([sys.executable, "-c", TRACING_OFF, str(ROOT / "core"), str(max(2000, args.rounds * 5))],
                           capture_output=True, text=True, check=True)
    out["tracing_off_us"] = float(child.stdout.strip())
    server = subprocess.Popen([sys.executable, "-c", SERVER, "10"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        out.update(asyncio.run(tracing_on_cost(f"http://127.0.0.1:{port}", max(300, args.rounds // 2))))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(5)
    out["load_average_1m"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(out))
    else:
        print(f"ledger per governed search (memory store): {out['ledger_us']:.2f} us (target <= 10 us)")
        print(f"tracing off (no OpenTelemetry): {out['tracing_off_us']:.2f} us per call (target <= 2 us)")
        print(f"tracing on (SDK, no-op exporter): +{out['tracing_on_extra_us']:.0f} us = "
              f"{out['tracing_on_ratio'] * 100:.1f} % of a {out['loopback_search_us']:.0f} us loopback search "
              "(target <= 5 %)")
    ok = out["ledger_us"] <= 10 and out["tracing_off_us"] <= 2 and out["tracing_on_ratio"] <= 0.05
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
