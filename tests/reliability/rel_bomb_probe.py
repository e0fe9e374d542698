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
import sys
from pathlib import Path
from typing import Any


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
    rss_over, elapsed, info = peak_rss_over(lambda: _search(bomb, deadline_ms, max_body))
    print(json.dumps({"rss_over": rss_over, "elapsed": elapsed, **info}), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the test kit
    from testkit.memory import peak_rss_over

    main()
