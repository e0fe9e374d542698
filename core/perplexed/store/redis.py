"""A Redis / Valkey state store for fleets: every worker on every host shares the cache, the cool-downs, the
rolling rate-limit windows and the spend of the provider accounts.

    from perplexed.store import RedisStore
    perplexed.configure(store=RedisStore("redis://cache.internal:6379/0", fleet_size=8))
    # or: perplexed.configure(store="redis://cache.internal:6379/0?fleet_size=8"), or PERPLEXED_STORE

URLs: ``redis://[user:password@]host:port/db``, ``rediss://`` (TLS; redis-py's ``ssl_*`` query options
pass through, e.g. ``?ssl_ca_certs=/path/ca.pem``), ``unix:///path/to/socket?db=0``. perplexed's own query
options: ``prefix`` (default ``perplexed:``), ``cluster`` (``true`` = Redis Cluster / Valkey cluster),
``timeout_ms`` (default 50) and ``fleet_size`` (default 1); the constructor's arguments win over the URL.

Every state change is one Lua script run with EVALSHA (re-sent with EVAL after a ``NOSCRIPT``), atomic on the
server (see :mod:`perplexed.store._redis_lua`): an admission is one round trip (two in cluster mode when a
spend limit must be checked, since the spend keys have their own hash tag). Provider identities are hashed
again before they become key names; cached answers are scrubbed of registered secrets and capped at 1 MiB
each (larger answers are not cached).

The store works from any event loop and from the sync API: it keeps one client per event loop. On a
standalone server that client is the store's own pipelined RESP client (:mod:`perplexed.store._resp`: one
connection per loop, a fraction of redis-py's CPU per command); in cluster mode it is redis-py's cluster
client. redis-py (the ``redis`` extra) is required either way (URL parsing, cluster). It is never a new way to fail: see :class:`~perplexed.store._resilient.ResilientStore` for the
degraded mode (store timeout, in-process state: the fleet takes turns at rate limits on the ``fleet_size`` slots
its members lease, spend failing closed).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlsplit, urlunsplit

from perplexed._errors import ConfigError, install_hint, mask_url, register_secret
from perplexed.policy._policy import LATENCY_SAMPLES, MEMBER_DECAY, MemberStats, p95
from perplexed.store._base import (
    CALL,
    Admission,
    CachedAnswer,
    Decision,
    ProviderState,
    Record,
    Store,
    decode_answer,
    encode_answer,
)
from perplexed.store._ledger_redis import RedisLedger
from perplexed.store._redis_lua import (
    ADMIT,
    CLAIM_SLOT,
    MEMBER_RECORD,
    POLL_FILL,
    RECORD,
    REPLAY_WINDOW,
    SCRIPTS,
    SPEND_REPORT,
    SPEND_RESERVE,
    STATE,
    UNDO,
    Script,
)
from perplexed.store._resilient import ResilientStore
from perplexed.store._resp import LATE_REPLY, NoScript, RespClient

__all__ = ["DEFAULT_CONNECT_TIMEOUT_S", "DEFAULT_PREFIX", "DEFAULT_TIMEOUT_MS", "MAX_CACHE_BYTES", "RedisStore"]

DEFAULT_PREFIX: Final = "perplexed:"
DEFAULT_TIMEOUT_MS: Final = 50
DEFAULT_CONNECT_TIMEOUT_S: Final = 1.0
"""Connecting (TCP/TLS, AUTH, SELECT; a cluster client's slot map) may take this long (or the store timeout
if longer; the URL's ``socket_connect_timeout`` sets it): a caller waits for it at most once, on a cold
client; later calls wait at most the store timeout."""
CLUSTER_MAX_CONNECTIONS: Final = 64
"""The cluster client's connection pool, per node."""
MAX_CACHE_BYTES: Final = 1024 * 1024
"""A cached answer larger than this (serialized) is not cached."""

_SCHEMES = ("redis", "rediss", "unix")
from perplexed.store._redis_options import (  # noqa: E402 - the URL's options, checked in a module of their own
    _OWN_QUERY,
    _as_bool,
    _as_fleet_size,
    _as_timeout_ms,
    _client_options,
)

_P95_FRESH_S = 1.0
_MEMBER_SEP = "|"  # a ticket "<spend ticket>|<window member>": record() moves that slot to the call's end
_FILL_POLL_MIN_S = 0.005
_FILL_POLL_MAX_S = 0.05


def _nano(usd: float) -> str:
    return str(round(usd * 1e9))


def _f(value: float) -> str:
    return repr(float(value))


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


class _RedisBackend(RedisLedger, Store):
    """The Redis store without its safety net: every method raises what redis-py raises."""

    shared = True

    def __init__(self, url: str, options: dict[str, Any], *, prefix: str, cluster: bool, timeout_s: float,
                 clock: Callable[[], float], connect_timeout_s: float | None = None) -> None:
        import redis.asyncio  # noqa: F401 - fail here, not on first use
        from redis.exceptions import NoScriptError

        self._url = url
        self._options = options
        self.prefix = prefix
        self.cluster = cluster
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s or max(timeout_s, DEFAULT_CONNECT_TIMEOUT_S)
        self.clock = clock
        self._no_script = NoScriptError
        # one client per live event loop (a loop's client holds the loop: entries leave when it closes)
        self._clients: dict[asyncio.AbstractEventLoop, _PerLoop] = {}
        self._clients_lock = threading.Lock()
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop] | None, _PerLoop | None] = (None, None)
        self._tags: dict[str, str] = {}
        self._spend_keys = tuple(f"{prefix}{{spend}}:{part}" for part in "eabskn")
        self._spend_dummy = tuple(f"{prefix}{{spend}}:x{i}" for i in range(5))
        self._members = itertools.count()
        self._member_prefix = os.urandom(6).hex()
        self._p95: dict[str, tuple[float, float | None]] = {}
        self._record_loaded = not cluster  # standalone: every new connection loads the scripts first
        self._slots: dict[str, int] = {}  # the fleet slot this process's member held last (claim_slot)
        self._releases: set[asyncio.Task[None]] = set()  # admissions given back (their callers stopped waiting)

    # -- connections: one client per event loop, closed with it -------------------------------------------------

    def _entry(self) -> _PerLoop:
        loop = asyncio.get_running_loop()
        ref, entry = self._last
        if ref is not None and entry is not None and ref() is loop:
            return entry
        with self._clients_lock:
            entry = self._clients.get(loop)
            if entry is None:
                self._sweep()
                entry = self._clients[loop] = _PerLoop(self._new_client())
                entry.guard_loop(self._forget, self._timeout_s)
            self._last = (weakref.ref(loop), entry)
        return entry

    def _client(self) -> Any:
        return self._entry().client

    def _sweep(self) -> None:
        """Release the clients of event loops that were closed without shutting down their async generators
        (``asyncio.run`` does shut them down: see :class:`_PerLoop`). Called with the lock held."""
        for loop in [loop for loop in self._clients if loop.is_closed()]:
            self._clients.pop(loop).close_dead()

    def _forget(self, entry: _PerLoop) -> None:
        with self._clients_lock:
            for loop, other in list(self._clients.items()):
                if other is entry:
                    del self._clients[loop]
            if self._last[1] is entry:
                self._last = (None, None)

    def cold(self) -> bool:
        """Whether this event loop's cluster client has never had an answer (connecting to the nodes, reading
        the slot map): its first call may take the connect timeout, not the store timeout. A standalone
        client's connection is one round trip (and AUTH/SELECT pipelined): never cold."""
        if not self.cluster:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        entry = self._clients.get(loop)
        return entry is None or not entry.answered

    def _new_client(self) -> Any:
        if self.cluster:
            from redis.asyncio.cluster import RedisCluster

            kwargs: dict[str, Any] = {
                "socket_timeout": max(self._timeout_s, self._connect_timeout_s),
                "socket_connect_timeout": self._connect_timeout_s,
                "socket_keepalive": True,
                "max_connections": CLUSTER_MAX_CONNECTIONS,
                **self._options,
            }
            return RedisCluster.from_url(self._url, **kwargs)
        return RespClient(self._options, self._timeout_s, preload=tuple(script.source for script in SCRIPTS),
                          connect_timeout_s=self._connect_timeout_s)

    async def _eval(self, script: Script, keys: Sequence[str], args: Sequence[str | bytes]) -> Any:
        entry = self._entry()
        client = entry.client
        if self.cluster:
            # a cold cluster client hit by concurrent commands can hand out a connection while another task
            # is setting it up (redis-py 8.1: AttributeError on _writer); initializing first avoids that
            await client.initialize()
        try:
            reply = await client.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        except (NoScript, self._no_script):  # a restarted or flushed server: EVAL sends the source (and caches it)
            reply = await client.execute_command("EVAL", script.source, len(keys), *keys, *args)
        entry.answered = True
        return reply

    async def probe(self) -> None:
        """One small write (an expiring key): what ends an outage. A server refusing writes (``OOM`` under
        ``maxmemory``, ``READONLY`` after a failover) but answering reads fails it."""
        entry = self._entry()
        await entry.client.execute_command("SET", f"{self.prefix}{{probe}}", _f(self.clock()), "PX", "60000")
        entry.answered = True

    async def claim_slot(self, token: str, fleet_size: int, lease_ms: int) -> int | None:
        """Keep (or take) one of the fleet's ``fleet_size`` slots for ``lease_ms``: its index, or None when
        every slot is another member's. The slot orders this member's turns while the store is down."""
        keys = [f"{self.prefix}{{fleet}}:slot:{i}" for i in range(fleet_size)]
        last = self._slots.get(token)  # taken back first after a restart: no two members on one index meanwhile
        index = int(await self._eval(CLAIM_SLOT, keys, [token, str(lease_ms), "" if last is None else str(last)]))
        if index >= 0:
            self._slots = {token: index}
        return index if index >= 0 else None

    async def replay_window(self, provider: str, window_s: float, stamps: Sequence[float]) -> None:
        """Add calls this process admitted in-process during an outage to ``provider``'s shared window."""
        args: list[str | bytes] = [_f(window_s)]
        for stamp in stamps:
            args += [_f(stamp), f"{self._member_prefix}:{next(self._members)}"]
        await self._eval(REPLAY_WINDOW, [f"{self._tag(provider)}:w"], args)

    # -- key names -----------------------------------------------------------------------------------------------

    def _tag(self, provider: str) -> str:
        tag = self._tags.get(provider)
        if tag is None:
            digest = hashlib.sha256(provider.encode()).hexdigest()[:24]
            tag = f"{self.prefix}{{p:{digest}}}"
            if len(self._tags) > 10_000:
                self._tags.clear()
            self._tags[provider] = tag
        return tag

    def _provider_keys(self, provider: str, cache_key: str | None, last: str) -> list[str]:
        tag = self._tag(provider)
        ck = cache_key or ""
        return [f"{tag}:k:{ck}", f"{tag}:f:{ck}", f"{tag}:c", f"{tag}:{last}"]

    # -- the two decisions -----------------------------------------------------------------------------------------

    async def admit(self, request: Admission) -> Decision:
        now = self.clock()
        keys = self._provider_keys(request.provider, request.cache_key, "w")
        limit, window_s = request.rate_limit if request.rate_limit is not None else (0, 0.0)
        price = request.price if request.price > 0 else 0.0
        spend_here = price > 0 and not self.cluster
        spend_after = price > 0 and self.cluster and bool(request.spend_limits)
        member = f"{self._member_prefix}:{next(self._members)}"
        args = [
            _f(now),
            "1" if request.cache_key is not None else "0",
            "1" if request.claim_fill else "0",
            _f(request.fill_lease_s),
            "1" if request.over_call_budget else "0",
            "1" if request.cooldown else "0",
            _f(request.trial_lease_s),
            "1" if request.early_trial else "0",
            str(int(limit)),
            _f(window_s),
            member,
            _nano(price),
            request.label,
            "1" if spend_here else "0",
            str(len(request.spend_limits)),
        ]
        for w, usd in request.spend_limits:
            args += [_f(w), _nano(usd)]
        if spend_here:
            keys += self._spend_keys
        reply = await self._eval_admit(request, keys, args, member if limit > 0 else "")
        verdict = reply[0].decode()
        if verdict == "call":
            ticket = reply[2].decode() or None
            trial = reply[3] == b"1"
            claimed = reply[4] == b"1"
            if spend_after:
                reserved = await self._eval(SPEND_RESERVE, self._spend_keys,
                                            [_f(now), _nano(price), request.label, *args[14:]])
                if reserved[0] == b"over_budget":
                    await self._eval(UNDO, [keys[1], keys[2], keys[3]],
                                     [member, "1" if trial else "0", "1" if claimed else "0"])
                    return Decision("over_budget")
                ticket = reserved[1].decode()
            if limit > 0:  # record() moves this slot to the call's end: see RECORD
                ticket = f"{ticket or ''}{_MEMBER_SEP}{member}"
            if ticket is None and not trial and not claimed:
                return CALL
            return Decision("call", ticket=ticket, trial=trial, fill_claimed=claimed)
        if verdict == "cached":
            return Decision("cached", answer=decode_answer(reply[1]))
        if verdict in ("cooling_down", "rate_limited", "fill_pending"):
            return Decision(verdict, wait_s=float(reply[1]))
        if verdict == "over_budget":
            return Decision("over_budget")
        raise RuntimeError(f"unexpected admit reply {verdict!r}")  # pragma: no cover

    async def _eval_admit(self, request: Admission, keys: list[str], args: list[str], member: str) -> Any:
        """The ADMIT script. On the standalone client, a caller that stops waiting for the reply (the store
        timeout, a cancelled search) leaves it to be read when it comes: what it took is then given back."""
        entry = self._entry()
        client = entry.client
        if self.cluster:  # (the resilient layer runs a cluster admission as a task it never cancels)
            return await self._eval(ADMIT, keys, args)
        token = LATE_REPLY.set(lambda done: self._late_admit(done, request, member))
        try:
            reply = await client.execute_command("EVALSHA", ADMIT.sha, len(keys), *keys, *args)
        except NoScript:  # a restarted or flushed server: EVAL sends the source (and caches it)
            reply = await client.execute_command("EVAL", ADMIT.source, len(keys), *keys, *args)
        finally:
            LATE_REPLY.reset(token)
        entry.answered = True
        return reply

    def _late_admit(self, done: asyncio.Future[Any], request: Admission, member: str) -> None:
        """The reply to an admission nobody waits for any more: a ``call`` is given back."""
        if done.cancelled() or done.exception() is not None:
            return
        reply = done.result()
        if not reply or reply[0] != b"call":
            return
        ticket = reply[2].decode() or None
        if member:
            ticket = f"{ticket or ''}{_MEMBER_SEP}{member}"
        decision = Decision("call", ticket=ticket, trial=reply[3] == b"1", fill_claimed=reply[4] == b"1")
        task = asyncio.get_running_loop().create_task(self._release_quietly(request, decision))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def _release_quietly(self, request: Admission, decision: Decision) -> None:
        try:
            async with asyncio.timeout(max(self._timeout_s, 1.0)):
                await self.release(request, decision)
        except Exception:  # best effort: a slot not given back leaves the window on its own
            pass

    async def release(self, request: Admission, decision: Decision) -> None:
        """Give back what the admission of ``request`` took (``decision``, a ``call``) when its caller stopped
        waiting for the answer (the store timeout, a cancelled search): its rate-limit slot, trial lease and fill
        claim, and its spend reservation (settled at 0). The call it admitted is not made."""
        spend_ticket, member = decision.ticket, ""
        if spend_ticket is not None and _MEMBER_SEP in spend_ticket:
            spend_ticket, _, member = spend_ticket.partition(_MEMBER_SEP)
        if member or decision.trial or decision.fill_claimed:
            keys = self._provider_keys(request.provider, request.cache_key, "w")
            await self._eval(UNDO, [keys[1], keys[2], keys[3]],
                             [member, "1" if decision.trial else "0", "1" if decision.fill_claimed else "0"])
        if spend_ticket:
            await self.record(Record(provider="", label=request.label, ticket=spend_ticket, cost=0.0))

    def _record_commands(self, record: Record) -> list[tuple[list[str], list[str | bytes]]]:
        """The RECORD script calls (keys, args) that apply ``record``: none, one, or (cluster) two."""
        now = self.clock()
        provider = record.provider
        payload = b""
        ttl = ""
        if record.cache_key is not None and record.answer is not None and record.ttl_s and record.ttl_s > 0:
            payload = encode_answer(record.answer)  # registered secrets scrubbed
            if len(payload) <= MAX_CACHE_BYTES:
                ttl = _f(record.ttl_s)
            else:
                payload = b""
        release = record.cache_key is not None and record.release_fill
        ticket, member = record.ticket, ""
        if ticket is not None and _MEMBER_SEP in ticket:
            spend_ticket, _, member = ticket.partition(_MEMBER_SEP)
            ticket = spend_ticket or None
        provider_part = bool(provider) and (
            record.cooldown_after is not None or bool(ttl) or release or record.latency_ms is not None
            or bool(member)
        )
        spend_part = ticket is not None or record.cost > 0
        if not provider_part and not spend_part:
            return []
        provider_args: list[str | bytes] = [
            "1" if provider_part else "0",
            "" if record.cooldown_after is None else str(int(record.cooldown_after)),
            record.health,
            "1" if record.trial else "0",
            _f(record.cooldown_s),
            "" if record.retry_after_s is None else _f(record.retry_after_s),
            ttl,
            payload,
            "1" if release else "0",
            "" if record.latency_ms is None else _f(record.latency_ms),
        ]
        spend_args = [ticket or "", _nano(max(record.cost, 0.0)), record.label]
        if record.latency_ms is not None:
            self._p95.pop(provider, None)
        if provider_part:
            pkeys = self._provider_keys(provider, record.cache_key, "l")
            pkeys.append(f"{self._tag(provider)}:w")
        else:
            pkeys = list(self._spend_dummy)
        if not self.cluster:
            keys = pkeys + list(self._spend_keys) if spend_part else pkeys
            return [(keys, [_f(now), *provider_args, "1" if spend_part else "0", *spend_args, member])]
        calls: list[tuple[list[str], list[str | bytes]]] = []
        if provider_part:
            calls.append((pkeys, [_f(now), *provider_args, "0", "", "0", "", member]))
        if spend_part:
            calls.append(([*self._spend_dummy, *self._spend_keys],
                          [_f(now), "0", "", "neutral", "0", "0", "", "", "", "0", "", "1", *spend_args, ""]))
        return calls

    async def record(self, record: Record) -> None:
        for keys, args in self._record_commands(record):
            await self._eval(RECORD, keys, args)
        self._record_loaded = True

    def record_nowait(self, record: Record) -> asyncio.Future[Any] | None:
        """Send ``record`` without waiting for the server's answer, when it can go at once: on the loop's
        open pipelined connection (standalone servers), behind every command this loop sent before and
        ahead of every command it sends after (so this process reads its own writes). Returns the reply's
        future (for failures), or None when it cannot be sent that way (then ``await record()``)."""
        if self.cluster or not self._record_loaded:  # until the server is known to have the script
            return None
        client = self._client()
        calls = self._record_commands(record)
        if not calls:
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        keys, args = calls[0]
        future: asyncio.Future[Any] | None = client.send_nowait(
            "EVALSHA", RECORD.sha, len(keys), *keys, *args)
        if future is None:
            return None

        def resend(reply: asyncio.Future[Any]) -> None:  # a restarted server forgot the script: EVAL it
            if not reply.cancelled() and isinstance(reply.exception(), NoScript):
                self._record_loaded = False  # the next records wait for their answers until it is back
                again = client.send_nowait("EVAL", RECORD.source, len(keys), *keys, *args)
                if again is not None:
                    again.add_done_callback(_consume_reply)

        future.add_done_callback(resend)
        return future

    # -- reads -------------------------------------------------------------------------------------------------------

    async def spend(self, window_s: float) -> dict[str, float]:
        reply = await self._eval(SPEND_REPORT, self._spend_keys, [_f(self.clock()), _f(window_s)])
        return {reply[i].decode(): int(float(reply[i + 1])) / 1e9 for i in range(0, len(reply), 2)}

    async def latency_p95(self, provider: str) -> float | None:
        cached = self._p95.get(provider)
        mono = time.monotonic()
        if cached is not None and cached[0] > mono:
            return cached[1]
        raw = await self._client().execute_command("LRANGE", f"{self._tag(provider)}:l", 0, LATENCY_SAMPLES - 1)
        value = p95([float(x) for x in raw])
        if len(self._p95) > 10_000:
            self._p95.clear()
        self._p95[provider] = (mono + _P95_FRESH_S, value)
        return value

    async def member_stats(self, providers: Sequence[str]) -> dict[str, MemberStats]:
        out: dict[str, MemberStats] = {}
        for provider in providers:  # one hash per provider's slot (a cluster keeps them apart)
            o, c, lat, x, n = await self._client().execute_command(
                "HMGET", f"{self._tag(provider)}:m", "o", "c", "l", "x", "n")
            if n is not None:
                out[provider] = MemberStats(ok=float(o), calls=float(c), latency_ms=None if lat is None else float(lat),
                                            cost_usd=float(x), total=int(n))
        return out

    async def record_member(self, provider: str, ok: bool, latency_ms: float | None, cost_usd: float) -> None:
        await self._eval(MEMBER_RECORD, [f"{self._tag(provider)}:m"],
                         ["1" if ok else "0", "" if latency_ms is None else _f(latency_ms), _f(cost_usd),
                          _f(MEMBER_DECAY)])

    async def state(self, provider: str, window_s: float | None = None) -> ProviderState:
        tag = self._tag(provider)
        now = self.clock()
        reply = await self._eval(STATE, [f"{tag}:c", f"{tag}:w"],
                                 [_f(now), "" if window_s is None else _f(window_s)])
        failures, open_until, _period, trial_until, calls = (x.decode() for x in reply)
        opened = float(open_until) if open_until else None
        trial = float(trial_until) if trial_until else None
        return ProviderState(
            failures=int(float(failures)),
            cooling_down=opened is not None,
            cooldown_ends_in_s=None if opened is None else max(0.0, opened - now),
            trial_in_flight=trial is not None and trial > now,
            window_calls=int(calls),
        )

    async def wait_fill(self, cache_key: str, timeout_s: float, provider: str = "") -> CachedAnswer | None:
        loop = asyncio.get_running_loop()
        end = loop.time() + max(0.0, timeout_s)
        keys = self._provider_keys(provider, cache_key, "w")[:2]
        pause = _FILL_POLL_MIN_S
        while True:
            async with asyncio.timeout(self._timeout_s):
                reply = await self._eval(POLL_FILL, keys, [_f(self.clock())])
            if reply[0] == b"hit":
                return decode_answer(reply[1])
            if reply[0] == b"gone":
                return None
            left = end - loop.time()
            if left <= 0:
                return None
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, _FILL_POLL_MAX_S)

    async def clear(self) -> None:
        client = self._client()
        pattern = _glob_escape(self.prefix) + "*"
        batch: list[Any] = []
        async for key in client.scan_iter(match=pattern, count=500):
            if self.cluster:
                await client.execute_command("UNLINK", key)
                continue
            batch.append(key)
            if len(batch) >= 500:
                await client.execute_command("UNLINK", *batch)
                batch.clear()
        if batch:
            await client.execute_command("UNLINK", *batch)
        self._p95.clear()

    # -- closing ------------------------------------------------------------------------------------------------------

    def _take_clients(self) -> list[tuple[asyncio.AbstractEventLoop, _PerLoop]]:
        with self._clients_lock:
            items = list(self._clients.items())
            self._clients.clear()
            self._last = (None, None)
        return items

    async def aclose(self) -> None:
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - aclose is a coroutine
            current = None
        for loop, entry in self._take_clients():
            if loop is current:
                await entry.aclose()
            else:
                entry.close_elsewhere(loop)

    def close(self) -> None:
        for loop, entry in self._take_clients():
            entry.close_elsewhere(loop)


