"""Extraction bounded like the body: each page is extracted in a worker process that is killed when the fetch's
deadline passes, with its memory capped (issue 40).

Extracting a hostile page can take minutes of CPU and gigabytes (8 MB of ``<p>`` tags through trafilatura; a
small PDF whose thousands of pages share one content stream; Markdown that makes a regular expression backtrack).
None of that can be interrupted from outside a thread (lxml and ``re`` run in C), so it runs in a process:

* a small pool of warm workers (:func:`main` in a new interpreter: perplexed and
  trafilatura already imported), started by the first fetch of the process while its request is on the network;
* a call sends the body down the worker's stdin and reads the answer from its stdout, in a daemon thread: the event
  loop never runs extraction;
* when the awaiting coroutine is cancelled (the fetch's deadline, the caller's cancellation), the worker is
  killed (SIGKILL) and reaped before the cancellation goes on: after a fetch returns, no work it started goes on.
  A killed worker is replaced by the next fetch, not in the background;
* each worker's address space is capped (``RLIMIT_AS``, :data:`MEMORY_BYTES` above what it needs once warm,
  where the platform has it): a page that needs more is ``body_too_large``; a worker that grew past
  :data:`RECYCLE_BYTES` is not reused.

Where no worker can be started (no ``sys.executable``, a sandbox without subprocesses, ``PERPLEXED_EXTRACT_WORKERS=0``)
extraction runs in a daemon thread as before, with a warning logged once.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import os
import queue
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import date
from typing import IO, Any

from perplexed._errors import ConfigError, DocumentError, ExtractionMemoryError, WorkerCrashed
from perplexed._logs import get_logger
from perplexed.extract._extract import Extracted, Format, extract_page, markdown_to_text

__all__ = [
    "MEMORY_BYTES",
    "RECYCLE_BYTES",
    "ExtractionMemoryError",
    "WorkerCrashed",
    "extract_in_worker",
    "prewarm",
    "text_in_worker",
]

logger = get_logger("perplexed.fetch")

#: how much more address space a worker may take than it has once warm (1 GiB; ``PERPLEXED_EXTRACT_MEMORY_MB``
#: in the environment sets another figure)
MEMORY_BYTES = 1 << 30
#: a worker whose peak resident size passed this is not reused (its memory goes back to the system)
RECYCLE_BYTES = 384 << 20
#: Markdown up to this many characters is turned into text in the process (quadratic at worst: milliseconds)
INLINE_TEXT_CHARS = 2000
_MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))
_HEADER = struct.Struct("<IQ")
_REPLY = struct.Struct("<Q")


class _Unavailable(Exception):
    """No worker could be started: extract in a thread instead."""


# --- the parent's side ----------------------------------------------------------------------------------------


class _Worker:
    __slots__ = ("proc", "ready")

    def __init__(self) -> None:
        env = dict(os.environ)
        path = os.pathsep.join(p for p in sys.path if p)  # what this process imports, the worker imports
        env["PYTHONPATH"] = path
        env["PERPLEXED_EXTRACT_PARENT"] = str(os.getpid())
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from perplexed.extract._worker import main; main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0,
        )
        self.ready = False

    def call(self, header: dict[str, Any], body: bytes) -> dict[str, Any]:
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        try:
            if not self.ready:
                if _read_exact(stdout, 1) != b"R":
                    raise _Unavailable("the extraction worker did not start")
                self.ready = True
            head = json.dumps(header).encode()
            stdin.write(_HEADER.pack(len(head), len(body)) + head)
            stdin.write(body)
            size = _read_exact(stdout, _REPLY.size)
            if len(size) < _REPLY.size:
                raise WorkerCrashed("the extraction worker exited without answering")
            data = _read_exact(stdout, _REPLY.unpack(size)[0])
        except (BrokenPipeError, ConnectionError, OSError, ValueError) as exc:
            if not self.ready:
                raise _Unavailable(f"the extraction worker did not start ({exc})") from None
            raise WorkerCrashed(f"the extraction worker exited without answering ({exc})") from None
        reply: dict[str, Any] = json.loads(data)
        return reply

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=2.0)  # reaped: its memory is the system's again when this returns
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = stream.read(size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


class _Spawner:
    """One long-lived thread starts every worker: on Linux a worker dies with the thread that started it
    (``PR_SET_PDEATHSIG``), so that must be a thread that lives as long as this process, not a passing one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: queue.SimpleQueue[concurrent.futures.Future[_Worker]] = queue.SimpleQueue()
        self.pid = 0

    def start(self) -> _Worker:
        with self.lock:
            if self.pid != os.getpid():  # first use, or a forked child (threads do not survive a fork)
                self.requests = queue.SimpleQueue()
                threading.Thread(target=self.serve, args=(self.requests,), name="perplexed-extract-spawner",
                                 daemon=True).start()
                self.pid = os.getpid()
            future: concurrent.futures.Future[_Worker] = concurrent.futures.Future()
            self.requests.put(future)
        return future.result()

    @staticmethod
    def serve(requests: queue.SimpleQueue[concurrent.futures.Future[_Worker]]) -> None:
        while True:
            future = requests.get()
            try:
                future.set_result(_Worker())
            except BaseException as exc:  # handed to the thread that asked
                future.set_exception(exc)


