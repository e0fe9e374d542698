"""Search strategies (``sequential``, ``hedged``, ``merge``) and the quality floor (``min_hits``, ``accept``).

The plain sequential chain without a floor stays in :func:`perplexed.chain.run` (its fast path); everything
else runs here. The policy is pure and tested table-style:

* :func:`judge`: the quality floor's verdict on one answer (``None`` = accepted, else the reason);
* :func:`best_answer`: which answer is the result when no provider answered ``ok`` (the most hits among the
  insufficient answers, the earliest in chain order on a tie; else the first empty answer);
* :func:`fuse`: reciprocal rank fusion (k = 60) of several providers' ranked hits, de-duplicated by
  normalised URL, renumbered from 1, each hit listing every provider that returned it and its rank there;
* :func:`hedge_delay_ms`: when the next provider starts beside the current one.

The runners (:func:`run`) start each provider call as a task through the chain's per-provider attempt, so a
hedged or merged call is timed, cancelled, costed and recorded exactly like a sequential one.

Rules of the hedged strategy:

1. The first provider starts. When the most recently started provider has not answered after its hedge
   delay (``hedge_after_ms``, or its observed p95 latency under ``"auto"``), the next one starts too; when it
   fails with an outcome that moves the chain on, the next one starts at once (as the sequential chain would).
2. The first attempt whose outcome would stop a sequential chain ends the hedged one: an ``ok`` answer wins;
   an empty or insufficient answer that does not move on ends it with the best answer so far. An error that
   does not move on stops further starts; providers already running may still answer.
3. The other calls still running are cancelled (their connections closed) and recorded as ``cancelled``
   attempts: cost 0, not billable (a paid API may still bill a request it received).
4. Budgets and the deadline apply to every call as in the sequential chain; providers not started before
   the deadline are recorded as ``deadline``.

Rules of the merge strategy:

1. The first ``merge_providers`` providers that are configured (a key and URL where they need one; function
   providers always) are called at once. Their ``ok`` answers are fused (:func:`fuse`); the result's
   ``provider`` is the answering providers joined by commas in chain order; its cost the sum of all attempts.
2. The quality floor judges the merged answer: when it falls short, the answering attempts are recorded as
   ``insufficient``.
3. When no member of the group answered (or the merged answer is insufficient), and every outcome moves the
   chain on, the other providers run as a sequential fallback, in chain order.

``Result.attempts`` lists the attempts in chain order; ``on_attempt`` sees each as it is recorded.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from . import _governance, telemetry
from . import chain as _chain  # chain imports this module lazily (in run), so it is complete here
from ._errors import InvalidRequest, UpstreamError, redact
from ._models import Attempt, Hit, Outcome, Result
from .providers import CallableProvider, Provider
from .store._base import Record

if TYPE_CHECKING:
    from .chain import AttemptCallback, Search

__all__ = [
    "DEFAULT_HEDGE_AFTER_MS",
    "RRF_K",
    "Candidate",
    "best_answer",
    "fuse",
    "hedge_delay_ms",
    "judge",
    "observed_p95",
    "run",
    "uses_strategies",
    "validate",
]

logger = logging.getLogger("perplexed.chain")

RRF_K = 60
"""The constant of reciprocal rank fusion: a hit at rank r in one provider's list scores 1 / (RRF_K + r)."""

DEFAULT_HEDGE_AFTER_MS = 1000
"""``hedge_after_ms="auto"`` before the store has enough latency samples of a provider (five: see
``perplexed._policy.LATENCY_MIN_SAMPLES``; the p95 is over its last 100)."""


_Called = tuple[Attempt, list[Hit], BaseException | None]
"""What one provider call gives: its attempt, its hits, and the provider's failure (if any)."""


# --- pure policy --------------------------------------------------------------------------------------------


def judge(hits: Sequence[Hit], min_hits: int | None, accept: Callable[..., Any] | None,
          result: Callable[[], Result]) -> str | None:
    """The quality floor's verdict on one answer: ``None`` when it passes, else why it does not.

    ``min_hits``: fewer hits than this is ``"min_hits"``. ``accept(result)`` (called only when ``min_hits``
    passed, with the :class:`Result` that answer would be) returns ``True`` to accept, ``False`` (or another
    false value) to reject as ``"rejected"``, or a non-empty string: the reason. ``result`` builds that Result
    lazily. An exception raised by ``accept`` propagates (the runner turns it into an ``error`` attempt).
    """
    if min_hits is not None and len(hits) < min_hits:
        return "min_hits"
    if accept is None:
        return None
    verdict = accept(result())
    if isinstance(verdict, str):
        return verdict.strip() or "rejected"
    return None if verdict else "rejected"


