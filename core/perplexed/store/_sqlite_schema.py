"""The SQLite store's tables (one statement list, run at open)."""

from __future__ import annotations

from ._members import MEMBERS_SCHEMA

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, expires REAL NOT NULL, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS fills (key TEXT PRIMARY KEY, until REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rate_window (provider TEXT NOT NULL, ts REAL NOT NULL);
DROP INDEX IF EXISTS rate_window_idx;
CREATE INDEX IF NOT EXISTS rate_window_order_idx ON rate_window (provider);
CREATE TABLE IF NOT EXISTS rate_state (provider TEXT NOT NULL, window_s REAL NOT NULL, count INTEGER NOT NULL,
                                       cursor INTEGER NOT NULL, PRIMARY KEY (provider, window_s));
CREATE TABLE IF NOT EXISTS cooldown (
    provider TEXT PRIMARY KEY, failures INTEGER NOT NULL, open_until REAL, period REAL NOT NULL,
    trial_until REAL
);
CREATE TABLE IF NOT EXISTS spend (id INTEGER PRIMARY KEY, ts REAL NOT NULL, label TEXT NOT NULL,
                                  amount REAL NOT NULL);
CREATE INDEX IF NOT EXISTS spend_ts_idx ON spend (ts);
CREATE TABLE IF NOT EXISTS spend_window (window_s REAL PRIMARY KEY, total REAL NOT NULL, cursor INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS latency (id INTEGER PRIMARY KEY, provider TEXT NOT NULL, ms REAL NOT NULL);
CREATE INDEX IF NOT EXISTS latency_idx ON latency (provider, id);
""" + MEMBERS_SCHEMA
