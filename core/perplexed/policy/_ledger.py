"""``budget_usd``'s reservations, one rule for a search and for a run of many (``perplexed.evaluate(...,
budget_usd=X)``): a call's list price is reserved before the call (the prices in flight count as spent; the
check and the reservation happen in one step, with no await between them, so no two concurrent calls both
pass), and released when the call ends, its actual cost then counted as spent.

A call's own ``budget_usd`` is a :class:`~perplexed.policy._policy.Purse` (shared by a search and its page fetches); a run
of many searches shares one :class:`Ledger` through :func:`capped` (every search started inside reserves against
it, concurrent ones included). Both ask :func:`budget_allows`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["Ledger", "budget_allows", "capped", "current"]


def budget_allows(limit: float, spent: float, in_flight: float, price: float) -> bool:
    """The one rule of ``budget_usd``: a call of ``price`` may start when it fits beside what was spent and the
    prices of the calls in flight (a free call always does). A search's :class:`~perplexed.policy._policy.Purse` and a
    run's :class:`Ledger` both ask it."""
    return price <= 0 or spent + in_flight + price <= limit + 1e-12


class Ledger:
    """``limit`` USD: ``in_flight`` (the prices reserved, by ``in_flight_n`` calls), ``spent`` (settled here;
    a search's engine passes governance's instead), ``calls`` reserved and ``refused``."""

    __slots__ = ("calls", "in_flight", "in_flight_n", "limit", "refused", "spent")

    def __init__(self, limit: float) -> None:
        self.limit = float(limit)
        self.spent = 0.0
        self.in_flight = 0.0
        self.in_flight_n = 0
        self.calls = 0
        self.refused = 0

    def fits(self, price: float, spent: float) -> bool:
        """Whether a call of ``price`` fits beside ``spent`` and the prices in flight (a free call always does)."""
        return budget_allows(self.limit, spent, self.in_flight, price)

    def hold(self, price: float) -> None:
        """Count ``price`` as in flight (after :meth:`fits`, with no await between them)."""
        self.in_flight += price
        self.in_flight_n += 1

    def release(self, price: float) -> None:
        """The call holding ``price`` ended."""
        self.in_flight_n -= 1
        self.in_flight = self.in_flight - price if self.in_flight_n else 0.0

    def reserve(self, price: float) -> bool:
        """:meth:`fits` against this ledger's own ``spent``, then :meth:`hold`; False (nothing held) when it
        does not fit."""
        if not self.fits(price, self.spent):
            self.refused += 1
            return False
        self.hold(price)
        self.calls += 1
        return True

    def settle(self, price: float, cost: float) -> None:
        """A reserved call ended: :meth:`release` its price and count what it cost."""
        self.release(price)
        self.spent += cost

    def why(self, price: float, spent: float, what: str = "budget_usd") -> str:
        return (f"price ${price:g} would exceed {what} ${self.limit:g} "
                f"(spent ${spent:g}, ${self.in_flight:g} in flight)")


_CURRENT: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar("perplexed_ledger", default=None)
current = _CURRENT.get


@contextlib.contextmanager
def capped(ledger: Ledger | None) -> Iterator[None]:
    """Every search started inside (tasks created inside inherit it) also reserves against ``ledger``."""
    token = _CURRENT.set(ledger)
    try:
        yield
    finally:
        _CURRENT.reset(token)