_spawner = _Spawner()


def _started() -> _Worker:
    return _spawner.start()


#: after a worker could not start, extraction runs in threads this long before a worker is tried again
UNAVAILABLE_RETRY_S = 60.0


class _Pool:
    """Warm workers of this process (at most ``_MAX_WORKERS`` working at once, as many kept idle)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slots = threading.Semaphore(_MAX_WORKERS)
        self.idle: list[_Worker] = []
        self.live: set[_Worker] = set()  # idle and working: killed at exit
        self.pid = os.getpid()
        self.turned_off = os.environ.get("PERPLEXED_EXTRACT_WORKERS", "").strip() == "0"
        self.retry_at = 0.0  # after a worker could not start: threads until then, then a worker is tried again
        self.warned = False

    def _forked(self) -> None:
        if self.pid != os.getpid():  # a forked child: the parent's workers are not ours to use or kill
            self.idle = []
            self.live = set()
            self.pid = os.getpid()
            self.slots = threading.Semaphore(_MAX_WORKERS)

    def _spawn(self) -> _Worker:
        worker = _started()
        with self.lock:
            self.live.add(worker)
        return worker

    def take(self) -> _Worker:
        with self.lock:
            self._forked()
            while self.idle:
                worker = self.idle.pop()
                if worker.alive():
                    return worker
                self.live.discard(worker)
                worker.kill()
        try:
            return self._spawn()
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise _Unavailable(str(exc)) from None

    def give_back(self, worker: _Worker) -> None:
        with self.lock:
            if worker.alive() and len(self.idle) < _MAX_WORKERS and self.pid == os.getpid():
                self.idle.append(worker)
                return
        self.discard(worker)

    def discard(self, worker: _Worker) -> None:
        with self.lock:
            self.live.discard(worker)
        worker.kill()

    def prewarm(self) -> None:
        if self.disabled:
            return
        with self.lock:
            self._forked()
            if self.idle or len(self.live) >= _MAX_WORKERS:  # one is warm, or all are at work
                return
        try:
            worker = self._spawn()
        except (OSError, ValueError, subprocess.SubprocessError):
            return
        self.give_back(worker)

    def close(self) -> None:
        """Kill every worker (idle ones; at exit, working ones too)."""
        with self.lock:
            idle, self.idle = self.idle, []
            for worker in idle:
                self.live.discard(worker)
        for worker in idle:
            worker.kill()

    def kill_all(self) -> None:
        self.close()
        with self.lock:
            live, self.live = list(self.live), set()
        if self.pid == os.getpid():
            for worker in live:
                worker.kill()

    @property
    def disabled(self) -> bool:
        return self.turned_off or time.monotonic() < self.retry_at

    def unavailable(self, why: str) -> None:
        # a worker could not start (a sandbox, too many open files, a fork failing under load): threads for a
        # minute, then a worker is tried again, so a passing failure does not lose the bounds for good
        self.retry_at = time.monotonic() + UNAVAILABLE_RETRY_S
        if not self.warned:
            self.warned = True
            logger.warning("page extraction runs in threads (no deadline, no memory cap): %s", why)


_pool = _Pool()
atexit.register(_pool.kill_all)


def prewarm() -> None:
    """Start a worker now (none idle yet) so that the first extraction does not wait for one."""
    _pool.prewarm()


class _Job:
    """One extraction: the worker it runs on, and whether its caller has gone."""

    __slots__ = ("cancelled", "lock", "worker")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cancelled = False
        self.worker: _Worker | None = None

    def run(self, header: dict[str, Any], body: bytes) -> dict[str, Any]:
        """In a daemon thread: wait for a slot, take a worker, send, receive."""
        slots = _pool.slots
        while not slots.acquire(timeout=0.05):
            if self.cancelled:
                raise asyncio.CancelledError
        try:
            with self.lock:
                if self.cancelled:
                    raise asyncio.CancelledError
                worker = self.worker = _pool.take()
            try:
                reply = worker.call(header, body)
            except BaseException:
                _pool.discard(worker)
                raise
            with self.lock:
                self.worker = None
                gone = self.cancelled
            if gone or reply.get("recycle"):
                _pool.discard(worker)
            else:
                _pool.give_back(worker)
            return reply
        finally:
            slots.release()

    def cancel(self) -> None:
        with self.lock:
            self.cancelled = True
            worker, self.worker = self.worker, None
        if worker is not None:
            _pool.discard(worker)


async def _run(header: dict[str, Any], body: bytes) -> dict[str, Any]:
    if _pool.disabled:
        raise _Unavailable("disabled")
    job = _Job()
    loop = asyncio.get_running_loop()
    future: asyncio.Future[dict[str, Any]] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def work() -> None:
        try:
            value: Any = job.run(header, body)
            ok = True
        except BaseException as exc:  # delivered to the awaiting coroutine
            value, ok = exc, False
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
            loop.call_soon_threadsafe(deliver, ok, value)

    threading.Thread(target=work, name="perplexed-extract", daemon=True).start()
    try:
        return await future
    except BaseException:
        job.cancel()  # the deadline or the caller: the worker is killed and reaped before this goes on
        raise


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """The fallback: the function in a daemon thread (not bounded; used where no worker can start)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def work() -> None:
        try:
            value, ok = fn(*args), True
        except BaseException as exc:
            value, ok = exc, False
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(deliver, ok, value)

    threading.Thread(target=work, name="perplexed-extract", daemon=True).start()
    return await future


