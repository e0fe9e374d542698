"""Governance at the edge of the chain: result cache, single flight, cool-downs, rate limits, budgets, spend.

The engine (``_engine``) asks :func:`plan` once per run; ``None`` means nothing is configured and the
run goes exactly as the seed's chain did (no store is touched). Otherwise each provider attempt is admitted
by :meth:`Governor.admit`, which asks the store for ONE decision before the call, and settled by
:meth:`Governor.settle`, which records ONE after it; :meth:`Governor.take_trial_candidate` names the provider
whose cool-down ends first, for the early trial of a chain that ended without an answer. Governance never
calls a provider nor back into the engine.

The rules themselves are pure (``_policy``); the state lives in a :class:`~perplexed.store.Store`. A store
failure never fails a search: it is logged and the call goes ahead as if nothing were configured.

The settings and the store live in ``_gov_settings``, the identities in ``_gov_identity``, spend and status in
``_gov_spend``; every name is importable from here too (``_settings`` is the live object of ``_gov_settings``).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import TYPE_CHECKING, Any, Protocol

from perplexed._errors import ProviderError
from perplexed._models import Attempt, Outcome
from perplexed.engine import _gov_settings
from perplexed.engine._gov_identity import _PROCESS as _PROCESS
from perplexed.engine._gov_identity import _digest as _digest
from perplexed.engine._gov_identity import _kept as _kept
from perplexed.engine._gov_identity import _object_token as _object_token
from perplexed.engine._gov_identity import _tokens as _tokens
from perplexed.engine._gov_identity import _tokens_lock as _tokens_lock
from perplexed.engine._gov_identity import cache_identity, provider_identity
from perplexed.engine._gov_settings import DEFAULT_COOLDOWN_S as DEFAULT_COOLDOWN_S
from perplexed.engine._gov_settings import DEFAULT_RATE_LIMIT_WAIT_MS as DEFAULT_RATE_LIMIT_WAIT_MS
from perplexed.engine._gov_settings import STORE_ENV, configure, current_store, reset, settings_for
from perplexed.engine._gov_settings import ProviderSettings as ProviderSettings
from perplexed.engine._gov_settings import _background as _background
from perplexed.engine._gov_settings import _close_quietly as _close_quietly
from perplexed.engine._gov_settings import _governed as _governed
from perplexed.engine._gov_settings import _last_warning as _last_warning
from perplexed.engine._gov_settings import _lookup as _lookup
from perplexed.engine._gov_settings import _per_name as _per_name
from perplexed.engine._gov_settings import _rate_guard as _rate_guard
from perplexed.engine._gov_settings import _Settings as _Settings
from perplexed.engine._gov_settings import _store_failed as _store_failed
from perplexed.engine._gov_settings import logger as logger
from perplexed.engine._gov_spend import _window_s as _window_s
from perplexed.engine._gov_spend import arecord_spend as arecord_spend
from perplexed.engine._gov_spend import aspend, latency_p95, provider_status, record_spend, spend
from perplexed.engine._gov_spend import note_spend as note_spend
from perplexed.policy._policy import Purse, health_of
from perplexed.policy._status import lookup
from perplexed.store._base import Admission, CachedAnswer, Decision, Record, Store, copy_hits
from perplexed.store.memory import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Sequence

    from perplexed.policy._options import ChainOptions
    from perplexed.providers import Provider


def __getattr__(name: str) -> _Settings:
    """``_governance._settings`` is the live settings object of ``_gov_settings`` (:func:`reset` replaces it).
    Code in this module reads ``_gov_settings._settings``: a bare ``_settings`` here is undefined."""
    if name == "_settings":
        return _gov_settings._settings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Governed(Protocol):
    """What governance needs of the operation a chain runs (``_engine.Operation`` has all of it)."""

    chain: ChainOptions
    nothing: Any

    @property
    def members(self) -> Sequence[Provider]: ...

    def price(self, member: Provider) -> float: ...

    def cache_parts(self, member: Provider) -> tuple[str, ...] | None: ...

    def to_cache(self, answer: Any) -> Sequence[Any]: ...

    def from_cache(self, stored: Sequence[Any]) -> Any: ...

__all__ = [
    "STORE_ENV",
    "Governor",
    "aspend",
    "cache_identity",
    "configure",
    "current_store",
    "latency_p95",
    "plan",
    "provider_identity",
    "provider_status",
    "record_spend",
    "reset",
    "settings_for",
    "spend",
]

AttemptResult = tuple[Attempt, Any, BaseException | None]


# -- the per-search governor ----------------------------------------------------------------------------------


def plan(op: Governed, purse: Purse | None = None) -> Governor | None:
    """A :class:`Governor` for this run, or None when nothing is configured (the plain chain). ``purse``: the
    call's budget when the run is one step of a larger call (default: the run's own ``budget_usd``).

    Raises :class:`~perplexed.ConfigError` (before any call) when ``PERPLEXED_STORE`` is not a store.
    """
    chain = op.chain
    if purse is None:
        purse = Purse(chain.budget_usd)
    if chain.cache_ttl_s is None and purse.limit is None and not _gov_settings._settings.active:
        for provider in op.members:
            if _governed(provider):
                break
        else:
            return None
    return Governor(op, _gov_settings._settings.store or current_store(), purse)


_flights: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[CachedAnswer | None]]] = (
    weakref.WeakKeyDictionary()
)
# the table under _flights (its ``data``, never rebound): ``_flight_tables.get(weakref.ref(loop))`` is
# ``_flights.get(loop)`` without the WeakKeyDictionary's Python-level get() (a governed search and a cache hit)
_flight_tables: dict[weakref.ref[asyncio.AbstractEventLoop], dict[str, asyncio.Future[CachedAnswer | None]]] = (
    _flights.data  # type: ignore[attr-defined]
)
_NO_STORE_SPEND = "the state store failed: spend limits cannot be checked, so paid calls are skipped"
_billed_cancels: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()


def cancel_billed(task: asyncio.Task[Any]) -> None:
    """Cancel ``task``, a call the engine abandons mid-flight (a hedged loser): its governed call is counted
    at the provider's list price in spend (a paid API may bill a request it already received)."""
    _billed_cancels.add(task)
    task.cancel()


