"""What the usage ledger and the OpenTelemetry bridge cost (issue 38).

Run:  .venv/bin/python benchmarks/bench_usage.py [--rounds 2000] [--json] [--profile]

* **ledger**: a governed search (``budget_usd`` set, a priced async function provider, the memory store) with
  the ledger on, against the same search with the engine's ledger hook made a no-op; interleaved rounds, the
  median of per-round differences. Target: <= 10 us per search.
* **tracing off**: in a child interpreter where ``opentelemetry`` cannot be imported, what the tracing hooks of
  one single-provider search cost (the chain span's attributes, entering the chain and attempt spans, the
  metrics hook), per call. Target: <= 2 us.
* **tracing on**: a loopback SearXNG-shaped search (the server of bench_engine.py) with an SDK tracer provider
  (a ``BatchSpanProcessor`` and an exporter that drops everything) against the same search with no provider
  installed; interleaved rounds. Target: <= 5 % of the search. In the same rounds: the same search with an SDK
  meter provider as well; a floor: the search with tracing off inside two bare SDK spans (parent and child,
  no attributes), what the SDK alone costs for two spans; and the search with tracing off inside the very
  spans tracing makes (same names, kinds and attributes, made current) written directly against the SDK: the
  difference between that and tracing on is perplexed's own code. ``--profile`` adds a cProfile split of
  the traced search's extra time: OpenTelemetry's code, perplexed's hooks, everything else.
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
from typing import Any

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


def _sdk() -> tuple[Any, Any]:
    """An SDK tracer provider with a ``BatchSpanProcessor`` whose exporter drops everything, and an SDK meter
    provider whose periodic reader's exporter drops everything too (an hour's interval: never runs here)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExporter,
        MetricExportResult,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class DropMetrics(MetricExporter):
        def export(self, metrics_data: object, timeout_millis: float = 0, **kwargs: object) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 0) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 0, **kwargs: object) -> None:
            pass

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Drop()))
    reader = PeriodicExportingMetricReader(DropMetrics(), export_interval_millis=3_600_000)
    return tracer_provider, MeterProvider(metric_readers=[reader])


async def _same_spans(tracer: Any, trace: Any, context: Any, searx: Any) -> None:
    """The search with tracing off inside the two spans perplexed makes for it, written directly against the
    SDK: the same names, kinds and attributes (set at the same points), each made current around what it
    covers."""
    parent = tracer.start_span("perplexed.search", attributes={"perplexed.providers": "searxng",
                                                               "perplexed.operation": "search"})
    outer = context.attach(trace.set_span_in_context(parent))
    child = tracer.start_span("retrieval searxng", kind=trace.SpanKind.CLIENT, attributes={
        "gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "searxng", "perplexed.provider": "searxng",
        "perplexed.budget_ms": 15000})
    inner = context.attach(trace.set_span_in_context(child))
    result = await perplexed.asearch("zoning setbacks", searx)
    attempt = result.attempts[0]
    child.set_attributes({"perplexed.outcome": attempt.outcome.value, "perplexed.cost": attempt.cost,
                          "perplexed.duration_ms": attempt.duration_ms, "perplexed.billable": attempt.billable,
                          "perplexed.cached": attempt.cached, "perplexed.results": len(result.hits)})
    context.detach(inner)
    child.end()
    parent.set_attributes({"perplexed.answered_by": "searxng", "perplexed.attempts": 1,
                           "perplexed.cost": result.cost, "perplexed.results": len(result.hits)})
    context.detach(outer)
    parent.end()


