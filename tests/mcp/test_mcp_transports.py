"""``perplexed mcp`` as a user runs it: a subprocess spoken to by the SDK's own client over stdio and over
streamable HTTP, against loopback upstreams (a SearXNG-shaped server and the Agent API stand-in), plus the
HTTP guard: Host and Origin checks, the bearer token, the body cap, the refusal to bind publicly without a
token."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jsonschema
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from testkit.hits import searxng_json
from testkit.loopback import Json, LoopbackServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CLI = str(Path(sys.executable).with_name("perplexed"))
TOKEN = "mcp-test-token-5f2c9a"


def server_env(tmp_path: Path, searxng_url: str, agent_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PERPLEXED_", "PERPLEXITY_", "TAVILY_", "SEARXNG_", "EXA_", "BRAVE_"))}
    env.update(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"), SEARXNG_URL=searxng_url,
               PERPLEXED_LOCAL_INDEX=str(tmp_path / "index.db"), PYTHONUNBUFFERED="1")
    if agent_url:
        env.update(PERPLEXITY_API_KEY="pplx-mcp-stand-in-key-0000", PERPLEXITY_BASE_URL=agent_url)
    return env


@pytest.fixture
def upstream(loopback: LoopbackServer) -> LoopbackServer:
    loopback.route("/search", Json(searxng_json(4)))
    return loopback


async def test_stdio_lists_and_calls_every_tool(tmp_path: Path, upstream: LoopbackServer,
                                               agent_stand_in_url: str) -> None:
    params = StdioServerParameters(command=CLI, args=["mcp", "--provider", "tavily,searxng"],
                                   env=server_env(tmp_path, upstream.url, agent_stand_in_url), cwd=tmp_path)
    async with Client(params, read_timeout_seconds=60) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"web_search", "answer"} <= set(tools)
        search = await client.call_tool("web_search", {"query": "zoning", "max_results": 2})
        assert not search.is_error, search.content[0].text
        jsonschema.validate(search.structured_content, tools["web_search"].output_schema)
        # no Tavily key: the chain fell back to SearXNG, and the attempts show it
        attempts = search.structured_content["attempts"]
        assert [(a["provider"], a["outcome"]) for a in attempts] == [("tavily", "error"), ("searxng", "ok")]
        assert len(search.structured_content["hits"]) == 2
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        answer = await client.call_tool("answer", {"question": "what is a setback?"}, progress_callback=on_progress)
        assert not answer.is_error, answer.content[0].text
        jsonschema.validate(answer.structured_content, tools["answer"].output_schema)
        assert answer.structured_content["sources"] and answer.structured_content["cost"] > 0
        assert progress, "no progress notification arrived"
        bad = await client.call_tool("web_search", {"query": "zoning", "max_results": 99})
        assert bad.is_error and "from 1 to 20" in bad.content[0].text


def test_cli_refuses_bad_options_before_serving(tmp_path: Path) -> None:
    env = server_env(tmp_path, "http://127.0.0.1:9")
    done = subprocess.run([CLI, "mcp", "--budget", "-1"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--budget" in done.stderr
    done = subprocess.run([CLI, "mcp", "--http", "--host", "0.0.0.0", "--port", "0"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "non-loopback" in done.stderr and "--token" in done.stderr and "Traceback" not in done.stderr


@contextmanager
def http_server(tmp_path: Path, searxng_url: str, *extra: str, agent_url: str | None = None) -> Iterator[str]:
    """``perplexed mcp --http --port 0 ...`` in a subprocess; yields its base URL (``http://127.0.0.1:PORT``)."""
    proc = subprocess.Popen([CLI, "mcp", "--http", "--port", "0", "--provider", "searxng", *extra],
                            env=server_env(tmp_path, searxng_url, agent_url), cwd=tmp_path, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
            if match:
                break
            if not line and proc.poll() is not None:
                raise AssertionError(f"server exited with {proc.returncode}")
        else:
            raise AssertionError(f"server did not start: {line!r}")
        # the socket is bound and listening before the line is printed: connections wait in its backlog
        yield f"http://127.0.0.1:{match.group(1)}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


INIT = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-06-18"}


def test_http_guard(tmp_path: Path, upstream: LoopbackServer) -> None:
    with http_server(tmp_path, upstream.url, "--token", TOKEN, "--allow-origin", "https://app.example") as base:
        url = base + "/mcp"
        auth = {**JSON_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        assert httpx.post(url, json=INIT, headers=JSON_HEADERS).status_code == 401
        assert httpx.post(url, json=INIT, headers={**JSON_HEADERS, "Authorization": "Bearer wrong"}).status_code == 401
        host = httpx.post(url, json=INIT, headers={**auth, "Host": "evil.example:80"})
        assert host.status_code == 403
        origin = httpx.post(url, json=INIT, headers={**auth, "Origin": "https://evil.example"})
        assert origin.status_code == 403
        for good_origin in ("https://app.example", base):
            ok = httpx.post(url, json=INIT, headers={**auth, "Origin": good_origin})
            assert ok.status_code not in (401, 403, 413), (good_origin, ok.status_code)
        big = httpx.post(url, content=b"{" + b" " * (1024 * 1024 + 10) + b"}", headers=auth)
        assert big.status_code == 413
        chunked = httpx.post(url, content=iter([b"{" + b" " * 65536] * 20 + [b"}"]), headers=auth)
        assert chunked.status_code == 413  # no Content-Length: capped while read
        localhost = httpx.post(url.replace("127.0.0.1", "localhost"), json=INIT, headers=auth)
        assert localhost.status_code not in (401, 403, 413)


async def test_http_client_calls_and_concurrency(tmp_path: Path, upstream: LoopbackServer) -> None:
    with http_server(tmp_path, upstream.url, "--token", TOKEN) as base:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
            transport = streamable_http_client(base + "/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=60) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert "answer" not in tools  # no Agent API key where this server runs

                async def one(i: int) -> Any:
                    return await client.call_tool("web_search", {"query": f"zoning {i}", "max_results": 3})

                results = await asyncio.gather(*(one(i) for i in range(20)))
        assert all(not r.is_error for r in results)
        for result in results:
            jsonschema.validate(result.structured_content, tools["web_search"].output_schema)
            assert len(result.structured_content["hits"]) == 3
