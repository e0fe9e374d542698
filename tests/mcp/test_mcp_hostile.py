"""``perplexed mcp`` against hostile clients, from the attacker's side: the real server in a subprocess (a lowered
open-files limit where that is the point), loopback only.

- Half-open connections (a request head never finished) cannot exhaust the server's open files: with
  ``RLIMIT_NOFILE`` 256 and 300 such connections held, the server stays up, its stderr holds no traceback, and
  a normal client with the token is served at once.
- A connection that never finishes its request head is closed at the header deadline.
- A request without the token is refused as soon as its headers are in, before its body.
- An argument of ``"["`` x 50 000 (or any huge or deeply nested argument) is an ``isError`` sentence saying
  what to send, with no traceback in the server's log.
"""

from __future__ import annotations

import os
import re
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from test_mcp_transports import CLI, INIT, JSON_HEADERS, TOKEN, server_env

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _limit_files(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


@contextmanager
def running(args: list[str], env: dict[str, str], cwd: Path, files: int | None = None) -> Iterator[
        tuple[subprocess.Popen[str], int]]:
    """A server process started with ``args``; yields it and its port, read from its start-up line."""
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=(lambda: _limit_files(files)) if files else None)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://[^ ]*:(\d+)/mcp", line)
        assert match, f"no start-up line: {line!r} (exit {proc.poll()})"
        yield proc, int(match.group(1))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def half_open(port: int, count: int) -> list[socket.socket]:
    """``count`` connections, each with a request head begun and never finished."""
    held = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: applic".encode())
        held.append(sock)
    return held


def tools_list(port: int) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/mcp", json=INIT, timeout=30,
                      headers={**JSON_HEADERS, "Authorization": f"Bearer {TOKEN}"})


def test_half_open_connections_under_a_low_open_files_limit(tmp_path: Path) -> None:
    env = {**server_env(tmp_path, "http://127.0.0.1:9"), "PERPLEXED_MCP_TOKEN": TOKEN}
    args = [CLI, "mcp", "--http", "--port", "0", "--provider", "searxng"]
    with running(args, env, tmp_path, files=256) as (proc, port):
        held = half_open(port, 300)
        try:
            time.sleep(1.0)
            assert proc.poll() is None, "the server exited under 300 half-open connections"
            started = time.monotonic()
            answer = tools_list(port)
            took = time.monotonic() - started
            assert answer.status_code == 200, answer.text
            assert "web_search" in answer.text
            assert took < 5, f"a normal client waited {took:.1f} s"
            # the server holds at most half its open-files limit in connections
            assert len(os.listdir(f"/proc/{proc.pid}/fd")) < 200
            assert proc.poll() is None
        finally:
            for sock in held:
                sock.close()
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "Traceback" not in err and "Too many open files" not in err.replace("out of open files", "")


SERVE_WITH_DEADLINE = """
import sys
from perplexed.mcp_server import create_server, serve_http
server = create_server("searxng")
serve_http(server, port=0, token=sys.argv[1], header_timeout_s=1.0,
           ready=lambda port: print(f"perplexed: MCP server on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True))
"""


def test_a_request_head_not_finished_in_time_is_closed(tmp_path: Path) -> None:
    env = server_env(tmp_path, "http://127.0.0.1:9")
    with running([sys.executable, "-c", SERVE_WITH_DEADLINE, TOKEN], env, tmp_path) as (_, port):
        (slow,) = half_open(port, 1)
        slow.settimeout(15)
        started = time.monotonic()
        for _ in range(8):  # a slow client trickling its head does not keep the connection either
            time.sleep(0.25)
            try:
                slow.sendall(b"x")
            except OSError:
                break
        try:
            data = slow.recv(100)
        except ConnectionResetError:
            data = b""
        waited = time.monotonic() - started
        assert data == b"" and 0.9 <= waited < 10, (data, waited)
        assert tools_list(port).status_code == 200  # a normal client is served


def test_the_token_is_checked_before_the_body(tmp_path: Path) -> None:
    env = {**server_env(tmp_path, "http://127.0.0.1:9"), "PERPLEXED_MCP_TOKEN": TOKEN}
    with running([CLI, "mcp", "--http", "--port", "0", "--provider", "searxng"], env, tmp_path) as (_, port):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                     "Content-Length: 100000\r\n\r\n".encode())  # the body never comes
        reply = sock.recv(200).decode("latin-1")
        sock.close()
        assert reply.startswith("HTTP/1.1 401"), reply


@pytest.mark.parametrize(("arguments", "words"), [
    ({"query": "zoning", "include_domains": "[" * 50_000}, "include_domains is 50,000 characters long; send a flat "
     "list of at most 100 domain names"),
    ({"query": "[" * 50_000}, "query is 50,000 characters long; send a search query in plain words"),
    ({"query": "zoning", "include_domains": "[" * 3_000 + "]" * 3_000}, "include_domains is nested more than 2 "
     "levels deep"),
    ({"query": "zoning", "include_domains": [[["a.com"]]]}, "include_domains is nested more than 2 levels deep"),
    ({"query": "zoning", "exclude_domains": [f"d{i}.com" for i in range(500)]}, "exclude_domains has more than "
     "100 items"),
])
async def test_huge_or_nested_arguments_get_a_sentence_not_a_traceback(tmp_path: Path, arguments: dict[str, object],
                                                                      words: str) -> None:
    errors = tmp_path / "server.log"
    params = StdioServerParameters(command=CLI, args=["mcp", "--provider", "searxng"],
                                   env=server_env(tmp_path, "http://127.0.0.1:9"), cwd=tmp_path)
    with errors.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
            result = await client.call_tool("web_search", arguments)
            fine = await client.call_tool("web_search", {"query": "zoning", "include_domains": '["example.com"]'})
    assert result.is_error
    assert words in result.content[0].text
    assert "Error executing tool" not in result.content[0].text
    assert "Traceback" not in errors.read_text()
    assert "include_domains" not in fine.content[0].text  # a normal list in a string still reads
