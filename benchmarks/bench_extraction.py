"""Extraction beyond articles (issue 36): word F1 per page type on WCXB, perplexed vs trafilatura's defaults.

Run:  .venv/bin/python benchmarks/bench_extraction.py                       # the vendored sample (quick row)
      .venv/bin/python benchmarks/bench_extraction.py --wcxb /path/to/web-content-extraction-benchmark
                                                      [--split dev] [--jobs 2] [--out DIR] [--json]

WCXB (Web Content eXtraction Benchmark, Murrough Foley, 2026, CC-BY-4.0, repository
``Murrough-Foley/web-content-extraction-benchmark``): human-reviewed pages of 7 types. With ``--wcxb`` the whole
``dev`` split of a local copy is extracted and scored with the benchmark's own ``evaluate.py --results FILE
--per-type`` (its output is printed); without it, the stratified sample vendored under
``benchmarks/data/wcxb`` is scored with :func:`word_f1`, a copy of that ``evaluate.py``'s metric (word-level F1 on
lower-cased ``\\w+`` tokens). **Only the dev split: the test split is the holdout, never run on it.**

Each page's HTML goes through the ``http`` fetch provider's extraction (``format="text"``, no network):
``perplexed.extract._extract.extract_html`` then the interstitial check (a page refused as ``blocked`` scores as empty and
is counted), and, in the same process and the same run, ``trafilatura.extract(html)`` with its defaults. Both are
timed per page (median reported).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "core")]
SAMPLE = ROOT / "benchmarks" / "data" / "wcxb"
TYPES = ["article", "forum", "product", "collection", "listing", "documentation", "service"]


# --- the metric: a copy of WCXB's evaluate.py (word_f1, tokenize; CC-BY-4.0, Murrough Foley) --------------


def tokenize(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower()) if text else []


def word_f1(predicted: str, reference: str) -> float:
    pred, ref = tokenize(predicted), tokenize(reference)
    if not ref:
        return 1.0 if not pred else 0.0
    if not pred:
        return 0.0
    overlap = sum((Counter(pred) & Counter(ref)).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / len(pred), overlap / len(ref)
    return 2 * precision * recall / (precision + recall)


# --- pages ---------------------------------------------------------------------------------------------------


def page_type_of(gt: dict[str, Any]) -> str:
    """The page type as evaluate.py reads it (``category`` counts as ``collection``)."""
    node = (gt.get("_internal") or {}).get("page_type", {})
    kind = node.get("primary", "article") if isinstance(node, dict) else (node or "article")
    return "collection" if kind == "category" else str(kind)


def half_of(page_id: str) -> str:
    """A fixed half of the pages by a hash of the page id: ``tune`` (tuned on) or ``holdout`` (only measured)."""
    return "tune" if hashlib.md5(page_id.encode()).digest()[0] % 2 == 0 else "holdout"


def load_split(split_dir: Path) -> list[dict[str, Any]]:
    pages = []
    for gt_file in sorted((split_dir / "ground-truth").glob("*.json")):
        gt = json.loads(gt_file.read_text())
        truth = gt.get("ground_truth") or {}
        pages.append({"id": gt_file.stem, "html": str(split_dir / "html" / f"{gt_file.stem}.html.gz"),
                      "type": page_type_of(gt), "url": gt.get("url"), "main_content": truth.get("main_content", "") or ""})
    return pages


def load_sample() -> list[dict[str, Any]]:
    index = json.loads((SAMPLE / "pages.json").read_text())
    return [{**entry, "html": str(SAMPLE / "html" / f"{entry['id']}.html.gz")} for entry in index]


def read_html(path: str) -> str:
    from perplexed.extract._extract import decode_text

    return decode_text(gzip.decompress(Path(path).read_bytes()), None)


# --- the extractors --------------------------------------------------------------------------------------------


def _run_one(page: dict[str, Any]) -> dict[str, Any]:
    import trafilatura
    from perplexed.extract._extract import extract_html, interstitial

    raw = read_html(page["html"])
    started = time.perf_counter()
    extracted = extract_html(raw, page.get("url"), "text")
    why = interstitial(raw, extracted.text, extracted.title)
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    theirs = trafilatura.extract(raw, url=page.get("url")) or ""
    theirs_s = time.perf_counter() - started
    return {"id": page["id"], "type": page["type"], "ours": "" if why else extracted.text, "blocked": why,
            "page_type": getattr(extracted, "page_type", None), "theirs": theirs, "ours_s": ours_s,
            "theirs_s": theirs_s}


def run(pages: list[dict[str, Any]], jobs: int) -> list[dict[str, Any]]:
    if jobs <= 1:
        return [_run_one(page) for page in pages]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(_run_one, pages, chunksize=8))


def score(pages: list[dict[str, Any]], rows: list[dict[str, Any]]) -> dict[str, Any]:
    truth = {page["id"]: page["main_content"] for page in pages}
    per_type: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"ours": [], "theirs": []})
    for row in rows:
        for who in ("ours", "theirs"):
            f1 = word_f1(row[who], truth[row["id"]])
            per_type[row["type"]][who].append(f1)
            per_type["all"][who].append(f1)
    return {kind: {"pages": len(v["ours"]), "perplexed": statistics.fmean(v["ours"]),
                   "trafilatura": statistics.fmean(v["theirs"])} for kind, v in per_type.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wcxb", type=Path, help="a local copy of the WCXB repository (its dev split is run)")
    parser.add_argument("--split", default="dev", choices=["dev"], help="only dev: test is the holdout")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, help="where to write the results files for evaluate.py")
    parser.add_argument("--types", help="only these page types (comma-separated), e.g. forum,product")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pages = load_split(args.wcxb / args.split) if args.wcxb else load_sample()
    if args.types:
        pages = [page for page in pages if page["type"] in args.types.split(",")]
    started = time.perf_counter()
    rows = run(pages, args.jobs)
    wall = time.perf_counter() - started
    table = score(pages, rows)
    blocked = [(row["id"], row["type"], row["blocked"]) for row in rows if row["blocked"]]
    confusion = Counter((row["type"], row["page_type"]) for row in rows)
    detected = sum(n for (truth, guess), n in confusion.items() if truth == guess)
    timing = {"perplexed_median_ms": 1000 * statistics.median(r["ours_s"] for r in rows),
              "trafilatura_median_ms": 1000 * statistics.median(r["theirs_s"] for r in rows)}
    timing["ratio"] = timing["perplexed_median_ms"] / timing["trafilatura_median_ms"]
    halves = {half: score([p for p in pages if half_of(p["id"]) == half], [r for r in rows if half_of(r["id"]) == half])
              for half in ("tune", "holdout") if any(half_of(r["id"]) == half for r in rows)}
    report = {"pages": len(rows), "wall_s": wall, "table": table, "halves": halves, "blocked": blocked,
              "timing": timing, "page_type_accuracy": detected / len(rows)}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for who in ("ours", "theirs"):
            (args.out / f"{who}.json").write_text(json.dumps({row["id"]: row[who] for row in rows}))
        (args.out / "rows.json").write_text(json.dumps(rows))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print("| page type | pages | perplexed | trafilatura (same run) |\n|---|---|---|---|")
        for kind in ["all", *TYPES]:
            if kind in table:
                row = table[kind]
                print(f"| {kind} | {row['pages']} | {row['perplexed']:.3f} | {row['trafilatura']:.3f} |")
        for half, half_table in halves.items():
            print(f"\n{half} half (md5 of the page id):")
            print(" | ".join(f"{kind} {half_table[kind]['pages']} {half_table[kind]['perplexed']:.3f}/"
                             f"{half_table[kind]['trafilatura']:.3f}" for kind in ["all", *TYPES] if kind in half_table))
        print(f"\nblocked: {len(blocked)} {blocked}")
        print(f"page type detected right: {report['page_type_accuracy']:.1%}")
        print(f"median ms/page: perplexed {timing['perplexed_median_ms']:.1f}, trafilatura "
              f"{timing['trafilatura_median_ms']:.1f} (x{timing['ratio']:.2f}); wall {wall:.0f} s")
    if args.wcxb and args.out and not args.types:  # the benchmark's own scorer on the same results
        evaluate = args.wcxb / "evaluate.py"
        for who in ("ours", "theirs"):
            print(f"\n== evaluate.py --split {args.split} --results {who}.json --per-type")
            subprocess.run([sys.executable, str(evaluate), "--split", args.split, "--results",
                            str(args.out / f"{who}.json"), "--per-type"], check=False)


if __name__ == "__main__":
    main()
