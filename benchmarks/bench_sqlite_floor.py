"""The floor under the SQLite store's cost per governed search: its SQL alone, without perplexed around it.

Run:  .venv/bin/python benchmarks/bench_sqlite_floor.py [--searches 3000] [--repeats 3] [--json]

``bench_governance.py`` measures the whole governed search (+600-800 us over an ungoverned one with the SQLite
store, against a target of 300 us). This benchmark asks how much of that any implementation on Python's
``sqlite3`` must pay: it replays the statements of one governed cache-miss search (the benchmark's "everything
configured": cache with single flight, a rate limit, cool-downs, a priced provider under hour and day spend
limits) on a WAL database with ``synchronous=NORMAL``, with a second connection checkpointing every 200
commits as the store's worker does (its time is reported apart: the worker does it off the search's path), and
nothing else: no event loop, no pydantic, no policy code.

* **current**: the store's schema and statements today (two write transactions, 17 statements, BEGIN and COMMIT included).
* **compact**: the same decisions on a schema built to touch fewer pages: one table for every rolling
  window's running total, the cache keyed by an integer (no separate key index), admissions keyed by
  ``(provider, seq)`` without a secondary index, the latency samples in the provider's row, no index on the
  spend time (two write transactions, 14 statements, BEGIN and COMMIT included).
* **compact_one_tx**: the compact schema with the record folded into the decision's transaction (what
  deferring every record to the next search would cost at best; not a design the store can use, since other
  processes would see cache fills, settlements and cool-downs only when this process searches again).
* **two_empty_tx**: ``BEGIN IMMEDIATE; COMMIT`` twice: the price of two transactions before any statement.

Each variant runs on its own fresh database, interleaved in blocks, ``--repeats`` times; figures are the
median per search (on the search's path, and with the checkpoints' time added), and WAL frames (pages
written) are counted on a run without checkpoints.
"""

from __future__ import annotations

import argparse
import array
import json
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

VALUE = os.urandom(1725)  # a cached answer of ten SearXNG hits, as the store encodes it (measured size)
PROVIDER = "9f2c7a1e5b3d4c6f8a0b1c2d3e4f5a6b"  # a hashed provider identity
WINDOWS = (3600.0, 86400.0)  # hour and day spend limits

CURRENT = """
CREATE TABLE cache (key TEXT PRIMARY KEY, expires REAL NOT NULL, value BLOB NOT NULL);
CREATE TABLE fills (key TEXT PRIMARY KEY, until REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE rate_window (provider TEXT NOT NULL, ts REAL NOT NULL);
CREATE INDEX rate_window_order_idx ON rate_window (provider);
CREATE TABLE rate_state (provider TEXT NOT NULL, window_s REAL NOT NULL, count INTEGER NOT NULL,
                         cursor INTEGER NOT NULL, PRIMARY KEY (provider, window_s));
CREATE TABLE cooldown (provider TEXT PRIMARY KEY, failures INTEGER NOT NULL, open_until REAL,
                       period REAL NOT NULL, trial_until REAL);
CREATE TABLE spend (id INTEGER PRIMARY KEY, ts REAL NOT NULL, label TEXT NOT NULL, amount REAL NOT NULL);
CREATE INDEX spend_ts_idx ON spend (ts);
CREATE TABLE spend_window (window_s REAL PRIMARY KEY, total REAL NOT NULL, cursor INTEGER NOT NULL);
CREATE TABLE latency (id INTEGER PRIMARY KEY, provider TEXT NOT NULL, ms REAL NOT NULL);
CREATE INDEX latency_idx ON latency (provider, id);
"""

COMPACT = """
CREATE TABLE cache (id INTEGER PRIMARY KEY, key TEXT NOT NULL, expires REAL NOT NULL, value BLOB NOT NULL);
CREATE TABLE fills (key TEXT PRIMARY KEY, until REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE admissions (provider TEXT NOT NULL, seq INTEGER NOT NULL, ts REAL NOT NULL,
                         PRIMARY KEY (provider, seq)) WITHOUT ROWID;
CREATE TABLE windows (kind TEXT NOT NULL, owner TEXT NOT NULL, window_s REAL NOT NULL, total REAL NOT NULL,
                      cursor INTEGER NOT NULL, PRIMARY KEY (kind, owner, window_s)) WITHOUT ROWID;
CREATE TABLE providers (provider TEXT PRIMARY KEY, failures INTEGER NOT NULL DEFAULT 0, open_until REAL,
                        period REAL NOT NULL DEFAULT 0, trial_until REAL, latency BLOB);
CREATE TABLE spend (id INTEGER PRIMARY KEY, ts REAL NOT NULL, label TEXT NOT NULL, amount REAL NOT NULL);
"""


def _key(i: int) -> str:
    return f"{(i * 0x9E3779B97F4A7C15) % (1 << 128):032x}"  # cache keys are hashes: spread over the table


