"""The adaptive strategy's per-member record in SQL (the SQLite store): one row per chain member, updated by
one statement that applies :func:`perplexed.policy._policy.member_update` (so concurrent processes never lose a
call)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from perplexed.policy._policy import MEMBER_DECAY, MemberStats

__all__ = ["MEMBERS_SCHEMA", "read_members", "record_member"]

MEMBERS_SCHEMA = """
CREATE TABLE IF NOT EXISTS members (provider TEXT PRIMARY KEY, ok REAL NOT NULL, calls REAL NOT NULL,
                                    latency REAL, cost REAL NOT NULL, total INTEGER NOT NULL) WITHOUT ROWID;
"""

_UPSERT = """
INSERT INTO members (provider, ok, calls, latency, cost, total) VALUES (?1, ?2, 1.0, ?3, ?4, 1)
ON CONFLICT (provider) DO UPDATE SET
    ok = ok * ?5 + excluded.ok,
    calls = calls * ?5 + 1.0,
    latency = CASE WHEN excluded.latency IS NULL THEN latency WHEN latency IS NULL THEN excluded.latency
                   ELSE latency * ?5 + excluded.latency * (1.0 - ?5) END,
    cost = cost * ?5 + excluded.cost * (1.0 - ?5),
    total = total + 1
"""


def record_member(conn: sqlite3.Connection, provider: str, ok: bool, latency_ms: float | None,
                  cost_usd: float) -> None:
    """One more call of ``provider``: a single atomic statement."""
    conn.execute(_UPSERT, (provider, 1.0 if ok else 0.0, latency_ms, float(cost_usd), MEMBER_DECAY))


def read_members(conn: sqlite3.Connection, providers: Sequence[str]) -> dict[str, MemberStats]:
    """The records of ``providers`` that exist."""
    if not providers:
        return {}
    marks = ",".join("?" * len(providers))
    rows = conn.execute(
        f"SELECT provider, ok, calls, latency, cost, total FROM members WHERE provider IN ({marks})",
        tuple(providers),
    ).fetchall()
    return {r[0]: MemberStats(ok=r[1], calls=r[2], latency_ms=r[3], cost_usd=r[4], total=int(r[5])) for r in rows}
