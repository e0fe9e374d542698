"""The engine: runs one *operation* down an ordered chain of providers, under a strategy, with governance.

Everything that is not specific to an operation lives here, once: the ordered members, ``fallback_on``, the
per-member timeout capped by the deadline, ``deadline`` attempts, attempts with their cost,
``all_providers_failed``, the span and the attempt event, governance (cache, single flight, cool-downs, rate
limits, budgets, spend limits; a layer below, see ``_governance``), and the strategies (``sequential``,
``hedged``, ``merge``) and the quality floor, which are policies of the one run loop (:class:`Engine`).

Every member call, whatever the strategy, goes through one attempt pipeline (:meth:`Engine.attempt`):
admission (governance: a cache hit, a skip, or leave to call) → call (the operation, within the budget)
→ classify (an answer is ``ok`` / ``empty``; a failure is mapped by the failure map) → record (governance:
health, cost, the answer to cache) → annotate (the member span). Governance never calls back into the
engine: the engine asks it before a call (``Governor.admit``) and tells it after (``Governor.settle``).

How an operation plugs in
-------------------------
An operation is an object with the attributes and methods of :class:`Operation` (a ``Protocol``: no base
class needed). Search is one (``chain.SearchOperation``); the tests run a small word-count operation through
the same engine (``tests/test_engine_operation.py``). To add one (``fetch``, say):

1. Build the members (:class:`~perplexed.providers.Provider` objects: the engine reads ``label``, ``name``,
   ``configured`` and governance's per-provider settings from them) and the :class:`ChainOptions`.
2. Write the operation: ``name`` (``"fetch"``: the span ``perplexed.fetch``, member spans
   ``perplexed.fetch.provider``, the event ``("perplexed", "fetch", "attempt")``), ``subject_key`` and
   ``subject`` (``"url"``, the URL: the span attribute ``perplexed.url`` and the event's ``url``), ``members``,
   ``chain``, ``nothing`` (the answer of a failed attempt), and the methods below. ``call`` raises on failure:
   a :class:`~perplexed.ProviderError` (``provider.fail(reason, ...)``), an ``httpx`` error, a
   ``TimeoutError``: the engine's failure map turns it into the attempt's outcome and reason.
3. Run it: ``await _engine.run(op, on_attempt)`` returns ``op.result(...)`` or raises
   ``UpstreamError("all_providers_failed", attempts)``. The sync API runs the same coroutine on the portal.

Nothing in this module changes for a new operation.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from perplexed import _otel, telemetry
from perplexed._errors import PerplexedError, ProviderError, Reason, UpstreamError, redact
from perplexed._logs import get_logger
from perplexed._models import Attempt, Outcome, _answered_attempt
from perplexed.engine import _adaptive, _governance, _usage
from perplexed.engine._strategies import (
    Candidate,
    best_answer,
    hedge_delay_ms,
    is_configured,
    observed_p95,
    sample_latency,
)
from perplexed.engine._timer import LoopTimer
from perplexed.net import _direct
from perplexed.policy import _ledger
from perplexed.policy._failures import classify_exception
from perplexed.policy._options import ChainOptions
from perplexed.policy._policy import Purse
from perplexed.providers import Provider

__all__ = ["AttemptCallback", "Called", "Engine", "Operation", "run"]

logger = get_logger("perplexed.engine.chain")

AttemptCallback = Callable[[Attempt], None]
A = TypeVar("A")  # an operation's answer (search: a list of hits)
R = TypeVar("R", covariant=True)  # what a run returns (search: a Result)

Called = tuple[Attempt, Any, BaseException | None]
"""What one attempt gives: the attempt, the answer (the operation's ``nothing`` when it failed), and the
provider's failure (if any)."""


class Operation(Protocol[R]):
    """What a chain runs. The engine calls these; see the module docstring for how to add one."""

    name: str  # "search": span "perplexed.search", event ("perplexed", "search", "attempt")
    subject_key: str  # "query": span attribute "perplexed.query", the event's "query"
    subject: str  # the query (the URL, ...)
    chain: ChainOptions  # budgets, fallback_on, governance, strategy, floor
    nothing: Any  # the answer of an attempt that failed ([] for search)

    @property
    def members(self) -> Sequence[Provider]:
        """The chain, in order."""

    def client(self, member: Provider) -> Any:
        """Set-up made outside the member's budget (the pooled HTTP client), passed to :meth:`call`."""

    async def call(self, member: Provider, client: Any) -> Any:
        """One member call within the budget: the raw answer; raises on failure."""

    def finish(self, member: Provider, raw: Any) -> tuple[Any, float, str | None]:
        """The raw answer normalised: (answer, cost in USD, the upstream's detail). May raise a failure."""

    def is_empty(self, answer: Any) -> bool:
        """Whether an answer is ``empty`` (moves on under ``fallback_on=["empty"]``)."""

    def size(self, answer: Any) -> int:
        """How much an answer holds: among insufficient answers the largest becomes the result."""

    def insufficient(self, label: str, answer: Any, attempts: Callable[[], list[Attempt]]) -> str | None:
        """The quality floor: ``None`` for an acceptable answer, else the ``insufficient`` reason. ``attempts``
        gives the attempts the result would list. An exception becomes an ``error`` attempt (reason
        ``accept``)."""

    def price(self, member: Provider) -> float:
        """The expected price of a call before it is made (budgets, spend limits)."""

    def cache_parts(self, member: Provider) -> tuple[str, ...] | None:
        """What besides the member's identity keys its cached answer (``None``: never cached); the first
        part names the operation, so two operations never share a key."""

    def to_cache(self, answer: Any) -> Sequence[Any]:
        """The answer as the store keeps it (a sequence of :class:`~perplexed.Hit`)."""

    def from_cache(self, stored: Sequence[Any]) -> Any:
        """An answer back from the store (a fresh object the caller may modify)."""

    def combine(self, answers: Sequence[tuple[str, Any]]) -> Any:
        """The ``merge`` strategy: fuse several members' ``ok`` answers (given in chain order)."""

    def result(self, provider: str, answer: Any, attempts: list[Attempt]) -> R:
        """The run's return value: answered by ``provider`` ("" when nobody), with every attempt."""


async def run(op: Operation[R], on_attempt: AttemptCallback | None = None, *, deadline: float | None = None,
              purse: Purse | None = None) -> R:
    """Run ``op`` under its chain options: its result, or ``UpstreamError("all_providers_failed")``.

    ``deadline`` is the absolute time (the running loop's clock) the run must end by, when it is one step of a
    larger call (a search and its page fetches, an answer); default: ``deadline_ms`` from now. ``purse`` is the
    call's budget shared by those steps (default: the run's own ``budget_usd``)."""
    result: R = await Engine(op, on_attempt, deadline=deadline, purse=purse).run()
    return result


_ANSWERS = (Outcome.OK, Outcome.EMPTY, Outcome.INSUFFICIENT)


class Engine:
    """One run: the members' attempts (with their chain positions), the answers that may become the result."""

    def __init__(self, op: Operation[Any], on_attempt: AttemptCallback | None, *, deadline: float | None = None,
                 purse: Purse | None = None, known_key: tuple[Provider, str] | None = None) -> None:
        self.op = op
        self.chain = chain = op.chain
        self.on_attempt = on_attempt
        # the clock of deadlines and the per-attempt timeout: the running loop's, or on the sync API's direct
        # path (no loop: see net._direct) the same monotonic clock and a timeout the sync I/O enforces
        self.time: Callable[[], float]
        self.timeout: Callable[[float], Any]
        if _direct.driving():
            self.time, self.timeout = _direct.clock, _direct.Timer
        else:
            self.time, self.timeout = asyncio.get_running_loop().time, LoopTimer
        self.deadline = self.time() + chain.deadline_ms / 1000 if deadline is None else deadline
        self.member_budget = chain.provider_timeout_ms / 1000
        self.recorded: list[tuple[int, Attempt]] = []
        self.in_order = True  # attempts were recorded in chain order (no sort needed)
        self.candidates: list[Candidate] = []
        self.last_error: BaseException | None = None
        self.span: Any = None
        self.reached_end = True  # False once an outcome that does not move on stopped the chain
        # budget_usd: what the call spent and holds in flight (shared with the call's other runs)
        self.purse = Purse(chain.budget_usd) if purse is None else purse
        self.event = ("perplexed", op.name, "attempt")
        # the usage ledger (issue 38): this run's records, written once at its end; what the cache saved
        self.usage: list[Any] = []
        self.saved = 0.0
        self.tag = chain.tag or _usage.default_tag()
        # governance (cache, cool-downs, rate limits, budgets): None when nothing is configured
        self.gov = gov = _governance.plan(op, self.purse)
        if gov is not None:
            gov.known = known_key  # a member's cache key computed already (the cache-hit path's miss)
        self.learn: Callable[[Attempt], None] | None = None  # strategy="adaptive": counts each attempt
        self.route: list[_adaptive.Ranked] | None = None

    async def run(self) -> Any:
        op, chain = self.op, self.chain
        strategy = chain.strategy
        shown = strategy if strategy != "sequential" or chain.min_hits is not None or chain.accept is not None else None
        with _otel.chain_span(op, shown) as span:
            self.span = span
            try:
                if strategy == "hedged":
                    result = await self.hedged()
                elif strategy == "merge":
                    result = await self.merge()
                elif strategy == "adaptive":
                    result = await self.adaptive()
                else:
                    result = await self.sequential(list(enumerate(op.members)))
                if result is None:
                    result = await self.early_trial()
                result = result if result is not None else self.fallback()
            except Exception:
                if not self.write_usage_now():
                    await self.write_usage()
                raise
            if not self.write_usage_now():
                await self.write_usage()
            return result

    # -- recording and results

    @property
    def attempts(self) -> list[Attempt]:
        """The attempts so far, in chain order (stable: ties keep the order they were recorded in)."""
        if self.in_order:
            return [a for _, a in self.recorded]
        return [a for _, a in sorted(self.recorded, key=lambda item: item[0])]

    def record(self, order: int, attempt: Attempt) -> None:
        """Record an attempt: the debug log line, the attempt event, ``on_attempt``."""
        recorded = self.recorded
        if recorded and order < recorded[-1][0]:
            self.in_order = False
        recorded.append((order, attempt))
        if self.learn is not None:
            self.learn(attempt)
        self.ledger(order, attempt)
        announce(self.event, attempt, self.op.subject_key, self.op.subject)
        if self.on_attempt is not None:
            try:
                self.on_attempt(attempt)
            except Exception:
                logger.exception("on_attempt callback raised; ignored")

    def ledger(self, order: int, attempt: Attempt) -> None:
        """The usage ledger's line for ``attempt`` (and its metrics when OpenTelemetry is on)."""
        if attempt.outcome is Outcome.SKIPPED or attempt.outcome is Outcome.DEADLINE:
            return
        price = 0.0
        if attempt.cached or attempt.cost > 0 or attempt.outcome is Outcome.CANCELLED:
            members = self.op.members
            if 0 <= order < len(members):
                try:
                    price = float(self.op.price(members[order]))
                except Exception:  # a pricing bug: nothing saved, the cost is the provider's
                    price = 0.0
        gov = self.gov
        try:
            store = gov.store if gov is not None else _usage.target()
            now = store.clock() if store is not None else time.time()
            record = _usage.entry(_usage.operation_of(self.op.name), self.tag, attempt, price, now)
        except Exception as exc:  # a store that cannot be opened: the search goes on
            _usage._failed(1, exc)
            return
        if record is not None:
            self.usage.append((store, record))
            if record.cached:
                self.saved += record.saved
                with _otel.attempt_span(self.op.name, attempt.provider, 0) as span:  # a cache hit's own span
                    if span is not None:
                        _otel.annotate_attempt(span, attempt, None)
        _otel.record_metrics(self.op.name, attempt)

    def write_usage_now(self) -> bool:
        """Write the usage lines at once when they go to an in-process ledger (:func:`_usage.write_local`: no
        coroutine). False when :meth:`write_usage` must write them."""
        usage = self.usage
        if usage and not _usage.write_local(usage[0][0], [record for _, record in usage]):
            return False
        self.usage = []
        return True

    async def write_usage(self) -> None:
        usage = self.usage
        if not usage:
            return
        self.usage = []
        store = usage[0][0]
        await _usage.write(store, [record for _, record in usage])

    def result(self, provider: str, answer: Any) -> Any:
        attempts = self.attempts
        span = self.span
        if span is not None:
            span.set_attributes({"perplexed.answered_by": provider, "perplexed.attempts": len(attempts),
                                 "perplexed.cost": float(sum(a.cost for a in attempts)),
                                 "perplexed.results": self.op.size(answer)})
        out = self.op.result(provider, answer, attempts)
        if self.route is not None:
            out = _adaptive.with_route(out, self.route, attempts)
        if self.saved:
            try:
                out._saved_usd = self.saved
            except (AttributeError, ValueError, TypeError):  # a result without the field
                pass
        return out

    def fallback(self) -> Any:
        """The result when no member answered ``ok``: the best answer so far, else all_providers_failed."""
        best = best_answer(self.candidates)
        if best is not None:
            return self.result(best.provider, best.hits)
        attempts = self.attempts
        span = self.span
        if span is not None:
            span.set_attribute("perplexed.answered_by", "")
            span.set_attribute("perplexed.attempts", len(attempts))
            span.set_attribute("perplexed.cost", float(sum(a.cost for a in attempts)))
        raise UpstreamError("all_providers_failed", attempts) from _safe_cause(self.last_error)

    def note(self, order: int, attempt: Attempt, answer: Any) -> None:
        """Keep an empty or insufficient answer as a possible result."""
        if attempt.outcome is Outcome.INSUFFICIENT:
            self.candidates.append(Candidate(order, attempt.provider, answer, Outcome.INSUFFICIENT,
                                             self.op.size(answer)))
        elif attempt.outcome is Outcome.EMPTY:
            self.candidates.append(Candidate(order, attempt.provider, self.op.nothing, Outcome.EMPTY))

    def deadline_attempt(self, member: Provider) -> Attempt:
        return Attempt(provider=member.label, outcome=Outcome.DEADLINE,
                       error="chain deadline passed before this provider was called")

    # -- the attempt pipeline: admission -> call -> classify -> record -> annotate

    async def attempt(self, member: Provider, *, early: bool = False, reserved: bool = False) -> Called:
        """One member's attempt within its budget (capped by the deadline); never raises for the member's own
        failures. Governed (cache, single flight, cool-downs, rate limits, budgets) when anything is set."""
        if not reserved:
            ledger = _ledger.current()
            if ledger is not None:  # a cap across searches (perplexed.evaluate's budget_usd)
                return await self.ledgered(ledger, member, early)
        remaining = self.deadline - self.time()
        capped = remaining < self.member_budget
        budget = remaining if capped else self.member_budget
        gov = self.gov
        if gov is None:
            called = await self.call(member, budget, capped)
            if called[0].cost > 0:
                _governance.note_spend(called[0].provider, called[0].cost)
            return called
        purse = self.purse
        limit = purse.limit
        price = 0.0
        if limit is not None:
            # budget_usd across concurrent calls: the prices of the calls in flight count as spent (the
            # check and the reservation happen in one step, before the first await: no two calls both pass)
            try:
                price = float(self.op.price(member))
            except Exception:  # a pricing bug: the attempt prices itself again
                price = 0.0
            if price > 0 and purse.in_flight_n and not purse.fits(price):
                why = (f"price ${price:g} would exceed budget_usd ${limit:g} "
                       f"(spent ${purse.spent:g}, ${purse.in_flight:g} in flight)")
                return Attempt(provider=member.label, outcome=Outcome.SKIPPED, reason="over_budget",
                               error=why), self.op.nothing, None
            purse.reserve(price)
        try:
            try:  # the pooled client before the admission: the call follows its admission at once
                client = self.op.client(member)
            except Exception:  # the call sets it up again and records the failure
                client = None
            admitted_from = time.perf_counter()  # a wait for a rate-limit slot is part of the attempt
            gate = await gov.admit(member, budget, capped, early=early)
            if gate.done is not None:
                return gate.done
            try:
                called = await self.call(member, gov.remaining(gate), capped, client, started=admitted_from)
            except BaseException:
                gov.abandon(gate)
                raise
            return await gov.settle(gate, called)
        finally:
            if limit is not None:
                purse.release(price)

    async def ledgered(self, ledger: _ledger.Ledger, member: Provider, early: bool) -> Called:
        """:meth:`attempt` under a cap shared by many searches (the same :class:`~perplexed.policy._ledger.Ledger` rule
        as a search's ``budget_usd``): its list price reserved before, its cost counted after."""
        try:
            price = float(self.op.price(member))
        except Exception:  # a pricing bug: the attempt prices itself again
            price = 0.0
        if not ledger.reserve(price):
            return Attempt(provider=member.label, outcome=Outcome.SKIPPED, reason="over_budget",
                           error=ledger.why(price, ledger.spent, "the run's budget_usd")), self.op.nothing, None
        cost = 0.0
        try:
            called = await self.attempt(member, early=early, reserved=True)
            cost = called[0].cost
            return called
        finally:
            ledger.settle(price, cost)

    async def call(
        self, member: Provider, budget: float, capped: bool = False, client: Any = None,
        started: float | None = None,
    ) -> Called:
        """Call one member within ``budget`` seconds and classify what happened. The attempt's duration runs
        from ``started`` (its admission, when governed) or the call, never counting process warm-up (the
        first span, the client's set-up).

        Everything that depends on the member's answer (normalisation, pricing) happens inside the guarded
        block, so a provider bug or a malformed answer is an ``error`` attempt, never a crashed chain.
        """
        op = self.op
        answer = op.nothing
        detail: str | None = None
        failure: BaseException | None = None
        charged: float | None
        opening = time.perf_counter()
        with _otel.attempt_span(op.name, member.label, int(budget * 1000)) as call_span:
            timer: LoopTimer | _direct.Timer | None = None  # one an attempt, made when the call starts
            now = time.perf_counter()  # the span is open: its set-up (process warm-up) is not the provider's time
            start = now if started is None else started + (now - opening)
            try:
                left = budget
                if client is None:  # set up outside the budget: the first call in a loop must not pay for it
                    client = op.client(member)
                    setup = time.perf_counter() - now  # a process's first TLS context and pool: not the
                    start += setup  # provider's time nor its budget (the chain's deadline holds)
                    if capped:
                        left = max(0.0, budget - setup)
                timer = self.timeout(left)
                with timer:
                    raw = await op.call(member, client)
                answer, charged, detail = op.finish(member, raw)
                if not (math.isfinite(charged) and charged >= 0):  # result.cost must stay a real amount
                    raise member.fail("malformed", f"provider reported a cost of {charged!r} USD")
                outcome = Outcome.EMPTY if op.is_empty(answer) else Outcome.OK
                reason = error = None
                if detail is not None:
                    detail = redact(detail)  # upstream text (Firecrawl's warning)
            except Exception as exc:
                answer = op.nothing
                outcome, reason, error, charged, failure = _failed(member, exc, timer, budget, capped)
            cost = float(charged or 0.0)
            duration_ms = int((time.perf_counter() - start) * 1000)
            if error is None and (detail is None or type(detail) is str):  # an answer: no validator to run
                attempt = _answered_attempt(member.label, outcome, cost, duration_ms, detail)
            else:
                attempt = Attempt(provider=member.label, outcome=outcome, cost=cost, duration_ms=duration_ms,
                                  billable=cost > 0, error=None if error is None else redact(error), detail=detail,
                                  reason=reason)
            if call_span is not None:
                _otel.annotate_attempt(call_span, attempt, op.size(answer) if outcome is Outcome.OK else None)
        return attempt, answer, failure

    def floor(self, label: str, attempt: Attempt, answer: Any, pending: Sequence[Attempt] = ()) -> Attempt:
        """The quality floor on an ``ok`` attempt: the same attempt, ``insufficient`` with a reason, or
        ``error`` (reason ``accept``) when the floor raised."""
        if attempt.outcome is not Outcome.OK:
            return attempt
        try:
            reason = self.op.insufficient(label, answer, lambda: [*self.attempts, *pending, attempt])
        except Exception as exc:
            self.last_error = exc
            logger.warning("accept raised: %s", redact(_one_line(exc)))
            logger.debug("accept raised:\n%s", redact("".join(traceback.format_exception(exc)).rstrip()))
            return attempt.model_copy(update={
                "outcome": Outcome.ERROR, "reason": "accept",
                "error": redact(f"accept raised {type(exc).__name__}: {exc}".rstrip(": ")),
            })
        if reason is None:
            return attempt
        return attempt.model_copy(update={"outcome": Outcome.INSUFFICIENT, "reason": reason})

    # -- the end of the chain

    async def early_trial(self) -> Any:
        """Governance's early trial when the chain reached its end with no answer at all: the cooling-down
        member whose cool-down ends first is called now (one at a time across searches)."""
        gov = self.gov
        if gov is None or not self.reached_end or self.candidates:
            return None
        member = gov.take_trial_candidate()
        if member is None or self.deadline - self.time() <= 0:
            return None
        attempt, answer, exc = await self.attempt(member, early=True)
        if attempt.outcome is Outcome.SKIPPED and attempt.reason == "cooling_down":
            return None  # another search's trial is in flight: this one keeps its skipped attempt
        if exc is not None:
            self.last_error = exc
        order = next((i for i, p in enumerate(self.op.members) if p.label == attempt.provider), 0)
        attempt = self.floor(attempt.provider, attempt, answer)
        self.record(order, attempt)
        if attempt.outcome is Outcome.OK:
            return self.result(attempt.provider, answer)
        self.note(order, attempt, answer)
        return None

    # -- sequential (with a floor, or the fallback of a merge)

    async def sequential(self, members: Sequence[tuple[int, Provider]]) -> Any:
        """The chain over ``members`` (chain position, member), in order. Returns the result of an ``ok``
        answer, or ``None`` when the chain ended without one (see :meth:`fallback`)."""
        for order, member in members:
            if self.deadline - self.time() <= 0:
                self.record(order, self.deadline_attempt(member))
                continue
            attempt, answer, exc = await self.attempt(member)
            if exc is not None:
                self.last_error = exc
            attempt = self.floor(member.label, attempt, answer)
            self.record(order, attempt)
            if attempt.outcome is Outcome.OK:
                return self.result(member.label, answer)
            self.note(order, attempt, answer)
            if not self.chain.moves_on(attempt.outcome.value):
                self.reached_end = False
                return None
        return None

    async def observe(self, member: Provider, attempt: Attempt) -> None:
        """Sample a hedged call's latency for ``"auto"``: a cancelled call's elapsed time always, an answer
        when governance did not (nothing configured); cached answers are not latencies."""
        if attempt.cached:
            return
        if attempt.outcome is Outcome.CANCELLED or (self.gov is None and attempt.outcome in _ANSWERS):
            await sample_latency(member, float(attempt.duration_ms))

    # -- adaptive (see _adaptive)

    async def adaptive(self) -> Any:
        """The members in the order the adaptive policy gives for this call, then as the sequential chain."""
        members = self.op.members
        self.route, self.learn = await _adaptive.plan(members, self.chain, self.op.price)
        return await self.sequential([(i, members[r.position]) for i, r in enumerate(self.route)])

    # -- hedged

    async def hedged(self) -> Any:
        members = self.op.members
        tasks: dict[asyncio.Task[Called], tuple[int, float]] = {}
        next_order = 0  # the next member to start
        current = -1  # the most recently started one
        hedge_at = math.inf  # when the next one starts beside it
        stopped = False  # an error that does not move on: start nothing more

        async def launch() -> None:
            """Start the next member (recording ``deadline`` for those the deadline leaves no time for)."""
            nonlocal next_order, current, hedge_at
            while next_order < len(members):
                order, next_order = next_order, next_order + 1
                member = members[order]
                now = self.time()
                if self.deadline - now <= 0:
                    self.record(order, self.deadline_attempt(member))
                    continue
                tasks[asyncio.create_task(self.attempt(member))] = (order, time.perf_counter())
                current = order
                setting = self.chain.hedge_after_ms
                observed = await observed_p95(member) if setting == "auto" else None
                hedge_at = now + hedge_delay_ms(setting, observed) / 1000
                return
            hedge_at = math.inf

        winner: tuple[str, Any] | None = None
        ended = False  # an answer that would stop a sequential chain, or a winner
        try:
            await launch()
            while tasks and not ended:
                timeout: float | None = None
                if not stopped and next_order < len(members) and hedge_at != math.inf:
                    timeout = max(0.0, hedge_at - self.time())
                done, _ = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                if not done:  # the newest call is slow: start the next member beside it
                    await launch()
                    continue
                for task in sorted(done, key=lambda t: tasks[t][0]):
                    order, _started = tasks.pop(task)
                    member = members[order]
                    attempt, answer, exc = task.result()
                    if exc is not None:
                        self.last_error = exc
                    attempt = self.floor(member.label, attempt, answer)
                    self.record(order, attempt)
                    await self.observe(member, attempt)
                    if attempt.outcome is Outcome.OK:
                        if winner is None:
                            winner, ended = (member.label, answer), True
                        continue
                    self.note(order, attempt, answer)
                    if ended:
                        continue
                    if not self.chain.moves_on(attempt.outcome.value):
                        if attempt.outcome in (Outcome.EMPTY, Outcome.INSUFFICIENT):
                            ended = True  # an answer that would stop a sequential chain
                        else:
                            stopped = True  # start nothing more; the calls running may still answer
                        self.reached_end = False
                    elif order == current and not stopped:
                        await launch()  # the newest call failed: the next member starts now
                if not ended and not tasks and not stopped:
                    await launch()
        finally:
            await self._cancel(tasks, members, winner[0] if winner else None)
        return None if winner is None else self.result(*winner)

    async def _cancel(
        self, tasks: dict[asyncio.Task[Called], tuple[int, float]], members: Sequence[Provider], winner: str | None
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
            member = members[order]
            if task.cancelled():
                elapsed = int((time.perf_counter() - started) * 1000)
                attempt = Attempt(provider=member.label, outcome=Outcome.CANCELLED, cost=0.0,
                                  duration_ms=elapsed, billable=False, reason="cancelled",
                                  error=f"cancelled after {elapsed} ms: {why}")
            elif task.exception() is not None:  # the pipeline never raises for a member's failures
                exc = task.exception()
                attempt = Attempt(provider=member.label, outcome=Outcome.ERROR, reason="unexpected",
                                  error=redact(f"unexpected: {type(exc).__name__}: {exc}"))
            else:
                attempt, _answer, _exc = task.result()
            self.record(order, attempt)
            await self.observe(member, attempt)
        tasks.clear()

    # -- merge

    async def merge(self) -> Any:
        members = self.op.members
        group: list[tuple[int, Provider]] = []
        rest: list[tuple[int, Provider]] = []
        for order, member in enumerate(members):
            if len(group) < self.chain.merge_providers and is_configured(member):
                group.append((order, member))
            else:
                rest.append((order, member))
        if not group:
            return await self.sequential(rest)
        if self.deadline - self.time() <= 0:  # pragma: no cover - the deadline is at least 1 ms away
            for order, member in group:
                self.record(order, self.deadline_attempt(member))
            return await self.sequential(rest)
        tasks = [asyncio.create_task(self.attempt(member)) for _, member in group]
        try:
            outcomes = await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
        answered: list[tuple[int, Provider, Attempt, Any]] = []
        others: list[tuple[int, Attempt]] = []
        for (order, member), (attempt, answer, exc) in zip(group, outcomes, strict=True):
            if exc is not None:
                self.last_error = exc
            if attempt.outcome is Outcome.OK:
                answered.append((order, member, attempt, answer))
            else:
                others.append((order, attempt))
        moves_on = all(self.chain.moves_on(a.outcome.value) for _, a in others)
        if not answered:
            for order, attempt in others:
                self.record(order, attempt)
                self.note(order, attempt, self.op.nothing)
            if not moves_on:
                self.reached_end = False
                return None
            return await self.sequential(rest)
        label = ",".join(m.label for _, m, _, _ in answered)
        fused = self.op.combine([(m.label, answer) for _, m, _, answer in answered])
        for order, attempt in others:
            self.record(order, attempt)
            self.note(order, attempt, self.op.nothing)
        first = answered[0]
        verdict = self.floor(label, first[2], fused, [a for _, _, a, _ in answered[1:]])
        for order, _member, attempt, _answer in answered:
            if verdict.outcome is not Outcome.OK:
                attempt = attempt.model_copy(update={"outcome": verdict.outcome, "reason": verdict.reason,
                                                     "error": verdict.error})
            self.record(order, attempt)
        if verdict.outcome is Outcome.OK:
            return self.result(label, fused)
        if verdict.outcome is Outcome.INSUFFICIENT:
            self.candidates.append(Candidate(first[0], label, fused, Outcome.INSUFFICIENT, self.op.size(fused)))
        if not (moves_on and self.chain.moves_on(verdict.outcome.value)):
            self.reached_end = False
            return None
        return await self.sequential(rest)


# --- the failure map of a call -------------------------------------------------------------------------------


def _failed(
    member: Provider, exc: Exception, timer: LoopTimer | _direct.Timer | None, budget: float, capped: bool
) -> tuple[Outcome, Reason, str, float | None, BaseException | None]:
    """How a member call that raised ``exc`` is recorded: (outcome, reason, error, charged, failure).

    The outcome and reason come from the failure map (``_failures.classify_exception``): ``timeout`` (the
    budget, or the provider's own timeout), the provider's classified reasons, ``config`` / ``bad_request``
    for perplexed's own errors, ``connection`` for transport errors, and ``unexpected`` for a provider bug
    (one warning line; its redacted traceback at DEBUG).
    """
    failure = classify_exception(exc)
    reason = failure.reason
    if failure.outcome is Outcome.TIMEOUT:
        if timer is not None and timer.expired():
            why = "; capped by the chain deadline" if capped else ""
            return Outcome.TIMEOUT, reason, f"no answer within {int(budget * 1000)} ms (cancelled{why})", None, None
        # the provider's own timeout (e.g. a socket timeout inside a sync function)
        return Outcome.TIMEOUT, reason, f"timeout: {exc}".rstrip(": "), None, exc
    if isinstance(exc, ProviderError):
        return Outcome.ERROR, reason, str(exc), exc.charged, exc
    if isinstance(exc, PerplexedError):  # ConfigError (missing key), InvalidRequest raised by the provider
        return Outcome.ERROR, reason, f"{reason}: {exc}", None, exc
    if reason == "config":  # a base_url httpx cannot send to
        return Outcome.ERROR, reason, f"config: invalid URL: {exc}", None, exc
    if reason == "connection":
        return Outcome.ERROR, reason, f"connection: {type(exc).__name__}: {_exc_text(exc)}".rstrip(": "), None, exc
    # a provider bug must not break the chain: one line (the search goes on); the traceback at DEBUG
    logger.warning("provider %s raised unexpectedly: %s", member.label, redact(_one_line(exc)))
    logger.debug("provider %s raised:\n%s", member.label, redact("".join(traceback.format_exception(exc)).rstrip()))
    return Outcome.ERROR, "unexpected", f"unexpected: {type(exc).__name__}: {exc}".rstrip(": "), None, exc


def _one_line(exc: BaseException) -> str:
    """``Type: message`` on one line (a handled failure is one log line; its traceback is logged at DEBUG)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _exc_text(exc: BaseException) -> str:
    """An exception's message, else the first message down its cause chain (httpx's ReadError wraps
    httpcore's, which wraps anyio's, all empty, around the ``ConnectionResetError`` that says what happened)."""
    inner: BaseException | None = exc
    for _ in range(8):
        if inner is None:
            break
        text = str(inner)
        if text:
            return text if inner is exc else f"{type(inner).__name__}: {text}"
        inner = inner.__cause__ or inner.__context__
    return ""


def _safe_cause(exc: BaseException | None) -> BaseException | None:
    """The last member failure, to chain onto UpstreamError, unless its message would leak a credential."""
    if exc is None or isinstance(exc, PerplexedError):  # perplexed's own messages are redacted already
        return exc
    text = str(exc)
    if redact(text) != text:
        return ProviderError("unexpected", f"{type(exc).__name__}: {text}")  # redacted by PerplexedError
    return exc


def announce(event: tuple[str, ...], attempt: Attempt, subject_key: str, subject: Any) -> None:
    """An attempt's debug log line and its telemetry event (the engine's and the cache-hit path's)."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "attempt provider=%s outcome=%s duration_ms=%d cost=%.6f error=%s",
            attempt.provider, attempt.outcome.value, attempt.duration_ms, attempt.cost, attempt.error,
        )
    if telemetry.listening():
        telemetry.emit(
            event,
            {"duration_ms": attempt.duration_ms, "cost": attempt.cost},
            {
                "provider": attempt.provider,
                "outcome": attempt.outcome.value,
                "billable": attempt.billable,
                "error": attempt.error,
                "detail": attempt.detail,
                subject_key: subject,
                "cached": attempt.cached,
                "reason": attempt.reason,
            },
        )
