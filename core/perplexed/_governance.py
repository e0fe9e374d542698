"""Governance at the edge of the chain: result cache, single flight, cool-downs, rate limits, budgets, spend.

The engine (``_engine``) asks :func:`plan` once per run; ``None`` means nothing is configured and the
run goes exactly as the seed's chain did (no store is touched). Otherwise each provider attempt is admitted
by :meth:`Governor.admit`, which asks the store for ONE decision before the call, and settled by
:meth:`Governor.settle`, which records ONE after it; :meth:`Governor.take_trial_candidate` names the provider
whose cool-down ends first, for the early trial of a chain that ended without an answer. Governance never
calls a provider nor back into the engine.

The rules themselves are pure (``_policy``); the state lives in a :class:`~perplexed.store.Store`. A store
failure never fails a search: it is logged and the call goes ahead as if nothing were configured.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import math
import os
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from . import _portal
from ._errors import ConfigError, InvalidRequest, ProviderError
from ._logs import get_logger
from ._models import Attempt, Outcome
from ._policy import (
    SPEND_WINDOWS,
    RateLimit,
    check_provider_settings,
    health_of,
    parse_rate_limit,
    parse_spend_limits,
)
from ._status import lookup
from .providers._base import CallableProvider, FunctionProvider
from .store._base import Admission, CachedAnswer, Decision, Record, Store, copy_hits
from .store.memory import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._options import ChainOptions
    from .providers import Provider


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

logger = get_logger("perplexed.governance")

STORE_ENV = "PERPLEXED_STORE"
DEFAULT_RATE_LIMIT_WAIT_MS = 1000
DEFAULT_COOLDOWN_S = 30.0

AttemptResult = tuple[Attempt, Any, BaseException | None]


class _Settings:
    """Process-wide governance defaults set by :func:`configure`, and the store."""

    def __init__(self) -> None:
        self.store: Store | None = None  # configured explicitly
        self.env_store: tuple[str, Store] | None = None  # opened from PERPLEXED_STORE (spec, store)
        self.default_store: Store | None = None  # the lazily created MemoryStore
        self.rate_limits: dict[str, RateLimit] = {}
        self.wait_ms: dict[str, int] | int | None = None
        self.cooldown_after: dict[str, int] | int | None = None
        self.cooldown_s: dict[str, float] | float | None = None
        self.spend_limits: tuple[tuple[float, float], ...] = ()
        self.version = 0
        self.active = False  # anything here that governs every search (limits, cool-downs)

    def changed(self) -> None:
        self.version += 1
        self.active = bool(self.rate_limits or self.cooldown_after or self.spend_limits)


_settings = _Settings()


def _per_name(value: Any, param: str, check: Callable[[Any, str], Any]) -> Any:
    """A scalar (every provider) or a dict keyed by registry names or labels; each value checked."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key.strip():
                raise ConfigError(f"{param}: keys must be provider names or labels, got {key!r}")
            out[key.strip()] = check(item, f"{param}[{key!r}]")
        return out
    return check(value, param)


