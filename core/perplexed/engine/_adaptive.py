"""``strategy="adaptive"``: the chain ordered per call by what the state store has seen of each member.

The pure policy (:func:`adaptive_order`, tested table-style) ranks the members from :class:`MemberView`\\ s;
the glue below reads the members' records from the store (:meth:`~perplexed.store.Store.member_stats`),
builds the views, and counts each call afterwards (:meth:`~perplexed.store.Store.record_member`). The engine
then runs the members in that order exactly as the sequential strategy does (cool-downs, rate limits, budgets,
the deadline and single flight apply per attempt, unchanged).

Rules of the order (each member's ``score`` is shown in :attr:`perplexed.Result.route`):

1. **Health.** A member's recent success rate ``s`` is its decayed share of ``ok`` calls (``empty``, ``error``,
   ``timeout`` and ``insufficient`` count against it; see ``perplexed.policy._policy.member_update``), starting from
   a prior of :data:`PRIOR_CALLS` calls at the routing file's success rate (1 - its failure rate; 1 without
   one). A member whose ``s`` is more than :data:`HEALTH_MARGIN` below the best member's goes behind the
   healthy ones.
2. **Quality floor.** With a routing file, a member's expected quality is its measured quality scaled by its
   health now against its health then (``q * s / s_prior``); a member below the file's ``min_quality`` goes
   behind those at or above it.
3. **Value.** Otherwise the higher score first: expected quality per dollar, discounted by latency:
   ``score = q * s / (cost + COST_UNIT_USD) / (1 + latency_ms / LATENCY_UNIT_MS)`` (cost: the member's decayed
   cost per call, else the routing file's, else its list price). A free member therefore goes before a paid one
   of the same quality. Scores within 5 % of each other are ties (so latency jitter does not reorder the
   chain), and ties keep the chain's order.
4. **Exploration.** With probability ``explore`` (default 0.05) one of the other members (uniformly) is put
   first, so a demoted member is tried again and re-learned when it recovers; never a paid member that
   ``budget_usd`` (the search's, or an evaluation's) would refuse, nor a paid member while spend limits are
   configured. ``seed`` makes the draws
   reproducible (they depend on the seed and the members' call counts only).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perplexed._models import Attempt, Outcome, Result, RouteStep
from perplexed.engine import _gov_settings, _governance
from perplexed.policy import _ledger
from perplexed.policy._policy import MemberStats
from perplexed.providers import CallableProvider, Provider
from perplexed.store.memory import MemoryStore

if TYPE_CHECKING:
    from perplexed.policy._routing import ProviderPrior, Routing

__all__ = [
    "COST_UNIT_USD",
    "HEALTH_MARGIN",
    "LATENCY_UNIT_MS",
    "PRIOR_CALLS",
    "MemberView",
    "Ranked",
    "adaptive_order",
    "plan",
    "with_route",
]

HEALTH_MARGIN = 0.15
PRIOR_CALLS = 2.0
COST_UNIT_USD = 0.001
LATENCY_UNIT_MS = 1000.0
_SCORE_BUCKET = math.log(1.05)  # scores within 5 % of each other are ranked as equal


# --- pure policy ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class MemberView:
    """What the order of one member depends on: its chain ``position`` and ``label``, its record in the store
    (None: never called), its routing prior (None: not in the file), the file's ``min_quality``, its list
    ``price`` and whether exploration may put it first."""

    position: int
    label: str
    stats: MemberStats | None = None
    prior: ProviderPrior | None = None
    min_quality: float | None = None
    price: float = 0.0
    explorable: bool = True


@dataclass(slots=True)
class Ranked:
    """A member's place in the order: chain position, label, score, whether exploration put it first."""

    position: int
    label: str
    score: float
    explored: bool = False