def _raise_from(reply: dict[str, Any]) -> None:
    error = reply.get("error")
    if error is None:
        return
    message = str(reply.get("message", ""))
    if error == "document":
        raise DocumentError(message)
    if error == "config":
        raise ConfigError(message)
    if error == "memory":
        raise ExtractionMemoryError(message)
    raise WorkerCrashed(message)


async def extract_in_worker(body: bytes, content_type: str | None, url: str | None,
                            fmt: Format) -> tuple[Extracted, str | None]:
    """:func:`perplexed.extract._extract.extract_page` in a worker process (bounded by the caller's deadline and
    :data:`MEMORY_BYTES`). Raises ``DocumentError``, ``ConfigError``, :class:`ExtractionMemoryError`,
    :class:`WorkerCrashed`."""
    header = {"op": "page", "content_type": content_type, "url": url, "format": fmt}
    try:
        reply = await _run(header, body)
    except _Unavailable as exc:
        _pool.unavailable(str(exc))
        result: tuple[Extracted, str | None] = await _in_thread(extract_page, body, content_type, url, fmt)
        return result
    _raise_from(reply)
    published = reply.get("published")
    extracted = Extracted(
        text=str(reply["text"]), format="text" if reply.get("format") == "text" else "markdown",
        title=str(reply.get("title") or ""), published=date.fromisoformat(published) if published else None,
        language=reply.get("language"), page_type=reply.get("page_type"),
        page_type_confidence=reply.get("page_type_confidence"),
        structured=dict(reply.get("structured") or {}),
    )
    return extracted, reply.get("interstitial")


