"""A SQLite store shared by the processes of one machine.

WAL journal, ``synchronous=NORMAL``, one ``BEGIN IMMEDIATE`` transaction per decision (so two processes
cannot both pass a limit only one may pass). A decision runs on the caller's thread only when the write lock
is free at once (``busy_timeout`` 0, on a per-thread connection that never checkpoints: a few hundred
microseconds); otherwise, and whenever a record or a checkpoint of this store is still queued, it goes to the
store's one worker thread, which waits for the lock. A search waiting on the database never delays other
coroutines by more than one such transaction.

Bounded: the WAL is checkpointed every 200 commits (counted on every thread) or 4 MiB of answers: on a thread
of its own, beside the decisions (``_sqlite_wal``), the few commits it could not finish with by the worker,
decisions queued behind it; once past :data:`WAL_LIMIT_BYTES`, by the worker, decisions queued behind it, then
truncated (waiting up to the store timeout); a thread's inline connection is
closed once that thread has ended. A database locked by another process (a ``BEGIN EXCLUSIVE`` held, a stuck
writer) is a store *outage* bounded by ``busy_timeout_ms`` (the store timeout, 1 s): the decision that waited that
long, and every decision for the next second, is made in-process without waiting: limits shared with other
processes fail closed (a rate-limited provider is skipped ``rate_limited``, a paid provider under spend
limits ``over_budget``), other providers are called (cool-downs on in-process state), the cache is not
consulted; one ``("perplexed", "store", "unavailable")`` event and one warning per outage,
an info log when a decision gets the lock again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from perplexed import telemetry
from perplexed._logs import get_logger
from perplexed.policy._policy import (
    LATENCY_SAMPLES,
    SPEND_WINDOWS,
    CoolState,
    MemberStats,
    cool_admit,
    cool_record,
    p95,
    spend_allows,
)
from perplexed.store._base import (
    CALL,
    Admission,
    CachedAnswer,
    Decision,
    ProviderState,
    Record,
    Store,
    decode_answer,
    encode_answer,
)
from perplexed.store._ledger_sql import SQLiteLedger
from perplexed.store._members import read_members, record_member
from perplexed.store._sqlite_handoff import _Abandoned, _Busy, _Handoff, _locked, _log_failure, _quiet
from perplexed.store._sqlite_wal import Checkpointer
from perplexed.store.memory import MemoryStore

__all__ = ["SQLiteStore"]

T = TypeVar("T")
logger = get_logger("perplexed.governance")

_KEEP_SPEND_S = max(SPEND_WINDOWS.values()) + 3600.0
WAL_LIMIT_BYTES = 16 * 1024 * 1024
"""The WAL is truncated (checkpoint TRUNCATE on the worker) when it grows past this."""
DEFAULT_BUSY_TIMEOUT_MS = 1000
_RETRY_S = 1.0
_PRUNE_EVERY = 256
_CHECKPOINT_EVERY = 200
_FILL_POLL_S = 0.02

from ._sqlite_schema import _SCHEMA  # noqa: E402 - the tables, in a module of their own


class SQLiteStore(SQLiteLedger, Store):
    """State in the SQLite file ``path`` (created with its directory when missing), for every process on
    this machine that opens the same file. ``busy_timeout_ms`` (the store timeout, default 1 s) bounds how
    long a decision waits for another process's lock; past it the store is in an outage (module docstring)."""

    shared = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] | None = None,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> None:
        self.path = Path(path)
        self.clock = clock or time.time
        self.busy_timeout_ms = busy_timeout_ms
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="perplexed-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._counter = itertools.count()
        self._closed = False
        self._lock = threading.Lock()
        self._pending = 0  # records (and checkpoints) queued on the worker and not yet done
        self._local = threading.local()  # each event-loop thread's own connection for inline admits
        self._inline_conns: list[sqlite3.Connection] = []
        self._inline_owner: dict[sqlite3.Connection, threading.Thread] = {}
        self._commits = itertools.count(1)  # write transactions on any thread: a checkpoint every few hundred
        self._wal_bytes = 0  # what this store's commits wrote since its last checkpoint (about): one per 4 MiB
        self._locked_until = 0.0  # monotonic: an outage (the database locked) skips waiting until then
        self._outage: MemoryStore | None = None
        self._checkpointer = Checkpointer(  # its thread and connection start on first use
            str(self.path), self._checkpoint_queued, lambda: WAL_LIMIT_BYTES // 2)
        self.outages = 0
        """How many outages (the database locked past the store timeout) this store has seen."""

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    # -- plumbing -----------------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            if self._closed:
                raise RuntimeError("SQLiteStore is closed")
            if str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=self.busy_timeout_ms / 1000,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            conn.executescript(_SCHEMA)  # idempotent; concurrent openers wait on busy_timeout
            self._conn = conn
        return conn

    def _begin(self, conn: sqlite3.Connection) -> None:
        """Every write transaction starts here (the benchmark counts them)."""
        conn.execute("BEGIN IMMEDIATE")

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, *args)

    def _transaction(self, fn: Callable[[sqlite3.Connection, float], T], handoff: _Handoff | None = None) -> T:
        conn = self._connect()
        self._begin(conn)
        try:
            out = fn(conn, self.clock())
            if handoff is not None and not handoff.commit():
                raise _Abandoned
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if self._checkpoint_due() and not self._checkpoint_beside():
            try:
                self._checkpoint()
            except sqlite3.Error:  # best effort: the next one tries again
                logger.debug("WAL checkpoint failed", exc_info=True)
        return out

    # -- the two decisions --------------------------------------------------------------------------------

    async def admit(self, request: Admission) -> Decision:
        # Fast path: decide on this thread when the write lock is free at once (busy_timeout 0) and no record
        # of ours is still queued (so decisions stay in order). An admit is a few hundred microseconds of
        # SQLite and never checkpoints (wal_autocheckpoint off on this connection), so the event loop is not
        # held up; when another connection holds the lock, the worker thread waits for it instead.
        if self._locked_until:
            if time.monotonic() < self._locked_until:
                return self._admit_degraded(request)
            self._locked_until = time.monotonic() + _RETRY_S  # this one tries; the others wait for it
        if self._pending == 0 and self._conn is not None and not self._closed:
            try:
                return self._recovered(self._admit_inline(request))
            except _Busy:
                pass
        handoff = _Handoff()
        future = asyncio.get_running_loop().run_in_executor(self._executor, self._admit, request, handoff)
        try:
            async with asyncio.timeout(self.busy_timeout_ms / 1000 + 0.25):  # the worker waits busy_timeout
                return self._recovered(await asyncio.shield(future))
        except asyncio.CancelledError:  # the search was cancelled: a decision not yet committed never will be
            if handoff.abandon():
                future.add_done_callback(_quiet)
            raise
        except (TimeoutError, sqlite3.OperationalError) as exc:
            if not _locked(exc):
                raise
            if isinstance(exc, TimeoutError):
                if not handoff.abandon():
                    return self._recovered(await future)  # the worker is committing it: the decision stands
                future.add_done_callback(_quiet)  # it rolls back (or fails on the lock): nothing was taken
            self._lock_outage(exc)
            return self._admit_degraded(request)

    # -- outages: the database locked past the store timeout ----------------------------------------------

    def _lock_outage(self, exc: BaseException) -> None:
        with self._lock:
            self._locked_until = time.monotonic() + _RETRY_S
            if self._outage is not None:
                return
            self._outage = MemoryStore(clock=self.clock)
            self.outages += 1
        error = f"{type(exc).__name__}: {exc}" if str(exc) else f"locked for over {self.busy_timeout_ms} ms"
        logger.warning("perplexed: the sqlite state store %s is locked (%s); deciding in-process until it is "
                       "free (paid providers skipped while spend limits apply)", self.path.name, error)
        telemetry.emit(("perplexed", "store", "unavailable"), {}, {"store": "sqlite", "error": error})

    def _recovered(self, decision: Decision) -> Decision:
        if self._locked_until:
            with self._lock:
                self._locked_until = 0.0
                outage, self._outage = self._outage, None
            if outage is not None:
                logger.info("perplexed: the sqlite state store %s is free again", self.path.name)
        return decision

    def _admit_degraded(self, request: Admission) -> Decision:
        if request.rate_limit is not None:  # shared by processes this one cannot see: fail closed
            return Decision("rate_limited", detail="the sqlite state store is locked: rate-limited providers are "
                            "skipped while their shared window cannot be checked")
        local = self._outage or MemoryStore(clock=self.clock)
        closed = request.price > 0 and bool(request.spend_limits) and not request.over_call_budget
        decision = local.admit_now(replace(request, cache_key=None, claim_fill=False,
                                           over_call_budget=request.over_call_budget or closed))
        if closed and decision.verdict == "over_budget":
            return Decision("over_budget", detail="the sqlite state store is locked: paid providers are skipped "
                            "while spend limits cannot be checked")
        return replace(decision, ticket=None, trial=False) if decision.verdict == "call" else decision

    def _inline_conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=0, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=0")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints happen on the worker thread only
            conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            self._local.conn = conn
            with self._lock:
                owner = self._inline_owner
                gone = [c for c in self._inline_conns if not owner[c].is_alive()]
                for old in gone:
                    del owner[old]
                self._inline_conns = [c for c in self._inline_conns if c in owner]
                self._inline_conns.append(conn)
                owner[conn] = threading.current_thread()
            for old in gone:  # threads that ended: their connections are no one's any more
                try:
                    old.close()
                except sqlite3.Error:  # pragma: no cover - closing is best effort
                    pass
        return conn

    def _admit_inline(self, request: Admission) -> Decision:
        try:
            conn = self._inline_conn()
            if not (request.cooldown or request.rate_limit is not None or request.price > 0 or request.claim_fill):
                if request.cache_key is not None:
                    hit = self._cache_get(conn, request.cache_key, self.clock())
                    if hit is not None:
                        return hit
                return Decision("over_budget") if request.over_call_budget else CALL
            self._begin(conn)
        except sqlite3.OperationalError as exc:  # locked or busy: let the worker wait for it
            raise _Busy from exc
        try:
            out = self._admit_tx(conn, self.clock(), request)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self._inline_committed()
        return out

    def _admit(self, request: Admission, handoff: _Handoff | None = None) -> Decision:
        if handoff is not None and handoff.abandoned:  # queued behind a lock wait: do not wait again for nothing
            raise _Abandoned
        needs_write = (
            request.cooldown or request.rate_limit is not None or request.price > 0 or request.claim_fill
        )
        if not needs_write:  # a cache lookup at most: a plain read, no write lock
            conn = self._connect()
            if request.cache_key is not None:
                hit = self._cache_get(conn, request.cache_key, self.clock())
                if hit is not None:
                    return hit
            return Decision("over_budget") if request.over_call_budget else CALL
        return self._transaction(lambda conn, now: self._admit_tx(conn, now, request), handoff)

    @staticmethod
    def _cache_get(conn: sqlite3.Connection, key: str, now: float) -> Decision | None:
        row = conn.execute("SELECT value FROM cache WHERE key = ? AND expires > ?", (key, now)).fetchone()
        if row is None:
            return None
        return Decision("cached", answer=decode_answer(row[0]))

    def _admit_tx(self, conn: sqlite3.Connection, now: float, request: Admission) -> Decision:
        key = request.cache_key
        fill_claimed = False
        if key is not None and request.claim_fill and not request.over_call_budget:
            # the cached answer and the fill claim in one statement
            value, until = conn.execute("SELECT (SELECT value FROM cache WHERE key = ?1 AND expires > ?2), "
                                        "(SELECT until FROM fills WHERE key = ?1)", (key, now)).fetchone()
            if value is not None:
                return Decision("cached", answer=decode_answer(value))
            if until is not None and until > now:
                return Decision("fill_pending", wait_s=until - now)
            fill_claimed = True
        elif key is not None:
            hit = self._cache_get(conn, key, now)
            if hit is not None:
                return hit
        if request.over_call_budget:
            return Decision("over_budget")
        provider = request.provider
        trial = False
        cool_state: CoolState | None = None
        if request.cooldown:
            row = conn.execute(
                "SELECT failures, open_until, period, trial_until FROM cooldown WHERE provider = ?", (provider,)
            ).fetchone()
            if row is not None:
                verdict, cool_state, wait = cool_admit(CoolState(*row), now, request.trial_lease_s, request.early_trial)
                if verdict == "cooling_down":
                    return Decision("cooling_down", wait_s=wait)
                trial = verdict == "trial"
        if request.rate_limit is not None:
            limit, window_s = request.rate_limit
            count, cursor = self._window_count(conn, provider, window_s, now)
            if count >= limit:  # full: the (count - limit + 1)-th oldest must leave first (window_admit's rule)
                row = conn.execute(  # the admissions after the cursor are the window's, oldest first
                    "SELECT ts FROM rate_window WHERE provider = ? AND rowid > ? ORDER BY rowid LIMIT 1 OFFSET ?",
                    (provider, cursor, count - limit)).fetchone()
                blocking = row[0] if row is not None else now
                return Decision("rate_limited", wait_s=max(0.0, blocking + window_s - now))
        price = request.price
        if price > 0 and request.spend_limits:
            spent = self._window_totals(conn, [w for w, _ in request.spend_limits], now)
            if not spend_allows(spent, price, request.spend_limits):
                return Decision("over_budget")
        if request.rate_limit is not None:
            conn.execute("INSERT INTO rate_window (provider, ts) VALUES (?, ?)", (provider, now))
            conn.execute("UPDATE rate_state SET count = count + 1 WHERE provider = ?", (provider,))
            if next(self._counter) % _PRUNE_EVERY == 0:  # rows every window of this provider has passed
                conn.execute("DELETE FROM rate_window WHERE provider = ? AND rowid <= "
                             "(SELECT MIN(cursor) FROM rate_state WHERE provider = ?)", (provider, provider))
        if trial and cool_state is not None:
            self._put_cool(conn, provider, cool_state)
        ticket: str | None = None
        if price > 0:
            ticket = str(self._add_spend(conn, now, request.label, price))
        if fill_claimed and key is not None:
            conn.execute("INSERT OR REPLACE INTO fills (key, until) VALUES (?, ?)", (key, now + request.fill_lease_s))
        if ticket is None and not trial and not fill_claimed:
            return CALL
        return Decision("call", ticket=ticket, trial=trial, fill_claimed=fill_claimed)

    # Admissions per rolling window: a running count per (provider, window) (rate_state) with a cursor on the
    # last admission that left the window, advanced by the admissions that left since (usually none): a limit
    # check costs a few rows whatever the limit, not a COUNT over the window.

    @staticmethod
    def _window_count(conn: sqlite3.Connection, provider: str, window_s: float, now: float) -> tuple[int, int]:
        """The admissions inside the window, and the last one that left it (those after it are inside)."""
        cutoff = now - window_s
        row = conn.execute(  # the running count, its cursor and the oldest admission after it (still inside?)
            "SELECT count, cursor, (SELECT ts FROM rate_window WHERE provider = ?1 AND rowid > rate_state.cursor "
            "ORDER BY rowid LIMIT 1) FROM rate_state WHERE provider = ?1 AND window_s = ?2",
            (provider, window_s)).fetchone()
        if row is not None and (row[2] is None or row[2] > cutoff):  # nothing left the window since
            return max(int(row[0]), 0), int(row[1])
        if row is None:
            count, cursor = conn.execute(
                "SELECT COUNT(CASE WHEN ts > ? THEN 1 END), COALESCE(MAX(CASE WHEN ts <= ? THEN rowid END), 0) "
                "FROM rate_window WHERE provider = ?", (cutoff, cutoff, provider)).fetchone()
            conn.execute("INSERT INTO rate_state (provider, window_s, count, cursor) VALUES (?, ?, ?, ?)",
                         (provider, window_s, count, cursor))
            return int(count), int(cursor)
        count, cursor = int(row[0]), int(row[1])
        moved = False
        # the admissions after the cursor, oldest first, read one at a time: usually the first is still inside
        rows = conn.execute("SELECT rowid, ts FROM rate_window WHERE provider = ? AND rowid > ? ORDER BY rowid",
                            (provider, cursor))
        for rowid, ts in rows:
            if ts > cutoff:
                break
            count -= 1
            cursor = rowid
            moved = True
        rows.close()
        if moved:
            conn.execute("UPDATE rate_state SET count = ?, cursor = ? WHERE provider = ? AND window_s = ?",
                         (max(count, 0), cursor, provider, window_s))
        return max(count, 0), cursor

    # Spend per rolling window: a running total per window (spend_window), kept with the entries, so that a
    # limit check reads one row and the entries that left the window since (usually none), not a day of rows.
    # Entries leave in id order; ids follow time (one machine's clock).

    @classmethod
    def _window_totals(cls, conn: sqlite3.Connection, windows: list[float], now: float) -> dict[float, float]:
        """Spend in each window: one statement reads every window's total and the oldest entry after its
        cursor; a window whose oldest entry left (or that is new) is brought up to date by _window_total."""
        known = {w: (total, first) for w, total, first in conn.execute(
            "SELECT window_s, total, (SELECT ts FROM spend WHERE id > spend_window.cursor ORDER BY id LIMIT 1) "
            "FROM spend_window")}
        out: dict[float, float] = {}
        for window_s in windows:
            state = known.get(window_s)
            if state is not None and (state[1] is None or state[1] > now - window_s):
                out[window_s] = float(state[0])
            else:
                out[window_s] = cls._window_total(conn, window_s, now)
        return out

    @staticmethod
    def _window_total(conn: sqlite3.Connection, window_s: float, now: float) -> float:
        cutoff = now - window_s
        row = conn.execute("SELECT total, cursor FROM spend_window WHERE window_s = ?", (window_s,)).fetchone()
        if row is None:
            total, cursor = conn.execute(
                "SELECT COALESCE(SUM(CASE WHEN ts > ? THEN amount END), 0), "
                "COALESCE(MAX(CASE WHEN ts <= ? THEN id END), 0) FROM spend", (cutoff, cutoff)).fetchone()
            conn.execute("INSERT INTO spend_window (window_s, total, cursor) VALUES (?, ?, ?)",
                         (window_s, total, cursor))
            return float(total)
        total, cursor = float(row[0]), int(row[1])
        moved = False
        rows = conn.execute("SELECT id, ts, amount FROM spend WHERE id > ? ORDER BY id", (cursor,))
        for entry_id, ts, amount in rows:  # oldest first, one at a time: usually the first is still inside
            if ts > cutoff:
                break
            total -= amount
            cursor = entry_id
            moved = True
        rows.close()
        if moved:
            total = max(total, 0.0) if total < 1e-12 else total
            conn.execute("UPDATE spend_window SET total = ?, cursor = ? WHERE window_s = ?", (total, cursor, window_s))
        return float(total)

    @staticmethod
    def _add_spend(conn: sqlite3.Connection, now: float, label: str, amount: float) -> int:
        if not label.isascii():  # a lone surrogate becomes "?", as on Redis: one odd label, not an error
            label = label.encode("utf-8", "replace").decode("utf-8")
        cur = conn.execute("INSERT INTO spend (ts, label, amount) VALUES (?, ?, ?)", (now, label, amount))
        conn.execute("UPDATE spend_window SET total = total + ?", (amount,))
        return int(cur.lastrowid or 0)

    @staticmethod
    def _settle(conn: sqlite3.Connection, entry_id: int, reserved: float, cost: float) -> None:
        delta = cost - reserved
        if delta:
            conn.execute("UPDATE spend SET amount = ? WHERE id = ?", (cost, entry_id))
            conn.execute("UPDATE spend_window SET total = total + ? WHERE cursor < ?", (delta, entry_id))

    @staticmethod
    def _put_cool(conn: sqlite3.Connection, provider: str, state: CoolState) -> None:
        if state == CoolState():
            conn.execute("DELETE FROM cooldown WHERE provider = ?", (provider,))
            return
        conn.execute(
            "INSERT OR REPLACE INTO cooldown (provider, failures, open_until, period, trial_until) "
            "VALUES (?, ?, ?, ?, ?)",
            (provider, state.failures, state.open_until, state.period, state.trial_until),
        )

    async def record(self, record: Record) -> None:
        await self._run(self._transaction, lambda conn, now: self._record_tx(conn, now, record))

    def record_soon(self, record: Record) -> bool:
        """Queue the record on the store's one worker thread and return at once: the search does not wait
        for it, and this process's next admit waits behind it (it goes to the worker while a record is
        queued). Failures are logged."""
        if self._closed:
            return False
        if self._locked_until and time.monotonic() < self._locked_until:
            if self._outage is not None:  # the database is locked: keep what it means in-process
                self._outage.record_now(replace(record, ticket=None))
            return True
        if self._pending == 0 and self._conn is not None:
            try:  # inline, like admit: the lock is free at once and nothing of ours is queued
                self._record_inline(record)
                return True
            except _Busy:
                pass
        with self._lock:
            self._pending += 1
        try:
            future = self._executor.submit(self._transaction, lambda conn, now: self._record_tx(conn, now, record))
        except RuntimeError:  # the executor was shut down
            with self._lock:
                self._pending -= 1
            return False
        future.add_done_callback(self._record_done)
        return True

    def _record_inline(self, record: Record) -> None:
        try:
            conn = self._inline_conn()
            self._begin(conn)
        except sqlite3.OperationalError as exc:
            raise _Busy from exc
        try:
            self._record_tx(conn, self.clock(), record)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self._inline_committed()

    def _inline_committed(self) -> None:
        """Inline connections never checkpoint: every few hundred commits a checkpoint runs beside them on the
        checkpoint thread. Past the WAL limit (or for the rest the checkpoint thread could not finish) the
        worker folds the WAL back, and until it is done, decisions and records go to the worker too (queued
        behind it): writers that outpace the checkpoints would otherwise grow the WAL without bound."""
        if not self._checkpoint_due() or self._checkpoint_beside():
            return
        self._checkpoint_queued()

    def _checkpoint_queued(self) -> None:
        """A checkpoint on the worker thread, with this process's decisions and records queued behind it."""
        with self._lock:
            self._pending += 1
        try:
            future = self._executor.submit(self._checkpoint)
        except RuntimeError:  # pragma: no cover - the store is closing
            with self._lock:
                self._pending -= 1
            return
        future.add_done_callback(self._checkpoint_done)

    def _checkpoint_due(self) -> bool:
        """After a commit (a page at least): every 200 commits, 4 MiB written, or the WAL past the limit."""
        with self._lock:
            self._wal_bytes += 4096
            due = next(self._commits) % _CHECKPOINT_EVERY == 0 or self._wal_bytes >= WAL_LIMIT_BYTES // 4
            self._wal_bytes = 0 if due else self._wal_bytes
            return due

    def _checkpoint_beside(self) -> bool:
        """A checkpoint due and the WAL within its limit: a PASSIVE one on the checkpoint thread, beside the
        decisions (False: past the limit, the caller checkpoints with decisions queued behind it)."""
        if self._wal_size() > WAL_LIMIT_BYTES:
            return False
        try:
            self._checkpointer.soon()  # or the one under way copies what was written meanwhile
        except (RuntimeError, OSError):  # no thread to be had: the worker checkpoints, as past the limit
            logger.debug("WAL checkpoint thread unavailable", exc_info=True)
            return False
        return True

    def _wal_size(self) -> int:
        with contextlib.suppress(OSError):
            return os.stat(f"{self.path}-wal").st_size
        return 0

    def _checkpoint(self) -> None:
        conn = self._connect()
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        # past the limit (readers or another process's checkpoint kept it): TRUNCATE, retried up to the timeout
        end = time.monotonic() + self.busy_timeout_ms / 1000
        while self._wal_size() > WAL_LIMIT_BYTES:
            if not conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] or time.monotonic() >= end:
                return
            time.sleep(0.005)

    def _checkpoint_done(self, future: Any) -> None:
        with self._lock:
            self._pending -= 1
        exc = None if future.cancelled() else future.exception()
        if exc is not None:  # best effort: the next one tries again
            logger.debug("WAL checkpoint failed (%s: %s)", type(exc).__name__, exc)

    def _record_done(self, future: Any) -> None:
        with self._lock:
            self._pending -= 1
        exc = None if future.cancelled() else future.exception()
        if exc is not None and _locked(exc):
            self._lock_outage(exc)  # one warning per outage, not one per queued record
            return
        _log_failure(future)

    def _record_tx(self, conn: sqlite3.Connection, now: float, record: Record) -> None:
        self._usage_flush(conn, now)  # buffered usage-ledger records ride along (no transaction of their own)
        provider = record.provider
        after = record.cooldown_after if provider else None  # cool-downs apply
        cooled = after is not None
        ticket = None if record.ticket is None else int(record.ticket)
        row: Any = None
        reserved: float | None = None
        if cooled and ticket is not None:  # the cool-down row and the reservation in one statement
            both = conn.execute(
                "SELECT (SELECT amount FROM spend WHERE id = ?), c.failures, c.open_until, c.period, c.trial_until "
                "FROM (SELECT 1) LEFT JOIN cooldown AS c ON c.provider = ?", (ticket, provider)).fetchone()
            reserved, row = both[0], (both[1:] if both[1] is not None else None)
        elif cooled:
            row = conn.execute(
                "SELECT failures, open_until, period, trial_until FROM cooldown WHERE provider = ?", (provider,)
            ).fetchone()
        elif ticket is not None:
            found = conn.execute("SELECT amount FROM spend WHERE id = ?", (ticket,)).fetchone()
            reserved = None if found is None else found[0]
        if after is not None:
            if row is not None or record.health == "failure":
                state = CoolState(*row) if row is not None else CoolState()
                new = cool_record(
                    state, now, record.health, trial=record.trial, cooldown_after=after,
                    cooldown_s=record.cooldown_s, retry_after=record.retry_after_s,
                )
                if new != state:
                    self._put_cool(conn, provider, new)
        if ticket is not None:
            if reserved is not None:
                self._settle(conn, ticket, float(reserved), record.cost)
        elif record.cost > 0:
            self._add_spend(conn, now, record.label, record.cost)
        key = record.cache_key
        if key is not None:
            if record.answer is not None and record.ttl_s:
                blob = encode_answer(record.answer)
                conn.execute("INSERT OR REPLACE INTO cache (key, expires, value) VALUES (?, ?, ?)",
                             (key, now + record.ttl_s, blob))
                over = len(blob) >= 65536 and self._wal_size() > WAL_LIMIT_BYTES  # a stat
                with self._lock:  # counted towards a checkpoint (past the limit: one now)
                    self._wal_bytes = WAL_LIMIT_BYTES if over else self._wal_bytes + len(blob)
            if record.release_fill:
                conn.execute("DELETE FROM fills WHERE key = ?", (key,))
        if record.latency_ms is not None and provider:
            conn.execute("INSERT INTO latency (provider, ms) VALUES (?, ?)", (provider, record.latency_ms))
        if next(self._counter) % _PRUNE_EVERY == 0:
            self._prune(conn, now, provider)

    @staticmethod
    def _prune(conn: sqlite3.Connection, now: float, provider: str) -> None:
        conn.execute("DELETE FROM cache WHERE expires <= ?", (now,))
        conn.execute("DELETE FROM fills WHERE until <= ?", (now,))
        conn.execute("DELETE FROM spend WHERE ts <= ?", (now - _KEEP_SPEND_S,))
        conn.execute(
            "DELETE FROM latency WHERE id IN (SELECT id FROM latency AS l WHERE "
            "(SELECT COUNT(*) FROM latency AS n WHERE n.provider = l.provider AND n.id > l.id) >= ?)",
            (LATENCY_SAMPLES,),
        )

    # -- reads and the rest -------------------------------------------------------------------------------

    async def spend(self, window_s: float) -> dict[str, float]:
        def read() -> dict[str, float]:
            conn = self._connect()
            rows = conn.execute(
                "SELECT label, SUM(amount) FROM spend WHERE ts > ? GROUP BY label HAVING SUM(amount) > 0",
                (self.clock() - window_s,),
            ).fetchall()
            return {label: float(total) for label, total in rows}

        return await self._run(read)

    async def latency_p95(self, provider: str) -> float | None:
        def read() -> float | None:
            conn = self._connect()
            rows = conn.execute(
                "SELECT ms FROM latency WHERE provider = ? ORDER BY id DESC LIMIT ?", (provider, LATENCY_SAMPLES)
            ).fetchall()
            return p95([r[0] for r in rows])

        return await self._run(read)

    async def member_stats(self, providers: Sequence[str]) -> dict[str, MemberStats]:
        return await self._run(lambda: read_members(self._connect(), providers))

    async def record_member(self, provider: str, ok: bool, latency_ms: float | None, cost_usd: float) -> None:
        await self._run(lambda: record_member(self._connect(), provider, ok, latency_ms, cost_usd))

    async def state(self, provider: str, window_s: float | None = None) -> ProviderState:
        def read() -> ProviderState:
            conn = self._connect()
            now = self.clock()
            row = conn.execute(
                "SELECT failures, open_until, period, trial_until FROM cooldown WHERE provider = ?", (provider,)
            ).fetchone()
            cool = CoolState(*row) if row is not None else CoolState()
            calls = 0
            if window_s is not None:
                calls = conn.execute(
                    "SELECT COUNT(*) FROM rate_window WHERE provider = ? AND ts > ?", (provider, now - window_s)
                ).fetchone()[0]
            return ProviderState(
                failures=cool.failures,
                cooling_down=cool.open_until is not None,
                cooldown_ends_in_s=None if cool.open_until is None else max(0.0, cool.open_until - now),
                trial_in_flight=cool.trial_until is not None and cool.trial_until > now,
                window_calls=int(calls),
            )

        return await self._run(read)

    async def wait_fill(self, cache_key: str, timeout_s: float, provider: str = "") -> CachedAnswer | None:
        loop = asyncio.get_running_loop()
        end = loop.time() + max(0.0, timeout_s)

        def poll() -> tuple[CachedAnswer | None, bool]:
            conn = self._connect()
            now = self.clock()
            hit = self._cache_get(conn, cache_key, now)
            if hit is not None:
                return hit.answer, True
            row = conn.execute("SELECT until FROM fills WHERE key = ?", (cache_key,)).fetchone()
            return None, row is None or row[0] <= now

        while True:
            answer, done = await self._run(poll)
            if done or loop.time() >= end:
                return answer
            await asyncio.sleep(min(_FILL_POLL_S, max(0.0, end - loop.time())))

    async def clear(self) -> None:
        def wipe(conn: sqlite3.Connection, now: float) -> None:
            for table in ("cache", "fills", "rate_window", "rate_state", "cooldown", "spend", "spend_window",
                          "latency", "members"):
                conn.execute(f"DELETE FROM {table}")

        await self._run(self._transaction, wipe)

    def _close_conn(self) -> None:
        self._checkpointer.close()
        conn, self._conn = self._conn, None
        self._closed = True
        if conn is not None:
            conn.close()
        with self._lock:
            inline, self._inline_conns = self._inline_conns, []
            self._inline_owner = {}
        for other in inline:
            try:
                other.close()
            except sqlite3.Error:  # pragma: no cover - closing is best effort
                pass

    async def aclose(self) -> None:
        if self._closed:
            return
        try:
            await self._run(self._close_conn)
        finally:
            self._executor.shutdown(wait=False)

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._executor.submit(self._close_conn).result(timeout=10)
        finally:
            self._executor.shutdown(wait=False)
