"""The in-process store (the default): plain dicts behind one lock, so every method is atomic across the
threads and event loops of one process. Nothing is shared with other processes."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import Any

from perplexed._models import Page
from perplexed.policy._policy import (
    LATENCY_SAMPLES,
    SPEND_WINDOWS,
    CoolState,
    MemberStats,
    RateLimit,
    cool_admit,
    cool_record,
    member_update,
    p95,
    spend_allows,
    window_admit,
)
from perplexed.store._base import (
    CALL,
    Admission,
    CachedAnswer,
    Decision,
    FrozenFields,
    FrozenHits,
    ProviderState,
    ReadOnlyDict,
    ReadOnlyList,
    Record,
    Store,
    copy_hits,
    freeze_hits,
    shared_hits,
)

__all__ = ["MemoryStore"]

_KEEP_SPEND_S = max(SPEND_WINDOWS.values()) + 3600.0


class _Entry:
    __slots__ = ("amount", "label", "seq", "ts")

    def __init__(self, seq: int, ts: float, label: str, amount: float) -> None:
        self.seq, self.ts, self.label, self.amount = seq, ts, label, amount


class _Spend:
    """Spend entries in time order with a running sum per rolling window (O(1) amortised per query)."""

    __slots__ = ("entries", "first_seq", "sums", "tickets")

    def __init__(self) -> None:
        self.entries: deque[_Entry] = deque()
        self.first_seq = 0
        self.sums: dict[float, list[float]] = {}  # window_s -> [sum, next seq still inside]
        self.tickets: dict[str, _Entry] = {}

    def total(self, window_s: float, now: float) -> float:
        start = now - window_s
        state = self.sums.get(window_s)
        entries = self.entries
        if state is None:  # first query of this window: sum what it holds
            total = 0.0
            nxt = self.first_seq + len(entries)
            for entry in entries:
                if entry.ts > start:
                    total += entry.amount
                    nxt = min(nxt, entry.seq)
            self.sums[window_s] = [total, float(nxt)]
            return total
        seq = int(state[1])
        while seq - self.first_seq < len(entries):
            entry = entries[seq - self.first_seq]
            if entry.ts > start:
                break
            state[0] -= entry.amount
            seq += 1
        state[1] = float(seq)
        if state[0] < 1e-12:
            state[0] = max(state[0], 0.0)
        return state[0]

    def add(self, now: float, label: str, amount: float) -> str:
        seq = self.first_seq + len(self.entries)
        entry = _Entry(seq, now, label, amount)
        self.entries.append(entry)
        for state in self.sums.values():
            state[0] += amount
        # forget what no window can reach any more
        cutoff = now - _KEEP_SPEND_S
        while self.entries and self.entries[0].ts <= cutoff:
            old = self.entries.popleft()
            self.first_seq += 1
            self.tickets.pop(str(old.seq), None)
            for state in self.sums.values():
                if state[1] < self.first_seq:
                    state[1] = float(self.first_seq)
        ticket = str(seq)
        self.tickets[ticket] = entry
        return ticket

    def settle(self, ticket: str, cost: float, now: float) -> None:
        entry = self.tickets.pop(ticket, None)
        if entry is None:
            return
        delta = cost - entry.amount
        entry.amount = cost
        for window_s, state in self.sums.items():
            if entry.seq >= state[1] and entry.ts > now - window_s:
                state[0] += delta

    def per_label(self, window_s: float, now: float) -> dict[str, float]:
        start = now - window_s
        out: dict[str, float] = {}
        for entry in self.entries:
            if entry.ts > start and entry.amount:
                out[entry.label] = out.get(entry.label, 0.0) + entry.amount
        return out


DEFAULT_MAX_CACHE_BYTES = 64 * 1024 * 1024
"""The memory store's default cache size bound (64 MiB, estimated from the cached hits' text)."""


#: What an estimate counts for each hit beyond its values (its field dict and names) and for each value.
_HIT_BYTES = 512
_VALUE_BYTES = 64


_SCALARS = frozenset({type(None), int, float, bool})


def _answer_bytes(hits: FrozenFields | FrozenHits, detail: str | None) -> int:
    """A cheap estimate of what a cached answer holds: its strings' lengths plus a fixed cost per hit and
    per value (nested lists and dicts walked iteratively, never recursively). A hit's top-level values are
    mostly strings and numbers, read in one pass; only containers (``raw``, ``sources``, a fetched page's
    fields) are walked (:func:`_walk`). Exact-type tests first: this runs on every cache write."""
    size = 256 + (len(detail) if detail else 0)
    stack: list[Any] = []
    for hit in hits:
        fields = hit[1] if type(hit) is tuple else hit.__dict__
        size += _HIT_BYTES + _VALUE_BYTES * len(fields)
        for value in [v for v in fields.values() if v]:  # None, "", 0 and empty containers add nothing more
            kind = value.__class__
            if kind is str or kind is bytes:
                size += len(value)
            elif kind is ReadOnlyDict or kind is ReadOnlyList or kind is tuple:
                stack.append(value)
            elif kind is Page:
                stack.append(value.__dict__)
    return _walk(stack, size) if stack else size


def _walk(stack: list[Any], size: int) -> int:
    """``size`` plus :data:`_VALUE_BYTES` for every value under the containers in ``stack`` (and the length of
    each string), without recursion."""
    while stack:
        value = stack.pop()
        size += _VALUE_BYTES
        kind = value.__class__
        if kind is str or kind is bytes:
            size += len(value)
        elif kind in _SCALARS:
            continue
        elif kind is ReadOnlyDict or kind is dict:
            stack.extend(value.keys())
            stack.extend(value.values())
        elif kind is ReadOnlyList or kind is list or kind is tuple:
            stack.extend(value)
        elif isinstance(value, str | bytes):  # subclasses, then other containers
            size += len(value)
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend(value)
    return size


class MemoryStore(Store):
    """Per-process state: cache (LRU-bounded by ``max_cache_entries`` and ``max_cache_bytes``, default 64 MiB
    estimated from the cached text; an answer larger than an eighth of it is not cached), cool-downs, rate
    windows, spend, latencies. Cross-process single flight does not apply (the chain shares calls within a
    process)."""

    def __init__(self, *, clock: Callable[[], float] | None = None, max_cache_entries: int = 10_000,
                 max_cache_bytes: int = DEFAULT_MAX_CACHE_BYTES) -> None:
        self.clock = clock or time.time
        self.max_cache_entries = max_cache_entries
        self.max_cache_bytes = max_cache_bytes
        self._cache_bytes = 0
        self._lock = threading.Lock()
        # key -> (expires, frozen hits shared by every reader (built on the first read), detail, estimated bytes)
        self._cache: OrderedDict[str, tuple[float, FrozenFields | FrozenHits, str | None, int]] = OrderedDict()
        self._windows: dict[str, deque[float]] = {}
        self._cool: dict[str, CoolState] = {}
        self._spend = _Spend()
        self._latency: dict[str, deque[float]] = {}
        self._members: dict[str, MemberStats] = {}

    def __repr__(self) -> str:
        return "MemoryStore()"

    # -- the two decisions --------------------------------------------------------------------------------

    async def admit(self, request: Admission) -> Decision:
        return self.admit_now(request)

    def cached_now(self, key: str) -> CachedAnswer | None:
        """The live cached answer of ``key`` (its LRU place refreshed), else None: the first step of
        :meth:`admit_now`, alone (a cache hit consults nothing else: the engine's cache-hit path)."""
        found = self._hit_now(key)
        return None if found is None else CachedAnswer(found[0], found[1])

    def _hit_now(self, key: str) -> tuple[Sequence[Any], str | None] | None:
        """:meth:`cached_now` as ``(hits, detail)``, in one call (the engine's cache-hit path)."""
        with self._lock:
            return self._cached(key, self.clock())

    def _cached(self, key: str, now: float) -> tuple[Sequence[Any], str | None] | None:
        """The live entry of ``key`` at ``now`` as ``(hits, detail)`` (its LRU place refreshed), else None (an
        expired entry is dropped). Called with the lock held."""
        cache = self._cache
        entry = cache.get(key)
        if entry is None:
            return None
        if entry[0] > now:  # the same frozen hits for every reader (copies only for odd values)
            cache.move_to_end(key)  # least recently used goes first, not least recently filled
            hits = entry[1]
            if type(hits) is not FrozenHits:  # the entry's first read builds the hit objects
                hits = shared_hits(hits)
                cache[key] = (entry[0], hits, entry[2], entry[3])
            return (copy_hits(hits) if hits.copy_out else hits), entry[2]
        del cache[key]
        self._cache_bytes -= entry[3]
        return None

    def admit_now(self, request: Admission) -> Decision:
        """:meth:`admit` without the coroutine (the memory store never blocks)."""
        with self._lock:
            now = self.clock()
            key = request.cache_key
            if key is not None:
                found = self._cached(key, now)
                if found is not None:
                    return Decision("cached", answer=CachedAnswer(found[0], found[1]))
            if request.over_call_budget:
                return Decision("over_budget")
            provider = request.provider
            trial = False
            cool_state: CoolState | None = None
            if request.cooldown:
                state = self._cool.get(provider)
                if state is not None:
                    verdict, cool_state, wait = cool_admit(state, now, request.trial_lease_s, request.early_trial)
                    if verdict == "cooling_down":
                        return Decision("cooling_down", wait_s=wait)
                    trial = verdict == "trial"
            stamps: deque[float] | None = None
            if request.rate_limit is not None:
                limit, window_s = request.rate_limit
                stamps = self._windows.get(provider)
                if stamps is None:
                    stamps = self._windows[provider] = deque()
                start = now - window_s
                while stamps and stamps[0] <= start:
                    stamps.popleft()
                if len(stamps) >= limit:
                    allowed, wait = window_admit(stamps, now, RateLimit(limit, window_s, ""))
                    if not allowed:
                        return Decision("rate_limited", wait_s=wait)
            price = request.price
            ticket: str | None = None
            if price > 0 and request.spend_limits:
                spent = {w: self._spend.total(w, now) for w, _ in request.spend_limits}
                if not spend_allows(spent, price, request.spend_limits):
                    return Decision("over_budget")
            # everything passed: take the slot, the lease and the money together
            if stamps is not None:
                stamps.append(now)
            if trial and cool_state is not None:
                self._cool[provider] = cool_state
            if price > 0:
                ticket = self._spend.add(now, request.label, price)
            if ticket is None and not trial:
                return CALL
            return Decision("call", ticket=ticket, trial=trial)

    async def record(self, record: Record) -> None:
        self.record_now(record)

    def record_now(self, record: Record) -> None:
        """:meth:`record` without the coroutine."""
        with self._lock:
            now = self.clock()
            if record.cooldown_after is not None and record.provider:
                state = self._cool.get(record.provider)
                if state is not None or record.health == "failure":
                    new = cool_record(
                        state or CoolState(), now, record.health, trial=record.trial,
                        cooldown_after=record.cooldown_after, cooldown_s=record.cooldown_s,
                        retry_after=record.retry_after_s,
                    )
                    if new == CoolState():
                        self._cool.pop(record.provider, None)
                    else:
                        self._cool[record.provider] = new
            if record.ticket is not None:
                self._spend.settle(record.ticket, record.cost, now)
            elif record.cost > 0:
                self._spend.add(now, record.label, record.cost)
            if record.cache_key is not None and record.answer is not None and record.ttl_s:
                self._cache_put(record.cache_key, now + record.ttl_s, freeze_hits(record.answer.hits),
                                record.answer.detail)
            if record.latency_ms is not None and record.provider:
                samples = self._latency.get(record.provider)
                if samples is None:
                    samples = self._latency[record.provider] = deque(maxlen=LATENCY_SAMPLES)
                samples.append(record.latency_ms)

    def _cache_put(self, key: str, expires: float, snapshots: FrozenFields | FrozenHits, detail: str | None) -> None:
        cache = self._cache
        old = cache.pop(key, None)
        if old is not None:
            self._cache_bytes -= old[3]
        size = _answer_bytes(snapshots, detail)
        if size > self.max_cache_bytes // 8:  # one answer may not push out an eighth of the cache
            return
        cache[key] = (expires, snapshots, detail, size)
        self._cache_bytes += size
        while len(cache) > self.max_cache_entries or self._cache_bytes > self.max_cache_bytes:
            self._cache_bytes -= cache.popitem(last=False)[1][3]

    def seed_window(self, provider: str, stamps: list[float]) -> None:
        """Start ``provider``'s rolling window with these admission times (oldest first): the degraded mode of
        a shared store starts from what the process last knew, not from an empty window."""
        with self._lock:
            window = self._windows.setdefault(provider, deque())
            merged = sorted([*window, *stamps])
            window.clear()
            window.extend(merged)

    # -- reads --------------------------------------------------------------------------------------------

    async def spend(self, window_s: float) -> dict[str, float]:
        with self._lock:
            return self._spend.per_label(window_s, self.clock())

    async def latency_p95(self, provider: str) -> float | None:
        with self._lock:
            samples = self._latency.get(provider)
            return None if samples is None else p95(list(samples))

    async def state(self, provider: str, window_s: float | None = None) -> ProviderState:
        with self._lock:
            now = self.clock()
            cool = self._cool.get(provider, CoolState())
            calls = 0
            if window_s is not None:
                calls = sum(1 for s in self._windows.get(provider, ()) if s > now - window_s)
            return _state(cool, now, calls)

    async def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._cache_bytes = 0
            self._windows.clear()
            self._cool.clear()
            self._spend = _Spend()
            self._latency.clear()
            self._members.clear()

    # -- strategy="adaptive" ------------------------------------------------------------------------------

    async def member_stats(self, providers: Sequence[str]) -> dict[str, MemberStats]:
        return self.member_stats_now(providers)

    def member_stats_now(self, providers: Sequence[str]) -> dict[str, MemberStats]:
        """:meth:`member_stats` without the coroutine (the records are immutable: no lock needed to read)."""
        seen = self._members
        return {p: seen[p] for p in providers if p in seen}

    async def record_member(self, provider: str, ok: bool, latency_ms: float | None, cost_usd: float) -> None:
        self.record_member_now(provider, ok, latency_ms, cost_usd)

    def record_member_now(self, provider: str, ok: bool, latency_ms: float | None, cost_usd: float) -> None:
        """:meth:`record_member` without the coroutine."""
        with self._lock:
            self._members[provider] = member_update(self._members.get(provider), ok, latency_ms, cost_usd)


def _state(cool: CoolState, now: float, calls: int) -> ProviderState:
    open_until = cool.open_until
    return ProviderState(
        failures=cool.failures,
        cooling_down=open_until is not None,
        cooldown_ends_in_s=None if open_until is None else max(0.0, open_until - now),
        trial_in_flight=cool.trial_until is not None and cool.trial_until > now,
        window_calls=calls,
    )