def _success(view: MemberView) -> tuple[float, float]:
    """(the success rate now, the prior's)."""
    prior = view.prior
    base = 1.0 if prior is None else min(1.0, max(0.05, 1.0 - prior.failure_rate))
    stats = view.stats
    if stats is None:
        return base, base
    return (stats.ok + base * PRIOR_CALLS) / (stats.calls + PRIOR_CALLS), base


def _key(view: MemberView, best: float, success: float, base: float) -> tuple[bool, bool, float, int, float, str]:
    """The sort key: (unhealthy, below the quality floor, -score bucket, chain position, score, label)."""
    prior = view.prior
    stats = view.stats
    quality = 1.0 if prior is None or prior.quality is None else prior.quality
    expected = quality * success / base
    if expected > 1.0:
        expected = 1.0
    if stats is not None and stats.total:
        cost = stats.cost_usd
        latency = stats.latency_ms
    elif prior is not None:
        cost, latency = prior.cost_per_query_usd, None
    else:
        cost, latency = view.price, None
    if latency is None:
        latency = prior.latency_p50_ms if prior is not None and prior.latency_p50_ms is not None else 0.0
    score = expected / ((cost if cost > 0 else 0.0) + COST_UNIT_USD) / (
        1.0 + (latency if latency > 0 else 0.0) / LATENCY_UNIT_MS)
    below = (view.min_quality is not None and prior is not None and prior.quality is not None
             and expected < view.min_quality - 1e-12)
    # scores within a few per cent are a tie (the chain's order decides): latency jitter does not reorder
    bucket = math.floor(math.log(score) / _SCORE_BUCKET) if score > 0 else -math.inf
    return success < best - HEALTH_MARGIN, below, -bucket, view.position, score, view.label


def adaptive_order(views: Sequence[MemberView], draw: float, pick: float, explore: float) -> list[Ranked]:
    """The members in the order to try them. ``draw`` and ``pick`` are uniform in [0, 1): exploration happens
    when ``draw < explore`` and puts the ``pick``-th of the other explorable members first."""
    if not views:
        return []
    measured = [_success(v) for v in views]
    best = max([m[0] for m in measured])
    # the keys end in the (unique) chain position: the views themselves are never compared
    keyed = sorted([_key(v, best, m[0], m[1]) for v, m in zip(views, measured)])  # noqa: B905
    ranked = [Ranked(k[3], k[5], k[4]) for k in keyed]
    if draw < explore and len(ranked) > 1:
        explorable = {v.position for v in views if v.explorable}
        others = [i for i, r in enumerate(ranked[1:], start=1) if r.position in explorable]
        if others:
            chosen = ranked.pop(others[min(len(others) - 1, int(pick * len(others)))])
            ranked.insert(0, Ranked(chosen.position, chosen.label, chosen.score, True))
    return ranked


# --- the store and the engine --------------------------------------------------------------------------------


def _identity(member: Provider) -> str:
    if isinstance(member, CallableProvider):  # a function provider's identity never changes: computed once
        known = member.__dict__.get("_adaptive_identity")
        if known is None:
            known = member.__dict__["_adaptive_identity"] = _governance.provider_identity(member)
        return known
    return _governance.provider_identity(member)


