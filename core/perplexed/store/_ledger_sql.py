"""The usage ledger in the SQLite store: its own table, written on the store's worker thread (issue 38)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from ._ledger import DEFAULT_RETENTION_S, UsageRecord

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
    """Mixed into :class:`~perplexed.store.SQLiteStore`: the ledger's three methods over its own table."""

    _run: Any
    _transaction: Any
    _connect: Any
    _usage_ready = False
    _usage_trimmed = 0.0

    def _usage_schema(self, conn: sqlite3.Connection) -> None:
        if not self._usage_ready:
            for statement in _SCHEMA:  # inside the caller's transaction (executescript would commit it)
                conn.execute(statement)
            self._usage_ready = True

    async def usage_add(self, records: Sequence[UsageRecord], keep_s: float = DEFAULT_RETENTION_S) -> None:
        if not records:
            return
        rows = [(r.ts, r.operation, r.provider, r.tag, r.outcome, r.reason, int(r.billable), r.cost, r.cost_source,
                 r.latency_ms, int(r.cached), r.saved) for r in records]

        def write(conn: sqlite3.Connection, now: float) -> None:
            self._usage_schema(conn)
            conn.executemany("INSERT INTO usage_ledger VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
            mono = time.monotonic()
            if mono - self._usage_trimmed > _TRIM_EVERY_S:
                self._usage_trimmed = mono
                conn.execute("DELETE FROM usage_ledger WHERE ts < ?", (now - keep_s,))

        await self._run(self._transaction, write)

    async def usage_read(self, since: float, until: float) -> list[UsageRecord]:
        def read() -> list[UsageRecord]:
            conn = self._connect()
            self._usage_schema(conn)
            cur = conn.execute("SELECT * FROM usage_ledger WHERE ts >= ? AND ts < ? ORDER BY ts", (since, until))
            return [UsageRecord(ts, op, provider, tag, outcome, reason, bool(billable), cost, source, latency,
                                bool(cached), saved)
                    for ts, op, provider, tag, outcome, reason, billable, cost, source, latency, cached, saved in cur]

        return await self._run(read)  # type: ignore[no-any-return]

    async def usage_trim(self, before: float) -> int:
        def trim(conn: sqlite3.Connection, now: float) -> int:
            self._usage_schema(conn)
            return conn.execute("DELETE FROM usage_ledger WHERE ts < ?", (before,)).rowcount

        return await self._run(self._transaction, trim)  # type: ignore[no-any-return]