async def _loop_guard(entry: _PerLoop, forget: Callable[[_PerLoop], None],
                      drain_s: float) -> AsyncIterator[None]:
    """Lives as long as its event loop: ``asyncio.run`` (any loop's ``shutdown_asyncgens``) closes it, and
    with it the loop's client (a process calling ``asyncio.run(asearch(...))`` 500 times holds no socket),
    after the records still in flight are answered (at most ``drain_s``)."""
    try:
        yield
    finally:
        forget(entry)
        await entry.aclose(drain_s)


class _PerLoop:
    """An event loop's client, whether it has answered yet, and the guard that closes it with its loop."""

    __slots__ = ("answered", "client", "guard")

    def __init__(self, client: Any) -> None:
        self.client = client
        self.answered = False
        self.guard: AsyncIterator[None] | None = None

    def guard_loop(self, forget: Callable[[_PerLoop], None], drain_s: float) -> None:
        """Start the guard on the running loop (it registers with the loop's async-generator hooks on its first
        step, which runs to its ``yield`` at once); the entry keeps it alive (the loop's set is weak)."""
        guard = _loop_guard(self, forget, drain_s)
        step = guard.__anext__()
        try:
            step.send(None)  # type: ignore[attr-defined]
        except StopIteration:
            self.guard = guard
        else:  # pragma: no cover - the guard never waits before its yield
            step.close()  # type: ignore[attr-defined]

    async def aclose(self, drain_s: float = 0.0) -> None:
        with contextlib.suppress(Exception):
            if isinstance(self.client, RespClient):
                await self.client.aclose(drain_s)
            else:
                await asyncio.wait_for(self.client.aclose(), 2.0)

    def close_dead(self) -> None:
        """The loop is closed: release what can be released without it (the RESP client's socket)."""
        dead = getattr(self.client, "close_dead", None)
        if dead is not None:
            dead()

    def close_elsewhere(self, loop: asyncio.AbstractEventLoop) -> None:
        """Close from outside ``loop`` (best effort; a closed loop's RESP socket is closed directly)."""
        if loop.is_closed():
            self.close_dead()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self.aclose(), loop)
            if running is None:  # we may block: wait a little for it
                with contextlib.suppress(Exception):
                    future.result(timeout=1.0)
            return
        if running is None:
            with contextlib.suppress(Exception):
                loop.run_until_complete(self.aclose())
            return
        self.close_dead()


