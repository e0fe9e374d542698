"""Peak memory of one call, for the bounded-resource tests that run in a fresh process (Linux /proc)."""

from __future__ import annotations

import resource
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
_PAGE = 4096


def rss() -> int:
    """This process's resident set size in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def peak_rss_over(fn: Callable[[], T]) -> tuple[int, float, T]:
    """Run ``fn`` while sampling RSS every millisecond: (peak RSS over the baseline before it, seconds, its value).

    The kernel's high-water mark is read too, so a spike shorter than a sample still counts when it raised it.
    """
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, rss())
            time.sleep(0.001)

    baseline = rss()
    high_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    try:
        value = fn()
    finally:
        elapsed = time.perf_counter() - start
        stop.set()
        sampler.join()
    high_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if high_after > high_before:
        peak = max(peak, high_after)
    return max(0, peak - baseline), elapsed, value