class Current:
    schema = CURRENT

    def __init__(self, conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO rate_state VALUES (?, 1.0, 0, 0)", (PROVIDER,))
        for w in WINDOWS:
            conn.execute("INSERT INTO spend_window VALUES (?, 0, 0)", (w,))

    def admit(self, c: sqlite3.Connection, key: str, now: float) -> int:
        c.execute("SELECT (SELECT value FROM cache WHERE key = ?1 AND expires > ?2), "
                  "(SELECT until FROM fills WHERE key = ?1)", (key, now)).fetchone()
        c.execute("SELECT failures, open_until, period, trial_until FROM cooldown WHERE provider = ?",
                  (PROVIDER,)).fetchone()
        c.execute("SELECT count, cursor, (SELECT ts FROM rate_window WHERE provider = ?1 AND rowid > "
                  "rate_state.cursor ORDER BY rowid LIMIT 1) FROM rate_state WHERE provider = ?1 AND window_s = ?2",
                  (PROVIDER, 1.0)).fetchone()
        c.execute("SELECT window_s, total, (SELECT ts FROM spend WHERE id > spend_window.cursor ORDER BY id "
                  "LIMIT 1) FROM spend_window").fetchall()
        c.execute("INSERT INTO rate_window (provider, ts) VALUES (?, ?)", (PROVIDER, now))
        c.execute("UPDATE rate_state SET count = count + 1 WHERE provider = ?", (PROVIDER,))
        ticket = c.execute("INSERT INTO spend (ts, label, amount) VALUES (?, ?, ?)", (now, "g", 1e-4)).lastrowid
        c.execute("UPDATE spend_window SET total = total + ?", (1e-4,))
        c.execute("INSERT OR REPLACE INTO fills (key, until) VALUES (?, ?)", (key, now + 30))
        return int(ticket or 0)

    def record(self, c: sqlite3.Connection, key: str, now: float, ticket: int) -> None:
        c.execute("SELECT (SELECT amount FROM spend WHERE id = ?), c.failures, c.open_until, c.period, "
                  "c.trial_until FROM (SELECT 1) LEFT JOIN cooldown AS c ON c.provider = ?",
                  (ticket, PROVIDER)).fetchone()
        c.execute("INSERT OR REPLACE INTO cache (key, expires, value) VALUES (?, ?, ?)", (key, now + 3600, VALUE))
        c.execute("DELETE FROM fills WHERE key = ?", (key,))
        c.execute("INSERT INTO latency (provider, ms) VALUES (?, ?)", (PROVIDER, 1.0))


class Compact:
    schema = COMPACT

    def __init__(self, conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO windows VALUES ('r', ?, 1.0, 0, 0)", (PROVIDER,))
        for w in WINDOWS:
            conn.execute("INSERT INTO windows VALUES ('s', '', ?, 0, 0)", (w,))
        conn.execute("INSERT INTO providers (provider) VALUES (?)", (PROVIDER,))

    def admit(self, c: sqlite3.Connection, key: str, now: float) -> int:
        c.execute("SELECT (SELECT value FROM cache WHERE id = ?3 AND key = ?1 AND expires > ?2), "
                  "(SELECT until FROM fills WHERE key = ?1)", (key, now, int(key[:15], 16))).fetchone()
        c.execute(  # the cool-down row and every window this search is under, in one statement
            "SELECT 'p', failures, open_until, period, trial_until FROM providers WHERE provider = ?1 UNION ALL "
            "SELECT kind, window_s, total, cursor, CASE kind WHEN 'r' THEN (SELECT ts FROM admissions WHERE "
            "provider = ?1 AND seq > windows.cursor ORDER BY seq LIMIT 1) ELSE (SELECT ts FROM spend WHERE "
            "id > windows.cursor ORDER BY id LIMIT 1) END FROM windows WHERE (kind = 'r' AND owner = ?1) "
            "OR kind = 's'", (PROVIDER,)).fetchall()
        c.execute("INSERT INTO admissions (provider, seq, ts) SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2 "
                  "FROM admissions WHERE provider = ?1", (PROVIDER, now))
        ticket = c.execute("INSERT INTO spend (ts, label, amount) VALUES (?, ?, ?)", (now, "g", 1e-4)).lastrowid
        c.execute("UPDATE windows SET total = total + CASE kind WHEN 'r' THEN 1 ELSE ?2 END "
                  "WHERE (kind = 'r' AND owner = ?1) OR kind = 's'", (PROVIDER, 1e-4))
        c.execute("INSERT OR REPLACE INTO fills (key, until) VALUES (?, ?)", (key, now + 30))
        return int(ticket or 0)

    def record(self, c: sqlite3.Connection, key: str, now: float, ticket: int) -> None:
        row = c.execute("SELECT (SELECT amount FROM spend WHERE id = ?), p.failures, p.open_until, p.period, "
                        "p.trial_until, p.latency FROM (SELECT 1) LEFT JOIN providers AS p ON p.provider = ?",
                        (ticket, PROVIDER)).fetchone()
        c.execute("INSERT OR REPLACE INTO cache (id, key, expires, value) VALUES (?, ?, ?, ?)",
                  (int(key[:15], 16), key, now + 3600, VALUE))
        c.execute("DELETE FROM fills WHERE key = ?", (key,))
        samples = array.array("d", row[5] or b"")
        samples.append(1.0)
        c.execute("UPDATE providers SET latency = ? WHERE provider = ?", (samples[-100:].tobytes(), PROVIDER))


Search = Callable[[sqlite3.Connection, int, float], None]


def two_tx(impl: Current | Compact) -> Search:
    def search(c: sqlite3.Connection, i: int, now: float) -> None:
        key = _key(i)
        c.execute("BEGIN IMMEDIATE")
        ticket = impl.admit(c, key, now)
        c.execute("COMMIT")
        c.execute("BEGIN IMMEDIATE")
        impl.record(c, key, now, ticket)
        c.execute("COMMIT")
    return search


def one_tx(impl: Current | Compact) -> Search:
    def search(c: sqlite3.Connection, i: int, now: float) -> None:
        key = _key(i)
        c.execute("BEGIN IMMEDIATE")
        impl.record(c, key, now, impl.admit(c, key, now))
        c.execute("COMMIT")
    return search


def empty(c: sqlite3.Connection, i: int, now: float) -> None:
    for _ in range(2):
        c.execute("BEGIN IMMEDIATE")
        c.execute("COMMIT")


class Db:
    """A fresh database for one variant: the searching connection (never checkpoints, like the store's inline
    connections) and the worker's, which checkpoints every 200 commits."""

    def __init__(self, root: Path, name: str, impl: type[Current | Compact] | None,
                 way: Callable[[Current | Compact], Search] | None = None) -> None:
        path = root / f"{name}.db"
        self.conn = sqlite3.connect(path, isolation_level=None)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "wal_autocheckpoint=0"):
            self.conn.execute(f"PRAGMA {pragma}")
        self.conn.executescript(CURRENT if impl is None else impl.schema)
        self.search = empty if impl is None or way is None else way(impl(self.conn))
        self.worker = sqlite3.connect(path, isolation_level=None)
        self.wal = Path(f"{path}-wal")
        self.commits = 0
        self.now = 1_000_000.0

    def run(self, start: int, n: int, checkpoint: bool = True) -> tuple[float, float]:
        """Seconds per search on the searching connection, without and with the checkpoints (the store's
        worker thread makes them, off the search's path)."""
        began = time.perf_counter()
        aside = 0.0
        for i in range(start, start + n):
            self.search(self.conn, i, self.now)
            self.now += 0.001
            self.commits += 2
            if checkpoint and self.commits % 200 == 0:
                t = time.perf_counter()
                self.worker.execute("PRAGMA wal_checkpoint(PASSIVE)")
                aside += time.perf_counter() - t
        spent = time.perf_counter() - began
        return (spent - aside) / n, spent / n


def measure(searches: int, repeats: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="perplexed-sqlite-floor-"))
    dbs = {
        "current": Db(root, "current", Current, two_tx),
        "compact": Db(root, "compact", Compact, two_tx),
        "compact_one_tx": Db(root, "one", Compact, one_tx),
        "two_empty_tx": Db(root, "empty", None),
    }
    samples: dict[str, list[float]] = {name: [] for name in dbs}
    with_checkpoints: dict[str, list[float]] = {name: [] for name in dbs}
    block = 250
    done = 0
    for name in dbs:  # warm-up: tables and indexes a few pages deep
        dbs[name].run(0, 500)
    for _ in range(repeats):
        for start in range(500 + done, 500 + done + searches, block):
            for name in dbs:
                path, whole = dbs[name].run(start, block)
                samples[name].append(path)
                with_checkpoints[name].append(whole)
        done += searches
    frames: dict[str, float] = {}
    for name, db in dbs.items():  # pages written per search: the WAL's growth without checkpoints
        db.worker.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.run(10**7, 200, checkpoint=False)
        frames[name] = round(db.wal.stat().st_size / (4096 + 24) / 200, 1)
    us = {name: round(statistics.median(values) * 1e6, 1) for name, values in samples.items()}
    return {
        "searches": searches * repeats,
        "us_per_search": us,
        "us_per_search_with_checkpoints": {
            name: round(statistics.median(values) * 1e6, 1) for name, values in with_checkpoints.items()
        },
        "wal_frames_per_search": frames,
        "ratio_to_current": {name: round(v / us["current"], 3) for name, v in us.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--searches", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = measure(args.searches, args.repeats)
    if args.json:
        print(json.dumps(data))
        return 0
    print(f"{data['searches']} searches per variant, median per search (WAL frames per search):")
    for name, value in data["us_per_search"].items():
        print(f"  {name:15} {value:7.1f} us  ({data['wal_frames_per_search'][name]} frames, "
              f"{data['ratio_to_current'][name]:.2f}x current; "
              f"{data['us_per_search_with_checkpoints'][name]:.1f} us with the checkpoints)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
