"""The Redis store is bounded everywhere (issue 23) and its outages do not flap (issue 22, point 8).

Real valkey-server for event loops, SIGSTOP, wrong passwords, OOM, REPLICAOF and the cluster's cold start;
a loopback fake Redis (:class:`FakeRedis`) for replies no real server sends (hostile or on-path ones).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

import perplexed
import perplexed.store._resilient as _resilient  # private: speeds up the outage retry clock
import pytest
import redis
from perplexed import ConfigError, Hit
from perplexed.providers import FunctionProvider
from perplexed.store import Admission, MemoryStore, RedisStore
from perplexed.store._resilient import RETRY_S, ResilientStore  # private: the outage wrapper, driven directly
from perplexed.store._resp import (  # private: the RESP reader's bounds are tested directly
    MAX_DEPTH,
    MAX_ELEMENTS,
    MAX_REPLY_BYTES,
    ProtocolError,
    Reader,
    RespClient,
    RespError,
)
from testkit import loopback as lb
from testkit.valkey_servers import ValkeyCluster, ValkeyServer

P = "provider-identity"


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def info(server: ValkeyServer, field: str) -> int:
    client = redis.Redis(host="127.0.0.1", port=server.port)
    try:
        text = client.execute_command("INFO", "clients" if field == "connected_clients" else "stats")
        return int(text[field])
    finally:
        client.close()


@pytest.fixture
def events(store_events: Any) -> Any:
    return store_events


class FakeRedis:
    """A loopback server that answers every connection with ``handler(sock)`` (in a thread of its own)."""

    def __init__(self, handler: Callable[[socket.socket], None]) -> None:
        self.handler = handler
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.closed_by_client = threading.Event()
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self.handler(conn)
        except OSError:
            self.closed_by_client.set()
        finally:
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.listener.close()


def read_command(conn: socket.socket) -> bytes:
    data = conn.recv(65536)
    if not data:
        raise ConnectionResetError("client closed")
    return data


def options(url: str) -> dict[str, Any]:
    from redis.asyncio.connection import parse_url

    return dict(parse_url(url))


# -- 1. connections released with their event loop ----------------------------------------------------------------


def test_many_event_loops_and_threads_leave_no_connections(valkey: ValkeyServer, redis_prefix: str) -> None:
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=5000)
    limit = Admission(P, "p", rate_limit=(100000, 60.0))
    asyncio.run(store.admit(limit))
    fds, clients = open_fds(), info(valkey, "connected_clients")
    for _ in range(200):  # asyncio.run(asearch(...)) in a loop: each run's connection closes with its loop
        assert asyncio.run(store.admit(limit)).verdict == "call"
    threads = [threading.Thread(target=lambda: asyncio.run(store.admit(limit))) for _ in range(50)]
    for thread in threads:
        thread.start()
        thread.join()
    loop = asyncio.new_event_loop()  # a loop closed without asyncio.run: released by the next new loop's client
    loop.run_until_complete(store.admit(limit))
    loop.close()
    asyncio.run(store.admit(limit))
    time.sleep(0.3)
    assert open_fds() <= fds + 3
    assert info(valkey, "connected_clients") <= clients + 2
    assert len(store._remote._clients) <= 1  # type: ignore[attr-defined]
    assert store.outages == 0
    store.close()


def test_asyncio_run_per_search_releases_connections_and_keeps_the_records(valkey: ValkeyServer,
                                                                         redis_prefix: str) -> None:
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=5000)
    perplexed.configure(store=store)
    provider = FunctionProvider(lambda q, options: [Hit(id=1, url="https://example.com/1")], name="fn",
                                rate_limit="100000/s")
    try:
        asyncio.run(perplexed.asearch("q-warm", [provider], cache_ttl_s=600))
        fds, clients = open_fds(), info(valkey, "connected_clients")
        for i in range(100):
            assert not asyncio.run(perplexed.asearch(f"q{i}", [provider], cache_ttl_s=600)).attempts[0].cached
        # each run's record (sent without waiting) was answered before its loop's connection closed
        for i in (0, 50, 99):
            assert asyncio.run(perplexed.asearch(f"q{i}", [provider], cache_ttl_s=600)).attempts[0].cached
        time.sleep(0.3)
        assert store.outages == 0
        assert open_fds() <= fds + 3
        assert info(valkey, "connected_clients") <= clients + 2
    finally:
        perplexed.reset()


# -- 2. a hung server costs one connection; a hostile one bounded memory and CPU ---------------------------------


def test_a_hung_server_costs_one_connection(valkey_factory: Any, redis_prefix: str) -> None:
    server: ValkeyServer = valkey_factory()
    store = RedisStore(server.url, prefix=redis_prefix, timeout_ms=100)
    limit = Admission(P, "p", rate_limit=(100000, 60.0))

    async def run() -> RespClient:
        assert (await store.admit(limit)).verdict == "call"
        client: RespClient = store._remote._client()  # type: ignore[attr-defined]
        assert store.available and client.connections == 1
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            end = time.monotonic() + 3.5
            while time.monotonic() < end:  # several probes (one a second) while it is stopped
                assert (await store.admit(limit)).verdict == "call"
                await asyncio.sleep(0.05)
            assert not store.available
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        end = time.monotonic() + 30
        while not store.available and time.monotonic() < end:
            await asyncio.sleep(0.2)
            await store.admit(limit)
        return client

    client = asyncio.run(run())
    assert store.available and store.outages == 1
    assert client.connections == 1  # the same connection throughout: replies to the abandoned calls dropped
    store.close()


def flood_bulk(conn: socket.socket) -> None:
    read_command(conn)
    conn.sendall(b"$2000000000\r\n")
    chunk = b"x" * 65536
    for _ in range(2000):  # 128 MiB if nobody stops it
        conn.sendall(chunk)


def endless_array(conn: socket.socket) -> None:
    read_command(conn)
    conn.sendall(b"*5000000\r\n")
    for _ in range(100000):
        conn.sendall(b":1\r\n" * 100)
        time.sleep(0.001)


def dripped_array(conn: socket.socket) -> None:
    read_command(conn)
    conn.sendall(b"*250000\r\n")  # under the element cap: read to its end, in 2 500 small pieces
    for _ in range(2500):
        conn.sendall(b":1\r\n" * 100)
        time.sleep(0.001)


def deep_array(conn: socket.socket) -> None:
    read_command(conn)
    conn.sendall(b"*1\r\n" * 200000 + b":1\r\n")
    time.sleep(2)


def endless_line(conn: socket.socket) -> None:
    read_command(conn)
    for _ in range(2000):
        conn.sendall(b"+" + b"a" * 65536)


@pytest.mark.parametrize("handler", [flood_bulk, endless_array, deep_array, endless_line])
async def test_a_hostile_server_costs_bounded_memory_and_one_failed_call(handler: Callable[..., None]) -> None:
    fake = FakeRedis(handler)
    try:
        client = RespClient(options(fake.url), 5.0)
        with pytest.raises(ProtocolError):
            async with asyncio.timeout(30):
                await client.execute_command("PING")
        if handler is not deep_array:  # (the deep array is refused once read: the server hangs up first)
            assert await asyncio.to_thread(fake.closed_by_client.wait, 10)  # we hung up
        await client.aclose()
    finally:
        fake.close()


@pytest.mark.timing
async def test_a_dripping_server_costs_a_search_no_more_than_its_deadline(redis_prefix: str) -> None:
    # the case: a large array dripped in small chunks once stalled the event loop for seconds (each
    # chunk re-parsed from the start) and a deadline_ms=2000 search took 4 s. A 1 s store timeout: the reply
    # drips in for that long (and on, after the call gave up: the connection keeps reading it until a cap)
    fake = FakeRedis(dripped_array)
    store = RedisStore(fake.url, prefix=redis_prefix, timeout_ms=1000)
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    perplexed.configure(store=store)
    provider = FunctionProvider(lambda q, options: [Hit(id=1, url="https://example.com/1")], name="fn",
                                rate_limit="100/s")
    try:
        for i in range(3):
            started = time.monotonic()
            result = await perplexed.asearch(f"drip {i}", [provider], deadline_ms=2000)
            assert result.provider == "fn"
            assert time.monotonic() - started < 1.0 + lb.SLACK  # the store timeout, once
            await asyncio.sleep(RETRY_S / 2)  # the dripped reply keeps coming on the connection meanwhile
        assert max(gaps) < 0.25, max(gaps)  # the loop kept running: no re-parse from the start (it stalled 0.46 s)
        assert store.outages == 1
    finally:
        tick.cancel()
        perplexed.reset()
        fake.close()


def test_the_reader_refuses_what_is_out_of_bounds_before_reading_it() -> None:
    reader = Reader()
    reader.feed(b"$%d\r\n" % (MAX_REPLY_BYTES + 1))
    with pytest.raises(ProtocolError, match="larger"):
        reader.replies()
    reader = Reader()
    reader.feed(b"*%d\r\n" % (MAX_ELEMENTS + 1))
    with pytest.raises(ProtocolError, match="elements"):
        reader.replies()
    reader = Reader()
    reader.feed(b"*1\r\n" * (MAX_DEPTH + 1))
    with pytest.raises(ProtocolError, match="deeper"):
        reader.replies()
    for bad in (b":12x\r\n", b"$abc\r\n", b"*\r\n", b"$3\r\nabcd\r\n"):
        reader = Reader()
        reader.feed(bad)
        with pytest.raises(ProtocolError):
            reader.replies()


def test_a_dripped_reply_is_parsed_once() -> None:
    # 200 000 elements fed a few bytes at a time: each byte is looked at once (no re-parse from the start)
    data = b"*200000\r\n" + b":1\r\n" * 200000
    reader = Reader()
    seen: list[Any] = []
    calls = 0
    for i in range(0, len(data), 7):
        reader.feed(data[i:i + 7])
        seen += reader.replies()
        calls += 1
        assert len(reader._buf) < 16  # the parsed part is dropped as it goes  # type: ignore[attr-defined]
    assert seen == [[1] * 200000] and calls > 100000


async def test_a_lone_surrogate_label_is_no_store_failure(valkey: ValkeyServer, redis_prefix: str) -> None:
    store = RedisStore(valkey.url, prefix=redis_prefix, timeout_ms=5000)
    label = "tenant-\ud800"
    decision = await store.admit(Admission(P, label, price=0.01, spend_limits=((86400.0, 5.0),)))
    assert decision.verdict == "call"
    spend = await store.spend(86400)
    assert spend == {"tenant-?": 0.01}
    assert store.outages == 0
    await store.clear()
    await store.aclose()


# -- 3. connecting: timeout, no socket left behind, URL options ------------------------------------------------------


def silent(conn: socket.socket) -> None:
    while read_command(conn):
        pass


async def test_connect_timeout_and_no_socket_left_when_auth_hangs() -> None:
    fake = FakeRedis(silent)  # accepts, reads AUTH, never answers
    try:
        client = RespClient(options(f"redis://:pw@127.0.0.1:{fake.port}/0"), 5.0, connect_timeout_s=0.3)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(20):
                await client.execute_command("PING")
        assert await asyncio.to_thread(fake.closed_by_client.wait, 10)  # the half-open connection was closed
        await client.aclose()
    finally:
        fake.close()


async def test_a_wrong_password_leaves_no_socket(valkey_factory: Any) -> None:
    server: ValkeyServer = valkey_factory(extra=("--requirepass", "right-pw"))
    client = RespClient(options(f"redis://:wrong-pw@127.0.0.1:{server.port}/0"), 5.0)
    fds = open_fds()
    for _ in range(30):
        with pytest.raises(RespError, match=r"WRONGPASS|invalid"):
            await client.execute_command("PING")
    await asyncio.sleep(0.2)
    assert open_fds() <= fds + 1
    plain = redis.Redis(host="127.0.0.1", port=server.port, password="right-pw")
    try:
        assert int(plain.info("clients")["connected_clients"]) <= 2
    finally:
        plain.close()


async def test_a_refused_select_leaves_no_socket(valkey: ValkeyServer) -> None:
    client = RespClient(options(f"redis://127.0.0.1:{valkey.port}/999"), 5.0)  # 16 databases: SELECT 999 fails
    await asyncio.sleep(0)
    fds = open_fds()
    for _ in range(30):
        with pytest.raises(RespError, match="DB index"):
            await client.execute_command("PING")
    await asyncio.sleep(0.2)
    assert open_fds() <= fds + 1
    await client.aclose()


@pytest.mark.parametrize(("url", "named"), [
    ("redis://127.0.0.1:6379/0?foo=1", "foo"),
    ("redis://127.0.0.1:6379/0?socket_timeout=1", "socket_timeout"),
    ("redis://127.0.0.1:6379/0?ssl_ca_certs=/x.pem", "ssl_ca_certs"),
    ("redis://127.0.0.1:6379/0?retry_on_timeout=true", "retry_on_timeout"),
    ("redis://127.0.0.1:6379/0?max_connections=5", "max_connections"),
    ("redis://127.0.0.1:6379/0?protocol=3", "protocol"),
    ("redis://127.0.0.1:6379/0?cluster=true&ssl_ca_path=/x", "ssl_ca_path"),
    ("redis://127.0.0.1:6379/0?cluster=true&ssl_password=x", "ssl_password"),
    ("rediss://127.0.0.1:6379/0?ssl_min_version=TLSv9", "ssl_min_version"),
    ("rediss://127.0.0.1:6379/0?ssl_ciphers=NO-SUCH-CIPHER", "TLS"),
    ("rediss://127.0.0.1:6379/0?ssl_cert_reqs=maybe", "ssl_cert_reqs"),
    ("redis://127.0.0.1:6379/0?socket_connect_timeout=-1", "socket_connect_timeout"),
    ("redis://127.0.0.1:6379/0?socket_keepalive=false", "socket_keepalive"),
    ("redis+sentinel://127.0.0.1:26379/mymaster", "sentinel"),  # no Sentinel support: refused, not misread
])
def test_every_url_option_is_honoured_or_refused_by_name(url: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        RedisStore(url)


def test_tls_url_options_are_honoured() -> None:
    from perplexed.store._resp import ssl_context  # private: the TLS context built from the URL

    store = RedisStore("rediss://127.0.0.1:6379/0?ssl_min_version=TLSv1_3&ssl_ciphers=ECDHE%2BAESGCM"
                       "&ssl_cert_reqs=none&socket_connect_timeout=7")
    opts = store._remote._options  # type: ignore[attr-defined]
    context = ssl_context(opts)
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3
    assert context.verify_mode == ssl.CERT_NONE
    names = [c["name"] for c in context.get_ciphers()]
    assert names and all("GCM" in name for name in names if not name.startswith("TLS_"))
    assert store._remote._connect_timeout_s == 7.0  # type: ignore[attr-defined]


async def test_tls_with_min_version_through_the_proxy(valkey_tls: Any, redis_prefix: str) -> None:
    store = RedisStore(valkey_tls.url + "&ssl_min_version=TLSv1_2", prefix=redis_prefix, timeout_ms=5000)
    assert (await store.admit(Admission(P, "p", rate_limit=(10, 1.0)))).verdict == "call"
    assert store.outages == 0
    await store.clear()
    await store.aclose()


# -- 22.8: READONLY / LOADING / MASTERDOWN close the connection; outages end only on a write --------------------------


@pytest.mark.parametrize("reply", [
    b"-READONLY You can't write against a read only replica.\r\n",
    b"-LOADING Valkey is loading the dataset in memory\r\n",
    b"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n",
])
async def test_failover_replies_close_the_connection(reply: bytes) -> None:
    def handler(conn: socket.socket) -> None:
        while True:
            read_command(conn)
            conn.sendall(reply)

    fake = FakeRedis(handler)
    try:
        client = RespClient(options(fake.url), 5.0)
        for _ in range(3):
            with pytest.raises(RespError, match=reply[1:8].decode()):
                await client.execute_command("SET", "k", "v")
        assert client.connections == 3 and fake.accepted == 3  # each reply: a new connection (DNS looked up again)
        await client.aclose()
    finally:
        fake.close()


def _search(query: str, provider: FunctionProvider) -> Any:
    return perplexed.asearch(query, [provider], cache_ttl_s=60)


async def _three_searches(store: RedisStore) -> None:
    perplexed.configure(store=store)
    provider = FunctionProvider(lambda q, options: [Hit(id=1, url=f"https://example.com/{q}")], name="fn",
                                rate_limit="1000/s")
    for i in range(3):
        result = await _search(f"outage query {i}", provider)
        assert result.hits
        await asyncio.sleep(RETRY_S + 0.1)  # a probe is due at each search


async def test_a_server_refusing_writes_is_one_outage(valkey_factory: Any, redis_prefix: str, events: Any) -> None:
    server: ValkeyServer = valkey_factory()
    admin = redis.Redis(host="127.0.0.1", port=server.port)
    store = RedisStore(server.url, prefix=redis_prefix, timeout_ms=2000)
    try:
        assert (await store.admit(Admission(P, "p", rate_limit=(100, 1.0)))).verdict == "call"
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", "1")  # every write: -OOM; reads still answer
        await _three_searches(store)
        assert await store.spend(3600) == {}  # a read: answered, does not end it
        assert len(events) == 1 and "OOM" in events[0][2]["error"]
        assert store.outages == 1 and not store.available
        admin.config_set("maxmemory", "0")
        await asyncio.sleep(RETRY_S + 0.1)
        assert (await store.admit(Admission(P, "p", rate_limit=(100, 1.0)))).verdict == "call"
        assert store.available and len(events) == 1
    finally:
        perplexed.reset()
        admin.config_set("maxmemory", "0")
        admin.close()
        await store.aclose()


async def test_a_demoted_primary_is_one_outage_and_its_connection_is_dropped(
        valkey_factory: Any, redis_prefix: str, events: Any) -> None:
    primary: ValkeyServer = valkey_factory()
    other: ValkeyServer = valkey_factory()
    admin = redis.Redis(host="127.0.0.1", port=primary.port)
    store = RedisStore(primary.url, prefix=redis_prefix, timeout_ms=2000)
    try:
        assert (await store.admit(Admission(P, "p", rate_limit=(100, 1.0)))).verdict == "call"
        client: RespClient = store._remote._client()  # type: ignore[attr-defined]
        admin.execute_command("REPLICAOF", "127.0.0.1", str(other.port))  # a failover demotes it: READONLY
        await _three_searches(store)
        assert len(events) == 1 and store.outages == 1 and not store.available
        assert any(word in events[0][2]["error"] for word in ("READONLY", "LOADING", "MASTERDOWN"))
        assert client.connections >= 2  # the READONLY reply closed the connection; the next one connected anew
        admin.execute_command("REPLICAOF", "NO", "ONE")
        await asyncio.sleep(RETRY_S + 0.1)
        assert (await store.admit(Admission(P, "p", rate_limit=(100, 1.0)))).verdict == "call"
        assert store.available and len(events) == 1
    finally:
        perplexed.reset()
        admin.execute_command("REPLICAOF", "NO", "ONE")
        admin.close()
        await store.aclose()


# -- 6. fleet edges ---------------------------------------------------------------------------------------------------


class _Switchable(MemoryStore):
    broken = False

    async def admit(self, request: Admission) -> Any:
        if self.broken:
            raise ConnectionError("down")
        return self.admit_now(request)

    async def probe(self) -> None:
        if self.broken:
            raise ConnectionError("down")


@pytest.mark.parametrize("used_before", [True, False])
async def test_an_outage_releases_no_burst_across_a_fleet(used_before: bool) -> None:
    # 8 processes (8 ResilientStores around one shared store) under "5/s", fleet_size=8, each asking ~33 times a
    # second; the shared store dies at t=10 s. Before: each process started its degraded window empty (40 calls
    # in the first second). Now each starts from its own admissions, topped up to its share (used_before), or
    # from a cautious share when the provider is first asked for during the outage (the store was reachable).
    now = [1000.0]

    def clock() -> float:
        return now[0]

    remote = _Switchable(clock=clock)
    fleet = [ResilientStore(remote, kind="test", timeout_s=1.0, fleet_size=8, clock=clock) for _ in range(8)]
    request = Admission(P, "p", rate_limit=(5, 1.0))
    other = Admission("other-provider", "o")  # keeps the store in use when P is not asked for yet
    calls: list[float] = []
    for step in range(2000):
        now[0] = 1000.0 + step * 0.01
        remote.broken = step >= 1000
        for i, store in enumerate(fleet):
            if (step + i) % 3:
                continue
            if not used_before and step < 1000:
                await store.admit(other)
            elif (await store.admit(request)).verdict == "call":
                calls.append(now[0])

    def in_window(start: float) -> int:
        return sum(1 for t in calls if start <= t < start + 1.0)

    if used_before:
        assert max(in_window(1000.0 + s * 0.01) for s in range(100, 1000)) == 5  # shared: the limit exactly
    # the first second of the outage: no burst (phases are random, so at most one call per process: 8, not 40;
    # fleet-wide the pace is the limit's)
    assert in_window(1010.0) <= 8
    assert max(in_window(1010.0 + s * 0.01) for s in range(0, 900)) <= 10  # later: the share's pace
    assert len([t for t in calls if t >= 1010.0]) <= 5 * 10 + 8  # ~ the limit over the 10 s (not 8x it)
    assert all(store.outages == 1 for store in fleet)


class _FleetRemote(_Switchable):
    """The shared store with the fleet's slot leases (as RedisStore's CLAIM_SLOT) and window replays."""

    def __init__(self, clock: Any) -> None:
        super().__init__(clock=clock)
        self.slots: dict[int, str] = {}
        self.replayed: list[float] = []

    async def claim_slot(self, token: str, fleet_size: int, lease_ms: int) -> int | None:
        if self.broken:
            raise ConnectionError("down")
        for i in range(fleet_size):
            if self.slots.get(i) == token:
                return i
        for i in range(fleet_size):
            if i not in self.slots:
                self.slots[i] = token
                return i
        return None

    async def replay_window(self, provider: str, window_s: float, stamps: list[float]) -> None:
        if self.broken:
            raise ConnectionError("down")
        self.replayed += stamps
        self.seed_window(provider, stamps)

    async def admit(self, request: Admission) -> Any:
        await asyncio.sleep(0)  # a round trip: concurrent searches interleave here
        return await super().admit(request)


@pytest.mark.parametrize("members", [8, 9])
async def test_a_fleet_with_slots_never_passes_the_limit_through_an_outage(
    monkeypatch: pytest.MonkeyPatch, members: int
) -> None:
    # 8 processes under "5/s", fleet_size=8, each asking ~33 times a second; the shared store is down from t=10 s
    # to t=20 s. Each member leased a slot while the store was up: without the store they take turns (no rolling
    # second above the limit, none at all in the outage's first second, whose shared window may be full), and
    # back on the store they take turns for one more second while the calls made in-process go back into the
    # shared window. A ninth process finds no free slot: its degraded window is its share, as before.
    monkeypatch.setattr(_resilient, "RETRY_S", 0.0)  # the virtual clock runs faster than the probes' real one
    now = [1000.0]

    def clock() -> float:
        return now[0]

    remote = _FleetRemote(clock=clock)
    fleet = [ResilientStore(remote, kind="test", timeout_s=1.0, fleet_size=8, clock=clock) for _ in range(members)]
    request = Admission(P, "p", rate_limit=(5, 1.0))
    calls: list[tuple[float, int]] = []
    for step in range(3000):
        now[0] = 1000.0 + step * 0.01
        remote.broken = 1000 <= step < 2000
        for i, store in enumerate(fleet):
            if (step + i) % 3 == 0 and (await store.admit(request)).verdict == "call":
                calls.append((now[0], i))
    holders = {i for i, store in enumerate(fleet) if store._slot is not None}  # type: ignore[attr-defined]
    slotted = [t for t, i in calls if i in holders]

    def worst(times: list[float], start: float, end: float) -> int:
        inside = [t for t in times if start <= t < end]
        return max((sum(1 for u in inside if t <= u < t + 1.0) for t in inside), default=0)

    assert sorted(remote.slots) == list(range(8)) and len(holders) == 8  # eight slots: the ninth holds none
    assert worst(slotted, 1000.0, 1030.0) <= 5  # the whole run: before, during, after the outage
    if members == 8:
        assert worst([t for t, _ in calls], 1000.0, 1030.0) <= 5
    assert not [t for t in slotted if 1010.0 <= t < 1011.0]  # the outage's first second: nothing
    during = [t for t in slotted if 1011.0 <= t < 1020.0]
    assert 4 * 9 - 2 <= len(during) <= 5 * 9  # the pace: limit - 0.75 per second (4.25 here)
    assert len(remote.replayed) >= 4  # the last second's in-process calls went back into the shared window
    assert len([t for t in slotted if t >= 1021.0]) >= 5 * 8  # back on the shared window: the limit again
    assert all(store.outages == 1 and store.available for store in fleet)


async def test_concurrent_searches_of_one_member_take_one_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    # ten searches of one process at once, when its turn is open: one call, during the outage and in the window
    # after it (where each waits on the store between taking its turn and being admitted)
    monkeypatch.setattr(_resilient, "RETRY_S", 0.0)
    now = [1000.0]
    remote = _FleetRemote(clock=lambda: now[0])
    store = ResilientStore(remote, kind="test", timeout_s=1.0, fleet_size=2, clock=lambda: now[0])
    request = Admission(P, "p", rate_limit=(5, 1.0))
    assert (await store.admit(request)).verdict == "call" and store._slot == 0  # type: ignore[attr-defined]
    length = 1.0 / 4.25
    remote.broken = True
    assert (await store.admit(request)).verdict == "rate_limited"  # the outage begins (at 1000.0)
    now[0] = (int(1002.0 / length / 2) * 2) * length + 1e-6  # the start of one of slot 0's turns
    during = await asyncio.gather(*(store.admit(request) for _ in range(10)))
    assert [d.verdict for d in during].count("call") == 1
    remote.broken = False
    now[0] += 2 * length  # its next turn, back on the store: a window of turns
    after = await asyncio.gather(*(store.admit(request) for _ in range(10)))
    assert store.available
    assert [d.verdict for d in after].count("call") == 1
    assert len(remote.replayed) == 1  # the outage's call went back into the shared window


async def test_fleet_slots_are_leased_one_per_member(valkey: ValkeyServer, redis_prefix: str) -> None:
    # the slot lease (RedisStore.claim_slot) on a real server: distinct slots, kept by their holder, none left
    # for a member beyond fleet_size, free again once the lease runs out
    stores = [RedisStore(valkey.url, prefix=redis_prefix, fleet_size=3) for _ in range(4)]
    try:
        backends = [store._remote for store in stores]  # type: ignore[attr-defined]
        held = [await b.claim_slot(f"token-{i}", 3, 60_000) for i, b in enumerate(backends)]
        assert held[:3] == [0, 1, 2] and held[3] is None
        assert await backends[1].claim_slot("token-1", 3, 60_000) == 1  # renewed, not a second one
        assert await backends[3].claim_slot("token-3", 3, 60_000) is None
        assert await backends[2].claim_slot("token-2", 3, 50) == 2  # a short lease
        await asyncio.sleep(0.2)
        assert await backends[3].claim_slot("token-3", 3, 60_000) == 2  # it ran out: the slot is free again
        # a rate-limited admission claims this process's slot (fleet_size > 1), with the store's lease
        assert (await stores[0].admit(Admission(P, "p", rate_limit=(5, 1.0)))).verdict == "call"
        assert stores[0]._slot is None  # type: ignore[attr-defined]  # slots 0-2 are the tokens' above
        fresh = RedisStore(valkey.url, prefix=redis_prefix + "other:", fleet_size=3)
        assert (await fresh.admit(Admission(P, "p", rate_limit=(5, 1.0)))).verdict == "call"
        assert fresh._slot == 0  # type: ignore[attr-defined]
        await fresh.aclose()
    finally:
        for store in stores:
            await store.aclose()


class _HangsOnce(MemoryStore):
    hang = False

    async def admit(self, request: Admission) -> Any:
        if self.hang:
            self.hang = False
            await asyncio.sleep(1.0)  # one call that misses the 50 ms store timeout
        return self.admit_now(request)


async def test_one_spurious_timeout_releases_no_burst() -> None:
    # one process using "5/s" (fleet_size=8) to the full; one store call times out. Before: its degraded window
    # started empty and it made 5 calls at once. Now the window holds its own last admissions: no call until
    # its share frees a slot (one per 1.6 s)
    now = [1000.0]
    remote = _HangsOnce(clock=lambda: now[0])
    store = ResilientStore(remote, kind="test", timeout_s=0.05, fleet_size=8, clock=lambda: now[0])
    request = Admission(P, "p", rate_limit=(5, 1.0))
    granted = 0
    for step in range(300):  # 3 s at the limit through the remote
        now[0] = 1000.0 + step * 0.01
        granted += (await store.admit(request)).verdict == "call"
    assert granted == 15 and store.available
    remote.hang = True
    assert (await store.admit(request)).verdict == "rate_limited"  # the call that timed out
    assert store.outages == 1
    local_calls = 0
    for step in range(1, 101):  # the next (virtual) second, in-process until the next probe
        now[0] = 1003.0 + step * 0.01
        decision = await store.admit(request)
        if not store.available:
            local_calls += decision.verdict == "call"
    assert local_calls <= 1


async def test_a_cold_cluster_client_does_not_open_an_outage(valkey_cluster: ValkeyCluster, redis_prefix: str) -> None:
    # a 1 ms store timeout: only the cold client's connect timeout lets the first admission through
    store = RedisStore(valkey_cluster.url + "&socket_connect_timeout=30", prefix=redis_prefix, timeout_ms=1)
    decision = await store.admit(Admission(P, "p", rate_limit=(10, 1.0), price=0.01, spend_limits=((86400.0, 5.0),)))
    assert decision.verdict == "call"
    assert store.outages == 0 and store.available
    await store.aclose()


# -- 5. the memory store's byte cap ------------------------------------------------------------------------------------


async def test_the_memory_store_caps_its_cache_in_bytes() -> None:
    from perplexed.store import CachedAnswer, Record
    from perplexed.store.memory import DEFAULT_MAX_CACHE_BYTES  # private: no public reader of the cap

    assert DEFAULT_MAX_CACHE_BYTES == 64 * 1024 * 1024
    store = MemoryStore()
    big = [Hit(id=1, url="https://example.com/a", snippet="x" * 1_000_000)]
    for i in range(200):
        await store.record(Record(P, "p", cache_key=f"k{i}", answer=CachedAnswer(big), ttl_s=600))
    assert store._cache_bytes <= DEFAULT_MAX_CACHE_BYTES  # type: ignore[attr-defined]
    assert 40 <= len(store._cache) <= 70  # type: ignore[attr-defined]
    assert (await store.admit(Admission(P, "p", cache_key="k199"))).verdict == "cached"  # newest kept
    assert (await store.admit(Admission(P, "p", cache_key="k0"))).verdict == "call"  # oldest gone
    small = MemoryStore(max_cache_bytes=1024 * 1024)  # an answer over an eighth of the cap is not cached
    await small.record(Record(P, "p", cache_key="k", answer=CachedAnswer(big), ttl_s=600))
    assert (await small.admit(Admission(P, "p", cache_key="k"))).verdict == "call"


@pytest.mark.parametrize(
    "where",
    [
        {"snippet": "x" * 1_000_000},
        {"content": "x" * 1_000_000},
        {"raw": {"deep": [{"text": "x" * 1_000_000}]}},
        {"sources": [{"title": "x" * 1_000_000}]},
        {"raw": {"k" * 1_000_000: 1}},
    ],
    ids=["snippet", "content", "nested raw", "sources", "raw key"],
)
def test_the_size_estimate_counts_text_wherever_a_hit_holds_it(where: dict[str, Any]) -> None:
    from perplexed.store._base import snapshot_hits  # private: the cache size estimate, tested directly
    from perplexed.store.memory import _answer_bytes  # private: the cache size estimate, tested directly

    plain = _answer_bytes(snapshot_hits([Hit(id=1, url="https://example.com/a")]), None)
    heavy = _answer_bytes(snapshot_hits([Hit(id=1, url="https://example.com/a", **where)]), None)
    assert 1_000_000 <= heavy - plain <= 1_001_000
    assert _answer_bytes(snapshot_hits([]), "d" * 5000) - _answer_bytes(snapshot_hits([]), None) == 5000
