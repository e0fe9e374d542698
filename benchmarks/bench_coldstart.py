"""Cold start (issue 35): what a fresh process pays before its first result, against ``python -c "import httpx"``.

Run:  .venv/bin/python benchmarks/bench_coldstart.py [--runs 9] [--json]

Every variant is a new interpreter, spawned by this script; rounds interleave the variants (round 1: a, b, c, ...;
round 2: ..., c, b, a) so machine noise hits each alike. Each figure is the median over ``--runs`` rounds of
the child's wall time (spawn to exit) and, beside it, of its CPU time (user + system, from ``getrusage``: less
sensitive to a loaded machine). Ratios are of medians from the same run.

* ``import perplexed`` vs ``python -c "import httpx"`` (target <= 1.3x);
* ``import langchain_perplexed`` vs ``import langchain_core.retrievers, langchain_core.tools`` (<= 1.15x);
* ``import llama_index_perplexed`` vs ``import llama_index.core`` (<= 1.1x);
* MCP stdio cold call: spawn ``perplexed mcp --provider local --index <16-document index>``, initialize, one
  ``web_search``, exit, with the official ``mcp`` client (the client lives in this process: only the server
  is cold) vs spawning ``python -c "import httpx"`` (<= 2.0x);
* ``perplexed search QUERY --provider local --index ...``, end to end, vs the same spawn (<= 1.6x);
* informational: ``import perplexed`` then a first ``perplexed.search`` on the local index in the same process
  (what a script or a serverless call pays before its first result), vs the same spawn.

Bytecode caches are on for every child (``PYTHONDONTWRITEBYTECODE`` is dropped from its environment, as the test
suite does), so the warm-up run writes perplexed's ``.pyc`` files and no measured run compiles source.

The index is built once from ``examples/corpus`` (16 documents) in a temporary directory.

``--baseline DIR`` (a checkout of another revision, e.g. a detached worktree of main) runs every variant a second
time with ``DIR/core`` first on ``PYTHONPATH`` (the same interpreter and ``perplexed`` script), interleaved in the
same rounds, and prints both rows: a before/after under the same machine noise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("perplexed"))
QUERY = "zoning setbacks"

TARGETS: dict[str, float | None] = {"perplexed": 1.3, "langchain": 1.15, "llama_index": 1.1, "mcp_cold_call": 2.0,
                                    "cli_search": 1.6, "first_search": None}


def clean_env(root: Path = ROOT) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERPLEXED_", "PERPLEXITY_", "SEARXNG_"))}
    env["PYTHONPATH"] = os.pathsep.join((str(root / "core"), str(root)))
    env["PERPLEXED_STORE"] = "memory"  # no state file in the user's home for a benchmark
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its .pyc files: measure with them
    return env


def timed(run: Callable[[], None]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the children reaped meanwhile) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def spawn(argv: list[str], root: Path = ROOT) -> Callable[[], None]:
    def run() -> None:
        proc = subprocess.run(argv, capture_output=True, text=True, env=clean_env(root), cwd=root)
        if proc.returncode != 0:
            raise SystemExit(f"{argv} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")

    return run


def python_c(code: str, root: Path = ROOT) -> Callable[[], None]:
    return spawn([sys.executable, "-c", code], root)


def mcp_cold_call(index: str, root: Path = ROOT) -> Callable[[], None]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=CLI, args=["mcp", "--provider", "local", "--index", index, "--no-cache"], env=clean_env(root),
        cwd=str(root),
    )

    async def call() -> None:
        async with Client(params, read_timeout_seconds=120) as client:  # spawn + initialize
            reply = await client.call_tool("web_search", {"query": QUERY, "max_results": 5})
            assert not reply.is_error and reply.structured_content["hits"], reply

    def run() -> None:
        asyncio.run(call())

    return run


def build_index(where: str) -> str:
    index = str(Path(where) / "index.db")
    subprocess.run([CLI, "index", str(ROOT / "examples" / "corpus"), "--index", index], check=True,
                   capture_output=True, env=clean_env())
    return index


def variants_of(index: str, root: Path = ROOT) -> dict[str, Callable[[], None]]:
    return {
        "httpx": python_c("import httpx", root),
        "perplexed": python_c("import perplexed", root),
        "langchain_core": python_c("import langchain_core.retrievers, langchain_core.tools", root),
        "langchain": python_c("import langchain_perplexed", root),
        "llama_index_core": python_c("import llama_index.core", root),
        "llama_index": python_c("import llama_index_perplexed", root),
        "mcp_cold_call": mcp_cold_call(index, root),
        "cli_search": spawn([CLI, "search", QUERY, "--provider", "local", "--index", index, "--no-cache"], root),
        "first_search": python_c(
            f"import perplexed; assert perplexed.search({QUERY!r}, {{'name': 'local', 'index': {index!r}}}).hits", root
        ),
    }


def measure(runs: int, only: set[str] | None = None, baseline: Path | None = None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(tmp)
        variants = variants_of(index)
        if only:
            keep = {"httpx"} | only | {f"{name}_core" for name in only}
            variants = {k: v for k, v in variants.items() if k in keep}
        if baseline is not None:  # the same variants from the other tree (the floors too: same interpreter)
            base = variants_of(index, baseline)
            variants.update({f"{k}@base": base[k] for k in list(variants) if k not in FLOORS})
        for run in variants.values():  # warm the page cache and .pyc files: every variant starts "warm-cold"
            run()
        wall: dict[str, list[float]] = {k: [] for k in variants}
        cpu: dict[str, list[float]] = {k: [] for k in variants}
        names = list(variants)
        for i in range(runs):
            for name in names if i % 2 == 0 else reversed(names):
                w, c = timed(variants[name])
                wall[name].append(w)
                cpu[name].append(c)
    med = {k: statistics.median(v) * 1000 for k, v in wall.items()}
    med_cpu = {k: statistics.median(v) * 1000 for k, v in cpu.items()}
    rows = {}
    for name, floor in [(n, f) for n, f in FLOOR_OF.items()] + [(f"{n}@base", f) for n, f in FLOOR_OF.items()]:
        if name not in med:
            continue
        target = TARGETS[name.removesuffix("@base")]
        rows[name] = {
            "ms": med[name], "floor": floor, "floor_ms": med[floor], "ratio": med[name] / med[floor],
            "cpu_ms": med_cpu[name], "floor_cpu_ms": med_cpu[floor], "cpu_ratio": med_cpu[name] / med_cpu[floor],
            "target": target, "ok": None if target is None else med[name] / med[floor] <= target,
        }
    return {"rows": rows, "runs": runs, "load": list(os.getloadavg())}


FLOOR_OF = {"perplexed": "httpx", "langchain": "langchain_core", "llama_index": "llama_index_core",
            "mcp_cold_call": "httpx", "cli_search": "httpx", "first_search": "httpx"}
FLOORS = frozenset(FLOOR_OF.values())

LABELS = {
    "perplexed": 'import perplexed vs python -c "import httpx"',
    "langchain": "import langchain_perplexed vs import langchain_core.retrievers, langchain_core.tools",
    "llama_index": "import llama_index_perplexed vs import llama_index.core",
    "mcp_cold_call": "MCP stdio cold call (spawn, initialize, one web_search, exit; 16-doc local index) vs spawning import httpx",
    "cli_search": "perplexed search QUERY --provider local (CLI end to end) vs spawning import httpx",
    "first_search": "import perplexed + first perplexed.search on the local index, one process, vs spawning import httpx",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--only", nargs="*", choices=list(TARGETS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="also run every variant from the checkout DIR (its core/ first on PYTHONPATH), interleaved")
    args = parser.parse_args()
    data = measure(args.runs, set(args.only) if args.only else None, args.baseline)
    if args.json:
        print(json.dumps(data))
    else:
        for name, r in data["rows"].items():  # type: ignore[attr-defined]
            label = LABELS[name.removesuffix("@base")] + (" [baseline]" if name.endswith("@base") else "")
            print(f"{label}: {r['ratio']:.2f}x wall ({r['ms']:.0f} vs {r['floor_ms']:.0f} ms), "
                  f"{r['cpu_ratio']:.2f}x CPU ({r['cpu_ms']:.0f} vs {r['floor_cpu_ms']:.0f} ms)  "
                  + (f"[target <= {r['target']}x] {'met' if r['ok'] else 'MISSED'}" if r["target"] else "[informational]"))
        print(f"{args.runs} interleaved rounds; load average {' '.join(f'{x:.2f}' for x in data['load'])}")  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
