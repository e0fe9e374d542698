"""The state-store interface: every method is ONE atomic decision (one transaction, one Redis round trip).

A store holds what the chain remembers across calls and processes: cached answers, cool-down state, the
rolling rate-limit windows, spend (reservations and settled costs) and recent latencies. The chain talks to
it through two decisions per provider call:

* :meth:`Store.admit` before the call: cache lookup, then cool-down, then rolling window, then spend
  reservation, decided and applied together, so concurrent callers (tasks, threads, processes, hosts)
  cannot all pass a limit that only one of them should pass.
* :meth:`Store.record` after it: the outcome (cool-down transition), the actual cost (settling the
  reservation), the cache write, the latency sample, and the release of a single-flight claim.

Everything a store receives is already hashed or public: ``provider`` is a hashed provider identity
(never a key), ``cache_key`` a hash. ``label`` is the name attempts show (used only to report spend).

The policy itself (window counting, cool-down transitions, spend arithmetic) is the pure functions of
``perplexed.policy._policy``; a store applies them atomically. A Redis store runs the same rules in Lua.

Errors: a store may raise anything; the chain logs it and carries on as if the store were absent (a store
failure never fails a search).
"""

from __future__ import annotations

import abc
import copy
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from perplexed._errors import _SECRETS, StoreError
from perplexed._models import Hit
from perplexed.policy._policy import MemberStats, member_update
from perplexed.store._ledger import DEFAULT_RETENTION_S, MemoryLedger, UsageRecord

__all__ = [
    "Admission",
    "CachedAnswer",
    "Decision",
    "FrozenFields",
    "FrozenHits",
    "MemberStats",
    "ProviderState",
    "ReadOnlyDict",
    "ReadOnlyList",
    "Record",
    "Store",
    "Verdict",
    "copy_hits",
    "decode_answer",
    "encode_answer",
    "freeze_hits",
    "scrub_secrets",
    "shared_hits",
    "snapshot_hits",
]

_PROBE = "perplexed-doctor"

Verdict = Literal["call", "cached", "cooling_down", "rate_limited", "over_budget", "fill_pending"]
"""What :meth:`Store.admit` decided:

* ``call``: go ahead (a rate-limit slot is taken, the price reserved under ``Decision.ticket``, and,
  when ``Decision.trial``, the cool-down's trial lease is held).
* ``cached``: ``Decision.answer`` is a live cached answer; nothing was counted or reserved.
* ``cooling_down`` / ``rate_limited`` / ``over_budget``: skip the provider (nothing taken);
  ``Decision.wait_s`` says how long until the cool-down ends / a window slot frees (0 when unknown).
* ``fill_pending``: single flight across processes: another caller holds the fill claim for this cache
  key; wait with :meth:`Store.wait_fill`, then admit again with ``claim_fill=False`` if it did not fill.
"""


@dataclass(slots=True)
class CachedAnswer:
    """A provider's ``ok`` answer as kept in the cache: its (finalised) hits and the provider's detail.

    Hits are frozen models. The memory store answers every reader with the same :class:`FrozenHits` (read-only
    containers: nobody can change them for the next reader); a persisting store decodes fresh ones.
    """

    hits: Sequence[Hit]
    detail: str | None = None


@dataclass(slots=True)
class Admission:
    """Everything :meth:`Store.admit` needs to decide, in the order it is checked (plain slotted classes,
    not frozen ones, because they are built on every governed attempt: treat them as read-only).

    * ``provider``: hashed provider identity (keys rate windows, cool-downs and latencies).
    * ``label``: the name attempts show; spend is reported under it.
    * ``cache_key`` (None = no cache lookup): a live entry wins before anything else is checked.
    * ``claim_fill``: on a cache miss, also claim the fill of ``cache_key`` for ``fill_lease_s`` seconds
      (single flight across processes; a store that cannot share may ignore it and always answer ``call``).
    * ``over_call_budget``: the per-call ``budget_usd`` already rules the call out: answer ``cached`` on a
      hit, else ``over_budget`` (the cache is consulted before budgets).
    * ``cooldown``: whether cool-downs apply to this provider (``cooldown_after`` is set).
    * ``trial_lease_s``: how long a trial call's lease lasts (the provider's time budget).
    * ``early_trial``: the end-of-chain early trial: take the trial lease even though the cool-down has not
      ended yet, unless a trial is already in flight.
    * ``rate_limit``: ``(limit, window_s)`` = at most ``limit`` admitted calls in any rolling ``window_s``.
    * ``price``: USD to reserve (the provider's list price; 0 = free: no reservation, no spend check).
    * ``spend_limits``: ``((window_s, usd), ...)`` that reserved + settled spend in each window must keep.
    """

    provider: str
    label: str
    cache_key: str | None = None
    claim_fill: bool = False
    fill_lease_s: float = 30.0
    over_call_budget: bool = False
    cooldown: bool = False
    trial_lease_s: float = 15.0
    early_trial: bool = False
    rate_limit: tuple[int, float] | None = None
    price: float = 0.0
    spend_limits: tuple[tuple[float, float], ...] = ()