def configure(
    *,
    store: Any = None,
    rate_limits: Mapping[str, str] | None = None,
    rate_limit_wait_ms: Any = None,
    cooldown_after: Any = None,
    cooldown_s: Any = None,
    spend_limits: Mapping[str, float] | None = None,
) -> None:
    """The governance part of :func:`perplexed.configure` (None = leave as is). Validates everything first."""
    from .store import open_store

    new_store = open_store(store) if store is not None else None
    limits = None
    if rate_limits is not None:
        if not isinstance(rate_limits, Mapping):
            raise ConfigError(f"rate_limits must be a dict like {{'brave': '1/s'}}, got {rate_limits!r}")
        limits = _per_name(rate_limits, "rate_limits", lambda v, p: parse_rate_limit(v, p))
    wait = None if rate_limit_wait_ms is None else _per_name(
        rate_limit_wait_ms, "rate_limit_wait_ms",
        lambda v, p: check_provider_settings(rate_limit_wait_ms=v, owner=p)["rate_limit_wait_ms"])
    after = None if cooldown_after is None else _per_name(
        cooldown_after, "cooldown_after",
        lambda v, p: check_provider_settings(cooldown_after=v, owner=p)["cooldown_after"])
    period = None if cooldown_s is None else _per_name(
        cooldown_s, "cooldown_s", lambda v, p: check_provider_settings(cooldown_s=v, owner=p)["cooldown_s"])
    spend = None if spend_limits is None else parse_spend_limits(spend_limits)
    # everything valid: apply
    if new_store is not None:
        old = _settings.store
        _settings.store = new_store
        if old is not None and old is not new_store:
            _close_quietly(old)
    if limits is not None:
        _settings.rate_limits = {k: v for k, v in limits.items() if v is not None}
    if wait is not None:
        _settings.wait_ms = wait
    if after is not None:
        _settings.cooldown_after = after
    if period is not None:
        _settings.cooldown_s = period
    if spend is not None:
        _settings.spend_limits = tuple((SPEND_WINDOWS[w], usd) for w, usd in spend.items())
    _settings.changed()


def reset() -> None:
    """Forget every governance setting and store (the next search opens a fresh default store)."""
    global _settings
    for store in (_settings.store, _settings.env_store[1] if _settings.env_store else None):
        if store is not None:
            _close_quietly(store)
    version = _settings.version
    _settings = _Settings()
    _settings.version = version + 1  # a provider's memoised settings (settings_for) are stale from now on
    _last_warning[0] = 0.0


def _close_quietly(store: Store) -> None:
    try:
        store.close()
    except Exception:  # a store failure never fails anything
        logger.debug("closing %r failed", store, exc_info=True)


def current_store() -> Store:
    """The store in use: :func:`configure`'s, else ``PERPLEXED_STORE``'s, else a per-process MemoryStore.

    Raises :class:`~perplexed.ConfigError` for an unknown ``PERPLEXED_STORE``.
    """
    if _settings.store is not None:
        return _settings.store
    spec = os.environ.get(STORE_ENV, "").strip()
    if spec and spec.lower() != "memory":
        cached = _settings.env_store
        if cached is not None and cached[0] == spec:
            return cached[1]
        from .store import open_store

        try:
            store = open_store(spec)
        except ConfigError as exc:
            raise ConfigError(f"{STORE_ENV}: {exc}") from None
        if cached is not None:
            _close_quietly(cached[1])
        _settings.env_store = (spec, store)
        return store
    if _settings.default_store is None:
        _settings.default_store = MemoryStore()
    return _settings.default_store


# -- per-provider settings ---------------------------------------------------------------------------------


class ProviderSettings:
    """A provider's effective governance settings (constructor, else configure()'s label, else its name)."""

    __slots__ = ("cooldown_after", "cooldown_s", "rate_limit", "wait_ms")

    def __init__(self, rate_limit: RateLimit | None, wait_ms: int | None, cooldown_after: int | None,
                 cooldown_s: float) -> None:
        self.rate_limit = rate_limit
        self.wait_ms = wait_ms
        self.cooldown_after = cooldown_after
        self.cooldown_s = cooldown_s

    @property
    def governed(self) -> bool:
        return self.rate_limit is not None or self.cooldown_after is not None

    def wait_bound_s(self) -> float:
        """How long, in total, an attempt may wait for a rate-limit slot: ``rate_limit_wait_ms`` when set;
        by default 1000 ms plus the limit's guard (so under ``"1/s"`` a call right after another waits for
        its slot instead of being skipped for the guard's few milliseconds)."""
        if self.wait_ms is not None:
            return self.wait_ms / 1000
        guard = _rate_guard(self.rate_limit.window_s) if self.rate_limit is not None else 0.0
        return DEFAULT_RATE_LIMIT_WAIT_MS / 1000 + guard


def _lookup(table: Any, provider: Provider) -> Any:
    if not isinstance(table, dict):
        return table
    if provider.label in table:
        return table[provider.label]
    return table.get(provider.name)


