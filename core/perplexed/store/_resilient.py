"""Degraded mode for a shared store: the store is never a new way to fail.

:class:`ResilientStore` wraps a remote store (the Redis one) and keeps the chain's rules when the remote is
unreachable, slow or answering errors:

* every remote call has its own small timeout (a cold client's first call, still connecting, the connect
  timeout instead: a cluster client reading its slot map is not an outage); whatever a call raises (or a
  timeout) starts an *outage*, at the first failed call;
* during an outage the process uses in-process state (a fresh :class:`~perplexed.store.MemoryStore`) and
  tries the remote again at most once a second (one probe at a time), so a search pays the store timeout at
  most once a second; a state-changing call (``admit``, ``record``, ``add_spend``, ``clear``) probes with a
  small *write* first (``remote.probe()``), and only a write that succeeds ends the outage (reads answer
  from the remote when they can, but do not end it): a server that answers reads but refuses writes (``OOM`` under ``maxmemory``, ``READONLY``
  after a failover, ``LOADING``, ``MASTERDOWN``) keeps it going, so an outage never flaps;
* degraded, but still safe: while the remote is up, a member of a fleet (``fleet_size`` > 1) leases one of
  its slots (``remote.claim_slot``, with a rate-limited admission); during an outage the members holding one
  take turns at each rate limit (:func:`perplexed.policy._policy.slot_admit`: no rolling window above the limit,
  nothing in the window the outage began in), and for one window after it, while the calls they made
  in-process go back into the shared window (``remote.replay_window``). A process without a slot allows N
  calls per ``window x fleet_size``, from a window that does not start empty: it holds the admissions this
  process made before the outage, topped up to N with evenly spaced ones (at a random phase) as if the
  process had been using its share (a cautious share for a provider it never called); a process that never
  reached the remote at all starts with empty windows; spend limits fail closed: a paid provider is skipped
  ``over_budget`` (with a detail saying why) while free providers and the in-process cache go on;
* one telemetry event ``("perplexed", "store", "unavailable")`` (metadata: the store's ``kind`` and the
  redacted ``error``) and one warning log per outage, not per call; an info log when it ends.

No exception from the remote ever reaches the caller (cancellation of the caller's own task excepted).
"""

from __future__ import annotations

import asyncio
import random
import secrets
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Final, TypeVar

from perplexed import telemetry
from perplexed._errors import StoreError, redact
from perplexed._logs import get_logger
from perplexed.policy._policy import MemberStats, RateLimit, slot_admit
from perplexed.store._base import Admission, CachedAnswer, Decision, ProviderState, Record, Store
from perplexed.store._ledger import DEFAULT_RETENTION_S, UsageRecord
from perplexed.store._resp import ClientClosed, NoScript
from perplexed.store.memory import MemoryStore

__all__ = ["RETRY_S", "ResilientStore"]

T = TypeVar("T")

logger = get_logger("perplexed.store")

RETRY_S: Final = 1.0
"""During an outage, the remote store is tried again at most this often."""

CHECK_TIMEOUT_S: Final = 5.0
"""How long :meth:`ResilientStore.check` (``perplexed doctor``) waits for the backend."""

MAX_BACKGROUND: Final = 256
"""Records running as tasks of their own (cluster mode) at most at once."""

SLOT_LEASE_S: Final = 30.0
"""How long a fleet member's slot (its turn while the store is down) is held without being renewed."""

SLOT_RENEW_S: Final = 10.0
"""A member renews its slot at most this often, with a rate-limited admission."""

_LAG_S: Final = 0.005
"""An admission's wait woken this late (or a quarter of the store timeout) was held up by the event loop."""

_HISTORY_PROVIDERS: Final = 10_000
_HISTORY_MAX: Final = 10_000

_LOCAL_TICKET = "L:"


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's outcome (no "exception was never retrieved" warning)."""
    if not task.cancelled():
        task.exception()