@dataclass(slots=True)
class Decision:
    """The answer of :meth:`Store.admit` (see :data:`Verdict`)."""

    verdict: Verdict
    answer: CachedAnswer | None = None
    ticket: str | None = None
    """Id of the spend reservation to settle in :meth:`Store.record` (None when nothing was reserved)."""
    trial: bool = False
    """This call holds the cool-down's trial lease: its record decides whether the cool-down ends."""
    wait_s: float = 0.0
    fill_claimed: bool = False
    """This caller holds the single-flight fill claim of the cache key (released by ``record``)."""
    detail: str | None = None
    """Why, when the store wants to say (e.g. a degraded store skipping paid calls); put on the attempt."""


CALL = Decision("call")
"""The plain ``call`` decision (nothing taken), shared: treat decisions as read-only."""


@dataclass(slots=True)
class Record:
    """Everything :meth:`Store.record` applies, together, after a provider call (or for a bare spend).

    * ``provider`` / ``label``: as in :class:`Admission` (``provider`` may be ``""`` for a spend-only
      record such as the Agent API's cost under ``"perplexity-agent"``).
    * ``health``: ``answer`` / ``failure`` / ``neutral`` (``perplexed.policy._policy.health_of``); drives the
      cool-down when ``cooldown_after`` is set.
    * ``trial``: the call held the trial lease (``Decision.trial``).
    * ``retry_after_s``: a 429/503's ``Retry-After``: with ``cooldown_after`` set, cool down exactly that long.
    * ``ticket``: the reservation to settle with ``cost``; without one, a ``cost`` > 0 is added as spend.
    * ``cache_key`` / ``answer`` / ``ttl_s``: write the answer to the cache (only ``ok`` answers are sent).
    * ``release_fill``: release the single-flight claim on ``cache_key`` (whether or not it was filled).
    * ``latency_ms``: a latency sample for ``latency_p95`` (sent for answers only).
    """

    provider: str
    label: str
    health: Literal["answer", "failure", "neutral"] = "neutral"
    trial: bool = False
    cooldown_after: int | None = None
    cooldown_s: float = 30.0
    retry_after_s: float | None = None
    ticket: str | None = None
    cost: float = 0.0
    cache_key: str | None = None
    answer: CachedAnswer | None = None
    ttl_s: float | None = None
    release_fill: bool = False
    latency_ms: float | None = None


@dataclass(frozen=True, slots=True)
class ProviderState:
    """A provider's state as :meth:`Store.state` reports it (for ``perplexed providers``)."""

    failures: int = 0
    cooling_down: bool = False
    cooldown_ends_in_s: float | None = None
    """Seconds until the cool-down ends (None when not cooling down; 0 = a trial may go)."""
    trial_in_flight: bool = False
    window_calls: int = 0
    """Admitted calls inside the rolling window asked about (0 when no window was given)."""
    extra: dict[str, Any] = field(default_factory=dict)


