"""A spending cap shared by many searches (``perplexed.evaluate(..., budget_usd=X)``): the same rule as a
search's ``budget_usd`` — a call's list price is reserved before the call (the prices in flight count as
spent, the check and the reservation in one step, with no await between them), and its actual cost settled
after it — held across every search run inside :func:`capped` (concurrent ones included)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["Ledger", "capped", "current"]


class Ledger:
    """``limit`` USD across searches: ``spent`` (settled), ``in_flight`` (reserved), ``calls`` made."""

    __slots__ = ("calls", "in_flight", "limit", "refused", "spent")

    def __init__(self, limit: float) -> None:
        self.limit = float(limit)
        self.spent = 0.0
        self.in_flight = 0.0
        self.calls = 0
        self.refused = 0

    def reserve(self, price: float) -> bool:
        """Reserve ``price`` if it fits (a free call always does). Synchronous: nothing else runs between the
        check and the reservation."""
        if price > 0 and self.spent + self.in_flight + price > self.limit + 1e-12:
            self.refused += 1
            return False
        self.in_flight += price
        self.calls += 1
        return True

    def settle(self, price: float, cost: float) -> None:
        """The reserved call ended: free its reservation, count what it cost."""
        self.in_flight = max(0.0, self.in_flight - price)
        self.spent += cost

    def why(self, price: float) -> str:
        return (f"price ${price:g} would exceed the run's budget_usd ${self.limit:g} "
                f"(spent ${self.spent:g}, ${self.in_flight:g} in flight)")


_CURRENT: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar("perplexed_ledger", default=None)
current = _CURRENT.get


@contextlib.contextmanager
def capped(ledger: Ledger | None) -> Iterator[None]:
    """Every search started inside (tasks created inside inherit it) reserves against ``ledger``."""
    token = _CURRENT.set(ledger)
    try:
        yield
    finally:
        _CURRENT.reset(token)