def settings_for(provider: Provider) -> ProviderSettings:
    """The effective settings of ``provider`` (memoised per provider until :func:`configure` changes)."""
    cached = getattr(provider, "_gov_cache", None)
    version = _settings.version
    if cached is not None and cached[0] == version:
        return cached[1]  # type: ignore[no-any-return]
    own: dict[str, Any] = getattr(provider, "_gov", None) or {}
    rate = own.get("rate_limit", _lookup(_settings.rate_limits, provider))
    wait = own.get("rate_limit_wait_ms", _lookup(_settings.wait_ms, provider))
    after = own.get("cooldown_after", _lookup(_settings.cooldown_after, provider))
    period = own.get("cooldown_s", _lookup(_settings.cooldown_s, provider))
    result = ProviderSettings(
        rate, None if wait is None else int(wait), after,
        DEFAULT_COOLDOWN_S if period is None else float(period),
    )
    try:
        provider._gov_cache = (version, result)
    except AttributeError:  # a provider class with __slots__ and no room: recompute next time
        pass
    return result


def _governed(provider: Provider) -> bool:
    return getattr(provider, "_gov_on", False) is True


# -- identities and keys (hashed; never a key in the clear) ---------------------------------------------------


def _digest(*parts: str) -> str:
    return hashlib.blake2b("\0".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def provider_identity(provider: Provider) -> str:
    """A stable hash naming ``provider`` across processes: registry name, base URL and a hash of its key
    (HTTP providers); label and the function's qualified name (function providers)."""
    if isinstance(provider, FunctionProvider):
        fn = provider._fn
        qual = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"
        return _digest("fn", provider.label, qual)
    if isinstance(provider, CallableProvider):
        cls = type(provider)
        return _digest("callable", provider.name, provider.label, f"{cls.__module__}.{cls.__qualname__}",
                       str(getattr(provider, "_base_url", "") or ""), str(getattr(provider, "path", "") or ""))
    try:
        base_url = provider.base_url
    except ConfigError:
        base_url = ""
    key = ""
    if provider.env_key:
        try:
            key = provider.api_key()
        except ConfigError:
            key = ""
    cached = provider.__dict__.get("_gov_identity")
    key_check = hash(key)  # the process's salted hash: tells a changed key, keeps no key
    if cached is not None and cached[0] == base_url and cached[1] == key_check:
        return cached[2]  # type: ignore[no-any-return]
    key_hash = hashlib.sha256(key.encode()).hexdigest() if key else ""
    identity = _digest("http", provider.name, base_url, key_hash)
    provider.__dict__["_gov_identity"] = (base_url, key_check, identity)
    return identity


_PROCESS = secrets.token_hex(8)  # object tokens of this process never meet another process's in a shared store
_tokens: dict[int, str] = {}
_kept: list[object] = []  # objects that cannot be weakly referenced: kept alive, so their id is never reused
_tokens_lock = threading.Lock()


def _object_token(obj: object) -> str:
    """A token naming ``obj`` itself (not its class, name or value) for as long as it lives in this process.
    A bound method is named by its object and its function (``x.search`` makes a new method object on each
    access: two wrappers of it still share)."""
    if inspect.ismethod(obj):
        return f"{_object_token(obj.__self__)}.{_object_token(obj.__func__)}"
    key = id(obj)
    with _tokens_lock:
        token = _tokens.get(key)
        if token is None:
            token = _tokens[key] = f"{_PROCESS}:{secrets.token_hex(8)}"
            try:  # forget the token when the object dies (before its id can be reused)
                weakref.finalize(obj, _tokens.pop, key, None)
            except TypeError:
                _kept.append(obj)
    return token


def cache_identity(provider: Provider) -> str:
    """The identity that names ``provider``'s cached answers; never shared by a label or a class alone.

    With ``cache_key`` set: the label and that key (the user's promise that the answers are interchangeable,
    shared across processes). A function, callable or retriever provider: the object doing the work (the wrapped
    function, the callable or retriever instance), in this process. An HTTP provider: :func:`provider_identity`
    (registry name, base URL and a hash of its key).
    """
    explicit = getattr(provider, "cache_key", None)
    if explicit is not None:
        return _digest("cache_key", provider.label, explicit)
    if isinstance(provider, CallableProvider):
        cached = provider.__dict__.get("_gov_cache_identity")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        identity = _digest("object", provider.name, provider.label, _object_token(provider._cache_subject))
        provider.__dict__["_gov_cache_identity"] = identity
        return identity
    return provider_identity(provider)


# -- the per-search governor ----------------------------------------------------------------------------------


def plan(op: Governed) -> Governor | None:
    """A :class:`Governor` for this run, or None when nothing is configured (the plain chain).

    Raises :class:`~perplexed.ConfigError` (before any call) when ``PERPLEXED_STORE`` is not a store.
    """
    chain = op.chain
    if chain.cache_ttl_s is None and chain.budget_usd is None and not _settings.active:
        for provider in op.members:
            if _governed(provider):
                break
        else:
            return None
    return Governor(op, _settings.store or current_store())


_flights: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[CachedAnswer | None]]] = (
    weakref.WeakKeyDictionary()
)
_background: set[asyncio.Task[Any]] = set()
_NO_STORE_SPEND = "the state store failed: spend limits cannot be checked, so paid calls are skipped"
_billed_cancels: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()


