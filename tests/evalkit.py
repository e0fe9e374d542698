"""Providers with known behaviour for the evaluation tests (issue 37): function providers over a fixed plan.

A is right at rank 1 on 90 % of the queries at $0.01 a call, B right on 70 % for free, C right on 50 % and
failing 20 %. The latencies are scaled down 100 times from the issue's 400 ms / 200 ms (4 ms and 2 ms of
``asyncio.sleep``) so the suite stays fast; what is measured is the same."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import Any

from perplexed import Hit, ProviderError
from perplexed.providers import FunctionProvider

N_QUERIES = 400


def queries(n: int = N_QUERIES) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "query": f"query {i}", "expected_urls": [f"https://www.Example.com/doc/{i}/?utm_source=x#top"]}
            for i in range(n)]


class Planned:
    """A provider over a plan: per query ``right`` (the expected URL at rank 1), ``wrong`` or ``fail``."""

    def __init__(self, name: str, right: float, fail: float = 0.0, cost: float | None = None,
                 delay_s: float = 0.002, seed: int = 1, n: int = N_QUERIES) -> None:
        rng = random.Random(seed)
        self.plan: dict[str, str] = {}
        for i in range(n):
            draw = rng.random()
            self.plan[f"query {i}"] = "fail" if draw < fail else "right" if draw < fail + right else "wrong"
        self.name = name
        self.delay_s = delay_s
        self.calls: Counter[str] = Counter()
        self.failing_share = 0.0  # set later: a share of calls fails on top of the plan
        self._rng = random.Random(seed + 100)

        async def search(query: str, options: Any) -> list[Hit]:
            self.calls[query] += 1
            await asyncio.sleep(self.delay_s)
            what = self.plan.get(query, "right")
            if what == "fail" or (self.failing_share and self._rng.random() < self.failing_share):
                raise ProviderError("upstream", f"{name} failed", provider=name)
            number = query.rsplit(" ", 1)[-1]
            first = f"https://example.com/doc/{number}" if what == "right" else f"https://{name}.example/miss/{number}"
            return [Hit(url=first, title=f"{name} {query}"), Hit(url=f"https://{name}.example/other/{number}")]

        search.__name__ = f"search_{name}"
        self.provider = FunctionProvider(search, name=name, cost=cost)

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def share(self, what: str) -> float:
        return sum(1 for v in self.plan.values() if v == what) / len(self.plan)


def abc() -> tuple[Planned, Planned, Planned]:
    a = Planned("a", right=0.9, cost=0.01, delay_s=0.004, seed=11)
    b = Planned("b", right=0.7, delay_s=0.002, seed=12)
    c = Planned("c", right=0.5, fail=0.2, delay_s=0.002, seed=13)
    return a, b, c