def _cache_only(request: Admission) -> Admission:
    """``request`` as a cache lookup that takes nothing: ``cached`` on a hit, else ``over_budget`` (the cache
    is consulted before everything else, also when it is not this member's turn)."""
    return replace(request, rate_limit=None, over_call_budget=True, claim_fill=False, cooldown=False)


class _Skip:
    """The remote was not (successfully) asked: use in-process state."""


_SKIP: Final = _Skip()


class ResilientStore(Store):
    """A shared store with a degraded mode (see the module docstring). ``remote`` raises freely."""

    shared = True

    def __init__(self, remote: Store, *, kind: str, timeout_s: float, fleet_size: int,
                 clock: Callable[[], float], abandon: bool = False, cold_timeout_s: float | None = None) -> None:
        self._remote = remote
        self._abandon = abandon
        self._cold_timeout_s = max(timeout_s, cold_timeout_s or timeout_s)
        self._cold = getattr(remote, "cold", None)
        self._probe = getattr(remote, "probe", None)
        # this process's recent admissions per provider (clock times): the degraded window starts from them
        self._history: dict[str, deque[float]] = {}
        self._seeded: set[str] = set()
        self._down_clock = 0.0
        self._background: set[asyncio.Task[None]] = set()
        self._reached = False  # whether any remote call has succeeded in this process
        # the fleet's turns while the store is down (fleet_size > 1): this member's slot, leased in the store
        self._claim = getattr(remote, "claim_slot", None) if fleet_size > 1 else None
        self._replay_window = getattr(remote, "replay_window", None)
        self._token = secrets.token_hex(8)
        self._slot: int | None = None
        self._slot_until = 0.0  # monotonic: the lease holds until then
        self._next_claim = 0.0
        self._outage_slot: int | None = None  # the slot this outage is run on (held when it began)
        self._slot_last: dict[str, int] = {}  # provider -> the slot of its last call in this outage
        # provider -> (window_s, times) of the calls admitted in-process: the shared window gets them back
        self._outage_calls: dict[str, tuple[float, deque[float]]] = {}
        self._replay: dict[str, tuple[float, list[float]]] = {}
        # back from an outage run on a slot: for one window more, a call needs its turn and the shared window
        self._turns_slot: int | None = None
        self._turns_start = 0.0  # the outage's start (clock)
        self._back_clock = 0.0  # when this process got the store back (clock)
        self.kind = kind
        self.clock = clock
        self._timeout_s = timeout_s
        self._fleet_size = fleet_size
        self._lock = threading.Lock()
        self._local: MemoryStore | None = None
        self._down_since: float | None = None
        self._next_try = 0.0
        self._probing = False
        self.outages = 0
        """How many outages this process has seen (tests, diagnostics)."""
        self.last_error: str | None = None
        """The redacted error that started the latest outage."""

    # -- health ---------------------------------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """False during an outage (the process is using in-process state)."""
        return self._down_since is None

    async def _remote_call(self, make: Callable[[], Awaitable[T]], *, changes_state: bool,
                           bounded: bool = True, late: Callable[[asyncio.Future[T]], None] | None = None,
                           ) -> T | _Skip:
        probing = False
        if self._down_since is not None:
            with self._lock:
                if self._down_since is not None:
                    now = time.monotonic()
                    if self._probing or now < self._next_try:
                        return _SKIP
                    self._probing = probing = True
                    self._next_try = now + RETRY_S
        timeout_s = self._timeout_s
        if not probing and self._cold is not None and self._cold():
            timeout_s = self._cold_timeout_s  # a cold client connecting: not an outage unless it takes longer
        try:
            if probing and changes_state and self._probe is not None:  # only a successful write ends an outage
                await self._call(self._probe, self._timeout_s, True)
                self._recovered()
            if bounded and late is not None:  # an admission: never lost between the reservation and the call
                result = await (self._kept(make, timeout_s, late) if self._abandon else self._timed(make, timeout_s))
            else:
                result = await self._call(make, timeout_s, bounded)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # anything the store does wrong: degrade, never raise
            self._failed(exc)
            return _SKIP
        finally:
            if probing:
                self._probing = False
        if probing and self._probe is None and changes_state:
            self._recovered()
        self._reached = True
        return result

    async def _call(self, make: Callable[[], Awaitable[T]], timeout_s: float, bounded: bool) -> T:
        if bounded and self._abandon:
            return await self._bounded(make, timeout_s)
        if bounded:
            async with asyncio.timeout(timeout_s):
                return await make()
        return await make()

    async def _bounded(self, make: Callable[[], Awaitable[T]], timeout_s: float) -> T:
        """``await make()``, but never longer than the store timeout (``abandon=True``).

        The call runs as its own task and is abandoned (cancelled, not awaited) when the timeout passes: a
        client library that defers or absorbs a cancellation (reconnecting, closing a socket; redis-py's
        cluster client) cannot make the search wait for it. Costs a task per call (~20 us), so a client
        that honours cancellation at once (the store's own RESP client) uses ``asyncio.timeout`` instead.
        """
        task = asyncio.ensure_future(make())
        try:
            done, _ = await asyncio.wait((task,), timeout=timeout_s)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            task.add_done_callback(_consume)
            raise TimeoutError
        return task.result()

    async def _timed(self, make: Callable[[], Awaitable[T]], timeout_s: float) -> T:
        """``await make()`` within the store timeout (like ``asyncio.timeout``), for an admission on a client that
        honours cancellation at once (the standalone one, which gives back what an admission took when its
        caller stopped waiting: see ``_RedisBackend._eval_admit``). A timer the event loop fires late (it was
        busy: CPU-bound work of another search) gives the store one more timeout: the reply may be in already,
        and that delay was the loop's, not the store's."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        deadline = loop.time() + timeout_s
        timers: list[asyncio.TimerHandle] = []  # the timer, then (at most) its one extension
        expired = False

        def expire() -> None:
            nonlocal expired
            if len(timers) == 1 and loop.time() - deadline > min(timeout_s / 4, _LAG_S):
                timers.append(loop.call_later(timeout_s, expire))
                return
            expired = True
            task.cancel()

        timers.append(loop.call_at(deadline, expire))
        try:
            return await make()
        except asyncio.CancelledError:
            if expired and task.uncancel() <= cancelling:
                raise TimeoutError from None
            raise
        finally:
            timers[-1].cancel()

    async def _kept(self, make: Callable[[], Awaitable[T]], timeout_s: float,
                    late: Callable[[asyncio.Future[T]], None]) -> T:
        """``await make()`` within the store timeout, for an admission on a client that cannot be cancelled
        midway (the cluster's, ``abandon=True``): it runs as its own task and is never cancelled. A reply that
        came in time is used even when the loop woke this wait late (as :meth:`_timed`); an admission the
        caller stopped waiting for (the timeout, or its own cancellation) goes on, and ``late`` gets its
        outcome (it gives back what the admission took: no rate-limit slot, trial lease, fill claim or spend
        reservation is held for a call that will not be made)."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(make())
        try:
            deadline = loop.time() + timeout_s
            done, _ = await asyncio.wait((task,), timeout=timeout_s)
            if not done and loop.time() - deadline > min(timeout_s / 4, _LAG_S):
                done, _ = await asyncio.wait((task,), timeout=timeout_s)
        except asyncio.CancelledError:
            task.add_done_callback(late)
            raise
        if not done:
            task.add_done_callback(late)
            raise TimeoutError
        return task.result()

    def _release_late(self, request: Admission) -> Callable[[asyncio.Future[Decision]], None]:
        """The callback for an admission nobody waits for any more: what it took is given back."""
        def done(task: asyncio.Future[Decision]) -> None:
            if task.cancelled() or task.exception() is not None:
                return
            decision = task.result()
            release = getattr(self._remote, "release", None)
            if decision.verdict != "call" or release is None:
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # pragma: no cover - the loop is gone: the slot expires with its window
                return
            background = loop.create_task(self._give_back_late(release, request, decision))
            self._background.add(background)
            background.add_done_callback(self._background.discard)
        return done

    async def _give_back_late(self, release: Callable[[Admission, Decision], Awaitable[None]], request: Admission,
                              decision: Decision) -> None:
        try:
            async with asyncio.timeout(max(self._timeout_s, 1.0)):
                await release(request, decision)
        except Exception:  # best effort: a slot not given back leaves the window on its own
            logger.debug("giving back an abandoned %s admission failed", self.kind, exc_info=True)

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, TimeoutError):
            error = f"TimeoutError: no answer within {self._timeout_s * 1000:g} ms"
        else:
            text = str(exc)
            error = redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
        with self._lock:
            self._next_try = time.monotonic() + RETRY_S
            if self._down_since is not None:
                return
            self._down_since = time.monotonic()
            self._down_clock = self.clock()
            self._local = MemoryStore(clock=self.clock)
            self._seeded = set()
            held = self._slot is not None and self._down_since < self._slot_until
            self._outage_slot = self._slot if held else None
            if self._turns_slot is None:  # (an outage within the window after the last one keeps its turns)
                self._slot_last = {}
            self._turns_slot = None
            self._outage_calls = {}
            self.outages += 1
            self.last_error = error
        logger.warning(
            "perplexed: the %s state store is unavailable (%s); using in-process state until it answers "
            "again (rate limits / fleet_size=%d, paid providers skipped while spend limits apply)",
            self.kind, error, self._fleet_size,
        )
        telemetry.emit(("perplexed", "store", "unavailable"), {}, {"store": self.kind, "error": error})

    def _recovered(self) -> None:
        with self._lock:
            since = self._down_since
            if since is None:
                return
            self._down_since = None
            self._local = None
            self._turns_slot, self._turns_start, self._back_clock = self._outage_slot, self._down_clock, self.clock()
            self._outage_slot = None
            self._next_claim = 0.0  # lease the slot again at once (a restarted server has forgotten the leases)
            # the calls admitted in-process go to the shared windows before this process's next admissions
            self._replay = {p: (w, list(times)) for p, (w, times) in self._outage_calls.items()}
            self._outage_calls = {}
        logger.info("perplexed: the %s state store is back after %.1f s", self.kind, time.monotonic() - since)

    def _local_store(self) -> MemoryStore:
        local = self._local
        if local is None:
            with self._lock:
                local = self._local
                if local is None:
                    local = self._local = MemoryStore(clock=self.clock)
        return local

    # -- the two decisions ----------------------------------------------------------------------------------

    async def admit(self, request: Admission) -> Decision:
        result = await self._remote_call(lambda: self._admit_remote(request), changes_state=True,
                                         late=self._release_late(request))
        if not isinstance(result, _Skip):
            if request.rate_limit is not None and result.verdict == "call":
                self._remember(request.provider, request.rate_limit[0])
            return result
        return self._admit_locally(request)

    def _take_turn(self, request: Admission, slot: int, start: float) -> tuple[bool, float, int, int | None]:
        """Take this member's turn for ``request`` now if it has one (``slot_admit``), atomically (concurrent
        searches of this process cannot take the same one): ``(allowed, wait_s, turn, previous turn)``."""
        assert request.rate_limit is not None
        limit, window_s = request.rate_limit
        with self._lock:
            last = self._slot_last.get(request.provider)
            allowed, wait, turn = slot_admit(self.clock(), start, slot, self._fleet_size,
                                             RateLimit(limit, window_s, ""), last)
            if allowed:
                self._slot_last[request.provider] = turn
            return allowed, wait, turn, last

    def _give_back(self, provider: str, turn: int, last: int | None) -> None:
        """A turn taken for a call that was not made (a cached answer, a cool-down, ...)."""
        with self._lock:
            if self._slot_last.get(provider) == turn:
                if last is None:
                    self._slot_last.pop(provider, None)
                else:
                    self._slot_last[provider] = last

    async def _admit_remote(self, request: Admission) -> Decision:
        if request.rate_limit is not None:
            if self._replay:  # back from an outage: the calls made in-process count in the shared window
                pending = self._replay.pop(request.provider, None)
                if pending is not None and self._replay_window is not None:
                    window_s, times = pending
                    now = self.clock()
                    live = [t for t in times if t > now - window_s]
                    if live:
                        await self._replay_window(request.provider, window_s, live)
            if self._claim is not None and time.monotonic() >= self._next_claim:
                sent = time.monotonic()
                self._next_claim = sent + SLOT_RENEW_S
                slot = await self._claim(self._token, self._fleet_size, int(SLOT_LEASE_S * 1000))
                with self._lock:
                    self._slot, self._slot_until = slot, sent + SLOT_LEASE_S - 1.0
            if self._turns_slot is not None:
                return await self._admit_in_turn(request)
        return await self._remote.admit(request)

    async def _admit_in_turn(self, request: Admission) -> Decision:
        """Back from an outage run on a slot: within one window, a call needs its turn too."""
        assert request.rate_limit is not None
        slot = self._turns_slot
        if slot is None or self.clock() >= self._back_clock + request.rate_limit[1]:
            return await self._remote.admit(request)  # the window is over: the shared one decides alone
        allowed, wait, turn, last = self._take_turn(request, slot, self._turns_start)
        if not allowed:  # not its turn: a cached answer still wins (the remote looks, nothing is taken)
            if request.cache_key is not None:
                seen = await self._remote.admit(_cache_only(request))
                if seen.verdict == "cached":
                    return seen
            return Decision("rate_limited", wait_s=wait,
                            detail="back from a store outage: the fleet takes turns for one more window")
        try:
            decision = await self._remote.admit(request)
        except BaseException:
            self._give_back(request.provider, turn, last)
            raise
        if decision.verdict != "call":
            self._give_back(request.provider, turn, last)
        return decision

    def _remember(self, provider: str, limit: int) -> None:
        """Note an admission the remote granted (the degraded window starts from these)."""
        stamps = self._history.get(provider)
        size = max(1, min(limit, _HISTORY_MAX))
        if stamps is None or stamps.maxlen != size:
            if len(self._history) >= _HISTORY_PROVIDERS:
                self._history.clear()
            stamps = self._history[provider] = deque(stamps or (), maxlen=size)
        stamps.append(self.clock())

    def _seed(self, local: MemoryStore, provider: str, limit: int, window_s: float) -> None:
        """Start ``provider``'s degraded window (``limit`` per ``window_s``) from what this process last knew:
        its own admissions inside the window, topped up to ``limit`` with evenly spaced ones at a random phase
        (its share of a fleet at the limit: a cautious share when it never called ``provider``), so slots free
        one at a time at the share's pace and no burst leaves when the outage starts. A process that never
        reached the remote at all knows nothing of a fleet: its window starts empty."""
        if not self._reached:
            return
        start = self._down_clock
        own = sorted(t for t in self._history.get(provider, ()) if start - window_s < t <= start)[-limit:]
        missing = limit - len(own)
        phase = random.random()
        filler = [start - window_s * (i + phase) / limit for i in range(missing)]
        local.seed_window(provider, sorted(own + [t for t in filler if t > start - window_s]))

    def _admit_locally(self, request: Admission) -> Decision:
        local_request = request
        local = self._local_store()
        turn: tuple[int, int | None] | None = None
        slot = self._outage_slot
        if request.rate_limit is not None and slot is not None:
            # a fleet member with a slot: its turns (slot_admit), so the fleet never passes the limit
            allowed, wait, taken, last = self._take_turn(request, slot, self._down_clock)
            if allowed:
                turn = (taken, last)
            else:  # not its turn: the in-process cache still answers (it is consulted first)
                if request.cache_key is not None:
                    hit = local.admit_now(_cache_only(request))
                    if hit.verdict == "cached":
                        return hit
                return Decision("rate_limited", wait_s=wait, detail=f"the {self.kind} state store is "
                                "unavailable: the fleet takes turns at the rate limit")
            local_request = replace(local_request, rate_limit=None)
        elif request.rate_limit is not None:
            limit, window_s = request.rate_limit
            window_s *= self._fleet_size
            local_request = replace(local_request, rate_limit=(limit, window_s))
            if request.provider not in self._seeded:
                with self._lock:
                    if request.provider not in self._seeded:
                        self._seeded.add(request.provider)
                        self._seed(local, request.provider, limit, window_s)
        decision = self._admit_local(local, request, local_request)
        if turn is not None and decision.verdict != "call":
            self._give_back(request.provider, *turn)
        if request.rate_limit is not None and decision.verdict == "call":
            limit, window_s = request.rate_limit
            with self._lock:
                calls = self._outage_calls.get(request.provider)
                if calls is None or calls[0] != window_s:
                    if len(self._outage_calls) >= _HISTORY_PROVIDERS:
                        self._outage_calls.clear()
                    calls = self._outage_calls[request.provider] = (window_s, deque(maxlen=min(limit, _HISTORY_MAX)))
                calls[1].append(self.clock())
        return decision

    def _admit_local(self, local: MemoryStore, request: Admission, local_request: Admission) -> Decision:
        closed = request.price > 0 and bool(request.spend_limits) and not request.over_call_budget
        if closed:  # spend limits cannot be checked fleet-wide: fail closed (the cache still answers)
            local_request = replace(local_request, over_call_budget=True)
        if request.claim_fill:
            local_request = replace(local_request, claim_fill=False)
        decision = local.admit_now(local_request)
        if closed and decision.verdict == "over_budget":
            return Decision("over_budget", detail=f"the {self.kind} state store is unavailable: paid providers "
                            "are skipped while spend limits cannot be checked")
        if decision.ticket is not None:
            decision = replace(decision, ticket=_LOCAL_TICKET + decision.ticket)
        return decision

    async def record(self, record: Record) -> None:
        ticket = record.ticket
        if ticket is not None and ticket.startswith(_LOCAL_TICKET):
            # admitted in-process during an outage: the remote learns the actual cost as plain spend
            remote, local = replace(record, ticket=None), replace(record, ticket=ticket[len(_LOCAL_TICKET):])
        else:
            # a remote reservation: settled remotely, or (down) not known locally at all
            remote, local = record, replace(record, ticket=None, cost=0.0)
        nowait = getattr(self._remote, "record_nowait", None)
        if nowait is not None and self._down_since is None:
            # the remote pipelines it behind this process's earlier commands: no round trip to wait for
            try:
                sent = nowait(remote)
            except Exception as exc:
                self._failed(exc)
                sent = None
            if sent is not None:
                sent.add_done_callback(self._check_sent)
                return
        result = await self._remote_call(lambda: self._remote.record(remote), changes_state=True)
        if isinstance(result, _Skip):
            self._local_store().record_now(local)

    def record_soon(self, record: Record) -> bool:
        """A search does not wait for its record: the standalone client pipelines it (see :meth:`record`);
        a client that cannot (the cluster's, ``abandon=True``) runs it as a task of its own, at most
        :data:`MAX_BACKGROUND` at once (beyond that the caller awaits it)."""
        if not self._abandon or len(self._background) >= MAX_BACKGROUND:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        task = loop.create_task(self.record(record))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return True

    def _check_sent(self, reply: asyncio.Future[Any]) -> None:
        """A record sent without waiting failed: that starts an outage like any failed call."""
        if reply.cancelled():
            return
        exc = reply.exception()
        # NOSCRIPT: the remote re-sends it with EVAL; ClientClosed: its event loop ended, not the server's doing
        if exc is not None and not isinstance(exc, NoScript | ClientClosed):
            self._failed(exc)

    # -- reads and the rest ---------------------------------------------------------------------------------

    async def spend(self, window_s: float) -> dict[str, float]:
        result = await self._remote_call(lambda: self._remote.spend(window_s), changes_state=False)
        if not isinstance(result, _Skip):
            return result
        return await self._local_store().spend(window_s)

    async def latency_p95(self, provider: str) -> float | None:
        result = await self._remote_call(lambda: self._remote.latency_p95(provider), changes_state=False)
        if not isinstance(result, _Skip):
            return result
        return await self._local_store().latency_p95(provider)

    async def member_stats(self, providers: Sequence[str]) -> dict[str, MemberStats]:
        result = await self._remote_call(lambda: self._remote.member_stats(providers), changes_state=False)
        if not isinstance(result, _Skip):
            return result
        return await self._local_store().member_stats(providers)

    async def record_member(self, provider: str, ok: bool, latency_ms: float | None, cost_usd: float) -> None:
        result = await self._remote_call(lambda: self._remote.record_member(provider, ok, latency_ms, cost_usd),
                                         changes_state=True)
        if isinstance(result, _Skip):
            self._local_store().record_member_now(provider, ok, latency_ms, cost_usd)

    async def state(self, provider: str, window_s: float | None = None) -> ProviderState:
        result = await self._remote_call(lambda: self._remote.state(provider, window_s), changes_state=False)
        if not isinstance(result, _Skip):
            return result
        return await self._local_store().state(provider, window_s)

    async def wait_fill(self, cache_key: str, timeout_s: float, provider: str = "") -> CachedAnswer | None:
        # the remote bounds each poll by the store timeout itself; the wait as a whole by timeout_s
        result = await self._remote_call(lambda: self._remote.wait_fill(cache_key, timeout_s, provider),
                                         changes_state=False, bounded=False)
        return None if isinstance(result, _Skip) else result

    async def add_spend(self, label: str, cost: float) -> None:
        if cost > 0:
            await self.record(Record(provider="", label=label, cost=cost))

    async def clear(self) -> None:
        local = self._local
        if local is not None:
            await local.clear()
        await self._remote_call(self._remote.clear, changes_state=True, bounded=False)

    # -- the usage ledger (issue 38): straight to the remote; during an outage its records are lost ----------

    async def usage_add(self, records: Sequence[UsageRecord], keep_s: float = DEFAULT_RETENTION_S) -> None:
        result = await self._remote_call(lambda: self._remote.usage_add(records, keep_s), changes_state=True)
        if isinstance(result, _Skip):
            raise StoreError(f"the {self.kind} store is unavailable: {len(records)} usage record(s) not kept")

    def usage_add_soon(self, records: Sequence[UsageRecord], keep_s: float = DEFAULT_RETENTION_S) -> bool:
        """Pipelined behind this process's earlier commands, not waited for (as records are); a failed reply
        starts an outage like any failed call."""
        nowait = getattr(self._remote, "usage_add_nowait", None)
        if nowait is None or self._down_since is not None:
            return False
        try:
            sent = nowait(records, keep_s)
        except Exception as exc:
            self._failed(exc)
            return False
        if sent is None:
            return False
        for reply in sent:
            reply.add_done_callback(self._check_sent)
        return True

    async def usage_read(self, since: float, until: float) -> list[UsageRecord]:
        result = await self._remote_call(lambda: self._remote.usage_read(since, until), changes_state=False,
                                         bounded=False)
        if isinstance(result, _Skip):
            raise StoreError(f"the {self.kind} store is unavailable: the usage ledger cannot be read now")
        return result

    async def usage_trim(self, before: float) -> int:
        result = await self._remote_call(lambda: self._remote.usage_trim(before), changes_state=True,
                                         bounded=False)
        return 0 if isinstance(result, _Skip) else result

    async def check(self) -> None:
        """The backend's own check (a write and a read), bounded by :data:`CHECK_TIMEOUT_S`: never the
        in-process fallback, so a store that is down fails it."""
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            await self._remote.check()

    async def aclose(self) -> None:
        try:
            await self._remote.aclose()
        except Exception:  # pragma: no cover - best effort
            logger.debug("closing the %s store failed", self.kind, exc_info=True)

    def close(self) -> None:
        try:
            self._remote.close()
        except Exception:  # pragma: no cover - best effort
            logger.debug("closing the %s store failed", self.kind, exc_info=True)
