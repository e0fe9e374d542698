"""``perplexed mcp`` spoken to by an ``mcp`` 1.x client from a second environment (issue 39).

perplexed runs the ``mcp`` 2.x SDK; many clients still run 1.x, for example LangChain agents through
``langchain-mcp-adapters``. Here the server starts from this project's venv as a user runs it, and a client
program runs in its own venv (``.mcp1/venv``, built once by :mod:`testkit.mcp1_env` with ``mcp`` 1.x and
``langchain-mcp-adapters`` pinned): it negotiates the protocol, lists the tools and calls ``web_search`` through
``MultiServerMCPClient``, over stdio and over streamable HTTP with a bearer token, so both protocol eras stay
supported. The search runs on the 16-document sample index (``examples/corpus``) built in a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp.types
import pytest
from testkit.mcp1_env import ADAPTERS_VERSION, MCP_VERSION, Mcp1EnvError, ensure_venv, venv_python

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("perplexed"))
TOKEN = "mcp1-client-token-7d41e0"
CLIENT_TIMEOUT_S = 90  # the whole client program: two or three short sessions with the server

# Runs in the mcp 1.x venv. argv[1]: the MultiServerMCPClient connection (JSON). Prints one JSON object.
CLIENT = r"""
import asyncio, importlib.metadata as md, json, sys
import mcp.types
from langchain_mcp_adapters.client import MultiServerMCPClient

async def main(conn):
    client = MultiServerMCPClient({"perplexed": conn})
    async with client.session("perplexed", auto_initialize=False) as session:
        init = await session.initialize()
    tools = {tool.name: tool for tool in await client.get_tools()}
    message = await tools["web_search"].ainvoke(
        {"type": "tool_call", "id": "call-1", "name": "web_search", "args": {"query": "front yard setback"}})
    content = message.content
    blocks = [content] if isinstance(content, str) else content
    text = "\n".join(b if isinstance(b, str) else b.get("text", "") for b in blocks)
    structured = (message.artifact or {}).get("structured_content") or {}
    print(json.dumps({
        "mcp": md.version("mcp"), "adapters": md.version("langchain-mcp-adapters"),
        "client_latest_protocol": mcp.types.LATEST_PROTOCOL_VERSION,
        "protocol": init.protocolVersion, "server": init.serverInfo.name,
        "tools": sorted(tools), "status": message.status, "text": text,
        "hit_titles": [hit.get("title") for hit in structured.get("hits", [])],
    }))

asyncio.run(asyncio.wait_for(main(json.loads(sys.argv[1])), 60))
"""


@pytest.fixture(scope="module")
def mcp1_python() -> Path:
    """The interpreter of the mcp 1.x client venv, built on first use (fails the test, never skips, without it)."""
    try:
        return venv_python(ensure_venv())
    except Mcp1EnvError as exc:
        message = f"cannot build the mcp 1.x client venv (.mcp1/venv; needs PyPI once per machine):\n{exc}"
    pytest.fail(message, pytrace=False)


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart's 16-document index of ``examples/corpus``, built by the CLI in a temporary folder."""
    index = tmp_path_factory.mktemp("mcp1-index") / "index.db"
    done = subprocess.run([sys.executable, "-m", "perplexed", "index", "examples/corpus", "--index", str(index)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert re.search(r"\b16\s+documents\s+in\s+the\s+index", done.stdout), done.stdout
    return index


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PERPLEXED_", "PERPLEXITY_", "TAVILY_", "SEARXNG_", "EXA_", "BRAVE_"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), PYTHONUNBUFFERED="1")
    return env


def run_client(python: Path, connection: dict[str, Any], cwd: Path) -> dict[str, Any]:
    """Run the client program in the mcp 1.x venv; return what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    done = subprocess.run([str(python), "-c", CLIENT, json.dumps(connection)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"mcp 1.x client failed ({done.returncode}):\n{done.stderr[-6000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_result(result: dict[str, Any]) -> None:
    # the client really is the pinned 1.x one, and it negotiated its own (older) protocol version
    assert (result["mcp"], result["adapters"]) == (MCP_VERSION, ADAPTERS_VERSION)
    assert result["protocol"] == result["client_latest_protocol"]
    assert result["protocol"] != mcp.types.LATEST_PROTOCOL_VERSION, "the client speaks the server SDK's own era"
    assert result["server"]
    # no Agent API key where the server runs: answer is not offered, search and fetch are
    assert {"web_search", "web_fetch"} <= set(result["tools"]), result["tools"]
    assert result["status"] == "success", result["text"]
    assert "Residential zoning setbacks" in result["text"], result["text"]
    assert result["hit_titles"][0] == "Residential zoning setbacks", result["hit_titles"]


def test_mcp1_client_over_stdio(tmp_path: Path, mcp1_python: Path, sample_index: Path) -> None:
    connection = {"transport": "stdio", "command": CLI,
                  "args": ["mcp", "--provider", "local", "--index", str(sample_index)],
                  "env": server_env(tmp_path), "cwd": str(tmp_path)}
    check_result(run_client(mcp1_python, connection, tmp_path))


@contextmanager
def http_server(home: Path, index: Path) -> Iterator[str]:
    """``perplexed mcp --http --port 0`` with the token from ``PERPLEXED_MCP_TOKEN``; yields its MCP URL."""
    env = {**server_env(home), "PERPLEXED_MCP_TOKEN": TOKEN}
    proc = subprocess.Popen([CLI, "mcp", "--http", "--port", "0", "--provider", "local", "--index", str(index)],
                            env=env, cwd=home, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            match = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
            if match:
                break
            if not line and proc.poll() is not None:
                raise AssertionError(f"server exited with {proc.returncode}")
        else:
            raise AssertionError(f"server did not start: {line!r}")
        assert "bearer token (from PERPLEXED_MCP_TOKEN)" in line, line
        yield match.group(0)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_mcp1_client_over_streamable_http(tmp_path: Path, mcp1_python: Path, sample_index: Path) -> None:
    with http_server(tmp_path, sample_index) as url:
        connection = {"transport": "streamable_http", "url": url,
                      "headers": {"Authorization": f"Bearer {TOKEN}"}, "timeout": 30}
        check_result(run_client(mcp1_python, connection, tmp_path))