class Store(abc.ABC):
    """Where the chain's memory lives. Implementations: :class:`~perplexed.store.MemoryStore` (one process),
    :class:`~perplexed.store.SQLiteStore` (processes on one machine), a Redis store (a fleet).

    Each method is one atomic step. All are coroutines; a store doing blocking I/O runs it off the event
    loop (other coroutines must not be delayed by more than about 10 ms). ``clock`` (seconds since the
    epoch) is injectable for tests; every timestamp a store keeps comes from it.
    """

    clock: Callable[[], float]

    #: whether other processes see this store's state (the CLI's default SQLite store does)
    shared: bool = False

    @abc.abstractmethod
    async def admit(self, request: Admission) -> Decision:
        """Decide, atomically, whether a provider call may start; take what it needs (slot, lease, money)."""

    @abc.abstractmethod
    async def record(self, record: Record) -> None:
        """Apply, atomically, what one call's end means: cool-down transition, spend settlement, cache
        write, latency sample, release of the fill claim."""

    @abc.abstractmethod
    async def spend(self, window_s: float) -> dict[str, float]:
        """Spend per label (reserved and settled) over the last ``window_s`` seconds."""

    @abc.abstractmethod
    async def latency_p95(self, provider: str) -> float | None:
        """The 95th percentile of ``provider``'s recent answer latencies in ms (None: too few samples)."""

    @abc.abstractmethod
    async def state(self, provider: str, window_s: float | None = None) -> ProviderState:
        """A read-only snapshot of ``provider``'s cool-down and, when ``window_s`` is given, window count."""

    def record_soon(self, record: Record) -> bool:
        """Optionally apply ``record`` without the caller waiting (a store with its own ordered worker, like
        the SQLite store, queues it there). Returns False when the caller must ``await record(...)`` itself
        (the default)."""
        return False

    async def wait_fill(self, cache_key: str, timeout_s: float, provider: str = "") -> CachedAnswer | None:
        """Wait (at most ``timeout_s``) for another process's fill of ``cache_key``; the answer, or None
        when the fill ended without one (or the claim expired). ``provider`` is the Admission's provider
        (a Redis cluster keys the cache under it). Default: no cross-process fills, None."""
        return None

    async def add_spend(self, label: str, cost: float) -> None:
        """Record spend made outside a chain (e.g. the Agent API's cost under ``perplexity-agent``)."""
        if cost > 0:
            await self.record(Record(provider="", label=label, cost=cost))

    # -- strategy="adaptive": one decayed counter record per chain member (see perplexed.policy._policy.member_update)

    async def member_stats(self, providers: Sequence[str]) -> dict[str, MemberStats]:
        """What the store has seen of each of ``providers`` (hashed identities; those never seen are left
        out). Default: kept in this process only (a store that shares state overrides both methods)."""
        seen: dict[str, MemberStats] = self.__dict__.setdefault("_members", {})
        return {p: seen[p] for p in providers if p in seen}

    async def record_member(self, provider: str, ok: bool, latency_ms: float | None, cost_usd: float) -> None:
        """Count one call of ``provider`` (``ok`` or not, its latency and cost), atomically."""
        seen: dict[str, MemberStats] = self.__dict__.setdefault("_members", {})
        seen[provider] = member_update(seen.get(provider), ok, latency_ms, cost_usd)

    async def check(self) -> None:
        """Prove the store works, raising whatever it raises (``perplexed doctor``): one write (a probe
        answer cached for 30 s under a random key) and one read of it through :meth:`admit`. A store with a
        degraded mode checks its backend itself, never its in-process fallback."""
        key = secrets.token_hex(16)
        probe = [Hit(url="https://perplexed.invalid/doctor-probe")]
        await self.record(Record(provider=_PROBE, label=_PROBE, cache_key=key, answer=CachedAnswer(probe), ttl_s=30.0))
        decision = await self.admit(Admission(provider=_PROBE, label=_PROBE, cache_key=key))
        hits = decision.answer.hits if decision.answer is not None else ()
        if decision.verdict != "cached" or [h.url for h in hits] != [probe[0].url]:
            raise StoreError(f"the store accepted a write but did not read it back (verdict {decision.verdict!r})")

    async def clear(self) -> None:  # noqa: B027 - optional
        """Forget everything (tests, ``perplexed cache clear``). Default: nothing to forget."""

    async def aclose(self) -> None:  # noqa: B027 - optional
        """Release connections/threads. The store must not be used afterwards."""

    def close(self) -> None:  # noqa: B027 - optional
        """Synchronous :meth:`aclose` for stores that can (best effort)."""

    # -- the usage ledger (issue 38): its own methods, apart from the decisions above -----------------------

    async def usage_add(self, records: Sequence[UsageRecord], keep_s: float = DEFAULT_RETENTION_S) -> None:
        """Append ledger records (see :mod:`perplexed.store._ledger`); records older than ``keep_s`` seconds
        may be trimmed on the way. Default: an in-process ledger (a third-party store shares nothing)."""
        self._usage_ledger().add(records, keep_s)

    def usage_add_soon(self, records: Sequence[UsageRecord], keep_s: float = DEFAULT_RETENTION_S) -> bool:
        """Optionally append without the caller waiting (a store with its own ordered worker queues it
        there); False when the caller must ``await usage_add(...)`` (the default)."""
        return False

    async def usage_read(self, since: float, until: float) -> list[UsageRecord]:
        """The ledger records with ``since <= ts < until`` (seconds since the epoch)."""
        return self._usage_ledger().read(since, until)

    async def usage_trim(self, before: float) -> int:
        """Drop the records older than ``before``; returns how many were dropped (when known)."""
        return self._usage_ledger().trim(before)

    def _usage_ledger(self) -> MemoryLedger:
        ledger: MemoryLedger | None = self.__dict__.get("_perplexed_usage")
        if ledger is None:
            ledger = self.__dict__["_perplexed_usage"] = MemoryLedger()
        return ledger


