"""Decompression bombs: peak RSS over baseline and wall time of a search against bodies that inflate to 1 GiB.

Run:  .venv/bin/python benchmarks/bench_bombs.py [--json] [--deadline-ms 300]

Each case runs in a fresh interpreter after one warm-up search (tests/reliability/rel_bomb_probe.py), against
a loopback server: zstd (32 KB, 2 MiB window as zstd's default level makes it; and 8 MiB, the largest RFC 9659
allows), gzip and deflate (about 1 MB), br (when ``brotli`` >= 1.2 is installed). Baselines measured in the
same run: the cap itself (targets: RSS over baseline <= 2 x the cap) and the deadline (target: wall time <=
deadline + 50 ms); plus, for scale, an identity body of 100 MB sent chunked, refused at the same cap.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "core"), str(ROOT / "tests"), str(ROOT / "tests" / "reliability")]

PROBE = ROOT / "tests" / "reliability" / "rel_bomb_probe.py"


def _cases() -> dict[str, tuple[str, Any]]:
    import rel_bombs
    from perplexed._decode import accept_encoding

    cases: dict[str, tuple[str, Any]] = {
        "zstd": ("zstd", rel_bombs.zstd_bomb),
        "zstd_8mib_window": ("zstd", lambda: rel_bombs.zstd_bomb(window_log=23)),
        "gzip": ("gzip", rel_bombs.gzip_bomb),
        "deflate": ("deflate", rel_bombs.deflate_bomb),
    }
    if "br" in accept_encoding():
        cases["br"] = ("br", rel_bombs.brotli_bomb)
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--deadline-ms", type=int, default=300)
    args = parser.parse_args()
    import gzip

    from perplexed._http import DEFAULT_MAX_BODY_BYTES
    from testkit.loopback import Huge, Status, searxng_json, serve

    warm = gzip.compress(json.dumps(searxng_json(3)).encode())
    out: dict[str, Any] = {"cap_bytes": DEFAULT_MAX_BODY_BYTES, "deadline_ms": args.deadline_ms}
    with serve() as server:
        server.route("/warm/search", Status(200, warm, {"Content-Encoding": "gzip"}, "application/json"))
        server.route("/identity_100mb/search", Huge(100 * 1024 * 1024, content_length=False))
        cases = _cases()
        for name, (encoding, build) in cases.items():
            body = build()
            server.route(f"/{name}/search", Status(200, body, {"Content-Encoding": encoding}, "application/json"))
        for name in ["identity_100mb", *cases]:
            proc = subprocess.run(
                [sys.executable, str(PROBE), server.url + "/warm", f"{server.url}/{name}", str(args.deadline_ms)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr[-3000:])
            m = json.loads(proc.stdout.strip().splitlines()[-1])
            m["rss_over_cap"] = m["rss_over"] / DEFAULT_MAX_BODY_BYTES
            m["elapsed_over_deadline_ms"] = m["elapsed"] * 1000 - args.deadline_ms
            out[name] = m
    if args.json:
        print(json.dumps(out))
    else:
        for name, m in out.items():
            if isinstance(m, dict):
                print(
                    f"{name:<18} RSS +{m['rss_over'] / 2**20:6.1f} MiB ({m['rss_over_cap']:.2f} x cap)  "
                    f"{m['elapsed'] * 1000:6.0f} ms (deadline {args.deadline_ms})  {m['reason']}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
