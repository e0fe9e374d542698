"""Degraded mode for a shared store: the store is never a new way to fail.

:class:`ResilientStore` wraps a remote store (the Redis one) and keeps the chain's rules when the remote is
unreachable, slow or answering errors:

* every remote call has its own small timeout; whatever it raises (or a timeout) starts an *outage*;
* during an outage the process uses in-process state (a fresh :class:`~perplexed.store.MemoryStore`) and
  tries the remote again at most once a second (one probe at a time), so a search pays the store timeout at
  most once; a probe that changes state (``admit``, ``record``, ``add_spend``, ``clear``) and succeeds ends
  the outage; reads (``spend``, ``state``, ``latency_p95``) answer from the remote when they can but do not
  end it (an out-of-memory server still answers reads);
* degraded, but still safe: rolling-window limits become N calls per ``window x fleet_size`` in each process
  (the account's limit is not multiplied by the number of workers), and spend limits fail closed: a paid
  provider is skipped ``over_budget`` (with a detail saying why) while free providers and the in-process
  cache go on;
* one telemetry event ``("perplexed", "store", "unavailable")`` (metadata: the store's ``kind`` and the
  redacted ``error``) and one warning log per outage, not per call; an info log when it ends.

No exception from the remote ever reaches the caller (cancellation of the caller's own task excepted).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Final, TypeVar

from .. import telemetry
from .._errors import redact
from .._logs import get_logger
from ._base import Admission, CachedAnswer, Decision, ProviderState, Record, Store
from ._resp import NoScript
from .memory import MemoryStore

__all__ = ["RETRY_S", "ResilientStore"]

T = TypeVar("T")

logger = get_logger("perplexed.store")

RETRY_S: Final = 1.0
"""During an outage, the remote store is tried again at most this often."""

_LOCAL_TICKET = "L:"


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's outcome (no "exception was never retrieved" warning)."""
    if not task.cancelled():
        task.exception()


class _Skip:
    """The remote was not (successfully) asked: use in-process state."""


_SKIP: Final = _Skip()