# -- a JSON form of cached answers for stores that persist them ---------------------------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


_hits_json: Any = None  # pydantic's serializer of list[Hit], built on first use


def encode_answer(answer: CachedAnswer) -> bytes:
    """A cached answer as compact JSON bytes (dates as ISO strings, default-valued fields left out), every
    registered secret replaced (see :func:`scrub_secrets`).

    pydantic's compiled serializer writes the hits (a third of the time of building dicts for ``json``); a
    value it cannot write (text that is not UTF-8, say) makes this fall back to ``json`` for the answer."""
    global _hits_json
    if _hits_json is None:
        from pydantic import TypeAdapter

        _hits_json = TypeAdapter(list[Hit])
    hits = answer.hits if isinstance(answer.hits, list) else list(answer.hits)
    try:
        body = _hits_json.dump_json(hits, exclude_none=True, exclude_defaults=True, fallback=_json_default,
                                    warnings=False)
    except Exception:
        body = _plain_json_hits(hits)
    detail = json.dumps(answer.detail).encode()
    return scrub_secrets(b'{"hits":' + body + b',"detail":' + detail + b"}")


def _plain_json_hits(hits: Sequence[Hit]) -> bytes:
    out = []
    for hit in hits:
        fields = {}
        for k, v in hit.__dict__.items():
            if v is None or v == "" or (not v and isinstance(v, list | dict)):
                continue
            fields[k] = v.model_dump(mode="json") if isinstance(v, BaseModel) else v
        out.append(fields)
    return json.dumps(out, separators=(",", ":"), default=_json_default).encode()


def scrub_secrets(payload: bytes) -> bytes:
    """``payload`` without any registered secret (an API key a provider echoed in a snippet, a store
    password): what a store persists never holds one (:func:`encode_answer` calls this)."""
    if not _SECRETS:
        return payload
    text = payload.decode()
    changed = False
    for secret in list(_SECRETS):
        if secret in text:
            text = text.replace(secret, "[REDACTED]")
            changed = True
    return text.encode() if changed else payload


def decode_answer(data: bytes | str) -> CachedAnswer:
    """The inverse of :func:`encode_answer` (fresh, validated Hit objects)."""
    payload = json.loads(data)
    return CachedAnswer(
        hits=[Hit.model_validate(item) for item in payload.get("hits", ())],
        detail=payload.get("detail"),
    )


_ATOMS = (str, int, float, bool, type(None), date, time, timedelta, bytes)
"""Values nobody can change in place: shared as they are, by snapshots and copies alike."""


