"""The fleet's slots (its turns while the store is down) after the server forgot them (a restart): each member
leases its slot again as soon as the store is back, and takes back the index it held, so two members never
take the same turns in the next outage (issue 40 #15: turns bunched together after a Valkey kill)."""

from __future__ import annotations

import asyncio
from typing import Any

import redis
from perplexed.store import Admission, RedisStore
from perplexed.store._resilient import RETRY_S  # private: waits out the store's retry interval
from testkit.valkey_servers import ValkeyServer


def slot_holders(server: ValkeyServer, prefix: str, fleet_size: int) -> list[str | None]:
    client = redis.Redis.from_url(server.url)
    try:
        values = [client.get(f"{prefix}{{fleet}}:slot:{i}") for i in range(fleet_size)]
        return [None if v is None else v.decode() for v in values]
    finally:
        client.close()


async def test_members_take_back_their_own_slots_after_the_server_forgot_them(
    valkey: ValkeyServer, redis_prefix: str
) -> None:
    stores = [RedisStore(valkey.url, prefix=redis_prefix, fleet_size=3, timeout_ms=2000) for _ in range(3)]
    try:
        backends: list[Any] = [store._remote for store in stores]  # type: ignore[attr-defined]
        tokens = [f"member-{i}" for i in range(3)]
        assert [await b.claim_slot(t, 3, 60_000) for b, t in zip(backends, tokens, strict=True)] == [0, 1, 2]
        client = redis.Redis.from_url(valkey.url)
        client.delete(*[f"{redis_prefix}{{fleet}}:slot:{i}" for i in range(3)])  # a restarted server: no leases
        client.close()
        # they come back in the other order: each takes back its own index (before: 0, 1, 2 in this order,
        # while the members not yet back still took the turns of the indices they held)
        again = [await backends[i].claim_slot(tokens[i], 3, 60_000) for i in (2, 0, 1)]
        assert again == [2, 0, 1]
        assert slot_holders(valkey, redis_prefix, 3) == tokens
    finally:
        for store in stores:
            await store.aclose()


async def test_a_member_leases_its_slot_again_as_soon_as_the_store_is_back(
    valkey_factory: Any, redis_prefix: str
) -> None:
    server: ValkeyServer = valkey_factory()
    store = RedisStore(server.url, prefix=redis_prefix, fleet_size=2, timeout_ms=1000)
    limited = Admission("p", "p", rate_limit=(5, 1.0))
    try:
        assert (await store.admit(limited)).verdict == "call"
        token = store._token  # type: ignore[attr-defined]
        assert token in slot_holders(server, redis_prefix, 2)
        server.kill9()
        await store.admit(limited)  # the outage: turns on the slot it held
        assert not store.available
        server.restart()
        await asyncio.sleep(RETRY_S + 0.1)
        await store.admit(limited)  # the probe's write succeeds: back, and the slot is leased again at once
        assert store.available
        # before: the restarted server knew no lease until the member's renewal, up to 10 s later, and another
        # member could take its index meanwhile
        assert slot_holders(server, redis_prefix, 2)[0] == token
    finally:
        await store.aclose()
