"""Run every benchmark and print one table of ratios measured in the same run, against the issue-9 targets.

Run:  .venv/bin/python benchmarks/run.py [--quick] [--markdown]

Each benchmark runs in its own interpreter (so imports, pools and high-water marks do not bleed across):
``bench_engine.py`` (engine overhead, chain cost), ``bench_load.py`` (500 concurrent asearch vs raw httpx,
refused/hung provider cost), ``bench_fallbacks.py`` (LangChain ``with_fallbacks`` vs a perplexed chain),
``bench_sse.py`` (decoder vs the perplexityai SDK, event latency), ``bench_import.py`` (import time vs the
SDK, no framework imports), ``bench_coldstart.py`` (fresh processes: import perplexed / the adapters vs their
floors, an MCP stdio cold call and a CLI search vs spawning ``import httpx``), ``bench_memory.py`` (peak memory streaming a 10 MB answer / reading a capped
body), ``bench_strategies.py`` (hedged tail latency, merge latency and recall), ``bench_verify.py`` (citation checking: quality on the labelled set, speed), ``bench_mcp.py`` (the MCP server: stdio overhead, concurrent HTTP calls), ``bench_bombs.py`` (decompression
bombs: peak RSS over the cap, wall time over the deadline), ``bench_eval.py`` (evaluate's throughput at
concurrency 8, the adaptive strategy's ordering cost), ``bench_usage.py`` (the usage ledger and tracing). Needs the ``bench`` extra (``perplexityai``, ``psutil``) and ``langchain-core``.

Exit status: 0 when every target is met, 1 otherwise (the table says which missed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@dataclass
class Row:
    metric: str
    measured: str
    target: str
    ok: bool | None  # None: informational


def _run(script: str, *args: str) -> tuple[str, float]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise RuntimeError(f"{script} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout, elapsed


def _json(script: str, *args: str) -> dict[str, object]:
    out, _ = _run(script, *args, "--json")
    return json.loads(out.strip().splitlines()[-1])


def _num(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    if match is None:
        raise RuntimeError(f"could not find {pattern!r} in:\n{text}")
    return float(match.group(1))


def engine(quick: bool) -> list[Row]:
    out, _ = _run("bench_engine.py", "--no-check", "--rounds", "800" if quick else "3000")
    print(out)
    us = _num(r"overhead ([\d.]+) us", out)
    pct = _num(r"overhead [\d.]+ us = ([\d.-]+) %", out)
    chain = _num(r"extra ([\d.]+) ms", out)
    async_x = _num(r"asearch ratio ([\d.]+)x", out)
    sync_x = _num(r"sync ratio ([\d.]+)x", out)
    adapters = []
    for name, label, target in (("langchain_invoke", "LangChain PerplexedRetriever.invoke", 1.4),
                                ("llama_index_retrieve", "LlamaIndex PerplexedRetriever.retrieve", 1.5)):
        if f"{name} ratio" in out:
            x = _num(rf"{name} ratio ([\d.]+)x", out)
            adapters.append(Row(f"{label} vs raw httpx.Client get + json (same loopback server)", f"{x:.2f}x",
                                f"<= {target}x (issue 35)", x <= target))
    return [
        Row(
            "engine overhead, single provider (median)",
            f"{us:.0f} us = {pct:.1f} %",
            "<= 5 % and <= 40 us",
            pct <= 5 and us <= 40,
        ),
        Row("asearch vs raw httpx.AsyncClient get + json (same loopback server)", f"{async_x:.2f}x", "<= 1.1x",
            async_x <= 1.1),
        Row("sync search vs raw httpx.Client get + json (same loopback server)", f"{sync_x:.2f}x", "<= 1.3x (issue 35)",
            sync_x <= 1.3),
        *adapters,
        Row(
            "3-provider chain, two fail fast: extra over the third alone",
            f"{chain:.2f} ms",
            "<= 2 ms",
            chain <= 2,
        ),
    ]


def load(quick: bool) -> list[Row]:
    data = _json("bench_load.py", "--rounds", "3" if quick else "9")
    print(json.dumps(data, indent=1))
    ratio = float(data["throughput_ratio_median"])  # type: ignore[arg-type]
    refused = float(data["refused_extra_ms"])  # type: ignore[arg-type]
    hung = float(data["hung_extra_ms"])  # type: ignore[arg-type]
    budget = float(data["hung_budget_ms"])  # type: ignore[arg-type]
    return [
        Row(
            "500 concurrent asearch: throughput vs raw AsyncClient (same pool)",
            f"{ratio:.2f}x ({data['perplexed_calls_per_s']:.0f} vs {data['raw_calls_per_s']:.0f} calls/s, best)",
            ">= 0.9x",
            ratio >= 0.9,
        ),
        Row("refused provider in front of a good one", f"+{refused:.2f} ms", "< 2 ms", refused < 2),
        Row(
            f"hung provider in front (budget {budget:.0f} ms)",
            f"+{hung:.1f} ms",
            f"{budget:.0f} +- 20 ms",
            abs(hung - budget) <= 20,
        ),
    ]


def fallbacks(quick: bool) -> list[Row]:
    data = _json("bench_fallbacks.py", "--rounds", "100" if quick else "300")
    print(json.dumps(data, indent=1))
    return [
        Row(
            "fallback over a refused primary: perplexed chain vs LangChain with_fallbacks",
            f"{data['fallback_time_ratio']:.2f}x ({data['perplexed_fallback_ms']:.2f} vs "
            f"{data['lc_fallback_ms']:.2f} ms)",
            "(comparison)",
            None,
        ),
        Row(
            "empty primary: documents returned (with_fallbacks / perplexed)",
            f"{data['lc_empty_primary_docs']} / {data['perplexed_empty_primary_hits']}",
            "(comparison)",
            None,
        ),
        Row(
            "hung primary",
            f"with_fallbacks: {data['lc_hung_primary']}; perplexed: {data['perplexed_hung_primary']}",
            "(comparison)",
            None,
        ),
    ]


def sse(quick: bool) -> list[Row]:
    out, _ = _run("bench_sse.py", "--repeat", "2" if quick else "5")
    print(out)
    ratio = _num(r"reads of\s+16384 B:.*?ratio\s+([\d.]+)x", out)
    ratio_small = _num(r"reads of\s+1024 B:.*?ratio\s+([\d.]+)x", out)
    decoder = _num(r"one frame per read:\s*\n\s*perplexed\s+median\s+([\d.]+) us", out)
    e2e = _num(r"end-to-end.*\n\s*perplexed\s+median\s+([\d.]+) us", out)
    return [
        Row(
            "SSE decoding vs perplexityai SDK decoder, 10 MB stream",
            f"{ratio:.2f}x (16 KB reads), {ratio_small:.2f}x (1 KB reads)",
            ">= 1.5x",
            min(ratio, ratio_small) >= 1.5,
        ),
        Row(
            "first event yielded after its frame arrives (median)",
            f"decoder {decoder:.1f} us; socket write -> typed event {e2e:.0f} us",
            "<= 1 ms",
            e2e <= 1000,
        ),
    ]


def imports(quick: bool) -> list[Row]:
    data = _json("bench_import.py", "--runs", "7" if quick else "15")
    print(json.dumps(data, indent=1))
    ratio = float(data["import_ratio"])  # type: ignore[arg-type]
    frameworks = data["framework_modules"]
    return [
        Row(
            "import perplexed vs import perplexity (SDK)",
            f"{ratio:.2f}x ({data['perplexed_import_ms']:.0f} vs {data['sdk_import_ms']:.0f} ms)",
            "<= 0.5x",
            ratio <= 0.5,
        ),
        Row(
            "langchain / llama_index modules after import + search",
            str(frameworks or "none"),
            "none",
            not frameworks,
        ),
    ]


def coldstart(quick: bool) -> list[Row]:
    data: Any = _json("bench_coldstart.py", "--runs", "5" if quick else "11")
    print(json.dumps(data, indent=1))
    labels = {
        "perplexed": 'cold start: import perplexed vs python -c "import httpx" (process wall, median)',
        "langchain": "cold start: import langchain_perplexed vs import langchain_core.retrievers, .tools",
        "llama_index": "cold start: import llama_index_perplexed vs import llama_index.core",
        "mcp_cold_call": "MCP stdio cold call (spawn, initialize, one web_search on a 16-doc index, exit) vs "
        "spawning import httpx",
        "cli_search": "perplexed search QUERY --provider local, end to end, vs spawning import httpx",
        "first_search": "cold start: import perplexed + first perplexed.search (local index), one process, vs "
        "spawning import httpx",
    }
    return [
        Row(
            labels[name],
            f"{r['ratio']:.2f}x ({r['ms']:.0f} vs {r['floor_ms']:.0f} ms; CPU {r['cpu_ratio']:.2f}x)",
            f"<= {r['target']}x" if r["target"] else "-",
            None if r["ok"] is None else bool(r["ok"]),
        )
        for name, r in data["rows"].items()
    ]


def memory(quick: bool) -> list[Row]:
    data = _json("bench_memory.py")
    print(json.dumps(data, indent=1))
    rows = []
    for case, label in (
        ("stream_10mb", "peak memory streaming a 10 MB answer"),
        ("capped_body", "peak memory reading a capped body (100 MB sent, 8 MB cap)"),
    ):
        figures = data[case]
        traced = float(figures["traced_peak_mb"])  # type: ignore[index]
        rss = float(figures["rss_growth_mb"])  # type: ignore[index]
        rows.append(
            Row(
                label,
                f"{traced:.1f} MB traced, {rss:.1f} MB RSS over baseline",
                "<= 20 MB",
                traced <= 20 and rss <= 20,
            )
        )
    return rows


def strategies(quick: bool) -> list[Row]:
    data: Any = _json("bench_strategies.py", "--searches", "600" if quick else "2000")
    print(json.dumps(data, indent=1))
    h, m, r = data["hedged"], data["merge_latency"], data["merge_recall"]
    seq, auto, p90 = h["sequential_ms"], h["hedged_auto_ms"], h["hedged_p90_ms"]
    return [
        Row(
            "hedged (auto) vs sequential p99, log-normal first provider (p99 = 10x median)",
            f"{h['hedged_auto_p99_ratio']:.2f}x ({auto['p99']:.0f} vs {seq['p99']:.0f} ms; hedge at observed "
            f"p95 {h['observed_p95_ms_median']:.0f} ms)",
            "<= 0.5x",
            h["hedged_auto_p99_ratio"] <= 0.5,
        ),
        Row(
            "hedged (auto): extra provider calls per search",
            f"{h['hedged_auto_extra_calls'] * 100:.1f} %",
            "<= 10 %",
            h["hedged_auto_extra_calls"] <= 0.10,
        ),
        Row(
            "hedged at a fixed p90 delay (comparison): p99 ratio, extra calls",
            f"{h['hedged_p90_p99_ratio']:.2f}x ({p90['p99']:.0f} ms), "
            f"{h['hedged_p90_extra_calls'] * 100:.1f} %",
            "(comparison)",
            None,
        ),
        Row(
            "merge of two providers vs the slower alone (median, p95)",
            f"{m['median_ratio']:.3f}x, {m['p95_ratio']:.3f}x "
            f"({m['merge_ms']['p50']:.1f} vs {m['slower_alone_ms']['p50']:.1f} ms median)",
            "<= 1.05x",
            max(m["median_ratio"], m["p95_ratio"]) <= 1.05,
        ),
        Row(
            "merge recall@10 vs the best single provider (synthetic, 300 queries)",
            f"{r['recall_at_10_merge']:.3f} vs {max(r['recall_at_10_a'], r['recall_at_10_b']):.3f} "
            f"({r['recall_ratio']:.2f}x)",
            ">= 1.0x",
            r["recall_ratio"] >= 1.0,
        ),
    ]


def bombs(quick: bool) -> list[Row]:
    data: Any = _json("bench_bombs.py")
    print(json.dumps(data, indent=1))
    deadline = data["deadline_ms"]
    rows = []
    for case, label in (
        ("identity_100mb", "capped identity body (100 MB chunked), for scale"),
        ("zstd", "zstd bomb 32 KB -> 1 GiB (2 MiB window)"),
        ("zstd_8mib_window", "zstd bomb 32 KB -> 1 GiB (8 MiB window, the RFC 9659 maximum)"),
        ("gzip", "gzip bomb 1 MB -> 1 GiB"),
        ("deflate", "deflate bomb 1 MB -> 1 GiB"),
        ("br", "br bomb -> 1 GiB"),
    ):
        if case not in data:
            continue
        m = data[case]
        ok = m["rss_over_cap"] <= 2.0 and m["elapsed"] * 1000 <= deadline + 50
        rows.append(
            Row(
                f"{label}: peak RSS over baseline / cap, wall time (deadline {deadline} ms)",
                f"{m['rss_over_cap']:.2f}x cap (+{m['rss_over'] / 2**20:.1f} MiB), {m['elapsed'] * 1000:.0f} ms",
                "<= 2x cap, <= deadline + 50 ms",
                ok,
            )
        )
    return rows


def governance(quick: bool) -> list[Row]:
    data: Any = _json("bench_governance.py", "--rounds", "500" if quick else "2000")
    print(json.dumps(data, indent=1))
    return [
        Row(
            "cache hit vs a cache miss, everything configured (memory store, loopback provider)",
            f"{data['hit_us'] / data['memory_miss_us'] * 100:.1f} % ({data['hit_us']:.0f} vs "
            f"{data['memory_miss_us']:.0f} us; {data['hit_ratio'] * 100:.1f} % of a plain call)",
            "<= 3 %",
            data["hit_us"] / data["memory_miss_us"] <= 0.03,
        ),
        Row(
            "memory store, everything configured, cache miss: overhead over plain",
            f"+{data['memory_miss_overhead_us']:.1f} us",
            "<= 40 us",
            data["memory_miss_overhead_us"] <= 40,
        ),
        Row(
            "SQLite store, same: p99 per governed search; overhead (median); transactions per attempt",
            f"{data['sqlite_miss_p99_ms']:.2f} ms (same rounds: plain {data['plain_p99_ms']:.2f} ms, memory store "
            f"{data['memory_miss_p99_ms']:.2f} ms); +{data['sqlite_miss_overhead_us']:.0f} us; "
            f"{data['sqlite_transactions_per_search']:.2f}",
            "p99 <= 5 ms; <= 2 (issue 23's floor accepted)",
            data["sqlite_miss_p99_ms"] <= 5 and data["sqlite_transactions_per_search"] <= 2,
        ),
        Row(
            "provider cooling down in front of a chain: extra per search",
            f"+{data['cooling_extra_us'] / 1000:.3f} ms",
            "<= 0.1 ms",
            data["cooling_extra_us"] <= 100,
        ),
    ]


def redis_store(quick: bool) -> list[Row]:
    data: Any = _json("bench_redis.py", "--rounds", "500" if quick else "1500", "--batches", "6" if quick else "12")
    print(json.dumps(data, indent=1))
    return [
        Row(
            "RedisStore (loopback valkey) vs memory store: added per governed search, 1 in flight (median)",
            f"{data['added_ms']:.2f} ms ({data['serial_redis_ms']:.2f} vs {data['serial_memory_ms']:.2f} ms; "
            f"a bare PING round trip: {data['ping_ms']:.2f} ms)",
            "<= 1 ms",
            data["added_ms"] <= 1.0,
        ),
        Row(
            f"RedisStore vs memory store: throughput at {data['concurrency']} searches in flight",
            f"{data['throughput_ratio']:.2f}x ({data['rate_redis']:.0f} vs {data['rate_memory']:.0f} searches/s)",
            ">= 0.8x",
            data["throughput_ratio"] >= 0.8,
        ),
    ]


def verify(quick: bool) -> list[Row]:
    data: Any = _json("bench_verify.py", "--rounds", "2" if quick else "5")
    print(json.dumps(data, indent=1))
    return [
        Row(
            f"verify, lexical checker, labelled set ({data['pairs']} pairs): precision / recall of supported",
            f"{data['precision']:.3f} / {data['recall']:.3f}",
            ">= 0.90 / >= 0.70",
            data["precision"] >= 0.90 and data["recall"] >= 0.70,
        ),
        Row(
            "verify: changed numbers/dates/names labelled supported",
            str(data["changed_values_supported"]),
            "0",
            data["changed_values_supported"] == 0,
        ),
        Row(
            "verify: one sentence-passage pair (median; vs splitting both into word sets)",
            f"{data['pair_median_us']:.0f} us = {data['pair_ratio']:.0f}x the floor (CPU {data['pair_cpu_us']:.0f} us)",
            "<= 1 ms",
            data["pair_median_us"] <= 1000,
        ),
        Row(
            "verify: a 10-sentence answer over 10 hits (median)",
            f"{data['answer_median_ms']:.2f} ms (CPU {data['answer_cpu_ms']:.2f} ms)",
            "<= 20 ms",
            data["answer_median_ms"] <= 20,
        ),
    ]


def mcp_server(quick: bool) -> list[Row]:
    data: Any = _json("bench_mcp.py", "--rounds", "50" if quick else "200")
    print(json.dumps(data, indent=1))
    stdio, http = data["stdio"], data["http"]
    return [
        Row(
            "mcp: web_search tools/call over stdio vs the same search in-process (median)",
            f"+{stdio['overhead_ms']:.2f} ms ({stdio['ratio']:.2f}x; {stdio['inprocess_ms']:.2f} -> "
            f"{stdio['stdio_ms']:.2f} ms)",
            "<= 5 ms",
            stdio["overhead_ms"] <= 5.0,
        ),
        Row(
            f"mcp: {http['calls']} concurrent web_search calls over streamable HTTP",
            f"{http['ok']} ok, {http['lost']} lost in {http['seconds']:.1f} s",
            "none lost",
            http["lost"] == 0,
        ),
    ]


def eval_bench(quick: bool) -> list[Row]:
    data: Any = _json("bench_eval.py", "--queries", "16" if quick else "40", "--rounds", "1000" if quick else "4000")
    print(json.dumps(data, indent=1))
    t, o = data["throughput"], data["ordering"]
    return [
        Row("eval throughput, concurrency 8 vs sequential (50 ms providers)",
            f"{t['speedup']:.2f}x ({t['concurrency_1_s']:.2f} s vs {t['concurrency_8_s']:.2f} s, {t['searches']} searches)",
            ">= 6x", t["speedup"] >= 6),
        Row("adaptive ordering vs sequential, memory store (CPU per call; wall in brackets)",
            f"+{o['overhead_cpu_us']:.1f} us (wall +{o['overhead_us']:.1f} us; sequential {o['sequential_us']:.0f} us)",
            "<= 20 us", o["overhead_cpu_us"] <= 20),
    ]


def usage(quick: bool) -> list[Row]:
    data: Any = _json("bench_usage.py", "--rounds", "500" if quick else "2000")
    print(json.dumps(data, indent=1))
    return [
        Row("usage ledger per governed search (memory store)", f"{data['ledger_us']:.2f} us", "<= 10 us",
            data["ledger_us"] <= 10),
        Row("tracing off (no OpenTelemetry installed): hooks per call", f"{data['tracing_off_us']:.2f} us",
            "<= 2 us", data["tracing_off_us"] <= 2),
        Row("tracing on (SDK, batch processor, no-op exporter) vs a loopback search",
            f"{data['tracing_on_ratio'] * 100:.1f} % (+{data['tracing_on_extra_us']:.0f} us of "
            f"{data['loopback_search_us']:.0f} us)", "<= 5 %", data["tracing_on_ratio"] <= 0.05),
        Row("  same run: the SDK alone, two bare spans (parent + child, no attributes)",
            f"{data['sdk_floor_ratio'] * 100:.1f} % (+{data['sdk_floor_extra_us']:.0f} us)", "(floor)", None),
        Row("  same run: the same spans and attributes written directly against the SDK",
            f"{data['sdk_same_spans_ratio'] * 100:.1f} % (+{data['sdk_same_spans_extra_us']:.0f} us)", "(floor)", None),
        Row("  same run: tracing and metrics on (SDK meter provider too)",
            f"{data['tracing_metrics_ratio'] * 100:.1f} % (+{data['tracing_metrics_extra_us']:.0f} us)",
            "(comparison)", None),
    ]


BENCHES: list[tuple[str, Callable[[bool], list[Row]]]] = [
    ("engine", engine),
    ("load", load),
    ("fallbacks", fallbacks),
    ("sse", sse),
    ("import", imports),
    ("coldstart", coldstart),
    ("memory", memory),
    ("strategies", strategies),
    ("governance", governance),
    ("bombs", bombs),
    ("redis", redis_store),
    ("verify", verify),
    ("mcp", mcp_server),
    ("eval", eval_bench),
    ("usage", usage),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--only", nargs="*", choices=[name for name, _ in BENCHES])
    args = parser.parse_args()
    rows: list[Row] = []
    started = time.perf_counter()
    for name, bench in BENCHES:
        if args.only and name not in args.only:
            continue
        print(f"== {name}", flush=True)
        rows += bench(args.quick)
    load_avg = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"\n== results ({time.strftime('%Y-%m-%d %H:%M %Z')}, {platform.node()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, load average {load_avg}, "
        f"{time.perf_counter() - started:.0f} s)"
    )
    mark = {True: "met", False: "MISSED", None: "-"}
    if args.markdown:
        print("| metric | measured | target | status |\n|---|---|---|---|")
        for r in rows:
            print(f"| {r.metric} | {r.measured} | {r.target} | {mark[r.ok]} |")
    else:
        width = max(len(r.metric) for r in rows)
        for r in rows:
            print(f"{r.metric:<{width}}  {mark[r.ok]:<6}  {r.measured}   [target {r.target}]")
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