def cancel_billed(task: asyncio.Task[Any]) -> None:
    """Cancel ``task``, a call the engine abandons mid-flight (a hedged loser): its governed call is counted
    at the provider's list price in spend (a paid API may bill a request it already received)."""
    _billed_cancels.add(task)
    task.cancel()
_last_warning = [0.0]


def _store_failed(what: str, exc: BaseException) -> None:
    now = time.monotonic()
    if now - _last_warning[0] > 10:  # do not flood the log when the store is down
        _last_warning[0] = now
        logger.warning("state store %s failed (%s: %s); going ahead without it", what, type(exc).__name__, exc)
    else:
        logger.debug("state store %s failed", what, exc_info=True)


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

    __slots__ = ("_cooling", "chain", "op", "spent", "store")

    def __init__(self, op: Governed, store: Store) -> None:
        self.op = op
        self.chain = op.chain
        self.store = store
        self.spent = 0.0
        self._cooling: list[tuple[float, int, Provider]] = []

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
            parts = self.op.cache_parts(provider)
            if parts is not None:  # the first part names the operation: two never share a key
                key = _digest(parts[0], cache_identity(provider), *parts[1:])
        gate = Gate(provider, settings, identity, key, start)
        lookup = key
        if key is not None:  # in-process single flight: always on with the cache
            loop = asyncio.get_running_loop()
            flights = _flights.get(loop)
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
            over_call_budget = (
                chain.budget_usd is not None and price > 0 and self.spent + price > chain.budget_usd + 1e-12
            )
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
            self.spent += attempt.cost
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
            spend_limits=_settings.spend_limits,
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
            why = (f"price ${price:g} would exceed budget_usd ${self.chain.budget_usd:g} (spent ${self.spent:g})"
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


def _rate_guard(window_s: float) -> float:
    """Admissions are counted over a slightly longer window than the limit's (5 %, at most 250 ms), so the
    calls still keep the limit where the provider counts them, on arrival, after scheduling jitter."""
    return min(0.05 * window_s, 0.25)


def _replace(request: Admission, **changes: Any) -> Admission:
    from dataclasses import replace

    return replace(request, **changes)


# -- spend and status, for perplexed.spend(), answer() and the CLI ---------------------------------------------


def _window_s(window: object) -> float:
    if isinstance(window, str) and window in SPEND_WINDOWS:
        return SPEND_WINDOWS[window]
    known = ", ".join(repr(w) for w in SPEND_WINDOWS)
    raise InvalidRequest(f"window must be one of {known}, got {window!r}", param="window")


async def aspend(window: str = "day") -> dict[str, float]:
    """Spend per provider (the name attempts show) over the rolling ``window`` (``"minute"``, ``"hour"``,
    ``"day"`` = the last 24 hours, ``"week"``), across everything sharing the store; Agent API calls made by
    ``answer()`` are included as ``perplexity-agent``."""
    window_s = _window_s(window)
    store = current_store()
    try:
        totals = await store.spend(window_s)
    except Exception as exc:
        _store_failed("spend", exc)
        return {}
    return {label: round(amount, 10) for label, amount in sorted(totals.items()) if amount > 0}


def spend(window: str = "day") -> dict[str, float]:
    """Synchronous :func:`aspend`."""
    _window_s(window)
    return _portal.run(aspend, window)


async def arecord_spend(label: str, cost: float | None) -> None:
    """Record ``cost`` USD spent outside a chain under ``label`` (e.g. the Agent API under
    ``"perplexity-agent"``). Never raises for a store failure; ignores None / 0 / non-finite costs."""
    if cost is None or isinstance(cost, bool) or not isinstance(cost, int | float):
        return
    if not math.isfinite(cost) or cost <= 0:
        return
    try:
        await current_store().add_spend(label, float(cost))
    except Exception as exc:
        _store_failed("add_spend", exc)


def record_spend(label: str, cost: float | None) -> None:
    """Synchronous :func:`arecord_spend` (safe to call from any thread or inside a running event loop:
    inside one, the write is scheduled on it and this returns at once)."""
    if cost is None or isinstance(cost, bool) or not isinstance(cost, int | float) or not cost > 0:
        return
    try:
        store = current_store()
    except ConfigError as exc:
        _store_failed("open", exc)
        return
    if isinstance(store, MemoryStore):
        try:
            store.record_now(Record(provider="", label=label, cost=float(cost)))
        except Exception as exc:
            _store_failed("add_spend", exc)
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        _portal.run(arecord_spend, label, cost)
        return
    task = loop.create_task(arecord_spend(label, cost))
    _background.add(task)
    task.add_done_callback(_background.discard)


def note_spend(label: str, cost: float) -> None:
    """The plain chain's spend bookkeeping (nothing configured): add a paid attempt's cost to the store so
    ``perplexed.spend()`` reports it. Never blocks and never raises."""
    try:
        record_spend(label, cost)
    except Exception as exc:  # pragma: no cover - defensive
        _store_failed("spend", exc)


async def latency_p95(provider: Provider) -> float | None:
    """``provider``'s observed p95 latency in ms from the store (None: too few answers yet, or no store)."""
    try:
        return await current_store().latency_p95(provider_identity(provider))
    except Exception as exc:
        _store_failed("latency_p95", exc)
        return None


async def provider_status(provider: Provider) -> dict[str, Any]:
    """What ``perplexed providers`` shows: rate limit, cool-down state, window usage, spend today."""
    settings = settings_for(provider)
    rate = settings.rate_limit
    out: dict[str, Any] = {
        "rate_limit": rate.text if rate else None,
        "cooldown_after": settings.cooldown_after,
        "cooldown": "off" if settings.cooldown_after is None else "ok",
        "cooldown_ends_in_s": None,
        "window_calls": None,
        "spend_today": 0.0,
    }
    try:
        store = current_store()
        state = await store.state(provider_identity(provider), rate.window_s if rate else None)
        today = await store.spend(SPEND_WINDOWS["day"])
    except Exception as exc:
        _store_failed("state", exc)
        out["cooldown"] = "unknown"
        return out
    if settings.cooldown_after is not None or state.cooling_down:
        if state.cooling_down:
            ends = state.cooldown_ends_in_s or 0.0
            out["cooldown"] = ("trial in flight" if state.trial_in_flight
                               else "cooling down" if ends > 0 else "trial due")
            out["cooldown_ends_in_s"] = round(ends, 1)
        elif state.failures:
            out["cooldown"] = f"ok ({state.failures} failure{'s' if state.failures != 1 else ''})"
    if rate is not None:
        out["window_calls"] = state.window_calls
    out["spend_today"] = round(today.get(provider.label, 0.0), 6)
    return out
