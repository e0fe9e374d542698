"""The MCP server's cost: a ``web_search`` tools/call over stdio against the same search called in-process, and
100 concurrent calls over streamable HTTP.

Run:  .venv/bin/python benchmarks/bench_mcp.py [--rounds 200] [--concurrent 100] [--json]

A loopback SearXNG-shaped server (bench_engine's, in its own process) answers every search. ``perplexed mcp``
runs as a subprocess (``--no-cache``: every call reaches the provider), spoken to by the official SDK client.
Rounds interleave the two variants so machine noise hits both alike:

* **in-process**: ``await perplexed.asearch(q, searxng)``;
* **stdio**: ``client.call_tool("web_search", {...})`` through ``perplexed mcp`` — JSON-RPC over pipes, the
  tool's argument handling, the chain, the structured result and its validation against the output schema.

Target (issue 25): median overhead <= 5 ms over the in-process search (ratio and absolute, same run); 100
concurrent calls over streamable HTTP complete with none lost. Exit status 1 when missed (``--no-check``
only prints).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "core"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import perplexed  # noqa: E402
from bench_engine import SERVER  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from perplexed.providers import SearXNG  # noqa: E402

CLI = str(Path(sys.executable).with_name("perplexed"))
QUERY = "zoning setbacks"


def start_upstream() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, "10"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/ok"


def server_env(base: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERPLEXED_", "PERPLEXITY_", "SEARXNG_"))}
    env["SEARXNG_URL"] = base
    return env


async def stdio_vs_inprocess(base: str, rounds: int, warmup: int) -> dict[str, float]:
    provider = SearXNG(base_url=base)
    params = StdioServerParameters(command=CLI, args=["mcp", "--provider", "searxng", "--no-cache"],
                                   env=server_env(base))
    inproc: list[float] = []
    stdio: list[float] = []
    async with Client(params, read_timeout_seconds=60) as client:
        await client.list_tools()
        for i in range(warmup + rounds):
            variants = [("in", None), ("mcp", None)] if i % 2 == 0 else [("mcp", None), ("in", None)]
            for name, _ in variants:
                start = time.perf_counter()
                if name == "in":
                    result = await perplexed.asearch(QUERY, provider, max_results=5)
                    assert result.provider == "searxng"
                else:
                    reply = await client.call_tool("web_search", {"query": QUERY, "max_results": 5})
                    assert not reply.is_error and reply.structured_content["provider"] == "searxng"
                elapsed = time.perf_counter() - start
                if i >= warmup:
                    (inproc if name == "in" else stdio).append(elapsed)
    med_in, med_mcp = statistics.median(inproc), statistics.median(stdio)
    return {"inprocess_ms": med_in * 1e3, "stdio_ms": med_mcp * 1e3, "overhead_ms": (med_mcp - med_in) * 1e3,
            "ratio": med_mcp / med_in}


def start_http_server(base: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([CLI, "mcp", "--http", "--port", "0", "--provider", "searxng", "--no-cache"],
                            env=server_env(base), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    while True:
        line = proc.stderr.readline()
        if not line:
            raise SystemExit(f"perplexed mcp --http exited: {proc.wait()}")
        match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        if match:
            return proc, f"http://127.0.0.1:{match.group(1)}/mcp"


async def http_concurrent(url: str, concurrent: int) -> dict[str, float]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(timeout=120) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client:
            await client.list_tools()

            async def one(i: int) -> bool:
                reply = await client.call_tool("web_search", {"query": f"{QUERY} {i}", "max_results": 3})
                return not reply.is_error and len(reply.structured_content["hits"]) == 3

            start = time.perf_counter()
            results = await asyncio.gather(*(one(i) for i in range(concurrent)), return_exceptions=True)
            elapsed = time.perf_counter() - start
    ok = sum(1 for r in results if r is True)
    return {"calls": concurrent, "ok": ok, "lost": concurrent - ok, "seconds": elapsed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--concurrent", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-check", action="store_true")
    args = parser.parse_args()
    upstream, base = start_upstream()
    try:
        stdio = asyncio.run(stdio_vs_inprocess(base, args.rounds, args.warmup))
        server, url = start_http_server(base)
        try:
            http = asyncio.run(http_concurrent(url, args.concurrent))
        finally:
            server.terminate()
            server.wait(timeout=20)
    finally:
        assert upstream.stdin is not None
        upstream.stdin.close()
        upstream.wait(timeout=10)
    data = {"stdio": stdio, "http": http, "load": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(data))
    else:
        print(f"web_search in-process median {stdio['inprocess_ms']:.2f} ms; over stdio {stdio['stdio_ms']:.2f} ms: "
              f"+{stdio['overhead_ms']:.2f} ms ({stdio['ratio']:.2f}x)  [target <= 5 ms]")
        print(f"{http['calls']} concurrent calls over streamable HTTP: {http['ok']} ok, {http['lost']} lost, "
              f"{http['seconds']:.1f} s  [target: none lost]   (load average {data['load']:.1f})")
    met = stdio["overhead_ms"] <= 5.0 and http["lost"] == 0
    return 0 if met or args.no_check else 1


if __name__ == "__main__":
    raise SystemExit(main())