async def text_in_worker(markdown: str) -> str:
    """:func:`perplexed.extract._extract.markdown_to_text` off the event loop, bounded like extraction (short texts,
    whose worst case is milliseconds, are converted here)."""
    if len(markdown) <= INLINE_TEXT_CHARS:
        return markdown_to_text(markdown)
    try:
        reply = await _run({"op": "text"}, markdown.encode("utf-8", "surrogatepass"))
    except _Unavailable as exc:
        _pool.unavailable(str(exc))
        text: str = await _in_thread(markdown_to_text, markdown)
        return text
    _raise_from(reply)
    return str(reply["text"])


# --- the worker's side -------------------------------------------------------------------------------------------


def _limit_memory() -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows: no address-space limit
        return
    try:
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        size = 0
    if not size:
        return  # pragma: no cover - no /proc: the deadline still bounds the worker
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = size + _memory_budget()
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        global _limit
        _limit = limit


#: the address-space limit of this worker (0: none)
_limit = 0


def _ran_out() -> bool:
    """Whether this worker's address space reached its limit (libxml2 and trafilatura swallow a failed
    allocation and return less text: the peak size says what happened)."""
    if not _limit:
        return False
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024 >= _limit - (16 << 20)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _memory_budget() -> int:
    try:
        megabytes = int(os.environ.get("PERPLEXED_EXTRACT_MEMORY_MB", ""))
    except ValueError:
        return MEMORY_BYTES
    return max(16, megabytes) << 20


def _peak_bytes() -> int:
    try:
        import resource
    except ImportError:  # pragma: no cover
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _serve(header: dict[str, Any], body: bytes) -> dict[str, Any]:
    try:
        if header.get("op") == "text":
            return {"text": markdown_to_text(body.decode("utf-8", "surrogatepass"))}
        extracted, why = extract_page(body, header.get("content_type"), header.get("url"),
                                      "text" if header.get("format") == "text" else "markdown")
        return {"text": extracted.text, "format": extracted.format, "title": extracted.title,
                "published": extracted.published.isoformat() if extracted.published else None,
                "language": extracted.language, "interstitial": why, "page_type": extracted.page_type,
                "page_type_confidence": extracted.page_type_confidence,
                "structured": json.loads(json.dumps(extracted.structured, default=str))}
    except MemoryError:
        return {"error": "memory", "message": f"extracting the page needed more than {_memory_budget() >> 20} MiB",
                "recycle": True}
    except DocumentError as exc:
        return {"error": "document", "message": exc.message}
    except ConfigError as exc:
        return {"error": "config", "message": exc.message}
    except Exception as exc:  # the extractor failed on this page (it is the page's content that is odd)
        return {"error": "crash", "message": f"extraction failed: {type(exc).__name__}: {exc}"[:500]}


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when the process that started it dies (no extraction outlives it)."""
    if not sys.platform.startswith("linux"):
        return  # elsewhere the closed stdin ends the worker after its current page
    with contextlib.suppress(Exception):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.environ.get("PERPLEXED_EXTRACT_PARENT") not in (None, str(os.getppid())):
        os._exit(0)  # the parent died before the line above ran


def main() -> None:
    """The worker: requests on stdin, answers on stdout (kept apart from anything a library prints)."""
    _die_with_parent()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    source = sys.stdin.buffer
    with contextlib.suppress(ImportError):
        import trafilatura
        import trafilatura.core  # noqa: F401
    with contextlib.suppress(ImportError):
        import pypdf  # noqa: F401
    _limit_memory()
    out.write(b"R")
    while True:
        head = _read_exact(source, _HEADER.size)
        if len(head) < _HEADER.size:
            return
        head_size, body_size = _HEADER.unpack(head)
        header = json.loads(_read_exact(source, head_size))
        body = _read_exact(source, body_size)
        reply = _serve(header, body)
        del body
        if "error" not in reply and _ran_out():
            reply = {"error": "memory", "recycle": True,
                     "message": f"extracting the page needed more than {_memory_budget() >> 20} MiB"}
        if _peak_bytes() > RECYCLE_BYTES:
            reply["recycle"] = True
        data = json.dumps(reply).encode()
        out.write(_REPLY.pack(len(data)) + data)
        if reply.get("error") == "memory":
            return


if __name__ == "__main__":
    main()
