"""The SQLite store's hand-offs between the caller and its worker thread (moved out of ``sqlite.py``)."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

from perplexed._logs import get_logger

logger = get_logger("perplexed.governance")


class _Busy(Exception):
    """The write lock is taken: decide on the worker thread, which waits for it."""


class _Abandoned(Exception):
    """The caller stopped waiting for this decision (an outage): it was rolled back, nothing was taken."""


class _Handoff:
    """Who has the last word on a decision made on the worker thread: the worker, about to commit it, or the
    caller, that stopped waiting. Exactly one wins, so a decision the caller gave up on never takes a slot,
    a trial lease or money that no call will use, and one that was committed is never thrown away."""

    __slots__ = ("_lock", "_state")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = 0  # 0: open, 1: committing, 2: abandoned

    def commit(self) -> bool:
        with self._lock:
            if self._state == 2:
                return False
            self._state = 1
            return True

    @property
    def abandoned(self) -> bool:
        return self._state == 2

    def abandon(self) -> bool:
        with self._lock:
            if self._state == 1:
                return False
            self._state = 2
            return True


def _log_failure(future: Any) -> None:
    exc = future.exception()
    if exc is not None:
        logger.warning("state store record failed (%s: %s); going on without it", type(exc).__name__, exc)


def _quiet(future: Any) -> None:
    if not future.cancelled():
        future.exception()  # retrieved: an abandoned decision's end is nobody's business


def _locked(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or (
        isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)))