class ResilientStore(Store):
    """A shared store with a degraded mode (see the module docstring). ``remote`` raises freely."""

    shared = True

    def __init__(self, remote: Store, *, kind: str, timeout_s: float, fleet_size: int,
                 clock: Callable[[], float], abandon: bool = False) -> None:
        self._remote = remote
        self._abandon = abandon
        self.kind = kind
        self.clock = clock
        self._timeout_s = timeout_s
        self._fleet_size = fleet_size
        self._lock = threading.Lock()
        self._local: MemoryStore | None = None
        self._down_since: float | None = None
        self._next_try = 0.0
        self._probing = False
        self.outages = 0
        """How many outages this process has seen (tests, diagnostics)."""
        self.last_error: str | None = None
        """The redacted error that started the latest outage."""

    # -- health ---------------------------------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """False during an outage (the process is using in-process state)."""
        return self._down_since is None

    async def _remote_call(self, make: Callable[[], Awaitable[T]], *, changes_state: bool,
                           bounded: bool = True) -> T | _Skip:
        probing = False
        if self._down_since is not None:
            with self._lock:
                if self._down_since is not None:
                    now = time.monotonic()
                    if self._probing or now < self._next_try:
                        return _SKIP
                    self._probing = probing = True
                    self._next_try = now + RETRY_S
        try:
            if bounded and self._abandon:
                result = await self._bounded(make)
            elif bounded:
                async with asyncio.timeout(self._timeout_s):
                    result = await make()
            else:
                result = await make()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # anything the store does wrong: degrade, never raise
            self._failed(exc)
            return _SKIP
        finally:
            if probing:
                self._probing = False
        if self._down_since is not None and changes_state:
            self._recovered()
        return result

    async def _bounded(self, make: Callable[[], Awaitable[T]]) -> T:
        """``await make()``, but never longer than the store timeout (``abandon=True``).

        The call runs as its own task and is abandoned (cancelled, not awaited) when the timeout passes: a
        client library that defers or absorbs a cancellation (reconnecting, closing a socket; redis-py's
        cluster client) cannot make the search wait for it. Costs a task per call (~20 us), so a client
        that honours cancellation at once (the store's own RESP client) uses ``asyncio.timeout`` instead.
        """
        task = asyncio.ensure_future(make())
        try:
            done, _ = await asyncio.wait((task,), timeout=self._timeout_s)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            task.add_done_callback(_consume)
            raise TimeoutError
        return task.result()

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, TimeoutError):
            error = f"TimeoutError: no answer within {self._timeout_s * 1000:g} ms"
        else:
            text = str(exc)
            error = redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)
        with self._lock:
            self._next_try = time.monotonic() + RETRY_S
            if self._down_since is not None:
                return
            self._down_since = time.monotonic()
            self._local = MemoryStore(clock=self.clock)
            self.outages += 1
            self.last_error = error
        logger.warning(
            "perplexed: the %s state store is unavailable (%s); using in-process state until it answers "
            "again (rate limits / fleet_size=%d, paid providers skipped while spend limits apply)",
            self.kind, error, self._fleet_size,
        )
        telemetry.emit(("perplexed", "store", "unavailable"), {}, {"store": self.kind, "error": error})

    def _recovered(self) -> None:
        with self._lock:
            since = self._down_since
            if since is None:
                return
            self._down_since = None
            self._local = None
        logger.info("perplexed: the %s state store is back after %.1f s", self.kind, time.monotonic() - since)

    def _local_store(self) -> MemoryStore:
        local = self._local
        if local is None:
            with self._lock:
                local = self._local
                if local is None:
                    local = self._local = MemoryStore(clock=self.clock)
        return local

    # -- the two decisions ----------------------------------------------------------------------------------

    async def admit(self, request: Admission) -> Decision:
        result = await self._remote_call(lambda: self._remote.admit(request), changes_state=True)
        if not isinstance(result, _Skip):
            return result
        return self._admit_locally(request)

    def _admit_locally(self, request: Admission) -> Decision:
        local_request = request
        if request.rate_limit is not None and self._fleet_size > 1:
            limit, window_s = request.rate_limit
            local_request = replace(local_request, rate_limit=(limit, window_s * self._fleet_size))
        closed = request.price > 0 and bool(request.spend_limits) and not request.over_call_budget
        if closed:  # spend limits cannot be checked fleet-wide: fail closed (the cache still answers)
            local_request = replace(local_request, over_call_budget=True)
        if request.claim_fill:
            local_request = replace(local_request, claim_fill=False)
        decision = self._local_store().admit_now(local_request)
        if closed and decision.verdict == "over_budget":
            return Decision("over_budget", detail=f"the {self.kind} state store is unavailable: paid providers "
                            "are skipped while spend limits cannot be checked")
        if decision.ticket is not None:
            decision = replace(decision, ticket=_LOCAL_TICKET + decision.ticket)
        return decision

    async def record(self, record: Record) -> None:
        ticket = record.ticket
        if ticket is not None and ticket.startswith(_LOCAL_TICKET):
            # admitted in-process during an outage: the remote learns the actual cost as plain spend
            remote, local = replace(record, ticket=None), replace(record, ticket=ticket[len(_LOCAL_TICKET):])
        else:
            # a remote reservation: settled remotely, or (down) not known locally at all
            remote, local = record, replace(record, ticket=None, cost=0.0)
        nowait = getattr(self._remote, "record_nowait", None)
        if nowait is not None and self._down_since is None:
            # the remote pipelines it behind this process's earlier commands: no round trip to wait for
            try:
                sent = nowait(remote)
            except Exception as exc:
                self._failed(exc)
                sent = None
            if sent is not None:
                sent.add_done_callback(self._check_sent)
                return
        result = await self._remote_call(lambda: self._remote.record(remote), changes_state=True)
        if isinstance(result, _Skip):
            self._local_store().record_now(local)

    def _check_sent(self, reply: asyncio.Future[Any]) -> None:
        """A record sent without waiting failed: that starts an outage like any failed call."""
        if reply.cancelled():
            return
        exc = reply.exception()
        if exc is not None and not isinstance(exc, NoScript):  # NOSCRIPT: the remote re-sends it with EVAL
            self._failed(exc)

    # -- reads and the rest ---------------------------------------------------------------------------------

    async def spend(self, window_s: float) -> dict[str, float]:
        result = await self._remote_call(lambda: self._remote.spend(window_s), changes_state=False)
        if not isinstance(result, _Skip):
            return result
        return await self._local_store().spend(window_s)

    async def latency_p95(self, provider: str) -> float | None:
        result = await self._remote_call(lambda: self._remote.latency_p95(provider), changes_state=False)
        if not isinstance(result, _Skip):
            return result
        return await self._local_store().latency_p95(provider)

    async def state(self, provider: str, window_s: float | None = None) -> ProviderState:
        result = await self._remote_call(lambda: self._remote.state(provider, window_s), changes_state=False)
        if not isinstance(result, _Skip):
            return result
        return await self._local_store().state(provider, window_s)

    async def wait_fill(self, cache_key: str, timeout_s: float, provider: str = "") -> CachedAnswer | None:
        # the remote bounds each poll by the store timeout itself; the wait as a whole by timeout_s
        result = await self._remote_call(lambda: self._remote.wait_fill(cache_key, timeout_s, provider),
                                         changes_state=False, bounded=False)
        return None if isinstance(result, _Skip) else result

    async def add_spend(self, label: str, cost: float) -> None:
        if cost > 0:
            await self.record(Record(provider="", label=label, cost=cost))

    async def clear(self) -> None:
        local = self._local
        if local is not None:
            await local.clear()
        await self._remote_call(self._remote.clear, changes_state=True, bounded=False)

    async def aclose(self) -> None:
        try:
            await self._remote.aclose()
        except Exception:  # pragma: no cover - best effort
            logger.debug("closing the %s store failed", self.kind, exc_info=True)

    def close(self) -> None:
        try:
            self._remote.close()
        except Exception:  # pragma: no cover - best effort
            logger.debug("closing the %s store failed", self.kind, exc_info=True)
