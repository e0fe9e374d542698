"""Local index: build 2 000 Markdown files, re-run with nothing changed, query; against a floor baseline.

The baseline, measured in the same run and interleaved round by round, is the least any index of these files
costs: read each file and insert its raw text into a plain two-column FTS5 table, in one transaction (no
extraction, hashing, CJK columns, links or integrity checks). ``--json`` prints one JSON document.

    .venv/bin/python benchmarks/bench_index.py [--files 2000] [--rounds 3] [--json]

To compare two versions of perplexed, run it twice with ``PYTHONPATH`` pointing at each one's ``core``.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path


def make_corpus(root: Path, count: int) -> None:
    rng = random.Random(7)
    vocab = [f"{rng.choice('bcdfghklmnprst')}{rng.choice('aeiou')}{rng.choice('nrstlm')}{i}" for i in range(20_000)]
    for i in range(count):
        folder = root / f"d{i % 20}"
        folder.mkdir(exist_ok=True)
        paragraphs = "\n\n".join(" ".join(rng.choices(vocab, k=80)) for _ in range(12))
        (folder / f"doc{i}.md").write_text(f"# Document {i}\n\n{paragraphs}\n", encoding="utf-8")


def floor(root: Path, index: Path) -> float:
    started = time.perf_counter()
    conn = sqlite3.connect(index)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(path, body, tokenize = 'porter unicode61 remove_diacritics 2')")
    for path in sorted(root.rglob("*.md")):
        conn.execute("INSERT INTO t VALUES (?, ?)", (str(path), path.read_text(encoding="utf-8")))
    conn.commit()
    conn.close()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from perplexed.index import build_index, query_index

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        root.mkdir()
        make_corpus(root, args.files)
        builds, reruns, floors, queries = [], [], [], []
        for r in range(args.rounds):
            index = Path(tmp) / f"index{r}.db"
            floors.append(floor(root, Path(tmp) / f"floor{r}.db"))
            started = time.perf_counter()
            report = build_index(root, index)
            builds.append(time.perf_counter() - started)
            assert len(report.added) == args.files, report.errors[:3]
            started = time.perf_counter()
            build_index(root, index)
            reruns.append(time.perf_counter() - started)
            started = time.perf_counter()
            for i in range(20):
                query_index(index, f"document {i} lan{i}", limit=10)
            queries.append((time.perf_counter() - started) / 20)
        size = (Path(tmp) / "index0.db").stat().st_size
    result = {
        "files": args.files,
        "build_s": round(statistics.median(builds), 3),
        "floor_s": round(statistics.median(floors), 3),
        "build_vs_floor": round(statistics.median(builds) / statistics.median(floors), 2),
        "rerun_unchanged_s": round(statistics.median(reruns), 3),
        "query_ms": round(statistics.median(queries) * 1000, 2),
        "index_mb": round(size / 1e6, 1),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>18}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
