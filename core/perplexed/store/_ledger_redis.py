"""The usage ledger in Redis/Valkey: one list per day (``{prefix}{usage}:YYYYMMDD``), each expiring after the
retention, apart from the keys of the store's decisions (issue 38)."""

from __future__ import annotations

import calendar
import time
from collections.abc import Sequence
from typing import Any

from perplexed.store._ledger import DEFAULT_RETENTION_S, UsageRecord, encode_record, records_of

__all__ = ["RedisLedger"]

_DAY = 86400.0


class RedisLedger:
    """Mixed into the Redis backend: ``usage_add`` is one RPUSH (and EXPIRE) per day touched."""

    prefix: str
    clock: Any
    _client: Any

    def _usage_key(self, day: int) -> str:
        return f"{self.prefix}{{usage}}:{time.strftime('%Y%m%d', time.gmtime(day * _DAY))}"

    async def usage_add(self, records: Sequence[UsageRecord], keep_s: float = DEFAULT_RETENTION_S) -> None:
        by_day: dict[int, list[str]] = {}
        for rec in records:
            by_day.setdefault(int(rec.ts // _DAY), []).append(encode_record(rec))
        client = self._client()
        for day, items in by_day.items():
            key = self._usage_key(day)
            await client.execute_command("RPUSH", key, *items)
            # the list outlives its last record by the retention (plus the day itself)
            await client.execute_command("EXPIREAT", key, int((day + 1) * _DAY + keep_s))

    def usage_add_nowait(self, records: Sequence[UsageRecord], keep_s: float = DEFAULT_RETENTION_S) -> list[Any] | None:
        """Send the records on this loop's open pipelined connection without waiting (standalone servers):
        the replies' futures, or None when they cannot go that way (then ``await usage_add(...)``)."""
        if getattr(self, "cluster", False):
            return None
        client = self._client()
        send = getattr(client, "send_nowait", None)
        if send is None:
            return None
        by_day: dict[int, list[str]] = {}
        for rec in records:
            by_day.setdefault(int(rec.ts // _DAY), []).append(encode_record(rec))
        futures: list[Any] = []
        for day, items in by_day.items():
            key = self._usage_key(day)
            pushed = send("RPUSH", key, *items)
            if pushed is None:
                return None if not futures else futures  # what went is kept; the caller is told nothing more
            futures.append(pushed)
            expiry = send("EXPIREAT", key, int((day + 1) * _DAY + keep_s))
            if expiry is not None:
                futures.append(expiry)
        return futures

    async def _usage_days(self) -> dict[int, Any]:
        """The ledger's day keys present (SCAN: a fleet's ledger is a few dozen keys)."""
        client = self._client()
        head = f"{self.prefix}{{usage}}:"
        days: dict[int, Any] = {}
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in head) + "*"
        async for key in client.scan_iter(match=pattern, count=500):
            text = key.decode() if isinstance(key, bytes) else str(key)
            try:
                stamp = time.strptime(text[len(head):], "%Y%m%d")
            except ValueError:
                continue
            days[int(calendar.timegm(stamp) // _DAY)] = key
        return days

    async def usage_read(self, since: float, until: float) -> list[UsageRecord]:
        client = self._client()
        out: list[UsageRecord] = []
        first, last = int(since // _DAY), int(until // _DAY)
        for day, key in sorted((await self._usage_days()).items()):
            if first <= day <= last:
                raw = await client.execute_command("LRANGE", key, 0, -1)
                out.extend(r for r in records_of(raw or ()) if since <= r.ts < until)
        out.sort(key=lambda r: r.ts)
        return out

    async def usage_trim(self, before: float) -> int:
        """Days wholly before ``before`` go at once; the day it falls in is rewritten without the older ones."""
        client = self._client()
        dropped = 0
        cut = int(before // _DAY)
        for day, key in (await self._usage_days()).items():
            if day > cut:
                continue
            raw = list(await client.execute_command("LRANGE", key, 0, -1) or ())
            keep = [] if day < cut else [item for item in raw
                                         if (recs := records_of([item])) and recs[0].ts >= before]
            if len(keep) == len(raw):
                continue
            dropped += len(raw) - len(keep)
            await client.execute_command("UNLINK", key)
            if keep:
                await client.execute_command("RPUSH", key, *keep)
                await client.execute_command("EXPIREAT", key, int((day + 1) * _DAY + DEFAULT_RETENTION_S))
        return dropped
