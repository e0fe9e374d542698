"""Measure one search against a hostile body in a fresh process: peak RSS over baseline and wall time.

Run as ``python rel_bomb_probe.py WARM_URL BOMB_URL DEADLINE_MS [MAX_BODY_BYTES]``: one warm-up search (a
small body through the same code path, so imports, the pooled client and the TLS context are paid before
the baseline), then the measured search with ``deadline_ms``. Prints one JSON line: ``rss_over`` (bytes,
peak RSS during the call minus RSS just before it), ``elapsed`` (seconds), and the attempt's ``outcome``,
``reason`` and ``error``.

Peak RSS is the larger of a 1 ms sampler thread's maximum and the kernel's high-water mark
(``ru_maxrss``) when the call raised it, so a spike between two samples is still seen.
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import threading
import time
from typing import Any

_PAGE = 4096


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def _search(url: str, deadline_ms: int, max_body: int | None) -> dict[str, Any]:
    import perplexed

    spec: dict[str, Any] = {"name": "searxng", "base_url": url}
    if max_body:
        spec["max_body_bytes"] = max_body
    try:
        result = perplexed.search("bomb", provider=[spec], deadline_ms=deadline_ms)
        attempt = result.attempts[-1]
    except perplexed.PerplexedError as exc:
        attempt = exc.attempts[-1]
    return {"outcome": attempt.outcome.value, "reason": attempt.reason, "error": attempt.error}


def main() -> None:
    warm, bomb, deadline_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
    max_body = int(sys.argv[4]) if len(sys.argv) > 4 else None
    _search(warm, 5000, max_body)
    gc.collect()
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _rss())
            time.sleep(0.001)

    baseline = _rss()
    high_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    info = _search(bomb, deadline_ms, max_body)
    elapsed = time.perf_counter() - start
    stop.set()
    sampler.join()
    high_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if high_after > high_before:
        peak = max(peak, high_after)
    print(json.dumps({"rss_over": max(0, peak - baseline), "elapsed": elapsed, **info}), flush=True)


if __name__ == "__main__":
    main()