def _read_only(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise TypeError(
        f"this {type(self).__mro__[1].__name__} is read-only: it is part of a cached hit, shared by every search "
        "the cache answers; change a copy (dict(hit.raw), list(hit.sources), copy.deepcopy(...), "
        "hit.model_copy(update=...))"
    )


class ReadOnlyDict(dict[Any, Any]):
    """A ``dict`` that refuses every change (``TypeError``): a cached hit's ``raw`` and the dicts inside it. It
    compares, serialises and reads as the dict it was made from; ``dict(d)`` and ``d.copy()`` are plain
    (shallow) copies, ``copy.deepcopy(d)`` a plain deep one."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:  # pickle: the same read-only dict
        return (ReadOnlyDict, (dict(self),))

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return {copy.deepcopy(k, memo): copy.deepcopy(v, memo) for k, v in self.items()}


class ReadOnlyList(list[Any]):
    """A ``list`` that refuses every change (``TypeError``): a cached hit's ``sources`` and the lists inside its
    ``raw``. ``list(x)`` and ``x.copy()`` are plain (shallow) copies, ``copy.deepcopy(x)`` a plain deep one."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = extend = insert = pop = remove = clear = sort = (
        reverse) = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReadOnlyList, (list(self),))

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]


class FrozenHits(tuple[Hit, ...]):
    """Hits as the in-process cache shares them (:func:`snapshot_hits`): frozen models whose containers are
    read-only, the same objects for every search the cache answers. ``copy_out`` is true when a value of a type
    not known to be immutable had to be deep-copied into the snapshot: every reader then gets copies."""

    copy_out: bool = False


class FrozenFields(tuple[Any, ...]):
    """Hits frozen for a cache write (:func:`freeze_hits`) but not yet rebuilt as hit objects: per hit, either
    a hit frozen already or ``(hit class, fields with read-only containers, fields set, extra, private)``.
    :func:`shared_hits` builds the :class:`FrozenHits` (on the entry's first read: an entry nobody reads never
    pays for the objects). ``copy_out`` as for :class:`FrozenHits`."""

    copy_out: bool = False


_ATOM_TYPES = frozenset({str, int, float, bool, type(None), date, datetime, time, timedelta, bytes})
"""The exact types of :data:`_ATOMS` (a set look-up: the common case of :func:`_frozen`, value by value)."""


def _frozen(value: Any, odd: list[bool]) -> Any:
    """``value`` as nobody can change it: dicts and lists become read-only ones (recursively), tuples and sets
    keep their type with frozen items; a value of another type is deep-copied and ``odd`` set.

    Built for speed on a cache miss: a container is copied in C and only its values that are not atoms are
    replaced (most of a provider's ``raw`` is strings and numbers); empty ones are shared singletons."""
    kind = value.__class__
    if kind in _ATOM_TYPES or kind is ReadOnlyDict or kind is ReadOnlyList:  # read-only all the way down
        return value
    if isinstance(value, dict):
        if not value:
            return _NO_DICT
        out = ReadOnlyDict(value)
        for k, v in value.items():
            if v.__class__ not in _ATOM_TYPES:
                dict.__setitem__(out, k, _frozen(v, odd))
        return out
    if isinstance(value, list):
        if not value:
            return _NO_LIST
        items = ReadOnlyList(value)
        for i, v in enumerate(value):
            if v.__class__ not in _ATOM_TYPES:
                list.__setitem__(items, i, _frozen(v, odd))
        return items
    if isinstance(value, _ATOMS):  # a subclass of one (a StrEnum member, an IntFlag)
        return value
    if kind is tuple:
        return tuple([_frozen(v, odd) for v in value])
    if kind is frozenset and all(isinstance(v, _ATOMS) for v in value):
        return value
    odd[0] = True
    try:
        return copy.deepcopy(value)
    except Exception:  # an object that cannot be copied: shared, as the caller made it
        return value


_NO_DICT = ReadOnlyDict()
_NO_LIST = ReadOnlyList()


def _is_frozen(hit: Hit) -> bool:
    fields = hit.__dict__
    page = fields["page"]
    return (fields["raw"].__class__ is ReadOnlyDict and fields["sources"].__class__ is ReadOnlyList
            and (page is None or (page.structured.__class__ is ReadOnlyDict
                                  and page.attempts.__class__ is ReadOnlyList)))


def _with_fields(hit: Hit, fields: dict[str, Any]) -> Hit:
    """A new hit of ``hit``'s class holding ``fields`` (no validation: they came from a valid hit)."""
    return _built((hit.__class__, fields, set(hit.__pydantic_fields_set__), hit.__pydantic_extra__,
                   hit.__pydantic_private__))