def _consume_reply(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


# -- the public store --------------------------------------------------------------------------------------------------


class RedisStore(ResilientStore):
    """The state store of a fleet, in Redis or Valkey (see the module docstring).

    ``RedisStore(url, prefix="perplexed:", cluster=False, timeout_ms=50, fleet_size=1)``; each argument
    left out is taken from the URL's query (``?prefix=...&cluster=true&timeout_ms=...&fleet_size=...``),
    else the default. ``clock`` (seconds since the epoch) is injectable for tests; the fleet's hosts share
    time through it, so keep their clocks in sync (NTP).
    """

    def __init__(
        self,
        url: str,
        prefix: str | None = None,
        *,
        cluster: bool | None = None,
        timeout_ms: float | None = None,
        fleet_size: int | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not isinstance(url, str) or "://" not in url:
            raise ConfigError(f"RedisStore: url must be a redis://, rediss:// or unix:// URL, got {url!r}")
        try:  # a malformed host or port ("[::1", ":99999") is a ConfigError naming it, never a bare ValueError
            parts = urlsplit(url.strip())
            _ = parts.port
        except ValueError as exc:
            raise ConfigError(mask_url(f"RedisStore: url {url.strip()!r} is malformed ({exc})")) from None
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise ConfigError(f"RedisStore: url must start with redis://, rediss:// or unix://, got {scheme}://")
        own: dict[str, str] = {}
        rest: list[tuple[str, str]] = []
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            (own.__setitem__(name, value) if name in _OWN_QUERY else rest.append((name, value)))
        if prefix is None:
            prefix = own.get("prefix", DEFAULT_PREFIX)
        if not isinstance(prefix, str) or not prefix:
            raise ConfigError(f"RedisStore: prefix must be a non-empty string, got {prefix!r}")
        use_cluster = _as_bool("cluster", cluster if cluster is not None else own.get("cluster", False))
        if use_cluster and scheme == "unix":
            raise ConfigError("RedisStore: cluster=True needs a redis:// or rediss:// URL, not unix://")
        timeout = _as_timeout_ms(timeout_ms if timeout_ms is not None else own.get("timeout_ms", DEFAULT_TIMEOUT_MS))
        fleet = _as_fleet_size(fleet_size if fleet_size is not None else own.get("fleet_size", 1))
        if clock is not None and not callable(clock):
            raise ConfigError(f"RedisStore: clock must be a callable returning seconds, got {clock!r}")
        if parts.password:
            register_secret(unquote(parts.password))
        options, connect_timeout = _client_options(scheme, rest, use_cluster)
        # the options go as arguments; "://" kept by hand: urlunsplit writes "unix:/path" for an empty netloc,
        # which redis-py >= 8.2 refuses (its parse_url wants the "unix://" prefix)
        clean = f"{parts.scheme}://{parts.netloc}{parts.path}"
        if not use_cluster:
            try:
                from redis.asyncio.connection import parse_url
            except ImportError:
                raise ConfigError(
                    f"store: RedisStore needs the redis client: {install_hint('redis')}"
                ) from None
            try:
                parsed = dict(parse_url(clean))
            except ValueError as exc:
                raise ConfigError(f"RedisStore: the URL cannot be used ({exc})") from None
            parsed.pop("connection_class", None)
            options = {**parsed, **options, "ssl": scheme == "rediss"}
        try:
            backend = _RedisBackend(clean, options, prefix=prefix, cluster=use_cluster,
                                    timeout_s=timeout / 1000.0, clock=clock or time.time,
                                    connect_timeout_s=connect_timeout)
        except ImportError:
            raise ConfigError(
                f"store: RedisStore needs the redis client: {install_hint('redis')}"
            ) from None
        super().__init__(backend, kind="redis", timeout_s=timeout / 1000.0, fleet_size=fleet,
                         clock=clock or time.time, abandon=use_cluster,
                         cold_timeout_s=backend._connect_timeout_s)
        self.prefix = prefix
        self.cluster = use_cluster
        self.timeout_ms = timeout
        self.fleet_size = fleet
        self.url = _display_url(parts)

    def __repr__(self) -> str:
        extra = ", cluster=True" if self.cluster else ""
        return (f"RedisStore({self.url!r}, prefix={self.prefix!r}{extra}, timeout_ms={self.timeout_ms:g}, "
                f"fleet_size={self.fleet_size})")


def _display_url(parts: SplitResult) -> str:
    """The URL without its password (and without query options, which may name files)."""
    netloc = parts.netloc
    if parts.password:
        user = parts.username or ""
        host = netloc.rpartition("@")[2]
        netloc = f"{quote(user)}:***@{host}" if user else f":***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