@dataclass(frozen=True, slots=True)
class Candidate:
    """An answer that may become the result when no provider answers ``ok``: where it stands in the chain
    (``order``), who gave it, and its hits (none for an empty answer)."""

    order: int
    provider: str
    hits: list[Hit]
    outcome: Outcome


def best_answer(candidates: Sequence[Candidate]) -> Candidate | None:
    """The result when no provider answered ``ok``: the insufficient answer with the most hits (the earliest
    in chain order on a tie), else the earliest empty answer, else ``None``."""
    best: Candidate | None = None
    for cand in candidates:
        if cand.outcome is Outcome.INSUFFICIENT:
            if (
                best is None
                or best.outcome is not Outcome.INSUFFICIENT
                or len(cand.hits) > len(best.hits)
                or (len(cand.hits) == len(best.hits) and cand.order < best.order)
            ):
                best = cand
        elif cand.outcome is Outcome.EMPTY and (
            best is None or (best.outcome is Outcome.EMPTY and cand.order < best.order)
        ):
            best = cand
    return best


def fuse(ranked: Sequence[tuple[str, Sequence[Hit]]], limit: int, k: int = RRF_K) -> list[Hit]:
    """Reciprocal rank fusion of several providers' hit lists (given in chain order).

    A hit's score is the sum over the lists that hold it of ``1 / (k + rank)`` (rank = its 1-based position
    there). Hits are de-duplicated by normalised URL; the first list (in chain order) that holds a hit gives
    its fields, and empty fields are filled from the others. Ties are broken by the best rank, then chain
    order. The top ``limit`` hits come back as copies numbered from 1, with ``score`` the fused score (the
    providers' own scores are not comparable) and ``sources`` listing every ``{"provider": ..., "rank": ...}``
    that returned them (in chain order). The inputs are not modified.
    """
    entries: dict[str, list[Any]] = {}  # key -> [score, best rank, first list, first pos, base hit, sources, extra]
    for list_no, (provider, hits) in enumerate(ranked):
        seen: set[str] = set()
        for rank, hit in enumerate(hits, start=1):
            key = _chain._norm_url(hit.url)
            if key in seen:  # a provider listing the same page twice: its best rank counts
                continue
            seen.add(key)
            entry = entries.get(key)
            if entry is None:
                entries[key] = [1.0 / (k + rank), rank, list_no, rank, hit, [{"provider": provider, "rank": rank}], {}]
                continue
            entry[0] += 1.0 / (k + rank)
            entry[1] = min(entry[1], rank)
            entry[5].append({"provider": provider, "rank": rank})
            base: Hit = entry[4]
            fill = entry[6]
            for field in _FILLED_FIELDS:
                if not getattr(base, field) and field not in fill and getattr(hit, field):
                    fill[field] = getattr(hit, field)
    ordered = sorted(entries.values(), key=lambda e: (-e[0], e[1], e[2], e[3]))
    out: list[Hit] = []
    for n, entry in enumerate(ordered[:limit], start=1):
        base = entry[4]
        out.append(base.model_copy(update={
            **entry[6], "id": n, "score": round(entry[0], 6),
            "provider": base.provider or entry[5][0]["provider"], "sources": list(entry[5]),
        }))
    return out


_FILLED_FIELDS = ("title", "snippet", "content", "published", "updated")


def hedge_delay_ms(setting: int | Literal["auto"], observed_p95_ms: float | None) -> float:
    """How long the current provider runs alone before the next one starts too.

    An integer setting is used as is; ``"auto"`` uses the provider's observed p95 latency, or
    :data:`DEFAULT_HEDGE_AFTER_MS` while there are too few samples (``observed_p95_ms`` is ``None``).
    """
    if setting != "auto":
        return float(setting)
    if observed_p95_ms is None or not math.isfinite(observed_p95_ms) or observed_p95_ms < 0:
        return float(DEFAULT_HEDGE_AFTER_MS)
    return float(observed_p95_ms)


