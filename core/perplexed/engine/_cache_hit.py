"""A cache hit's own path (issue 35): the in-process cache answered before the engine is set up.

A cache hit consults nothing but the cache (the store answers ``cached`` before cool-downs, rate limits, budgets
and spend limits: see :class:`~perplexed.store.Admission`) and spends nothing, so when the first member of a
sequential chain has a live entry in a :class:`~perplexed.store.MemoryStore`, the search's answer is known
before any of the engine's set-up (the governor, the admission, the per-call timer and budget). :func:`lookup`
gives it the way the engine would have: the same ``cached`` attempt, the same result (the cached hits, a list of
the result's own), the same usage-ledger line (what the hit saved), log line, attempt event and
``on_attempt`` call, in that order. Everything else goes to the engine, with the cache key computed here
(:class:`Probe`), so a miss pays for it once.

Not taken (the engine runs as before) when the answer could differ or the engine's extras are on: a strategy
other than ``sequential``, a quality floor (``min_hits``, ``accept``), a cap across searches (``evaluate``'s
``budget_usd``), a run that is one step of a larger call (its own deadline or purse), tracing (spans), a store
other than the memory store (a round trip of its own), and an identical search in flight (single flight: its
followers get the leader's answer, as copies).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import TYPE_CHECKING, Any

from perplexed import _otel, telemetry
from perplexed._models import Attempt, Result, _cached_attempt, _result_of
from perplexed.engine import _engine, _gov_settings, _governance, _usage
from perplexed.engine._gov_identity import _digest, cache_identity
from perplexed.policy import _ledger
from perplexed.store.memory import MemoryStore

if TYPE_CHECKING:
    from perplexed.engine._engine import AttemptCallback, Operation
    from perplexed.providers import Provider

__all__ = ["Probe", "lookup"]


class Probe:
    """What :func:`lookup` found: the result of a cache hit, else (``result`` None) the cache key it computed
    for ``member`` (None: no key), which the engine's admission of that member uses instead of computing it
    again."""

    __slots__ = ("key", "member", "result")

    def __init__(self, result: Result | None, member: Provider | None = None, key: str | None = None) -> None:
        self.result = result
        self.member = member
        self.key = key


_NONE = Probe(None)
_new_probe = object.__new__
_ATTEMPTS: dict[tuple[str, str | None], Attempt] = {}
_KEYS: dict[tuple[str, ...], str] = {}


def lookup(op: Operation[Any], on_attempt: AttemptCallback | None, loop: asyncio.AbstractEventLoop | None) -> Probe:
    """The search's result when its first member's answer is in the in-process cache (see the module docstring
    for when this path is not taken). ``loop``: the loop whose single flights count (the running loop, or the
    portal's for a synchronous search). Raises what the engine would before any call (an unopenable
    ``PERPLEXED_STORE``)."""
    # Written for a cache hit's cost (issue 35): a hit usually runs right after other work (an HTTP call, the
    # caller's own code) has pushed this path out of the CPU's caches, where every function call and every
    # object touched counts several times over; the engine's helpers are inlined here where they are one line.
    chain = op.chain
    if (not chain.cache_ttl_s or chain.strategy != "sequential" or chain.min_hits is not None
            or chain.accept is not None or not op.members):
        return _NONE
    if _ledger.current() is not None or telemetry._get_tracer() is not None:
        return _NONE
    start = time.perf_counter()
    store = _gov_settings._settings.store or _governance.current_store()
    if type(store) is not MemoryStore:
        return _NONE
    member = op.members[0]
    parts = op.cache_parts(member)
    if parts is None:
        return _NONE
    identity = cache_identity(member)  # every time: a changed API key is another identity
    key_of = (identity, *parts)
    key = _KEYS.get(key_of)
    if key is None:  # the digest of what names the answer, remembered (a pure function of it)
        if len(_KEYS) >= 4096:
            _KEYS.clear()
        key = _KEYS[key_of] = _digest(parts[0], identity, *parts[1:])
    if loop is not None:  # _flights.get(loop), without the WeakKeyDictionary's Python-level get()
        flights = _governance._flight_tables.get(weakref.ref(loop))
        if flights and key in flights:  # an identical search is calling: its followers wait for it
            return Probe(None, member, key)
    found = store._hit_now(key)
    if found is None:
        return Probe(None, member, key)
    hits, detail = found
    label = member.label
    duration_ms = int((time.perf_counter() - start) * 1000)
    if duration_ms:
        attempt = _cached_attempt(label, duration_ms, detail)
    else:  # the usual case: one frozen attempt per (label, detail), shared as the cached hits are
        attempt_key = (label, detail)
        attempt = _ATTEMPTS.get(attempt_key)  # type: ignore[assignment]
        if attempt is None:
            if len(_ATTEMPTS) >= 1024:
                _ATTEMPTS.clear()
            attempt = _ATTEMPTS[attempt_key] = _cached_attempt(label, 0, detail)
    # the engine's record(): the usage-ledger line (what the hit saved), the log line, the event, on_attempt
    try:
        price = float(op.price(member))
    except Exception:  # a pricing bug: nothing saved
        price = 0.0
    name = op.name
    now: float | None = None
    try:  # _usage.entry()'s line for a cache hit (_usage.operation_of and default_tag, inline)
        operation = (_usage._operation.get() or "search") if name == "search" else name
        tag = chain.tag or _usage._settings.tag or ""
        now = store.clock()
    except Exception as exc:  # pragma: no cover - defensive (a store's clock), as the engine's ledger()
        _usage._failed(1, exc)
    saved = price if now is not None else 0.0
    _otel.record_metrics(name, attempt)
    if telemetry.listening() or _engine.logger.isEnabledFor(logging.DEBUG):  # announce()'s own two tests
        _engine.announce(("perplexed", name, "attempt"), attempt, op.subject_key, op.subject)
    if on_attempt is not None:
        try:
            on_attempt(attempt)
        except Exception:
            _engine.logger.exception("on_attempt callback raised; ignored")
    result = _result_of(op.subject, label, op.from_cache(hits), [attempt], saved)
    if now is not None:
        _usage.write_hit_in_process(store, now, operation, label, tag, float(attempt.duration_ms), price)
    probe = _new_probe(Probe)  # Probe(result), without a Python-level __init__ call
    probe.result, probe.member, probe.key = result, None, None
    return probe
