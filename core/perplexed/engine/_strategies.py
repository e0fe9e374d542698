"""Search strategies (``sequential``, ``hedged``, ``merge``) and the quality floor (``min_hits``, ``accept``).

The engine (``_engine.Engine``) runs every strategy as a policy of its one run loop; this module holds the
pure policy, tested table-style:

* :func:`judge`: the quality floor's verdict on one answer (``None`` = accepted, else the reason);
* :func:`best_answer`: which answer is the result when no provider answered ``ok`` (the most hits among the
  insufficient answers, the earliest in chain order on a tie; else the first empty answer);
* :func:`fuse`: reciprocal rank fusion (k = 60) of several providers' ranked hits, de-duplicated by
  normalised URL, renumbered from 1, each hit listing every provider that returned it and its rank there;
* :func:`hedge_delay_ms`: when the next provider starts beside the current one.

The engine starts each provider call as a task through its one attempt pipeline, so a hedged or merged call
is timed, cancelled, costed and recorded exactly like a sequential one.

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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from perplexed._errors import InvalidRequest
from perplexed._models import Hit, Outcome, Result
from perplexed.engine import _governance
from perplexed.engine._hits import RRF_K, fuse
from perplexed.policy._options import ChainOptions
from perplexed.providers import CallableProvider, Provider
from perplexed.store._base import Record

__all__ = [
    "DEFAULT_HEDGE_AFTER_MS",
    "RRF_K",
    "Candidate",
    "best_answer",
    "fuse",
    "hedge_delay_ms",
    "judge",
    "observed_p95",
    "sample_latency",
    "uses_strategies",
]

DEFAULT_HEDGE_AFTER_MS = 1000
"""``hedge_after_ms="auto"`` before the store has enough latency samples of a provider (five: see
``perplexed.policy._policy.LATENCY_MIN_SAMPLES``; the p95 is over its last 100)."""


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
    (``order``), who gave it, its answer (the hits; none for an empty answer) and that answer's size
    (``-1``: the number of hits)."""

    order: int
    provider: str
    hits: Any
    outcome: Outcome
    size: int = -1

    @property
    def amount(self) -> int:
        return len(self.hits) if self.size < 0 else self.size


def best_answer(candidates: Sequence[Candidate]) -> Candidate | None:
    """The result when no provider answered ``ok``: the insufficient answer with the most hits (the earliest
    in chain order on a tie), else the earliest empty answer, else ``None``."""
    best: Candidate | None = None
    for cand in candidates:
        if cand.outcome is Outcome.INSUFFICIENT:
            if (
                best is None
                or best.outcome is not Outcome.INSUFFICIENT
                or cand.amount > best.amount
                or (cand.amount == best.amount and cand.order < best.order)
            ):
                best = cand
        elif cand.outcome is Outcome.EMPTY and (
            best is None or (best.outcome is Outcome.EMPTY and cand.order < best.order)
        ):
            best = cand
    return best


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


def uses_strategies(chain: ChainOptions) -> bool:
    """Whether a chain runs a strategy other than ``sequential``, or has a quality floor."""
    return chain.strategy != "sequential" or chain.min_hits is not None or chain.accept is not None


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


async def sample_latency(provider: Provider, ms: float) -> None:
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
