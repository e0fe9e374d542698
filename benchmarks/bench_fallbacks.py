"""The same fallback built two ways: LangChain's ``Runnable.with_fallbacks`` over two retrievers, and a
perplexed provider chain. Latency, and what each does with an empty answer and a hung primary.

Run:  .venv/bin/python benchmarks/bench_fallbacks.py [--rounds 300] [--json]

Both sides make the same HTTP requests to the same loopback servers (a child process): the primary is a
refused port (or a server answering an empty result list, or one that never answers), the backup a
SearXNG-shaped server with 3 hits. The LangChain retrievers are minimal ``BaseRetriever`` subclasses with a
native ``_aget_relevant_documents`` that send the request with a pooled ``httpx.AsyncClient`` and raise on
an HTTP error (what a well-behaved retriever does; see ``shared/reference/ecosystem.md`` §8).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "core"), str(ROOT / "tests")]

import perplexed  # noqa: E402
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from perplexed.providers import SearXNG  # noqa: E402
from testkit.fault_process import fault_servers  # noqa: E402

HANG_CAP_S = 1.0  # the outer cap a caller needs around with_fallbacks (it has no per-attempt timeout)
_client = httpx.AsyncClient(
    timeout=None, limits=httpx.Limits(max_connections=200, max_keepalive_connections=50)
)


class HttpRetriever(BaseRetriever):
    base_url: str

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        raise NotImplementedError

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        response = await _client.get(f"{self.base_url}/search", params={"q": query, "format": "json"})
        response.raise_for_status()
        return [
            Document(page_content=r.get("content", ""), metadata={"url": r["url"]})
            for r in response.json().get("results", [])
        ]


async def _timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    try:
        value = await fn()
    except Exception as exc:
        value = exc
    return time.perf_counter() - start, value


async def run(rounds: int) -> dict[str, Any]:
    with fault_servers(["refused", "good", "soft_failure_200", "accept_hang"]) as urls:
        lc = {name: HttpRetriever(base_url=urls[name]) for name in urls}
        pp = {name: SearXNG(base_url=urls[name], name=name) for name in urls}

        def lc_chain(primary: str) -> Any:
            return lc[primary].with_fallbacks([lc["good"]])

        async def ours(primary: str, budget: int = 10_000) -> Any:
            return await perplexed.asearch("zoning", [pp[primary], pp["good"]], provider_timeout_ms=budget)

        # latency of a fallback over a refused primary, interleaved
        for _ in range(30):
            await lc_chain("refused").ainvoke("zoning")
            await ours("refused")
        lc_t, pp_t = [], []
        for _ in range(rounds):
            t, docs = await _timed(lambda: lc_chain("refused").ainvoke("zoning"))
            assert len(docs) == 3, docs
            lc_t.append(t)
            t, result = await _timed(lambda: ours("refused"))
            assert result.provider == "good", result
            pp_t.append(t)
        # semantics: an empty primary (HTTP 200, no results) and a hung one
        _, lc_empty = await _timed(lambda: lc_chain("soft_failure_200").ainvoke("zoning"))
        _, pp_empty = await _timed(lambda: ours("soft_failure_200"))
        lc_hang_t, lc_hang = await _timed(
            lambda: asyncio.wait_for(lc_chain("accept_hang").ainvoke("zoning"), HANG_CAP_S)
        )
        pp_hang_t, pp_hang = await _timed(lambda: ours("accept_hang", budget=200))
    await _client.aclose()
    return {
        "lc_fallback_ms": statistics.median(lc_t) * 1000,
        "perplexed_fallback_ms": statistics.median(pp_t) * 1000,
        "fallback_time_ratio": statistics.median(pp_t) / statistics.median(lc_t),
        "lc_empty_primary_docs": len(lc_empty) if isinstance(lc_empty, list) else repr(lc_empty),
        "perplexed_empty_primary_hits": len(pp_empty.hits),
        "perplexed_empty_primary_answered_by": pp_empty.provider,
        "lc_hung_primary": f"{type(lc_hang).__name__} after {lc_hang_t * 1000:.0f} ms (outer cap {HANG_CAP_S:g} s)",
        "perplexed_hung_primary": f"{pp_hang.provider} after {pp_hang_t * 1000:.0f} ms (budget 200 ms), "
        f"attempts {[a.outcome.value for a in pp_hang.attempts]}",
    }


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = asyncio.run(run(args.rounds))
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"fallback over a refused primary: LangChain with_fallbacks {out['lc_fallback_ms']:.2f} ms, "
            f"perplexed chain {out['perplexed_fallback_ms']:.2f} ms ({out['fallback_time_ratio']:.2f}x)"
        )
        print(
            f"empty primary: with_fallbacks returns {out['lc_empty_primary_docs']} documents (no fallback); "
            f"perplexed returns {out['perplexed_empty_primary_hits']} hits from "
            f"{out['perplexed_empty_primary_answered_by']}"
        )
        print(
            f"hung primary: with_fallbacks {out['lc_hung_primary']}; perplexed {out['perplexed_hung_primary']}"
        )
    return out


if __name__ == "__main__":
    main()
