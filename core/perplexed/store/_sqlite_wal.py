"""The SQLite store's background WAL checkpoints (issue 35): off every search's path.

A PASSIVE checkpoint never takes the write lock, so decisions and records go on beside it, inline on their
threads; it runs on a thread of its own, on a connection of its own (``synchronous=NORMAL``: it syncs the WAL
before copying and the database after, as the worker's did), at a lower CPU priority where the platform allows.
Writers that commit while it copies leave frames it has not copied, and the WAL restarts from its beginning only
once every frame is copied; so it checkpoints again, a few times at most, each pass copying what was written
during the one before, until the WAL is fully copied. When writers keep it from finishing in a few passes,
what is left (a few commits) is handed back to the store, whose worker copies it with this process's decisions
queued behind it for that short while (before, they queued behind the whole checkpoint). A WAL that still grew
past the store's limit is the store's business too: its worker then checkpoints with decisions queued behind it
and truncates the file (the bound, as before).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from perplexed._logs import get_logger

__all__ = ["Checkpointer"]

logger = get_logger("perplexed.governance")

PASSES = 6
"""Checkpoints in a row at most, until one finds nothing left to copy."""
NICE = 5
"""How much lower the checkpoint thread's CPU priority is (Linux: per thread), so a search thread goes first."""


def _lower_priority() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not Linux, or not allowed: best effort
        pass


class Checkpointer:
    """One thread and one connection per store, started on its first checkpoint. :meth:`soon` asks for a
    checkpoint and returns at once; one that is under way absorbs the request (it checkpoints until the WAL
    is fully copied, so what was written meanwhile is in it)."""

    def __init__(self, path: str, unfinished: Callable[[], None], hand_back_bytes: Callable[[], int]) -> None:
        self._path = path
        self._unfinished = unfinished
        self._hand_back_bytes = hand_back_bytes
        self._frame_bytes = 0
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._running = False
        self._closed = False
        self.passes = 0
        """Checkpoint passes run (the benchmark and tests read it)."""
        self.handed_back = 0
        """Checkpoints whose rest was handed back to the store."""

    @property
    def running(self) -> bool:
        return self._running

    def soon(self) -> bool:
        """Start a background checkpoint unless one is under way; False when none was started."""
        with self._lock:
            if self._running or self._closed:
                return False
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="perplexed-sqlite-wal",
                                                    initializer=_lower_priority)
            self._running = True
            executor = self._executor
        try:  # outside the lock: a checkpoint that ends at once runs its done callback here, which takes it
            executor.submit(self._run).add_done_callback(self._done)
        except RuntimeError:  # pragma: no cover - shut down meanwhile
            with self._lock:
                self._running = False
            return False
        return True

    def _connect(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            conn = sqlite3.connect(self._path, isolation_level=None, timeout=0, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=0")  # PASSIVE waits for no one anyway
            conn.execute("PRAGMA synchronous=NORMAL")  # the checkpoint syncs the WAL, then the database
            conn.execute("PRAGMA wal_autocheckpoint=0")
            self._frame_bytes = int(conn.execute("PRAGMA page_size").fetchone()[0]) + 24  # a WAL frame
            self._conn = conn
        return conn

    def _run(self) -> None:
        conn = self._connect()
        last = -1
        for _ in range(PASSES):
            if self._closed:
                return
            busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.passes += 1
            # busy: another connection's checkpoint is under way (it copies); -1: not in WAL mode; every frame
            # copied, no writer under way then, and nothing written since (a pass that copies nothing is cheap,
            # no sync): the next writer restarts the WAL from its beginning. A WAL past half the limit all the
            # same (it did not restart last time): the worker makes sure, with this process's writers held
            if busy or frames <= 0:
                return
            if copied >= frames and frames == last:
                if frames * self._frame_bytes <= self._hand_back_bytes():
                    return
                break
            last = frames if copied >= frames and self._no_writer(conn) else -1
        if not self._closed:
            self.handed_back += 1
            self._unfinished()  # writers kept it from finishing: the rest with this process's writers held

    @staticmethod
    def _no_writer(conn: sqlite3.Connection) -> bool:
        """No write transaction under way (the write lock free at once, taken and given back at once). One that
        began beside the pass would commit after the next pass looked: that pass would see nothing new, and
        the WAL would not restart (its writer began before the WAL was fully copied)."""
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return False
        conn.execute("ROLLBACK")
        return True

    def _done(self, future: Any) -> None:
        with self._lock:
            self._running = False
        exc = None if future.cancelled() else future.exception()
        if exc is not None:  # best effort: the next one tries again (and the worker's, past the limit)
            logger.debug("background WAL checkpoint failed (%s: %s)", type(exc).__name__, exc)

    def close(self) -> None:
        """Stop: wait for a checkpoint under way (its current pass), then close the connection."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:  # pragma: no cover - closing is best effort
                pass
