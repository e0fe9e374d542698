"""Where the money went: the usage ledger's writes and :func:`usage`'s report (issue 38).

The engine hands every attempt of a run to :func:`entry`; those that reached a provider (and the cache hits)
become :class:`~perplexed.store._ledger.UsageRecord` lines, written through the state store once per run
(:func:`write`): at once on the memory store, queued on the SQLite store's worker, one round trip on Redis. A
store failure never fails a search: the records of the outage are lost, and a warning says so once per outage.

:func:`usage` reads the records back (the whole fleet's, on a shared store) and groups them.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import io
import math
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from perplexed._errors import ConfigError, InvalidRequest
from perplexed._logs import get_logger
from perplexed._models import Attempt, Outcome
from perplexed.engine import _gov_settings, _governance
from perplexed.net import _portal
from perplexed.policy._policy import SPEND_WINDOWS
from perplexed.policy._settings import env_get
from perplexed.store._ledger import DEFAULT_RETENTION_S, MemoryLedger, UsageRecord
from perplexed.store.memory import MemoryStore

__all__ = [
    "GROUPS",
    "SpendWindow",
    "UsageReport",
    "UsageRow",
    "ausage",
    "check_tag",
    "configure",
    "usage",
]

logger = get_logger("perplexed.usage")

GROUPS = ("provider", "day", "hour", "tag", "operation", "outcome")
_NOT_CALLED = (Outcome.SKIPPED, Outcome.DEADLINE)
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}")


# -- settings: the default tag and the retention ----------------------------------------------------------------


class _Settings:
    tag: str | None = None
    keep_s: float = DEFAULT_RETENTION_S


_settings = _Settings()
_default_ledger = MemoryLedger()
"""The ledger of the per-process default store (nothing configured): kept here, so a search with nothing
configured still touches no store."""
_operation: contextvars.ContextVar[str | None] = contextvars.ContextVar("perplexed_usage_operation", default=None)


def check_tag(value: object, param: str = "tag", error: type[Exception] = InvalidRequest) -> str:
    """A tag (the tenant, feature or user a call is for): 1-64 letters, digits and ``_ . : @ -``, starting
    with a letter or digit (like a provider's name: no spaces, no URL)."""
    if not isinstance(value, str) or not _TAG.fullmatch(value):
        message = (f"{param} must be 1-64 letters, digits or '_.:@-' (starting with a letter or digit), "
                   f"got {value!r}")
        if error is InvalidRequest:
            raise InvalidRequest(message, param=param)
        raise error(message)
    return value


def configure(*, tag: object = None, usage_retention_days: object = None) -> None:
    """The usage part of :func:`perplexed.configure` (None = leave as is; ``tag=""`` clears the default)."""
    new_tag = _settings.tag
    if tag is not None:
        new_tag = None if tag == "" else check_tag(tag, "tag", ConfigError)
    keep = _settings.keep_s
    if usage_retention_days is not None:
        days = usage_retention_days
        if isinstance(days, bool) or not isinstance(days, int | float) or not math.isfinite(days) or days <= 0:
            raise ConfigError(f"usage_retention_days must be a positive number of days, got {days!r}")
        if days > 3650:
            raise ConfigError(f"usage_retention_days must be at most 3650 (ten years), got {days!r}")
        keep = float(days) * 86400.0
    _settings.tag, _settings.keep_s = new_tag, keep


def reset() -> None:
    """Forget the default tag and the retention (``perplexed.reset()``)."""
    _settings.tag, _settings.keep_s = None, DEFAULT_RETENTION_S
    _lost[0] = False
    _default_ledger.clear()


def target() -> Any:
    """Where the plain chain's records go: the configured (or ``PERPLEXED_STORE``) store, else None = the
    default in-process ledger (no store is created for it)."""
    settings = _governance._settings
    if settings.store is not None:
        return settings.store
    spec = env_get(_governance.STORE_ENV) or ""
    if spec.strip() and spec.strip().lower() != "memory":
        return _governance.current_store()
    return None


def _is_default(store: Any) -> bool:
    return store is None or store is _gov_settings._settings.default_store


def default_tag() -> str | None:
    return _settings.tag


@contextlib.contextmanager
def operation(name: str) -> Iterator[None]:
    """Within this block, searches are recorded under operation ``name`` (``answer()``'s own search)."""
    token = _operation.set(name)
    try:
        yield
    finally:
        _operation.reset(token)


# -- the writes -------------------------------------------------------------------------------------------------


def operation_of(op_name: str) -> str:
    """The ledger's operation of an engine run (a search inside ``answer()`` is ``answer``)."""
    if op_name == "search":
        return _operation.get() or "search"
    return op_name


def entry(operation: str, tag: str | None, attempt: Attempt, price: float, now: float) -> UsageRecord | None:
    """The ledger line of ``attempt`` (``price``: the member's list price), or None when it reached no
    provider (skipped, deadline, a missing key). A cache hit saved ``price``; a call cancelled in flight (a
    hedged loser) is counted at ``price``, as spend counts it: a paid API may bill a request it received."""
    outcome = attempt.outcome
    if outcome in _NOT_CALLED or attempt.reason == "config":
        return None
    cost = attempt.cost
    if attempt.cached:
        return UsageRecord(now, operation, attempt.provider, tag or "", outcome.value, attempt.reason or "",
                           False, 0.0, "", float(attempt.duration_ms), True, price)
    billable = attempt.billable
    source = ""
    if outcome is Outcome.CANCELLED and cost == 0 and price > 0:
        cost, billable, source = price, True, "estimate"
    elif cost > 0:
        source = "estimate" if abs(cost - price) <= 1e-12 else "reported"
    return UsageRecord(now, operation, attempt.provider, tag or "", outcome.value, attempt.reason or "",
                       billable, cost, source, float(attempt.duration_ms), False, 0.0)


_lost = [False]  # a ledger write failed and the warning was given (reset by the next write that succeeds)


def _failed(records: int, exc: BaseException) -> None:
    if not _lost[0]:
        _lost[0] = True
        logger.warning("usage ledger: the state store failed (%s); %d usage record(s) lost, and the records "
                       "of this outage will be too (searches go on)", type(exc).__name__, records)
    else:
        logger.debug("usage ledger: %d record(s) lost", records, exc_info=True)


def _kept() -> None:
    if _lost[0]:
        _lost[0] = False
        logger.info("usage ledger: the state store is back; records are kept again")


def write_local(store: Any, records: Sequence[UsageRecord]) -> bool:
    """:func:`write`'s in-process case, at once (no coroutine): True when ``store`` keeps its records in this
    process (the default ledger, a :class:`MemoryStore`'s) and they were written (a failure logged, never raised);
    False for a shared store, whose write is awaited (:func:`write`) or scheduled (:func:`write_now`)."""
    if not (_is_default(store) or type(store) is MemoryStore):
        return False
    try:
        _in_process(store).add(records, _settings.keep_s)
    except Exception as exc:  # pragma: no cover - defensive (an in-process list)
        _failed(len(records), exc)
    return True


async def write(store: Any, records: Sequence[UsageRecord]) -> None:
    """Write one run's records through ``store``; never raises (a failure is logged once per outage)."""
    if not records or write_local(store, records):
        return
    keep = _settings.keep_s
    try:
        if store.usage_add_soon(records, keep):
            return
        await store.usage_add(records, keep)
    except Exception as exc:
        _failed(len(records), exc)
        return
    if _lost[0]:
        _kept()


def _in_process(store: Any) -> MemoryLedger:
    """The in-process ledger a search's lines go to: the default one, else the store's own
    (``Store._usage_ledger()``, its usual case inline: an empty ledger is falsy, then the call makes it)."""
    if store is None or store is _gov_settings._settings.default_store:  # _is_default(store)
        return _default_ledger
    ledger: MemoryLedger = store.__dict__.get("_perplexed_usage") or store._usage_ledger()
    return ledger


def write_hit_in_process(store: Any, ts: float, operation: str, provider: str, tag: str, latency_ms: float,
                         saved: float) -> None:
    """:func:`write_local` of a cache hit's line (:func:`entry`'s: ``UsageRecord(ts, operation, provider,
    tag, "ok", "", False, 0.0, "", latency_ms, True, saved)``), the record made when the ledger is read (the
    engine's cache-hit path). Never raises."""
    try:
        _in_process(store).add_hit(ts, operation, provider, tag, latency_ms, saved, _settings.keep_s)
    except Exception as exc:  # pragma: no cover - defensive (an in-process list)
        _failed(1, exc)
        return
    if _lost[0]:
        _kept()


def write_now(store: Any, records: Sequence[UsageRecord]) -> None:
    """:func:`write` from synchronous code (the Agent API's record): in-process at once, else scheduled."""
    if write_local(store, records):
        return
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        _portal.run(write, store, records)
        return
    task = loop.create_task(write(store, records))
    _governance._background.add(task)
    task.add_done_callback(_governance._background.discard)


def note_agent(cost: float, duration_ms: int, *, ok: bool, tag: str | None, provider: str) -> None:
    """The Agent API call of ``answer()`` as a ledger line (operation ``agent``). Never raises."""
    try:
        store = target()
        now = time.time() if store is None else store.clock()
        record = UsageRecord(now, "agent", provider, tag or _settings.tag or "",
                             "ok" if ok else "error", "" if ok else "agent", cost > 0, cost,
                             "reported" if cost > 0 else "", float(duration_ms), False, 0.0)
        write_now(store, [record])
    except Exception as exc:
        _failed(1, exc)


# -- the report -------------------------------------------------------------------------------------------------


class UsageRow(BaseModel):
    """One group of the report (or the totals): its keys (None when not grouped by them) and figures."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use: a search never makes one

    provider: str | None = None
    day: str | None = None
    hour: str | None = None
    tag: str | None = None
    operation: str | None = None
    outcome: str | None = None
    calls: int = 0
    """Ledger lines: provider attempts that reached a provider, and cache hits."""
    billable_calls: int = 0
    cost_usd: float = 0.0
    saved_usd: float = 0.0
    cache_hits: int = 0
    failures: dict[str, int] = Field(default_factory=dict)
    """Failed attempts by reason (``timeout``, ``rate_limited``, ``server``, ...)."""
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)

    def keys(self, by: Sequence[str] = GROUPS) -> dict[str, str | None]:
        """The row's group keys (those of ``by``)."""
        return {name: getattr(self, name) for name in by}


class SpendWindow(BaseModel):
    """A configured spend limit's rolling window: what was spent in it and what is left."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use: a search never makes one

    window: str
    limit_usd: float
    spend_usd: float
    headroom_usd: float


class UsageReport(BaseModel):
    """What :func:`usage` returns: ``rows`` (grouped by ``by``), ``totals``, and each configured spend
    limit's window (``windows``)."""

    model_config = ConfigDict(defer_build=True)  # built on first use (usage()): a search never makes one

    since: datetime
    until: datetime
    by: tuple[str, ...]
    rows: list[UsageRow] = Field(default_factory=list)
    totals: UsageRow = Field(default_factory=UsageRow)
    windows: list[SpendWindow] = Field(default_factory=list)

    def to_json(self, indent: int | None = None) -> str:
        """The report as a JSON document."""
        return self.model_dump_json(indent=indent)

    def to_csv(self) -> str:
        """The rows as CSV: the group keys, then the figures (``failures`` as ``reason=n;...``)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        figures = ["calls", "billable_calls", "cost_usd", "saved_usd", "cache_hits", "failures",
                   "latency_p50_ms", "latency_p95_ms"]
        writer.writerow([*self.by, *figures])
        for row in self.rows:
            failures = ";".join(f"{k}={v}" for k, v in sorted(row.failures.items()))
            writer.writerow([*(getattr(row, k) or "" for k in self.by), row.calls, row.billable_calls,
                             f"{row.cost_usd:.6f}", f"{row.saved_usd:.6f}", row.cache_hits, failures,
                             "" if row.latency_p50_ms is None else row.latency_p50_ms,
                             "" if row.latency_p95_ms is None else row.latency_p95_ms])
        return out.getvalue()


_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_when(value: object, param: str, now: float) -> float | None:
    """``since``/``until``: None, a datetime (naive = UTC), a date, an ISO date or datetime string, or a span
    back from now like ``"7d"``, ``"24h"``, ``"30m"``; as seconds since the epoch."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return moment.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    if isinstance(value, str):
        match = _SPAN.match(value.lower())
        if match:
            return now - float(match.group(1)) * _UNITS[match.group(2)]
        try:
            return parse_when(datetime.fromisoformat(value.strip()), param, now)
        except ValueError:
            pass
    raise InvalidRequest(f"{param} must be a datetime, an ISO date like '2026-01-31', or a span like '7d' or "
                         f"'24h', got {value!r}", param=param)


def _check_by(by: object) -> tuple[str, ...]:
    items: Iterable[Any] = [by] if isinstance(by, str) else by  # type: ignore[assignment]
    try:
        names = tuple(str(x).strip() for part in items for x in str(part).split(",") if str(x).strip())
    except TypeError:
        raise InvalidRequest(f"by must be a tuple of {', '.join(GROUPS)}, got {by!r}", param="by") from None
    for name in names:
        if name not in GROUPS:
            raise InvalidRequest(f"by takes {', '.join(GROUPS)}; got {name!r}", param="by")
    return tuple(dict.fromkeys(names))


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values.sort()
    rank = max(0, math.ceil(q * len(values)) - 1)
    return round(values[rank], 3)


def _key(record: UsageRecord, name: str) -> str:
    if name == "day":
        return time.strftime("%Y-%m-%d", time.gmtime(record.ts))
    if name == "hour":
        return time.strftime("%Y-%m-%dT%H:00Z", time.gmtime(record.ts))
    return str(getattr(record, name))


def _row(keys: dict[str, str], records: list[UsageRecord]) -> UsageRow:
    failures: dict[str, int] = {}
    latencies = []
    for r in records:
        if r.outcome in ("error", "timeout", "cancelled"):
            reason = r.reason or r.outcome
            failures[reason] = failures.get(reason, 0) + 1
        if not r.cached:
            latencies.append(r.latency_ms)
    return UsageRow(
        **keys,
        calls=len(records),
        billable_calls=sum(1 for r in records if r.billable),
        cost_usd=round(math.fsum(r.cost for r in records), 10),
        saved_usd=round(math.fsum(r.saved for r in records), 10),
        cache_hits=sum(1 for r in records if r.cached),
        failures=dict(sorted(failures.items())),
        latency_p50_ms=_percentile(list(latencies), 0.5),
        latency_p95_ms=_percentile(latencies, 0.95),
    )


def report(records: Iterable[UsageRecord], since: float, until: float, by: tuple[str, ...],
           windows: list[SpendWindow] | None = None) -> UsageReport:
    """Group ``records`` into a :class:`UsageReport`."""
    groups: dict[tuple[str, ...], list[UsageRecord]] = {}
    everything = []
    for record in records:
        everything.append(record)
        groups.setdefault(tuple(_key(record, name) for name in by), []).append(record)
    rows = [_row(dict(zip(by, key, strict=True)), items) for key, items in sorted(groups.items())]
    return UsageReport(since=datetime.fromtimestamp(since, UTC), until=datetime.fromtimestamp(until, UTC), by=by,
                       rows=rows, totals=_row({}, everything), windows=windows or [])


async def ausage(since: object = None, until: object = None, *, by: object = ("provider",), tag: object = None,
                 operation: object = None) -> UsageReport:
    """Asynchronous :func:`usage`."""
    store = _governance.current_store()
    now = store.clock()
    start = parse_when(since, "since", now)
    end = parse_when(until, "until", now)
    start = now - _settings.keep_s if start is None else start
    end = max(now + 1.0, start) if end is None else end
    if end < start:
        raise InvalidRequest("until is earlier than since", param="until")
    groups = _check_by(by)
    if tag is not None:
        check_tag(tag)
    if operation is not None and operation not in ("search", "fetch", "answer", "agent"):
        raise InvalidRequest(f"operation takes 'search', 'fetch', 'answer' or 'agent', got {operation!r}",
                             param="operation")
    await _drain()
    records = _default_ledger.read(start, end) if _is_default(store) else await store.usage_read(start, end)
    if tag is not None:
        records = [r for r in records if r.tag == tag]
    if operation is not None:
        records = [r for r in records if r.operation == operation]
    return report(records, start, end, groups, await _windows(store))


async def _drain() -> None:
    """Let this process's ledger writes in flight land first (what was just searched is in the report)."""
    import asyncio

    loop = asyncio.get_running_loop()
    pending = [t for t in list(_governance._background) if not t.done() and t.get_loop() is loop]
    if pending:
        await asyncio.wait(pending, timeout=5.0)


async def _windows(store: Any) -> list[SpendWindow]:
    limits = _governance._settings.spend_limits
    if not limits:
        return []
    names = {seconds: name for name, seconds in SPEND_WINDOWS.items()}
    out = []
    for window_s, limit in limits:
        try:
            spent = math.fsum((await store.spend(window_s)).values())
        except Exception as exc:
            _governance._store_failed("spend", exc)
            continue
        out.append(SpendWindow(window=names.get(window_s, str(timedelta(seconds=window_s))), limit_usd=limit,
                               spend_usd=round(spent, 10), headroom_usd=round(max(0.0, limit - spent), 10)))
    return out


def usage(since: object = None, until: object = None, *, by: object = ("provider",), tag: object = None,
          operation: object = None) -> UsageReport:
    """Where the money went: the usage ledger of everything sharing the state store, grouped.

    ``since`` / ``until``: datetimes, dates, ISO strings, or spans back from now like ``"7d"`` or ``"24h"``
    (default: the whole retention, up to now). ``by``: any of ``provider``, ``day``, ``hour``, ``tag``,
    ``operation``, ``outcome``. ``tag`` / ``operation`` keep only those records. With spend limits
    configured, ``windows`` gives each window's spend and headroom. See docs/usage.md.
    """
    return _portal.run(ausage, since, until, by=by, tag=tag, operation=operation)