async def tracing_on_cost(base: str, rounds: int) -> dict[str, float]:
    """Five variants of the same loopback search, interleaved (the order rotates every round):

    * ``off``: no tracer provider installed (the API is imported: perplexed's hooks return at once);
    * ``on``: an SDK tracer provider with a batch processor and a no-op exporter (the issue's target);
    * ``metrics``: ``on`` plus an SDK meter provider (the duration histogram, the cost counter);
    * ``floor``: ``off``, with two bare SDK spans (a parent and a child, no attributes, not made current)
      started before and ended after the search: what the SDK itself costs for two spans, under the same
      cache conditions;
    * ``same``: ``off`` inside the very spans ``on`` makes (names, kinds, attributes, made current), written
      directly against the SDK (:func:`_same_spans`): ``on`` minus ``same`` is perplexed's own code.
    """
    from opentelemetry import context, trace
    from opentelemetry.metrics import _internal as metrics_internal

    tracer_provider, meter_provider = _sdk()
    bare = tracer_provider.get_tracer("floor")
    searx = SearXNG(base_url=base)
    variants = ("off", "on", "metrics", "floor", "same")
    times: dict[str, list[float]] = {v: [] for v in variants}
    for i in range(rounds + 100):
        order = variants[i % 5:] + variants[:i % 5]
        for variant in order:
            trace._TRACER_PROVIDER = tracer_provider if variant in ("on", "metrics") else None  # type: ignore[attr-defined]
            metrics_internal._METER_PROVIDER = meter_provider if variant == "metrics" else None  # type: ignore[attr-defined]
            t = time.perf_counter()
            if variant == "floor":
                parent = bare.start_span("perplexed.search")
                child = bare.start_span("retrieval searxng", context=trace.set_span_in_context(parent))
                await perplexed.asearch("zoning setbacks", searx)
                child.end()
                parent.end()
            elif variant == "same":
                await _same_spans(bare, trace, context, searx)
            else:
                await perplexed.asearch("zoning setbacks", searx)
            if i >= 100:
                times[variant].append(time.perf_counter() - t)
    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
    metrics_internal._METER_PROVIDER = None  # type: ignore[attr-defined]
    tracer_provider.shutdown()
    meter_provider.shutdown()
    search = statistics.median(times["off"]) * 1e6
    out = {"loopback_search_us": search}
    for variant, key in (("on", "tracing_on"), ("metrics", "tracing_metrics"), ("floor", "sdk_floor"),
                         ("same", "sdk_same_spans")):
        extra = paired_us(times[variant], times["off"])
        out[f"{key}_extra_us"] = extra
        out[f"{key}_ratio"] = extra / search
    return out


def tracing_profile(base: str, searches: int) -> dict[str, float]:
    """cProfile of the same search with tracing on and off (``--profile``), interleaved (one profiler per
    variant, enabled around its searches only): the extra time per search, by whose code it is spent in
    (OpenTelemetry's SDK and API, perplexed's tracing hooks, everything else). The profiler inflates every
    figure, small Python functions most; the split is what counts."""
    import cProfile
    import pstats

    from opentelemetry import trace

    tracer_provider, _ = _sdk()
    searx = SearXNG(base_url=base)

    def owner(filename: str) -> str:
        if "opentelemetry" in filename:
            return "opentelemetry"
        if filename.endswith(("perplexed/_otel.py", "perplexed/telemetry.py")):
            return "perplexed_hooks"
        return "other"

    async def run() -> dict[bool, cProfile.Profile]:
        profiles = {True: cProfile.Profile(), False: cProfile.Profile()}
        for i in range(searches + 200):
            for on in ((True, False) if i % 2 else (False, True)):
                trace._TRACER_PROVIDER = tracer_provider if on else None  # type: ignore[attr-defined]
                if i < 200:  # warm-up
                    await perplexed.asearch("zoning setbacks", searx)
                    continue
                profiles[on].enable()
                await perplexed.asearch("zoning setbacks", searx)
                profiles[on].disable()
        return profiles

    profiles = asyncio.run(run())
    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
    tracer_provider.shutdown()
    split: dict[bool, dict[str, float]] = {}
    for on, profile in profiles.items():
        totals = {"opentelemetry": 0.0, "perplexed_hooks": 0.0, "other": 0.0}
        for (filename, _, _), row in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
            totals[owner(filename)] += row[2]  # tottime: time in the function's own code
        split[on] = totals
    return {f"profile_{name}_us": (split[True][name] - split[False][name]) / searches * 1e6
            for name in ("opentelemetry", "perplexed_hooks", "other")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="also profile the traced search: where the extra time goes (OpenTelemetry vs ours)")
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
        if args.profile:
            out.update(tracing_profile(f"http://127.0.0.1:{port}", 1000))
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
        print(f"  floor, two bare SDK spans (parent + child, no attributes): +{out['sdk_floor_extra_us']:.0f} us = "
              f"{out['sdk_floor_ratio'] * 100:.1f} %")
        print(f"  the same spans and attributes written directly against the SDK: +{out['sdk_same_spans_extra_us']:.0f} us"
              f" = {out['sdk_same_spans_ratio'] * 100:.1f} % (tracing on minus this: perplexed's own code)")
        print(f"  tracing and metrics on (SDK meter provider too): +{out['tracing_metrics_extra_us']:.0f} us = "
              f"{out['tracing_metrics_ratio'] * 100:.1f} %")
        if args.profile:
            print("  profiled extra per search (cProfile, inflated): "
                  f"OpenTelemetry {out['profile_opentelemetry_us']:.0f} us, "
                  f"perplexed's hooks {out['profile_perplexed_hooks_us']:.0f} us, "
                  f"everything else {out['profile_other_us']:.0f} us")
        print(f"  load average (1 min): {out['load_average_1m']:.2f}")
    ok = out["ledger_us"] <= 10 and out["tracing_off_us"] <= 2 and out["tracing_on_ratio"] <= 0.05
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