async def plan(members: Sequence[Provider], chain: Any, price: Callable[[Provider], float]
               ) -> tuple[list[Ranked], Callable[[Attempt], None]]:
    """The order of this call, and the function that counts each of its attempts in the store. A store
    failure never fails the search: the members are then ordered as if never seen."""
    identities = [_identity(m) for m in members]
    store: Any = None
    stats: dict[str, MemberStats] = {}
    try:
        store = _gov_settings.current_store()
        if type(store) is MemoryStore:
            stats = store.member_stats_now(identities)
        else:
            stats = await store.member_stats(identities)
    except Exception as exc:
        _governance._store_failed("member_stats", exc)
    routing: Routing | None = chain.routing
    priors = routing.providers if routing is not None else None
    floor = routing.min_quality if routing is not None else None
    budget = chain.budget_usd
    spend_limited = bool(_gov_settings._settings.spend_limits)
    run_cap = _ledger.current()  # perplexed.evaluate's budget_usd, when this search runs inside one
    priced = budget is not None or spend_limited or run_cap is not None  # the list price matters for everyone
    views = []
    now = time.monotonic()
    get = stats.get
    for position, member in enumerate(members):
        record = get(identities[position])
        if priors is None and not priced and record is not None:  # the common case: nothing else to look up
            views.append(MemberView(position, member.label, record))
            continue
        prior = None
        if priors is not None:
            prior = priors.get(member.label) or priors.get(member.name)
        listed = _listed(member, price, now) if record is None or priced else 0.0
        explorable = True
        if priced and (listed > 0 or (record is not None and record.cost_usd > 0)
                       or (prior is not None and prior.cost_per_query_usd > 0)):  # a paid member
            explorable = not (spend_limited or (budget is not None and max(listed, 1e-12) > budget)
                              or (run_cap is not None and not run_cap.fits(max(listed, 1e-12), run_cap.spent)))
        views.append(MemberView(position, member.label, record, prior, floor, listed, explorable))
    if chain.seed is None:
        draw, pick = random.random(), random.random()
    else:
        rng = random.Random(chain.seed * 1_000_003 + sum(s.total for s in stats.values()))
        draw, pick = rng.random(), rng.random()
    return adaptive_order(views, draw, pick, chain.explore), _learner(store, members, identities)


_PRICE_FRESH_S = 1.0


def _listed(member: Provider, price: Callable[[Provider], float], now: float) -> float:
    """``member``'s list price for the ordering, read at most once a second (a configured price reads the
    environment; the attempt itself always prices its call afresh)."""
    memo = member.__dict__.get("_adaptive_price")
    if memo is not None and memo[0] > now:
        return memo[1]  # type: ignore[no-any-return]
    try:
        listed = float(price(member))
    except Exception:  # a pricing bug: free here, the attempt prices itself again
        listed = 0.0
    member.__dict__["_adaptive_price"] = (now + _PRICE_FRESH_S, listed)
    return listed


def _learner(store: Any, members: Sequence[Provider], identities: list[str]) -> Callable[[Attempt], None]:
    def learn(attempt: Attempt) -> None:
        outcome = attempt.outcome
        if store is None or attempt.cached or outcome in _NOT_CALLS:
            return
        label = attempt.provider
        index = 0
        for member in members:
            if member.label == label:
                break
            index += 1
        else:
            return
        identity = identities[index]
        ok = outcome is Outcome.OK
        latency = float(attempt.duration_ms)
        try:
            if type(store) is MemoryStore:
                store.record_member_now(identity, ok, latency, attempt.cost)
                return
            task = asyncio.get_running_loop().create_task(_record(store, identity, ok, latency, attempt.cost))
        except Exception as exc:
            _governance._store_failed("record_member", exc)
            return
        _governance._background.add(task)
        task.add_done_callback(_governance._background.discard)

    return learn


_NOT_CALLS = (Outcome.SKIPPED, Outcome.DEADLINE, Outcome.CANCELLED)  # a tuple: identity checks, no hashing


async def _record(store: Any, identity: str, ok: bool, latency: float, cost: float) -> None:
    try:
        await store.record_member(identity, ok, latency, cost)
    except Exception as exc:
        _governance._store_failed("record_member", exc)


def with_route(result: Any, ranked: Sequence[Ranked], attempts: Sequence[Attempt]) -> Any:
    """``result`` with its :attr:`~perplexed.Result.route`: the members tried, in the order tried."""
    if not isinstance(result, Result):
        return result
    tried = {a.provider for a in attempts if a.outcome is not Outcome.DEADLINE}
    route = [RouteStep(r.label, r.score if math.isfinite(r.score) else 0.0, r.explored)
             for r in ranked if r.label in tried]
    result.__pydantic_private__["_route"] = route  # type: ignore[index]  # (what `result._route = ...` sets)
    return result
