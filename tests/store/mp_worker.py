"""A worker process for tests/store/test_multiprocess.py (run by path, not collected by pytest).

    python mp_worker.py MODE URL SECONDS

It prints "ready" once imported, then reads START_AT (epoch seconds) from stdin, so that every worker starts
its load together however long the imports took on a busy machine.

Every process shares the store named by PERPLEXED_STORE (a SQLite file). Modes:
  load   search `URL` (a SearXNG-shaped loopback provider, rate_limit "5/s") with 3 concurrent tasks until
         START_AT + SECONDS
  trip   two searches of `URL` (it answers 500) with cooldown_after=2: trips the cool-down
  probe  one search of the chain [URL (cooldown_after=2), a function]; prints the first attempt's outcome/reason
  spend  search `URL` (cost 0.01 a call; spend limit 0.10/hour) with 3 concurrent tasks until START_AT + SECONDS
Prints one JSON line: {"outcomes": {...}} (or the probe's attempt).
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
import time

import perplexed
from perplexed.providers import FunctionProvider, SearXNG


async def loop_searches(provider: object, until: float, **options: object) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()

    async def worker(n: int) -> None:
        i = 0
        while time.time() < until:
            i += 1
            try:
                result = await perplexed.asearch(f"q{n}-{i}", [provider], **options)
                counts[result.attempts[-1].outcome.value] += 1
            except perplexed.UpstreamError as exc:
                last = exc.attempts[-1]
                counts[f"{last.outcome.value}:{last.reason}"] += 1
                await asyncio.sleep(0.01)

    await asyncio.gather(*(worker(n) for n in range(3)))
    return dict(counts)


async def warm_up(url: str) -> None:
    """Open the pooled connections first (to /warm, which the test does not count), so that the first
    searches' arrival times are not shifted by connection set-up on a busy machine. The pool belongs to the
    running event loop: call this in the loop that then searches."""
    from perplexed.net._http import get_client  # private: warms the shared HTTP connection pool

    client = get_client(None)
    await asyncio.gather(*(client.get(f"{url}/warm") for _ in range(3)))


async def session(mode: str, url: str, seconds: float) -> object:
    """The load and spend modes: warm up, say "ready", wait for START_AT, search until START_AT + SECONDS,
    all in one event loop (the connection pool and the store's connections are this loop's)."""
    await warm_up(url)
    await perplexed.aspend("hour")  # opens the store (its connection and schema) before the clock starts
    start_at = await start_signal()
    until = start_at + seconds
    if mode == "load":
        provider = SearXNG(base_url=url, rate_limit="5/s", rate_limit_wait_ms=1000)
        return {"outcomes": await loop_searches(provider, until)}
    perplexed.configure(spend_limits={"hour": 0.10})
    provider = SearXNG(base_url=url, cost=0.01)
    return {"outcomes": await loop_searches(provider, until), "spend": await perplexed.aspend("hour")}


async def start_signal() -> float:
    print("ready", flush=True)
    start_at = float(await asyncio.to_thread(sys.stdin.readline))
    await asyncio.sleep(max(0.0, start_at - time.time()))
    return start_at


def main() -> None:
    mode, url, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    if mode in ("load", "spend"):
        out: object = asyncio.run(session(mode, url, seconds))
        print(json.dumps(out), flush=True)
        return
    print("ready", flush=True)
    start_at = float(sys.stdin.readline())
    time.sleep(max(0.0, start_at - time.time()))
    if mode == "trip":
        provider = SearXNG(base_url=url, cooldown_after=2, cooldown_s=120)
        outcomes = []
        for _ in range(2):
            try:
                perplexed.search("q", [provider, FunctionProvider(lambda q, o: [], name="empty")])
            except perplexed.UpstreamError:
                pass
            outcomes.append("done")
        out = {"outcomes": outcomes}
    elif mode == "probe":
        provider = SearXNG(base_url=url, cooldown_after=2, cooldown_s=120)
        fallback = FunctionProvider(lambda q, o: [{"url": "https://example.org/x"}], name="fallback")
        result = perplexed.search("q", [provider, fallback])
        first = result.attempts[0]
        out = {"outcome": first.outcome.value, "reason": first.reason, "provider": result.provider}
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
