"""One worker process of the fleet tests (tests/redis/test_fleet.py): searches through the SYNC API, every
worker sharing one RedisStore, and prints one JSON line describing every search it made.

The test forks the workers (``run(cfg)``: forked processes skip the seconds of imports a fresh interpreter
pays on a loaded machine); ``python fleet_worker.py '<json config>'`` runs one by hand. Config keys: ``mode`` (``"fleet"`` or ``"faults"``),
``store`` (the Redis URL), ``prefix``, ``base`` (the loopback providers' server URL), ``worker``,
``workers``, ``timeout_ms``, ``barrier`` (a Redis key the workers count up to meet); mode ``"outage"``:
``stop`` (a file: the worker stops when it exists) and ``marks`` (a directory: the worker creates
``ready-<worker>`` once a search of its went through the store, ``down-<worker>`` when it first sees the store
unavailable and ``up-<worker>`` when the store is back).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import perplexed
from perplexed.providers import FunctionProvider, SearXNG
from perplexed.store import RedisStore


def fallback(query: str, options: Any) -> list[dict[str, str]]:
    return [{"url": "https://fallback.example/1", "title": "fallback"}]


def one(label: str, query: str, chain: list[Any], **options: Any) -> dict[str, Any]:
    started = time.monotonic()
    out: dict[str, Any] = {"phase": label, "query": query}
    try:
        result = perplexed.search(query, chain, **options)
    except perplexed.PerplexedError as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        attempts = exc.attempts
    except Exception as exc:  # anything else is a bug the test reports
        out["error"] = f"UNEXPECTED {type(exc).__name__}: {exc}"
        attempts = []
    else:
        out["provider"] = result.provider
        attempts = result.attempts
    out["elapsed_s"] = time.monotonic() - started
    out["at"] = started
    out["attempts"] = [
        {"provider": a.provider, "outcome": str(a.outcome.value), "cost": a.cost, "cached": a.cached,
         "reason": a.reason, "detail": a.detail}
        for a in attempts
    ]
    return out


def barrier(url: str, key: str, workers: int, timeout: float = 30.0) -> None:
    import redis

    client = redis.Redis.from_url(url)
    client.incr(key)
    end = time.monotonic() + timeout
    while int(client.get(key) or 0) < workers and time.monotonic() < end:
        time.sleep(0.002)
    client.close()


def fleet(cfg: dict[str, Any], store: RedisStore) -> list[dict[str, Any]]:
    base, me = cfg["base"], cfg["worker"]
    rl = SearXNG(base_url=f"{base}/r", name="rl", rate_limit="20/s", rate_limit_wait_ms=1000)
    flaky = SearXNG(base_url=f"{base}/x", name="flaky", cooldown_after=3, cooldown_s=60)
    slow = SearXNG(base_url=f"{base}/s", name="slow", cost=0.01)
    paid = SearXNG(base_url=f"{base}/m", name="paid", cost=0.01)
    fb = FunctionProvider(fallback, name="fallback")
    results = []
    # A: a "20/s" provider hammered by the whole fleet (10 searches each)
    for i in range(10):
        results.append(one("rate", f"rate {me} {i}", [rl, fb], provider_timeout_ms=2000))
    # B: a failing provider with cooldown_after=3 (5 searches each)
    for i in range(5):
        results.append(one("cooldown", f"flaky {me} {i}", [flaky, fb], provider_timeout_ms=2000))
    # C: the same question asked by every worker at once, fleet-wide single flight
    barrier(cfg["store"].split("?")[0], cfg["barrier"], cfg["workers"])
    results.append(one("flight", "the same question", [slow, fb], cache_ttl_s=60, cache_single_flight=True,
                       provider_timeout_ms=5000, deadline_ms=8000))
    # D: a paid provider under a fleet-wide day spend limit (24 searches each)
    for i in range(24):
        results.append(one("spend", f"paid {me} {i}", [paid, fb], provider_timeout_ms=2000))
    return results


def faults(cfg: dict[str, Any], store: RedisStore) -> list[dict[str, Any]]:
    base, me = cfg["base"], cfg["worker"]
    rl = SearXNG(base_url=f"{base}/r", name="rl", rate_limit="20/s", rate_limit_wait_ms=100)
    paid = SearXNG(base_url=f"{base}/m", name="paid", cost=0.01)
    fb = FunctionProvider(fallback, name="fallback")
    results = []
    end_at = time.time() + cfg["duration_s"]
    i = 0
    while i < 40:
        phase = "faults"
        results.append(one(phase, f"fault {me} {i}", [paid, rl, fb], provider_timeout_ms=500, deadline_ms=3000,
                           cache_ttl_s=30))
        i += 1
        left = (end_at - time.time()) / max(1, 40 - i)
        if left > 0:
            time.sleep(left)
    return results


def outage(cfg: dict[str, Any], store: RedisStore) -> list[dict[str, Any]]:
    """Search a ``"5/s"`` provider as fast as its limit lets this worker (waiting up to 2 s for a slot) until
    the stop file appears; mark when the store goes down and when it is back."""
    base, me = cfg["base"], cfg["worker"]
    rl = SearXNG(base_url=f"{base}/r", name="rl", rate_limit="5/s", rate_limit_wait_ms=2000)
    fb = FunctionProvider(fallback, name="fallback")
    stop, marks = Path(cfg["stop"]), Path(cfg["marks"])
    results = []
    seen_down = False
    i = 0
    while not stop.exists():
        was = store.available
        result = one("outage", f"outage {me} {i}", [rl, fb], provider_timeout_ms=2000, deadline_ms=5000)
        results.append({**{k: result[k] for k in ("phase", "query", "at", "elapsed_s", "provider", "error")
                           if k in result}, "was": was, "now": store.available, "end": time.monotonic()})
        i += 1
        if i == 1 and store.outages == 0:  # its admission was answered by the store
            (marks / f"ready-{me}").touch()
        if not store.available and not seen_down:
            seen_down = True
            (marks / f"down-{me}").touch()
        elif store.available and seen_down:
            (marks / f"up-{me}").touch()
        if result.get("provider") != "rl":
            time.sleep(0.05)  # skipped (no slot within 2 s): do not spin
    return results


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    """One worker's whole run; the report the test reads."""
    perplexed.reset()  # a forked worker starts from nothing the test process configured
    store = RedisStore(cfg["store"], prefix=cfg["prefix"], timeout_ms=cfg["timeout_ms"],
                       fleet_size=cfg["workers"])
    perplexed.configure(store=store, spend_limits={"day": cfg.get("day_limit", 0.10)})
    started = time.monotonic()
    results = {"fleet": fleet, "faults": faults, "outage": outage}[cfg["mode"]](cfg, store)
    took = time.monotonic() - started
    report = {"worker": cfg["worker"], "results": results, "outages": store.outages,
              "available": store.available, "last_error": store.last_error, "took_s": took}
    store.close()
    return report


def main() -> None:
    print(json.dumps(run(json.loads(sys.argv[1]))))


if __name__ == "__main__":
    main()