class Gate:
    """One admission (:meth:`Governor.admit`): ``done`` is a finished attempt (a cache hit, a skip, a
    single-flight wait that ended), else the engine makes the call and hands it to :meth:`Governor.settle`."""

    __slots__ = ("decision", "done", "ends", "filled", "flight", "flights", "identity", "key", "provider",
                 "settings", "start", "waited")

    def __init__(self, provider: Provider, settings: ProviderSettings, identity: str, key: str | None,
                 start: float) -> None:
        self.provider = provider
        self.settings = settings
        self.identity = identity
        self.key = key
        self.start = start
        self.done: AttemptResult | None = None
        self.decision: Decision | None = None
        self.waited = False
        self.ends = 0.0
        self.flight: asyncio.Future[CachedAnswer | None] | None = None
        self.flights: dict[str, asyncio.Future[CachedAnswer | None]] | None = None
        self.filled: CachedAnswer | None = None


class Governor:
    """Governance of one run: per-call budget, cooling-down providers seen, the store.

    The engine asks before each call (:meth:`admit`) and tells after it (:meth:`settle`, or :meth:`abandon`
    when the call was cancelled); governance never calls the provider nor back into the engine.
    """

    __slots__ = ("_cooling", "chain", "known", "op", "purse", "store")

    def __init__(self, op: Governed, store: Store, purse: Purse | None = None) -> None:
        self.op = op
        self.chain = op.chain
        self.store = store
        self.purse = Purse(op.chain.budget_usd) if purse is None else purse
        self._cooling: list[tuple[float, int, Provider]] = []
        # (member, its cache key) when the engine's cache-hit path computed it already (``_cache_hit``)
        self.known: tuple[Provider, str] | None = None

    @property
    def spent(self) -> float:
        """What the call has spent so far (every run sharing its :class:`Purse`)."""
        return self.purse.spent

    # -- one provider ----------------------------------------------------------------------------------------

    async def admit(self, provider: Provider, budget: float, capped: bool = False,
                    *, early: bool = False) -> Gate:
        """Admit a call of ``provider`` within ``budget`` seconds: a cache hit, another search's identical
        answer (single flight), a skip (cooling down, rate limited, over budget), or leave to call it."""
        start = time.perf_counter()
        chain = self.chain
        settings = settings_for(provider)
        identity = provider_identity(provider)
        key: str | None = None
        if chain.cache_ttl_s and not early:
            known = self.known
            if known is not None and known[0] is provider:
                key = known[1]
            else:
                parts = self.op.cache_parts(provider)
                if parts is not None:  # the first part names the operation: two never share a key
                    key = _digest(parts[0], cache_identity(provider), *parts[1:])
        gate = Gate(provider, settings, identity, key, start)
        lookup = key
        if key is not None:  # in-process single flight: always on with the cache
            loop = asyncio.get_running_loop()
            flights = _flight_tables.get(weakref.ref(loop))  # _flights.get(loop)
            if flights is None:
                flights = _flights[loop] = {}
            leader = flights.get(key)
            if leader is not None:
                try:
                    async with asyncio.timeout(budget):
                        shared = await asyncio.shield(leader)
                except TimeoutError:
                    gate.done = self._timeout(provider, budget, capped, start), self.op.nothing, None
                    return gate
                if shared is not None:  # the leader's answer, as copies only this search owns
                    gate.done = self._cached(provider, shared, start), self.op.from_cache(copy_hits(shared.hits)), None
                    return gate
                lookup = None  # the shared call was not ok: call the provider ourselves
            else:
                gate.flight = flights[key] = loop.create_future()
                gate.flights = flights
        try:
            price = self._price(provider)
            limit = self.purse.limit
            over_call_budget = limit is not None and price > 0 and self.spent + price > limit + 1e-12
            request = self._admission(provider, identity, settings, lookup, budget, early, price, over_call_budget)
            gate.ends = asyncio.get_running_loop().time() + budget
            decision, waited, finished = await self._admitted(
                provider, identity, settings, request, lookup, gate.ends, start, price, over_call_budget
            )
        except BaseException:
            self.release(gate)
            raise
        gate.decision, gate.waited = decision, waited
        if finished is not None:  # cached, or skipped
            gate.done = finished
            self.release(gate)
        return gate

    @staticmethod
    def remaining(gate: Gate) -> float:
        """What is left of the call's budget after its admission (waits included)."""
        remaining = gate.ends - asyncio.get_running_loop().time()
        return remaining if remaining > 0 else 0.001

    async def settle(self, gate: Gate, called: AttemptResult) -> AttemptResult:
        """Record a call the engine made after :meth:`admit`: health, actual cost, the answer to cache."""
        try:
            attempt, answer, failure = called
            if gate.waited:  # the attempt's duration includes the wait for a rate-limit slot (or another's fill)
                total_ms = int((time.perf_counter() - gate.start) * 1000)
                if total_ms > attempt.duration_ms:
                    attempt = attempt.model_copy(update={"duration_ms": total_ms})
            self.purse.spent += attempt.cost
            assert gate.decision is not None
            gate.filled = await self._record_call(
                gate.provider, gate.identity, gate.settings, gate.key, gate.decision, attempt, answer, failure
            )
            return attempt, answer, failure
        finally:
            self.release(gate)

    def abandon(self, gate: Gate) -> None:
        """The admitted call was cancelled: free what its admission holds (trial lease, fill claim, ticket).
        A call the engine cancelled mid-flight (:func:`cancel_billed`: a hedged loser) is counted at its list
        price, since a paid API may bill a request it received; a search cancelled by its caller at 0."""
        decision, settings = gate.decision, gate.settings
        if decision is not None:
            billed = self._price(gate.provider) if asyncio.current_task() in _billed_cancels else 0.0
            self._record_later(Record(
                provider=gate.identity, label=gate.provider.label, health="neutral", trial=decision.trial,
                cooldown_after=settings.cooldown_after, cooldown_s=settings.cooldown_s,
                ticket=decision.ticket, cost=billed, cache_key=gate.key, release_fill=decision.fill_claimed,
            ))
        self.release(gate)

    @staticmethod
    def release(gate: Gate) -> None:
        """End the gate's single flight (waiters get the cached answer, or ``None``: call yourselves)."""
        flight, flights = gate.flight, gate.flights
        if flight is None or flights is None:
            return
        gate.flight = None
        if not flight.done():
            flight.set_result(gate.filled)
        if flights.get(gate.key or "") is flight:
            del flights[gate.key or ""]

    def _price(self, provider: Provider) -> float:
        try:
            return float(self.op.price(provider))
        except Exception:  # a pricing bug: treat as free here; the attempt prices itself again
            return 0.0

    def _admission(
        self, provider: Provider, identity: str, settings: ProviderSettings, lookup: str | None, budget: float,
        early: bool, price: float, over_call_budget: bool,
    ) -> Admission:
        """The one question asked of the store before a call."""
        rate = settings.rate_limit
        return Admission(
            provider=identity,
            label=provider.label,
            cache_key=lookup,
            claim_fill=bool(lookup) and self.chain.cache_single_flight and self.store.shared,
            fill_lease_s=budget,
            over_call_budget=over_call_budget,
            cooldown=settings.cooldown_after is not None,
            trial_lease_s=budget,
            early_trial=early,
            rate_limit=None if rate is None else (rate.limit, rate.window_s + _rate_guard(rate.window_s)),
            price=price,
            spend_limits=_gov_settings._settings.spend_limits,
        )

    async def _admitted(
        self, provider: Provider, identity: str, settings: ProviderSettings, request: Admission,
        lookup: str | None, ends: float, start: float, price: float, over_call_budget: bool,
    ) -> tuple[Decision, bool, AttemptResult | None]:
        """Ask the store until the answer is final: (decision, waited, None) to call the provider, or a
        finished attempt (a cache hit, another worker's fill, or a skip)."""
        loop = asyncio.get_running_loop()
        store = self.store
        rate = settings.rate_limit
        waited = False
        # rate_limit_wait_ms bounds the TOTAL wait for a slot (every re-check included), from the first refusal
        wait_bound = settings.wait_bound_s()
        refused_at: float | None = None
        while True:
            decision = await self._admit(request)
            verdict = decision.verdict
            if verdict == "call" and over_call_budget:  # budget_usd holds whatever the store answers
                verdict = "over_budget"
            if verdict == "call":
                return decision, waited, None
            if verdict == "cached" and decision.answer is not None:
                return decision, waited, (
                    self._cached(provider, decision.answer, start), self.op.from_cache(decision.answer.hits), None
                )
            if verdict == "fill_pending" and lookup is not None:
                waited = True
                try:
                    answer = await store.wait_fill(lookup, max(0.0, ends - loop.time()), provider=identity)
                except Exception as exc:
                    _store_failed("wait_fill", exc)
                    answer = None
                if answer is not None:
                    return decision, waited, (
                        self._cached(provider, answer, start), self.op.from_cache(answer.hits), None
                    )
                request = _replace(request, cache_key=None, claim_fill=False)
                continue
            if verdict == "rate_limited":
                wait = decision.wait_s
                now = loop.time()
                if refused_at is None:
                    refused_at = now
                if (now - refused_at) + wait <= wait_bound and wait < ends - now:
                    waited = True
                    await asyncio.sleep(wait + 0.0005)
                    request = _replace(request, cache_key=None, claim_fill=False)
                    continue
                why = f"rate limit {rate.text if rate else ''} reached; next slot in {wait * 1000:.0f} ms"
                return decision, waited, (
                    self._skipped(provider, "rate_limited", start, decision, why), self.op.nothing, None
                )
            if verdict == "cooling_down":
                self._cooling.append((decision.wait_s, len(self._cooling), provider))
                why = f"cooling down after failures; {decision.wait_s:.1f} s left"
                return decision, waited, (
                    self._skipped(provider, "cooling_down", start, decision, why), self.op.nothing, None
                )
            # over_budget (or an unknown verdict from a third-party store: skip, never call blindly)
            why = (f"price ${price:g} would exceed budget_usd ${self.purse.limit:g} (spent ${self.spent:g})"
                   if over_call_budget else decision.detail if decision.detail == _NO_STORE_SPEND
                   else "price would exceed a spend limit")
            return decision, waited, (
            self._skipped(provider, "over_budget", start, decision, why), self.op.nothing, None
        )

    async def _record_call(
        self, provider: Provider, identity: str, settings: ProviderSettings, key: str | None,
        decision: Decision, attempt: Attempt, answer: Any, failure: BaseException | None,
    ) -> CachedAnswer | None:
        """Tell the store how the call went (health, actual cost, the answer to cache); returns what was
        cached. A store failure is logged, never raised."""
        outcome = attempt.outcome
        health = health_of(outcome.value, attempt.reason)
        retry_after = None
        if (isinstance(failure, ProviderError) and failure.retry_after is not None and failure.status is not None
                and lookup(failure.status, "api").retry_after):  # the status table: a 429 or a 503
            retry_after = failure.retry_after
        filled = (CachedAnswer(self.op.to_cache(answer), attempt.detail)
                  if (key is not None and outcome is Outcome.OK) else None)
        record = Record(
            provider=identity,
            label=provider.label,
            health=health,
            trial=decision.trial,
            cooldown_after=settings.cooldown_after,
            cooldown_s=settings.cooldown_s,
            retry_after_s=retry_after,
            ticket=decision.ticket,
            cost=attempt.cost,
            cache_key=key,
            answer=filled,
            ttl_s=self.chain.cache_ttl_s,
            release_fill=decision.fill_claimed,
            latency_ms=float(attempt.duration_ms) if health == "answer" else None,
        )
        if (
            settings.cooldown_after is not None or decision.ticket is not None or filled is not None
            or decision.fill_claimed or attempt.cost > 0 or health == "answer"
        ):
            store = self.store
            try:
                if type(store) is MemoryStore:
                    store.record_now(record)
                elif not store.record_soon(record):
                    await store.record(record)
            except Exception as exc:
                _store_failed("record", exc)
        return filled

    async def _admit(self, request: Admission) -> Decision:
        store = self.store
        try:
            if type(store) is MemoryStore:  # never blocks: skip the coroutine
                return store.admit_now(request)
            return await store.admit(request)
        except Exception as exc:
            _store_failed("admit", exc)
            # money fails closed: without the store, a paid call that budget_usd rules out, or that a spend
            # limit would have to allow, is skipped; everything else goes ahead as if nothing were configured
            if request.over_call_budget:
                return Decision("over_budget")
            if request.price > 0 and request.spend_limits:
                return Decision("over_budget", detail=_NO_STORE_SPEND)
            return Decision("call")

    def _record_later(self, record: Record) -> None:
        async def run() -> None:
            try:
                await self.store.record(record)
            except Exception as exc:
                _store_failed("record", exc)

        try:
            task = asyncio.get_running_loop().create_task(run())
        except RuntimeError:
            return
        _background.add(task)
        task.add_done_callback(_background.discard)

    # -- the end of the chain -----------------------------------------------------------------------------

    def take_trial_candidate(self) -> Provider | None:
        """The provider skipped as cooling down whose cool-down ends first (None when none was); the
        engine gives it the early trial call when the chain ended without an answer."""
        if not self._cooling:
            return None
        provider = min(self._cooling, key=lambda item: (item[0], item[1]))[2]
        self._cooling.clear()
        return provider

    # -- attempts that are not calls ----------------------------------------------------------------------

    @staticmethod
    def _cached(provider: Provider, answer: CachedAnswer, start: float) -> Attempt:
        # the validated constructor: pydantic's compiled validator is faster than model_construct's Python loop
        return Attempt(provider=provider.label, outcome=Outcome.OK, billable=False, cached=True,
                       duration_ms=int((time.perf_counter() - start) * 1000), detail=answer.detail)

    @staticmethod
    def _skipped(provider: Provider, reason: str, start: float, decision: Decision, why: str) -> Attempt:
        return Attempt(provider=provider.label, outcome=Outcome.SKIPPED, reason=reason,
                       duration_ms=int((time.perf_counter() - start) * 1000), error=why, detail=decision.detail)

    @staticmethod
    def _timeout(provider: Provider, budget: float, capped: bool, start: float) -> Attempt:
        why = "; capped by the chain deadline" if capped else ""
        return Attempt(provider=provider.label, outcome=Outcome.TIMEOUT, reason="timeout",
                       duration_ms=int((time.perf_counter() - start) * 1000),
                       error=f"no answer within {int(budget * 1000)} ms (waiting for an identical search{why})")


def _replace(request: Admission, **changes: Any) -> Admission:
    from dataclasses import replace

    return replace(request, **changes)
