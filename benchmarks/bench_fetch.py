"""perplexed.fetch (issue 24): extraction quality, throughput, and bounded memory on hostile pages.

Run:  .venv/bin/python benchmarks/bench_fetch.py [--part quality|throughput|memory|all] [--json]

- **quality**: the 181 pages of scrapinghub/article-extraction-benchmark (vendored under
  ``benchmarks/data/article-extraction-benchmark``, MIT), served from a loopback server and fetched with the
  ``http`` provider (``format="text"`` and the default ``"markdown"``), scored with that benchmark's own
  ``evaluate.py`` (token-level shingle F1). Baseline in the same run: ``trafilatura.extract()`` with its defaults
  on the same bytes. Target F1 >= 0.95.
- **throughput**: 200 pages of about 50 KB HTML from loopback at concurrency 16: ``perplexed.afetch_many`` vs raw
  ``httpx.AsyncClient`` + ``trafilatura.extract`` (same server, same pages, alternated rounds). Target >= 0.9x.
- **memory**: a 100 MB page and a 1 GB gzip bomb, each in a fresh interpreter: peak RSS over the baseline vs the
  8 MiB cap (target <= 2x the cap) and the wall time vs the deadline (target <= deadline + 50 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import subprocess
import sys
import tarfile
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "core")]
DATA = ROOT / "benchmarks" / "data" / "article-extraction-benchmark"
LOOP = ["127.0.0.0/8"]


# --- a loopback page server (stdlib) --------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    pages: dict[str, tuple[bytes, dict[str, str]] | Callable[[Any], None]] = {}

    def do_GET(self) -> None:
        entry = self.pages.get(self.path)
        if entry is None:
            body = b"not found"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if callable(entry):
            entry(self)
            return
        body, headers = entry
        self.send_response(200)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def serve(pages: dict[str, Any]) -> tuple[ThreadingHTTPServer, str]:
    handler = type("Handler", (_Handler,), {"pages": pages})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.request_queue_size = 256
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


def _robots() -> tuple[bytes, dict[str, str]]:
    return b"User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"}


# --- quality ---------------------------------------------------------------------------------------------------


def load_benchmark() -> tuple[dict[str, bytes], dict[str, Any]]:
    pages: dict[str, bytes] = {}
    with tarfile.open(DATA / "pages-and-ground-truth.tar.xz") as tar:
        truth = json.load(tar.extractfile("ground-truth.json"))  # type: ignore[arg-type]
        for member in tar.getmembers():
            if member.name.startswith("html/") and member.name.endswith(".html"):
                key = Path(member.name).name.removesuffix(".html")
                pages[key] = tar.extractfile(member).read()  # type: ignore[union-attr]
    return pages, truth


def _evaluate() -> Any:
    sys.path.insert(0, str(DATA))
    import evaluate  # the benchmark's own scorer

    return evaluate.evaluate


def quality() -> dict[str, Any]:
    import perplexed
    import trafilatura

    pages, truth = load_benchmark()
    evaluate = _evaluate()
    routes: dict[str, Any] = {"/robots.txt": _robots()}
    for key, body in pages.items():
        routes[f"/{key}"] = (body, {"Content-Type": "text/html"})
    server, base = serve(routes)
    out: dict[str, Any] = {"pages": len(pages)}
    try:
        started = time.perf_counter()
        baseline = {k: {"articleBody": trafilatura.extract(pages[k]) or ""} for k in truth}
        out["baseline_ms_per_page"] = (time.perf_counter() - started) * 1000 / len(truth)
        out["baseline"] = _scores(evaluate(truth, baseline, 0))
        for fmt in ("text", "markdown"):
            started = time.perf_counter()
            results = perplexed.fetch_many([f"{base}/{k}" for k in truth], concurrency=4, allow_private=LOOP,
                                           format=fmt, max_chars=10_000_000, min_chars=0, deadline_ms=120_000,
                                           provider_timeout_ms=120_000)
            elapsed = time.perf_counter() - started
            failed = [k for k, r in zip(truth, results, strict=True) if not isinstance(r, perplexed.Page)]
            prediction = {k: {"articleBody": r.content if isinstance(r, perplexed.Page) else ""}
                          for k, r in zip(truth, results, strict=True)}
            out[f"perplexed_{fmt}"] = {**_scores(evaluate(truth, prediction, 0)), "failed": len(failed),
                                       "ms_per_page": elapsed * 1000 / len(truth)}
    finally:
        server.shutdown()
    return out


def _scores(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: round(float(metrics[k]), 4) for k in ("f1", "precision", "recall", "accuracy")}


# --- throughput ------------------------------------------------------------------------------------------------


def synthetic_page(i: int) -> bytes:
    words = ("zoning setback residential frontage parcel variance permit easement boundary survey "
             "ordinance district density height coverage").split()
    paragraphs = []
    for p in range(40):
        sentence = " ".join(words[(i + p + j) % len(words)] for j in range(120))
        paragraphs.append(f"<p>Paragraph {p} of page {i}: {sentence}.</p>")
    nav = "".join(f"<li><a href='/section/{n}'>Section {n}</a></li>" for n in range(60))
    html = (f"<!doctype html><html lang='en'><head><title>Page {i}</title></head><body>"
            f"<header><ul>{nav}</ul></header><article><h1>Page {i}</h1>{''.join(paragraphs)}</article>"
            f"<footer><ul>{nav}</ul></footer></body></html>")
    return html.encode()


def throughput(rounds: int = 3) -> dict[str, Any]:
    import httpx
    import perplexed
    import trafilatura

    n, concurrency = 200, 16
    pages = {f"/p{i}": (synthetic_page(i), {"Content-Type": "text/html; charset=utf-8"}) for i in range(n)}
    pages["/robots.txt"] = _robots()
    server, base = serve(pages)
    urls = [f"{base}/p{i}" for i in range(n)]
    size = statistics.mean(len(v[0]) for k, v in pages.items() if k != "/robots.txt")

    async def raw() -> float:
        semaphore = asyncio.Semaphore(concurrency)
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=64)) as client:

            async def one(url: str) -> int:
                async with semaphore:
                    response = await client.get(url)
                    text = trafilatura.extract(response.content) or ""
                    return len(text)

            started = time.perf_counter()
            sizes = await asyncio.gather(*(one(u) for u in urls))
            assert all(sizes)
            return time.perf_counter() - started

    async def ours() -> float:
        started = time.perf_counter()
        results = await perplexed.afetch_many(urls, concurrency=concurrency, allow_private=LOOP)
        assert all(isinstance(r, perplexed.Page) and r.content for r in results), results[:3]
        return time.perf_counter() - started

    async def rounds_() -> tuple[list[float], list[float]]:
        await ours()  # warm-up: robots.txt, pools, imports
        await raw()
        raw_times, our_times = [], []
        for r in range(rounds):
            if r % 2 == 0:
                raw_times.append(await raw())
                our_times.append(await ours())
            else:
                our_times.append(await ours())
                raw_times.append(await raw())
        return raw_times, our_times

    try:
        raw_times, our_times = asyncio.run(rounds_())
    finally:
        server.shutdown()
    best_raw, best_ours = min(raw_times), min(our_times)
    return {"pages": n, "page_bytes": int(size), "concurrency": concurrency,
            "raw_pages_per_s": round(n / best_raw, 1), "perplexed_pages_per_s": round(n / best_ours, 1),
            "ratio": round(best_raw / best_ours, 3), "raw_s": [round(t, 3) for t in raw_times],
            "perplexed_s": [round(t, 3) for t in our_times]}


# --- memory ------------------------------------------------------------------------------------------------------


def _gzip_bomb(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = io.BytesIO()
    out.write(compressor.compress(b"<html><body><p>"))
    block = b"a" * (1 << 20)
    for _ in range(size >> 20):
        out.write(compressor.compress(block))
    out.write(compressor.compress(b"</p></body></html>"))
    out.write(compressor.flush())
    return out.getvalue()


def _stream_100mb(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    block = b"<p>" + b"x" * (64 * 1024 - 7) + b"</p>"
    try:
        for _ in range((100 * 1024 * 1024) // len(block)):
            handler.wfile.write(b"%x\r\n" % len(block) + block + b"\r\n")
        handler.wfile.write(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass


def probe(case: str, deadline_ms: int) -> dict[str, Any]:
    """One case in this (fresh) interpreter: peak RSS over the baseline while fetching, and the wall time."""
    import perplexed
    import psutil
    from perplexed.net._http import DEFAULT_MAX_BODY_BYTES

    routes: dict[str, Any] = {"/robots.txt": _robots(), "/warm": (synthetic_page(0), {"Content-Type": "text/html"})}
    if case == "page_100mb":
        routes["/case"] = _stream_100mb
    else:
        bomb = _gzip_bomb(1024 * 1024 * 1024)
        routes["/case"] = (bomb, {"Content-Type": "text/html", "Content-Encoding": "gzip"})
    server, base = serve(routes)
    perplexed.fetch(f"{base}/warm", allow_private=LOOP)  # imports, pools, robots.txt: outside the measure
    process = psutil.Process()
    baseline = process.memory_info().rss
    peak = baseline
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, process.memory_info().rss)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    reason = None
    try:
        perplexed.fetch(f"{base}/case", allow_private=LOOP, deadline_ms=deadline_ms, provider_timeout_ms=deadline_ms)
    except perplexed.UpstreamError as exc:
        reason = exc.attempts[0].reason if exc.attempts else exc.reason
    elapsed_ms = (time.perf_counter() - started) * 1000
    stop.set()
    sampler.join()
    server.shutdown()
    return {"case": case, "reason": reason, "elapsed_ms": round(elapsed_ms, 1), "deadline_ms": deadline_ms,
            "rss_over_baseline_mb": round((peak - baseline) / 2**20, 1), "cap_mb": DEFAULT_MAX_BODY_BYTES / 2**20}


def memory(deadline_ms: int) -> list[dict[str, Any]]:
    results = []
    for case in ("page_100mb", "gzip_bomb_1gb"):
        proc = subprocess.run([sys.executable, __file__, "--probe", case, "--deadline-ms", str(deadline_ms)],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--part", choices=("quality", "throughput", "memory", "all"), default="all")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--deadline-ms", type=int, default=2000)
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe, args.deadline_ms)))
        return 0
    out: dict[str, Any] = {}
    if args.part in ("quality", "all"):
        out["quality"] = quality()
    if args.part in ("throughput", "all"):
        out["throughput"] = throughput()
    if args.part in ("memory", "all"):
        out["memory"] = memory(args.deadline_ms)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
