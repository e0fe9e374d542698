"""Import time: ``import perplexed`` vs ``import perplexity`` (the official SDK), each in a fresh interpreter,
and proof that ``import perplexed`` (and a search) loads no langchain / llama_index module.

Run:  .venv/bin/python benchmarks/bench_import.py [--runs 15] [--json]

Each figure is the median over ``--runs`` fresh interpreters (interleaved) of the wall time of the import
statement alone, measured inside the child with ``perf_counter`` (interpreter start-up excluded). Target:
perplexed / SDK <= 0.5. Needs the ``bench`` extra for the SDK.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import sys, time, json
sys.path.insert(0, {core!r})
t0 = time.perf_counter()
import {module}
elapsed = time.perf_counter() - t0
frameworks = sorted(m for m in sys.modules if m.split(".")[0] in ("langchain", "langchain_core", "llama_index"))
print(json.dumps({{"elapsed": elapsed, "modules": len(sys.modules), "frameworks": frameworks}}))
"""

SEARCH_CHILD = r"""
import sys, json
sys.path.insert(0, {core!r})
import perplexed
def fn(q, o):
    return [{{"url": "https://example.com/a"}}]
perplexed.search("zoning", fn)
frameworks = sorted(m for m in sys.modules if m.split(".")[0] in ("langchain", "langchain_core", "llama_index"))
print(json.dumps({{"frameworks": frameworks}}))
"""


def _child(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(runs: int) -> dict[str, object]:
    core = str(ROOT / "core")
    ours, sdk = [], []
    frameworks: set[str] = set()
    for _ in range(runs):
        a = _child(CHILD.format(core=core, module="perplexed"))
        b = _child(CHILD.format(core=core, module="perplexity"))
        ours.append(float(a["elapsed"]))  # type: ignore[arg-type]
        sdk.append(float(b["elapsed"]))  # type: ignore[arg-type]
        frameworks.update(a["frameworks"])  # type: ignore[arg-type]
    after_search = _child(SEARCH_CHILD.format(core=core))
    frameworks.update(after_search["frameworks"])  # type: ignore[arg-type]
    return {
        "perplexed_import_ms": statistics.median(ours) * 1000,
        "sdk_import_ms": statistics.median(sdk) * 1000,
        "import_ratio": statistics.median(ours) / statistics.median(sdk),
        "framework_modules": sorted(frameworks),
    }


def main() -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = measure(args.runs)
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"import perplexed {out['perplexed_import_ms']:.1f} ms vs import perplexity (SDK) "
            f"{out['sdk_import_ms']:.1f} ms: {out['import_ratio']:.2f}x (target <= 0.5x)"
        )
        print(
            f"langchain / llama_index modules loaded by import perplexed + a search: "
            f"{out['framework_modules'] or 'none'}"
        )
    return out


if __name__ == "__main__":
    main()
