"""The usage ledger's records, as every store keeps them (issue 38).

One :class:`UsageRecord` per provider attempt that reached a provider and per cache hit. A record holds
no query text, no key and no URL: the operation, the provider's label (the name attempts show), the
caller's ``tag``, how the attempt ended, what it cost (and whether that figure is the provider's own or our
estimate from the price table), its latency, and for a cache hit the price it saved.

Kept apart from the store's decisions (``admit``/``record``): its own methods (``usage_add``,
``usage_read``, ``usage_trim``), its own SQLite table and Redis keys.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["DEFAULT_RETENTION_S", "MemoryLedger", "UsageRecord", "decode_record", "encode_record"]

DEFAULT_RETENTION_S = 30 * 86400.0
"""How long records are kept unless ``configure(usage_retention_days=...)`` says otherwise."""


@dataclass(slots=True, frozen=True)
class UsageRecord:
    """One ledger line.

    * ``ts``: seconds since the epoch (the store's clock) when the attempt ended.
    * ``operation``: ``search``, ``fetch``, ``answer`` or ``agent``.
    * ``provider``: the provider's label; ``tag``: the caller's tag ("" when none).
    * ``outcome`` / ``reason``: as on the attempt (``reason`` "" when none).
    * ``billable``: the vendor bills this call (a failed call that bills counts).
    * ``cost``: USD charged; ``cost_source``: ``reported`` (the provider's own figure), ``estimate`` (the
      price table) or ``""`` (free).
    * ``latency_ms``: the attempt's duration; ``cached``: a cache hit; ``saved``: the price a cache hit saved.
    """

    ts: float
    operation: str
    provider: str
    tag: str = ""
    outcome: str = "ok"
    reason: str = ""
    billable: bool = False
    cost: float = 0.0
    cost_source: str = ""
    latency_ms: float = 0.0
    cached: bool = False
    saved: float = 0.0


def encode_record(rec: UsageRecord) -> str:
    """A record as one compact JSON array (what SQLite and Redis keep)."""
    return json.dumps([rec.ts, rec.operation, rec.provider, rec.tag, rec.outcome, rec.reason, int(rec.billable),
                       rec.cost, rec.cost_source, rec.latency_ms, int(rec.cached), rec.saved],
                      separators=(",", ":"))


def decode_record(data: bytes | str) -> UsageRecord:
    """The inverse of :func:`encode_record`."""
    ts, op, provider, tag, outcome, reason, billable, cost, source, latency, cached, saved = json.loads(data)
    return UsageRecord(float(ts), str(op), str(provider), str(tag), str(outcome), str(reason), bool(billable),
                       float(cost), str(source), float(latency), bool(cached), float(saved))


# A cache hit's line as the memory ledger keeps it until read: (ts, operation, provider, tag, latency_ms, saved),
# the rest of its UsageRecord fixed (outcome "ok", cached, nothing billed). Building the frozen record costs more
# than the rest of a cache hit's ledger write, and most lines are never read: the record is made by read().
_HitLine = tuple[float, str, str, str, float, float]


def _ts(item: UsageRecord | _HitLine) -> float:
    return item[0] if isinstance(item, tuple) else item.ts


def _record(item: UsageRecord | _HitLine) -> UsageRecord:
    if not isinstance(item, tuple):
        return item
    ts, operation, provider, tag, latency_ms, saved = item
    return UsageRecord(ts, operation, provider, tag, "ok", "", False, 0.0, "", latency_ms, True, saved)


class MemoryLedger:
    """The in-process ledger (the memory store's, and the default of a third-party store): records in time
    order, trimmed past the retention as they are added."""

    __slots__ = ("_lock", "_records")

    def __init__(self) -> None:
        self._records: deque[UsageRecord | _HitLine] = deque()
        self._lock = threading.Lock()

    def add(self, records: Iterable[UsageRecord], keep_s: float) -> None:
        with self._lock:
            items = self._records
            items.extend(records)
            if items:
                horizon = _ts(items[-1]) - keep_s
                while items and _ts(items[0]) < horizon:
                    items.popleft()

    def add_hit(self, ts: float, operation: str, provider: str, tag: str, latency_ms: float, saved: float,
                keep_s: float) -> None:
        """:meth:`add` of a cache hit's line: ``UsageRecord(ts, operation, provider, tag, "ok", "", False, 0.0,
        "", latency_ms, True, saved)``, made when it is read (the engine's cache-hit path)."""
        with self._lock:
            items = self._records
            items.append((ts, operation, provider, tag, latency_ms, saved))
            horizon = ts - keep_s
            first = items[0]
            while (first[0] if isinstance(first, tuple) else first.ts) < horizon:  # _ts(first), inline
                items.popleft()
                if not items:
                    break
                first = items[0]

    def read(self, since: float, until: float) -> list[UsageRecord]:
        with self._lock:
            return [_record(r) for r in self._records if since <= _ts(r) < until]

    def trim(self, before: float) -> int:
        with self._lock:
            kept = [r for r in self._records if _ts(r) >= before]
            dropped = len(self._records) - len(kept)
            self._records = deque(kept)
            return dropped

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        return len(self._records)


def records_of(items: Sequence[bytes | str]) -> list[UsageRecord]:
    """Decode stored records, skipping any a newer or older version wrote differently."""
    out = []
    for item in items:
        try:
            out.append(decode_record(item))
        except (ValueError, TypeError):
            continue
    return out
