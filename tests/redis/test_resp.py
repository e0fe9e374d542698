"""The Redis store's own RESP client: parsing (table), pipelining, AUTH/SELECT, a caller giving up."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
from perplexed.store import Admission, RedisStore
from perplexed.store._resp import (  # private: the RESP codec is tested on raw bytes
    NoScript,
    ProtocolError,
    RespClient,
    RespError,
    _encode,
    _Incomplete,
    _parse,
)
from redis.asyncio.connection import parse_url
from testkit.valkey_servers import TcpProxy, ValkeyServer

PARSE = [
    (b"+OK\r\n", b"OK"),
    (b":42\r\n", 42),
    (b":-3\r\n", -3),
    (b"$5\r\nhello\r\n", b"hello"),
    (b"$0\r\n\r\n", b""),
    (b"$-1\r\n", None),
    (b"$4\r\na\r\nb\r\n", b"a\r\nb"),  # a bulk string may hold CRLF
    (b"*0\r\n", []),
    (b"*-1\r\n", None),
    (b"*3\r\n$4\r\ncall\r\n$0\r\n\r\n:1\r\n", [b"call", b"", 1]),
    (b"*2\r\n*1\r\n+a\r\n*2\r\n$-1\r\n:7\r\n", [[b"a"], [None, 7]]),
]


@pytest.mark.parametrize(("data", "value"), PARSE)
def test_parse_table(data: bytes, value: Any) -> None:
    assert _parse(data) == value
    for cut in range(len(data)):  # every prefix is incomplete, never wrong
        with pytest.raises(_Incomplete):
            _parse(data[:cut])


def test_parse_errors() -> None:
    error = _parse(b"-NOSCRIPT No matching script\r\n")
    assert isinstance(error, NoScript)
    error = _parse(b"-WRONGTYPE Operation against a key\r\n")
    assert isinstance(error, RespError) and not isinstance(error, NoScript)
    with pytest.raises(ProtocolError):
        _parse(b"!weird\r\n")


def test_encode() -> None:
    assert _encode(("SET", b"k", 5, "v\u00e9")) == b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n5\r\n$3\r\nv\xc3\xa9\r\n"


async def test_pipelined_commands_on_one_connection(valkey: ValkeyServer, redis_prefix: str) -> None:
    client = RespClient(dict(parse_url(valkey.url)), 2.0)
    replies = await asyncio.gather(*(client.execute_command("INCR", f"{redis_prefix}n") for _ in range(200)))
    assert sorted(replies) == list(range(1, 201))
    assert await client.execute_command("DEL", f"{redis_prefix}n") == 1
    with pytest.raises(RespError, match="WRONGTYPE"):
        await client.execute_command("SET", f"{redis_prefix}s", "x") and await client.execute_command(
            "HGET", f"{redis_prefix}s", "f")
    assert await client.execute_command("PING") == b"PONG"  # an error reply leaves the connection usable
    keys = [k async for k in client.scan_iter(match=f"{redis_prefix}*")]
    assert keys == [f"{redis_prefix}s".encode()]
    await client.execute_command("DEL", f"{redis_prefix}s")
    await client.aclose()


async def test_auth_and_db(valkey_factory: Any, redis_prefix: str) -> None:
    server: ValkeyServer = valkey_factory(extra=("--requirepass", "pw-resp-test"))
    url = f"redis://:pw-resp-test@127.0.0.1:{server.port}/3"
    store = RedisStore(url, prefix=redis_prefix, timeout_ms=2000)
    assert (await store.admit(Admission("p", "p", rate_limit=(1, 60.0)))).verdict == "call"
    assert store.outages == 0
    plain = redis.Redis(host="127.0.0.1", port=server.port, db=3, password="pw-resp-test")
    assert plain.keys(f"{redis_prefix}*")  # written to db 3
    plain.close()
    wrong = RedisStore(f"redis://:nope@127.0.0.1:{server.port}/3", prefix=redis_prefix, timeout_ms=2000)
    assert (await wrong.admit(Admission("p", "p"))).verdict == "call"  # degraded: in-process state
    assert wrong.outages == 1 and "WRONGPASS" in (wrong.last_error or "")
    await store.aclose()
    await wrong.aclose()


async def test_a_caller_giving_up_keeps_the_connection(valkey: ValkeyServer) -> None:
    # a slow (or hung) server costs one connection: a caller giving up leaves its reply to be read and dropped
    proxy = TcpProxy(valkey.port, delay_s=0.3)
    try:
        client = RespClient(dict(parse_url(proxy.url)), 2.0)
        for _ in range(3):
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.1):
                    await client.execute_command("PING")
        proxy.delay_s = 0.0
        async with asyncio.timeout(10.0):
            assert await client.execute_command("ECHO", "after") == b"after"  # the late PONGs were dropped
        assert proxy.accepted == 1 and client.connections == 1
        await client.aclose()
    finally:
        proxy.close()