def uses_strategies(prepared: Search) -> bool:
    """Whether a prepared search needs this module (a strategy other than ``sequential``, or a floor)."""
    chain = prepared.chain
    return chain.strategy != "sequential" or chain.min_hits is not None or chain.accept is not None


def validate(prepared: Search) -> None:
    """Checks across chain and search options: ``min_hits`` cannot exceed ``max_results``."""
    check_floor(prepared.chain.min_hits, prepared.options.max_results)


def check_floor(min_hits: int | None, max_results: int) -> None:
    """:class:`InvalidRequest` naming ``min_hits`` when it exceeds ``max_results`` (it could never be met)."""
    if min_hits is not None and min_hits > max_results:
        raise InvalidRequest(f"min_hits={min_hits} can never be met with max_results={max_results}",
                             param="min_hits")


def is_configured(provider: Provider) -> bool:
    """Whether ``provider`` can be called (a function provider always can; others need their key and URL)."""
    if isinstance(provider, CallableProvider):
        return True
    try:
        return bool(provider.configured)
    except Exception:  # a provider's own configuration check must not break the chain
        return False


# --- observed latencies (for hedge_after_ms="auto") -------------------------------------------------------


async def observed_p95(provider: Provider) -> float | None:
    """``provider``'s observed p95 latency in ms from the state store (``None``: too few samples yet)."""
    return await _governance.latency_p95(provider)


async def _sample(provider: Provider, ms: float) -> None:
    """Add a latency sample of ``provider`` to the state store (a store failure is logged, never raised).

    A hedged search samples its answers (governed calls are sampled by governance already) and the elapsed
    time of its cancelled calls: a lower bound of their latency, without which the losers' long latencies
    would never be sampled and the p95 would drift down, hedging ever earlier.
    """
    try:
        store = _governance.current_store()
        await store.record(Record(provider=_governance.provider_identity(provider), label=provider.label,
                                  latency_ms=ms))
    except Exception as exc:
        _governance._store_failed("record", exc)


# --- the runners ------------------------------------------------------------------------------------------


async def run(prepared: Search, on_attempt: AttemptCallback | None = None) -> Result:
    """Run a prepared search under its strategy and quality floor."""
    runner = _Runner(prepared, on_attempt)
    strategy = prepared.chain.strategy
    with telemetry.span(
        "perplexed.search",
        {
            "perplexed.query": prepared.query,
            "perplexed.providers": ",".join(p.label for p in prepared.providers),
            "perplexed.strategy": strategy,
        },
    ) as chain_span:
        runner.span = chain_span
        if strategy == "hedged":
            result = await runner.hedged()
        elif strategy == "merge":
            result = await runner.merge()
        else:
            result = await runner.sequential(list(enumerate(prepared.providers)))
        if result is None:
            result = await runner.early_trial()
        return result if result is not None else runner.fallback()


