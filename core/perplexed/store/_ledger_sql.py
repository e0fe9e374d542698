"""The usage ledger in the SQLite store: its own table, written on the store's worker thread (issue 38)."""

from __future__ import annotations

import atexit
import sqlite3
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from perplexed._logs import get_logger
from perplexed.store._ledger import DEFAULT_RETENTION_S, UsageRecord

logger = get_logger("perplexed.usage")

__all__ = ["SQLiteLedger"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS usage_ledger (ts REAL NOT NULL, operation TEXT NOT NULL, provider TEXT NOT NULL,"
    " tag TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL, billable INTEGER NOT NULL,"
    " cost REAL NOT NULL, cost_source TEXT NOT NULL, latency_ms REAL NOT NULL, cached INTEGER NOT NULL,"
    " saved REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS usage_ledger_ts ON usage_ledger (ts)",
)
_TRIM_EVERY_S = 60.0  # old records are deleted at most once a minute per process


class SQLiteLedger:
    """Mixed into :class:`~perplexed.store.SQLiteStore`: the ledger's methods over its own table.

    A search does not pay a transaction for its records: :meth:`usage_add_soon` buffers them, and the next
    record transaction of the store writes them in the same transaction (``_record_tx`` calls
    :meth:`_usage_flush`); records still buffered a second later (an idle store, or a chain without
    governance) get one transaction of their own on the store's worker, and so do they before a read and at
    the process's exit."""

    _run: Any
    _transaction: Any
    _connect: Any
    _executor: Any
    _closed: bool
    _usage_ready = False
    _usage_trimmed = 0.0
    _usage_buffer: list[tuple[Any, ...]] | None = None
    _usage_keep = DEFAULT_RETENTION_S
    _usage_timer = False
    _usage_since = 0.0

    def _usage_schema(self, conn: sqlite3.Connection) -> None:
        if not self._usage_ready:
            for statement in _SCHEMA:  # inside the caller's transaction (executescript would commit it)
                conn.execute(statement)
            self._usage_ready = True

    @staticmethod
    def _usage_rows(records: Sequence[UsageRecord]) -> list[tuple[Any, ...]]:
        return [(r.ts, r.operation, r.provider, r.tag, r.outcome, r.reason, int(r.billable), r.cost, r.cost_source,
                 r.latency_ms, int(r.cached), r.saved) for r in records]

    def _usage_write(self, conn: sqlite3.Connection, now: float, rows: list[tuple[Any, ...]], keep_s: float) -> None:
        self._usage_schema(conn)
        conn.executemany("INSERT INTO usage_ledger VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        mono = time.monotonic()
        if mono - self._usage_trimmed > _TRIM_EVERY_S:
            self._usage_trimmed = mono
            conn.execute("DELETE FROM usage_ledger WHERE ts < ?", (now - keep_s,))

    def _usage_take(self) -> list[tuple[Any, ...]]:
        with _BUFFER_LOCK:
            rows, self._usage_buffer = self._usage_buffer or [], None
            return rows

    def _usage_flush(self, conn: sqlite3.Connection, now: float) -> None:
        """Write the buffered records inside the caller's transaction (a record's)."""
        if self._usage_buffer:
            rows = self._usage_take()
            if rows:
                self._usage_write(conn, now, rows, self._usage_keep)

    def _usage_flush_now(self) -> None:
        """The buffered records in a transaction of their own (on the calling thread)."""
        if self._usage_buffer:
            self._transaction(lambda conn, now: self._usage_flush(conn, now))

    def usage_add_soon(self, records: Sequence[UsageRecord], keep_s: float = DEFAULT_RETENTION_S) -> bool:
        if self._closed or not records:
            return not records
        with _BUFFER_LOCK:
            if self._usage_buffer is None:
                self._usage_buffer = []
                self._usage_since = time.monotonic()
                _PENDING.add(self)
            self._usage_buffer.extend(self._usage_rows(records))
            self._usage_keep = keep_s
            timer, self._usage_timer = self._usage_timer, True
        if not timer:
            _timer(_FLUSH_AFTER_S, self._usage_flush_later)
        return True

    def _usage_flush_later(self) -> None:
        with _BUFFER_LOCK:
            waited = time.monotonic() - self._usage_since
            if self._usage_buffer and waited < _FLUSH_AFTER_S:  # a newer buffer: give it its full second
                _timer(_FLUSH_AFTER_S - waited, self._usage_flush_later)
                return
            self._usage_timer = False
        if not self._usage_buffer or self._closed:
            return
        try:
            self._executor.submit(self._usage_flush_now).add_done_callback(_log_failure)
        except RuntimeError:  # the store is closing
            pass

    async def usage_add(self, records: Sequence[UsageRecord], keep_s: float = DEFAULT_RETENTION_S) -> None:
        if not records:
            return
        rows = self._usage_rows(records)
        await self._run(self._transaction, lambda conn, now: self._usage_write(conn, now, rows, keep_s))

    async def usage_read(self, since: float, until: float) -> list[UsageRecord]:
        def read() -> list[UsageRecord]:
            self._usage_flush_now()  # this process's buffered records first
            conn = self._connect()
            self._usage_schema(conn)
            cur = conn.execute("SELECT * FROM usage_ledger WHERE ts >= ? AND ts < ? ORDER BY ts", (since, until))
            return [UsageRecord(ts, op, provider, tag, outcome, reason, bool(billable), cost, source, latency,
                                bool(cached), saved)
                    for ts, op, provider, tag, outcome, reason, billable, cost, source, latency, cached, saved in cur]

        return await self._run(read)  # type: ignore[no-any-return]

    async def usage_trim(self, before: float) -> int:
        def trim(conn: sqlite3.Connection, now: float) -> int:
            self._usage_flush(conn, now)
            self._usage_schema(conn)
            return conn.execute("DELETE FROM usage_ledger WHERE ts < ?", (before,)).rowcount

        return await self._run(self._transaction, trim)  # type: ignore[no-any-return]


_FLUSH_AFTER_S = 1.0
_BUFFER_LOCK = threading.Lock()
_PENDING: weakref.WeakSet[SQLiteLedger] = weakref.WeakSet()


def _timer(delay: float, fn: Any) -> None:
    timer = threading.Timer(delay, fn)
    timer.daemon = True  # never holds up the interpreter's exit (the exit hook flushes instead)
    timer.start()


def _log_failure(future: Any) -> None:
    exc = None if future.cancelled() else future.exception()
    if exc is not None:
        logger.warning("usage ledger: %d-second flush to SQLite failed (%s: %s); those records are lost",
                       int(_FLUSH_AFTER_S), type(exc).__name__, exc)


@atexit.register
def _flush_at_exit() -> None:
    """Records still buffered when the process exits are written (best effort)."""
    for store in list(_PENDING):
        try:
            if not store._closed:
                store._usage_flush_now()
        except Exception:
            logger.debug("usage ledger: flush at exit failed", exc_info=True)