def _built(parts: tuple[type[Hit], dict[str, Any], set[str], Any, Any]) -> Hit:
    cls, fields, fields_set, extra, private = parts
    new = object.__new__(cls)
    setattr_ = object.__setattr__
    setattr_(new, "__dict__", fields)
    setattr_(new, "__pydantic_fields_set__", fields_set)
    setattr_(new, "__pydantic_extra__", extra)
    setattr_(new, "__pydantic_private__", private)
    return new


def freeze_hits(hits: Sequence[Hit]) -> FrozenFields | FrozenHits:
    """What an in-process cache keeps of ``hits``: their fields with ``raw`` and ``sources`` (and a fetched
    ``page``'s ``structured`` and ``attempts``) as read-only copies, so neither the caller that handed them in
    nor any reader can change what the cache holds (a hit is a frozen model already). :func:`shared_hits` makes
    the hit objects every reader shares. Hits already frozen come back as they are."""
    if type(hits) is FrozenHits or type(hits) is FrozenFields:
        return hits
    odd = [False]
    out: list[Any] = []
    for hit in hits:
        fields = hit.__dict__
        raw, sources, page = fields["raw"], fields["sources"], fields["page"]
        raw_kind, sources_kind = raw.__class__, sources.__class__
        if (raw_kind is ReadOnlyDict and sources_kind is ReadOnlyList
                and (page is None or (page.structured.__class__ is ReadOnlyDict
                                      and page.attempts.__class__ is ReadOnlyList))):  # _is_frozen(hit)
            out.append(hit)
            continue
        fields = fields.copy()
        # _frozen() of each, its commonest cases inline (an empty dict or list: the shared read-only one)
        if raw_kind is not ReadOnlyDict:
            fields["raw"] = _NO_DICT if raw_kind is dict and not raw else _frozen(raw, odd)
        if sources_kind is not ReadOnlyList:
            fields["sources"] = _NO_LIST if sources_kind is list and not sources else _frozen(sources, odd)
        if page is not None:
            fields["page"] = page.model_copy(update={"structured": _frozen(page.structured, odd),
                                                     "attempts": ReadOnlyList(page.attempts)})
        out.append((hit.__class__, fields, set(hit.__pydantic_fields_set__), hit.__pydantic_extra__,
                    hit.__pydantic_private__))
    frozen = FrozenFields(out)
    frozen.copy_out = odd[0]
    return frozen


def shared_hits(frozen: FrozenFields | FrozenHits) -> FrozenHits:
    """The hit objects of a :func:`freeze_hits` snapshot (built once; the cache keeps them for every reader)."""
    if type(frozen) is FrozenHits:
        return frozen
    hits = FrozenHits([_built(item) if type(item) is tuple else item for item in frozen])
    hits.copy_out = frozen.copy_out
    return hits


def snapshot_hits(hits: Sequence[Hit]) -> FrozenHits:
    """``hits`` frozen all the way down, for an in-process cache to share (:func:`freeze_hits`, then
    :func:`shared_hits`): frozen models whose containers are read-only copies."""
    return shared_hits(freeze_hits(hits))


def _copied(value: Any) -> Any:
    """A plain, mutable copy of a hit field's value that shares nothing mutable with it (JSON-like containers,
    read-only ones included, copied recursively; anything else deep-copied)."""
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, dict):
        return {k: v if isinstance(v, _ATOMS) else _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if isinstance(v, _ATOMS) else _copied(v) for v in value]
    try:
        return copy.deepcopy(value)
    except Exception:  # an object that cannot be copied: shared, as the caller made it
        return value


def copy_hits(hits: Sequence[Hit]) -> list[Hit]:
    """Copies of ``hits`` with ``raw`` and ``sources`` of their own, plain and mutable (what a single-flight
    follower gets, and a reader of a snapshot whose ``copy_out`` is set: never objects another search holds)."""
    out = []
    for hit in hits:
        fields = hit.__dict__.copy()
        fields["raw"] = _copied(fields["raw"])
        fields["sources"] = _copied(fields["sources"])
        out.append(_with_fields(hit, fields))
    return out