class _Runner:
    """The state of one run: attempts (with their chain positions), answers that may become the result."""

    def __init__(self, prepared: Search, on_attempt: AttemptCallback | None) -> None:
        self.prepared = prepared
        self.chain = prepared.chain
        self.on_attempt = on_attempt
        self.loop = asyncio.get_running_loop()
        self.deadline = self.loop.time() + self.chain.deadline_ms / 1000
        self.provider_budget = self.chain.provider_timeout_ms / 1000
        self.recorded: list[tuple[int, Attempt]] = []
        self.candidates: list[Candidate] = []
        self.last_error: BaseException | None = None
        self.span: Any = None
        self.reached_end = True  # False once an outcome that does not move on stopped the chain
        self.in_flight = 0.0  # prices of the calls running (budget_usd), and how many there are
        self.in_flight_n = 0
        # governance (cache, cool-downs, rate limits, budgets): None when nothing is configured
        self.gov = _governance.plan(prepared, _chain._attempt)

    # -- recording and results

    @property
    def attempts(self) -> list[Attempt]:
        """The attempts so far, in chain order (stable: ties keep the order they were recorded in)."""
        return [a for _, a in sorted(self.recorded, key=lambda item: item[0])]

    def record(self, order: int, attempt: Attempt) -> None:
        sink: list[Attempt] = []
        _chain._record(sink, attempt, self.prepared.query, self.on_attempt)
        self.recorded.append((order, attempt))

    def result(self, provider: str, hits: list[Hit]) -> Result:
        attempts = self.attempts
        if self.span is not None:
            _chain._annotate(self.span, provider, attempts)
        return Result(query=self.prepared.query, provider=provider, hits=hits, attempts=attempts)

    def fallback(self) -> Result:
        """The result when no provider answered ``ok``: the best answer so far, else all_providers_failed."""
        best = best_answer(self.candidates)
        if best is not None:
            return self.result(best.provider, best.hits)
        attempts = self.attempts
        if self.span is not None:
            _chain._annotate(self.span, None, attempts)
        raise UpstreamError("all_providers_failed", attempts) from _chain._safe_cause(self.last_error)

    async def early_trial(self) -> Result | None:
        """Governance's early trial when the chain reached its end with no answer at all (as the sequential
        chain does): the cooling-down provider whose cool-down ends first is called now."""
        if self.gov is None or not self.reached_end or self.candidates:
            return None
        remaining = self.deadline - self.loop.time()
        trial = await self.gov.early_trial(min(remaining, self.provider_budget), remaining < self.provider_budget)
        if trial is None:
            return None
        attempt, hits, exc = trial
        if exc is not None:
            self.last_error = exc
        order = next((i for i, p in enumerate(self.prepared.providers) if p.label == attempt.provider), 0)
        attempt = self.floor(attempt.provider, attempt, hits)
        self.record(order, attempt)
        if attempt.outcome is Outcome.OK:
            return self.result(attempt.provider, hits)
        self.note(order, attempt, hits)
        return None

    def deadline_attempt(self, provider: Provider) -> Attempt:
        return Attempt(provider=provider.label, outcome=Outcome.DEADLINE,
                       error="chain deadline passed before this provider was called")

    # -- one provider call

    async def call(self, provider: Provider) -> _Called:
        """One provider call within its budget (capped by the deadline), through the chain's (governed)
        attempt: a hedged or merged call is cached, cooled down, rate limited and budgeted like any other."""
        remaining = self.deadline - self.loop.time()
        capped = remaining < self.provider_budget
        budget = remaining if capped else self.provider_budget
        gov = self.gov
        if gov is not None:
            limit = self.chain.budget_usd
            if limit is None:
                return await gov.attempt(provider, budget, capped)
            # budget_usd across concurrent calls: the prices of the calls in flight count as spent (the
            # check and the reservation happen in one step, before the first await: no two calls both pass)
            try:
                price = float(provider.price(self.prepared.options))
            except Exception:  # a pricing bug: the attempt prices itself again
                price = 0.0
            if price > 0 and self.in_flight_n and gov.spent + self.in_flight + price > limit + 1e-12:
                why = (f"price ${price:g} would exceed budget_usd ${limit:g} "
                       f"(spent ${gov.spent:g}, ${self.in_flight:g} in flight)")
                return Attempt(provider=provider.label, outcome=Outcome.SKIPPED, reason="over_budget",
                               error=why), [], None
            self.in_flight += price
            self.in_flight_n += 1
            try:
                return await gov.attempt(provider, budget, capped)
            finally:
                self.in_flight_n -= 1
                self.in_flight = self.in_flight - price if self.in_flight_n else 0.0
        called = await _chain._attempt(provider, self.prepared, budget, capped)
        if called[0].cost > 0:
            _governance.note_spend(called[0].provider, called[0].cost)
        return called

    def floor(self, provider: str, attempt: Attempt, hits: list[Hit], pending: Sequence[Attempt] = ()) -> Attempt:
        """Apply the quality floor to an ``ok`` attempt: the same attempt, ``insufficient`` with a reason, or
        ``error`` (reason ``accept``) when ``accept`` raised."""
        if attempt.outcome is not Outcome.OK or (self.chain.min_hits is None and self.chain.accept is None):
            return attempt
        query = self.prepared.query

        def as_result() -> Result:
            return Result(query=query, provider=provider, hits=list(hits),
                          attempts=[*self.attempts, *pending, attempt])

        try:
            reason = judge(hits, self.chain.min_hits, self.chain.accept, as_result)
        except Exception as exc:
            self.last_error = exc
            logger.error("accept raised:\n%s", redact("".join(traceback.format_exception(exc)).rstrip()))
            return attempt.model_copy(update={
                "outcome": Outcome.ERROR, "reason": "accept",
                "error": redact(f"accept raised {type(exc).__name__}: {exc}".rstrip(": ")),
            })
        if reason is None:
            return attempt
        return attempt.model_copy(update={"outcome": Outcome.INSUFFICIENT, "reason": reason})

    def note(self, order: int, attempt: Attempt, hits: list[Hit]) -> None:
        """Keep an empty or insufficient answer as a possible result."""
        if attempt.outcome is Outcome.INSUFFICIENT:
            self.candidates.append(Candidate(order, attempt.provider, hits, Outcome.INSUFFICIENT))
        elif attempt.outcome is Outcome.EMPTY:
            self.candidates.append(Candidate(order, attempt.provider, [], Outcome.EMPTY))

    # -- sequential (with a floor, or the fallback of a merge)

    async def sequential(self, members: Sequence[tuple[int, Provider]]) -> Result | None:
        """The seed's chain over ``members`` (chain position, provider), with the quality floor. Returns the
        result of an ``ok`` answer, or ``None`` when the chain ended without one (see :meth:`fallback`)."""
        for order, provider in members:
            if self.deadline - self.loop.time() <= 0:
                self.record(order, self.deadline_attempt(provider))
                continue
            attempt, hits, exc = await self.call(provider)
            if exc is not None:
                self.last_error = exc
            attempt = self.floor(provider.label, attempt, hits)
            self.record(order, attempt)
            await self.observe(provider, attempt)
            if attempt.outcome is Outcome.OK:
                return self.result(provider.label, hits)
            self.note(order, attempt, hits)
            if not self.chain.moves_on(attempt.outcome.value):
                self.reached_end = False
                return None
        return None

    async def observe(self, provider: Provider, attempt: Attempt) -> None:
        """Sample a hedged call's latency for ``"auto"``: a cancelled call's elapsed time always, an answer
        when governance did not (nothing configured); cached answers are not latencies."""
        if self.chain.strategy != "hedged" or attempt.cached:
            return
        if attempt.outcome is Outcome.CANCELLED or (self.gov is None and attempt.outcome in _ANSWERS):
            await _sample(provider, float(attempt.duration_ms))

    # -- hedged

    async def hedged(self) -> Result | None:
        providers = self.prepared.providers
        tasks: dict[asyncio.Task[_Called], tuple[int, float]] = {}
        next_order = 0  # the next provider to start
        current = -1  # the most recently started one
        hedge_at = math.inf  # when the next one starts beside it
        stopped = False  # an error that does not move on: start nothing more

        async def launch() -> None:
            """Start the next provider (recording ``deadline`` for those the deadline leaves no time for)."""
            nonlocal next_order, current, hedge_at
            while next_order < len(providers):
                order, next_order = next_order, next_order + 1
                provider = providers[order]
                now = self.loop.time()
                if self.deadline - now <= 0:
                    self.record(order, self.deadline_attempt(provider))
                    continue
                tasks[asyncio.create_task(self.call(provider))] = (order, time.perf_counter())
                current = order
                setting = self.chain.hedge_after_ms
                observed = await observed_p95(provider) if setting == "auto" else None
                hedge_at = now + hedge_delay_ms(setting, observed) / 1000
                return
            hedge_at = math.inf

        winner: tuple[str, list[Hit]] | None = None
        ended = False  # an answer that would stop a sequential chain, or a winner
        try:
            await launch()
            while tasks and not ended:
                timeout: float | None = None
                if not stopped and next_order < len(providers) and hedge_at != math.inf:
                    timeout = max(0.0, hedge_at - self.loop.time())
                done, _ = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                if not done:  # the newest call is slow: start the next provider beside it
                    await launch()
                    continue
                for task in sorted(done, key=lambda t: tasks[t][0]):
                    order, _started = tasks.pop(task)
                    provider = providers[order]
                    attempt, hits, exc = task.result()
                    if exc is not None:
                        self.last_error = exc
                    attempt = self.floor(provider.label, attempt, hits)
                    self.record(order, attempt)
                    await self.observe(provider, attempt)
                    if attempt.outcome is Outcome.OK:
                        if winner is None:
                            winner, ended = (provider.label, hits), True
                        continue
                    self.note(order, attempt, hits)
                    if ended:
                        continue
                    if not self.chain.moves_on(attempt.outcome.value):
                        if attempt.outcome in (Outcome.EMPTY, Outcome.INSUFFICIENT):
                            ended = True  # an answer that would stop a sequential chain
                        else:
                            stopped = True  # start nothing more; the calls running may still answer
                        self.reached_end = False
                    elif order == current and not stopped:
                        await launch()  # the newest call failed: the next provider starts now
                if not ended and not tasks and not stopped:
                    await launch()
        finally:
            await self._cancel(tasks, providers, winner[0] if winner else None)
        return None if winner is None else self.result(*winner)

    async def _cancel(
        self,
        tasks: dict[asyncio.Task[_Called], tuple[int, float]],
        providers: Sequence[Provider],
        winner: str | None,
    ) -> None:
        """Cancel the calls still running, wait until they are closed, record each as ``cancelled`` (or as
        what it was, when it finished before the cancellation reached it)."""
        if not tasks:
            return
        for task in tasks:
            _governance.cancel_billed(task)  # a paid call cancelled in flight is counted at list price
        await asyncio.wait(tasks)
        why = f"{winner} answered first" if winner else "the chain ended"
        for task, (order, started) in sorted(tasks.items(), key=lambda item: item[1][0]):
            provider = providers[order]
            if task.cancelled():
                elapsed = int((time.perf_counter() - started) * 1000)
                attempt = Attempt(provider=provider.label, outcome=Outcome.CANCELLED, cost=0.0,
                                  duration_ms=elapsed, billable=False, reason="cancelled",
                                  error=f"cancelled after {elapsed} ms: {why}")
            elif task.exception() is not None:  # _attempt never raises for a provider's failures
                exc = task.exception()
                attempt = Attempt(provider=provider.label, outcome=Outcome.ERROR, reason="unexpected",
                                  error=redact(f"unexpected: {type(exc).__name__}: {exc}"))
            else:
                attempt, _hits, _exc = task.result()
            self.record(order, attempt)
            await self.observe(provider, attempt)
        tasks.clear()

    # -- merge

    async def merge(self) -> Result | None:
        providers = self.prepared.providers
        group: list[tuple[int, Provider]] = []
        rest: list[tuple[int, Provider]] = []
        for order, provider in enumerate(providers):
            if len(group) < self.chain.merge_providers and is_configured(provider):
                group.append((order, provider))
            else:
                rest.append((order, provider))
        if not group:
            return await self.sequential(rest)
        if self.deadline - self.loop.time() <= 0:  # pragma: no cover - the deadline is at least 1 ms away
            for order, provider in group:
                self.record(order, self.deadline_attempt(provider))
            return await self.sequential(rest)
        tasks = [asyncio.create_task(self.call(provider)) for _, provider in group]
        try:
            outcomes = await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
        answered: list[tuple[int, Provider, Attempt, list[Hit]]] = []
        others: list[tuple[int, Attempt]] = []
        for (order, provider), (attempt, hits, exc) in zip(group, outcomes, strict=True):
            if exc is not None:
                self.last_error = exc
            if attempt.outcome is Outcome.OK:
                answered.append((order, provider, attempt, hits))
            else:
                others.append((order, attempt))
        moves_on = all(self.chain.moves_on(a.outcome.value) for _, a in others)
        if not answered:
            for order, attempt in others:
                self.record(order, attempt)
                self.note(order, attempt, [])
            if not moves_on:
                self.reached_end = False
                return None
            return await self.sequential(rest)
        label = ",".join(p.label for _, p, _, _ in answered)
        fused = fuse([(p.label, hits) for _, p, _, hits in answered], self.prepared.options.max_results)
        for order, attempt in others:
            self.record(order, attempt)
            self.note(order, attempt, [])
        first = answered[0]
        verdict = self.floor(label, first[2], fused, [a for _, _, a, _ in answered[1:]])
        for order, _provider, attempt, _hits in answered:
            if verdict.outcome is not Outcome.OK:
                attempt = attempt.model_copy(update={"outcome": verdict.outcome, "reason": verdict.reason,
                                                     "error": verdict.error})
            self.record(order, attempt)
        if verdict.outcome is Outcome.OK:
            return self.result(label, fused)
        if verdict.outcome is Outcome.INSUFFICIENT:
            self.candidates.append(Candidate(first[0], label, fused, Outcome.INSUFFICIENT))
        if not (moves_on and self.chain.moves_on(verdict.outcome.value)):
            self.reached_end = False
            return None
        return await self.sequential(rest)


_ANSWERS = (Outcome.OK, Outcome.EMPTY, Outcome.INSUFFICIENT)
