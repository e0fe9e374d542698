"""Decompression bombs: peak RSS over baseline and wall time of a search against bodies that inflate to 1 GiB.

Run:  .venv/bin/python benchmarks/bench_bombs.py [--json] [--deadline-ms 300]

Each case runs in a fresh interpreter after one warm-up search (tests/reliability/rel_bomb_probe.py), against
a loopback server: zstd (32 KB, 2 MiB window as zstd's default level makes it; and 8 MiB, the largest RFC 9659
allows), gzip and deflate (about 1 MB), br (when ``brotli`` >= 1.2 is installed). Baselines measured in the
same run: the cap itself (targets: RSS over baseline <= 2 x the cap) and the deadline (target: wall time <=
deadline + 50 ms); plus, for scale, an identity body of 100 MB sent chunked, refused at the same cap.

Extraction bombs (issue 40; ``--extraction-deadline-ms``, default 2000): pages under the body cap that are
expensive to extract (8 MB of ``<p>`` tags, a PDF of 3 000 pages sharing one content stream, 50 KB of ``[`` read
as ``format="text"``), fetched through the ``http`` provider. Per page: the wall time to the fetch's return
(target: deadline + 1 s), the reason, the peak resident size of the extraction worker (bounded by its address-
space cap, 1 GiB over its warm size), what this process grew by, and the CPU seconds this process and any worker
spent in the second after the return (target: ~0: no work goes on). For scale, an ordinary article through a warm
worker against the same extraction in the process.
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
    from perplexed.net._decode import accept_encoding

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
    parser.add_argument("--extraction-deadline-ms", type=int, default=2000)
    args = parser.parse_args()
    import gzip

    from perplexed.net._http import DEFAULT_MAX_BODY_BYTES
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
    out["extraction"] = extraction_rows(args.extraction_deadline_ms)
    if args.json:
        print(json.dumps(out))
    else:
        for name, m in out.items():
            if isinstance(m, dict) and name != "extraction":
                print(
                    f"{name:<18} RSS +{m['rss_over'] / 2**20:6.1f} MiB ({m['rss_over_cap']:.2f} x cap)  "
                    f"{m['elapsed'] * 1000:6.0f} ms (deadline {args.deadline_ms})  {m['reason']}"
                )
        for name, m in out["extraction"].items():
            print(f"extract {name:<16} " + "  ".join(f"{k}={v}" for k, v in m.items()))
    return 0


def extraction_rows(deadline_ms: int) -> dict[str, dict[str, Any]]:
    """The extraction bombs (see the module docs), in this process, each after the workers were closed."""
    import threading
    import time

    import perplexed
    import psutil
    from perplexed.extract._extract import extract_page
    from perplexed.extract._worker import _pool
    from testkit.loopback import Status, serve

    sys.path.insert(0, str(ROOT / "tests" / "fetch"))
    from hostile import BRACKETS, P_TAGS, shared_stream_pdf
    from pages import article_html

    me = psutil.Process()

    def cpu(process: psutil.Process) -> float:
        try:
            t = process.cpu_times()
            return float(t.user + t.system + t.children_user + t.children_system)
        except psutil.Error:
            return 0.0

    rows: dict[str, dict[str, Any]] = {}
    pages = {
        "p_tags_8mb": (P_TAGS, "text/html", "markdown"),
        "pdf_3000_pages": (shared_stream_pdf(), "application/pdf", "markdown"),
        "brackets_text": (BRACKETS.encode(), "text/markdown", "text"),
    }
    with serve({"/robots.txt": Status(404, b"")}) as server:
        for name, (body, ctype, fmt) in pages.items():
            server.route(f"/{name}", Status(200, body, content_type=ctype))
            _pool.close()
            peak = [0]
            stop = threading.Event()

            def watch(stop: threading.Event = stop, peak: list[int] = peak) -> None:
                while not stop.is_set():
                    for child in me.children(recursive=True):
                        try:
                            peak[0] = max(peak[0], child.memory_info().rss)
                        except psutil.Error:
                            pass
                    time.sleep(0.05)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            rss = me.memory_info().rss
            started = time.monotonic()
            try:
                perplexed.fetch(server.url_for(f"/{name}"), allow_private=True, format=fmt, deadline_ms=deadline_ms)
                reason = "ok"
            except perplexed.UpstreamError as exc:
                reason = str(exc.attempts[0].reason)
            elapsed = time.monotonic() - started
            stop.set()
            watcher.join()
            grown = me.memory_info().rss - rss
            before = cpu(me) + sum(cpu(c) for c in me.children(recursive=True))
            time.sleep(1.0)
            after = cpu(me) + sum(cpu(c) for c in me.children(recursive=True))
            rows[name] = {
                "bytes": len(body), "deadline_ms": deadline_ms, "elapsed_ms": round(elapsed * 1000),
                "reason": reason, "worker_peak_mib": peak[0] >> 20, "process_grew_mib": grown >> 20,
                "cpu_s_after": round(after - before, 3), "workers_after": len(me.children(recursive=True)),
            }
        article = article_html().encode()
        server.route("/article", Status(200, article, content_type="text/html"))
        _pool.close()
        perplexed.fetch(server.url_for("/article"), allow_private=True)  # a warm worker
        times = []
        for _ in range(20):
            t = time.perf_counter()
            perplexed.fetch(server.url_for("/article"), allow_private=True, respect_robots=False)
            times.append(time.perf_counter() - t)
        inline = []
        for _ in range(20):
            t = time.perf_counter()
            extract_page(article, "text/html", "http://x/", "markdown")
            inline.append(time.perf_counter() - t)
        times.sort()
        inline.sort()
        rows["article_fetch"] = {"bytes": len(article), "median_ms_worker": round(times[10] * 1000, 1),
                                 "median_ms_extract_in_process": round(inline[10] * 1000, 1)}
        _pool.close()
    return rows


if __name__ == "__main__":
    sys.exit(main())
