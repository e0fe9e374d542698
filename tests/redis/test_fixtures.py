"""The Valkey test harness itself: standalone, unix socket, cluster, TLS proxy, slow proxy, kill -9/restart."""

from __future__ import annotations

import time

import redis
from redis.cluster import RedisCluster
from testkit.valkey_servers import TcpProxy, ValkeyCluster, ValkeyServer


def test_standalone_and_unix_socket(valkey: ValkeyServer) -> None:
    client = redis.Redis.from_url(valkey.url)
    assert client.ping()
    assert client.config_get("save")["save"] == ""
    assert client.config_get("appendonly")["appendonly"] == "no"
    client.close()
    unix = redis.Redis.from_url(valkey.unix_url)
    assert unix.ping()
    unix.close()


def test_cluster_has_three_masters(valkey_cluster: ValkeyCluster) -> None:
    client = RedisCluster(host="127.0.0.1", port=valkey_cluster.nodes[0].port)
    info = client.cluster_info()
    assert info["cluster_state"] == "ok"
    assert int(info["cluster_known_nodes"]) == 3
    assert len(client.get_primaries()) == 3
    client.set("{a}x", b"1")
    assert client.get("{a}x") == b"1"
    client.close()


def test_tls_proxy_speaks_tls(valkey_tls: TcpProxy) -> None:
    assert valkey_tls.url.startswith("rediss://")
    client = redis.Redis.from_url(valkey_tls.url)
    assert client.ping()
    client.close()


def test_slow_proxy_adds_delay(valkey_slow: TcpProxy) -> None:
    client = redis.Redis.from_url(valkey_slow.url)
    client.ping()
    started = time.monotonic()
    client.ping()
    assert time.monotonic() - started >= 0.19
    client.close()


def test_kill9_and_restart(valkey_factory) -> None:  # type: ignore[no-untyped-def]
    server = valkey_factory()
    client = redis.Redis.from_url(server.url, socket_timeout=1)
    client.set("k", b"v")
    server.kill9()
    assert not server.running
    try:
        client.ping()
    except redis.ConnectionError:
        pass
    else:  # pragma: no cover - the server is gone
        raise AssertionError("ping reached a killed server")
    server.restart()
    assert client.ping()
    assert client.get("k") is None  # no persistence: a restarted server starts empty
    client.close()
