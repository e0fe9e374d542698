"""``perplexed mcp`` on stdio (its own JSON-RPC loop, no ``mcp`` SDK) answers as the SDK server does.

The proof is differential: the same raw JSON-RPC lines go to ``perplexed mcp`` twice, once as shipped (the fast
loop) and once with ``PERPLEXED_MCP_SDK=1`` (the SDK's ``MCPServer``, what :func:`perplexed.mcp_server.create_server`
returns), and everything each writes on stdout is compared. Both eras are covered: the ``initialize`` handshake
(what ``mcp`` 1.x clients speak) and the 2026-07-28 per-request envelope (what the ``mcp`` 2.x client speaks).
The table has every method the SDK server answers or refuses, good and bad parameters, good and bad tool
arguments, an unknown tool, progress notifications, a cancelled call, concurrent calls, a call still running at
EOF, and lines that are not one JSON-RPC message (bad JSON, a batch, no ``jsonrpc``, a null id).

What is compared: every message, as parsed JSON (key order is not part of JSON), as a multiset (concurrent
calls may be answered in either order; JSON-RPC pairs answers with requests by id). Normalized: each
attempt's ``duration_ms`` (a timing: it differs from run to run of the same server). Nothing else.

Also here: ``perplexed mcp`` on stdio never imports ``mcp`` or ``mcp_types`` (a real subprocess answering a real
``web_search``; its ``sys.modules`` written at exit), and EOF on stdin ends it cleanly.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_mcp_transports import CLI, server_env
from testkit.hits import searxng_json
from testkit.loopback import Hang, Json, LoopbackServer

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"},
            "io.modelcontextprotocol/clientCapabilities": {}}
INIT = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}

ANSWER = object()  # the line is a request: wait for its answer
QUIET = object()  # the line gets no answer: wait a moment for anything it might wrongly cause


def req(request_id: Any, method: str, params: dict[str, Any] | None = None, *, modern: bool = False) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None or modern:
        message["params"] = {**(params or {}), **({"_meta": {**(params or {}).get("_meta", {}), **ENVELOPE}}
                                                    if modern else {})}
    return json.dumps(message)


def note(method: str, params: dict[str, Any] | None = None) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})


def shared(m: bool) -> list[tuple[str, object]]:
    """The rows both eras share (``m``: carry the 2026-07-28 envelope)."""
    return [
        (req(10, "tools/list", modern=m), ANSWER),
        (req(11, "tools/call", {"name": "web_search", "arguments": {"query": "zoning", "max_results": 2}}, modern=m), ANSWER),
        (req(12, "tools/call", {"name": "web_search", "arguments": {"qury": "zoning"}}, modern=m), ANSWER),
        (req(13, "tools/call", {"name": "web_search", "arguments": {"query": "zoning", "max_results": 99}}, modern=m), ANSWER),
        (req(14, "tools/call", {"name": "web_search", "arguments": {"query": "zoning", "max_results": "3",
                                                                    "include_domains": '["example.com"]'}}, modern=m), ANSWER),
        (req(15, "tools/call", {"name": "web_search"}, modern=m), ANSWER),
        (req(16, "tools/call", {"name": "nope", "arguments": {}}, modern=m), ANSWER),
        (req(17, "tools/call", {}, modern=m), ANSWER),
        (req(18, "tools/call", {"name": "web_search", "arguments": ["zoning"]}, modern=m), ANSWER),
        (req(19, "tools/call", {"name": 7}, modern=m), ANSWER),
        (req(20, "tools/call", {"name": "web_search", "arguments": {"query": "x" * 5000}}, modern=m), ANSWER),
        (req(21, "tools/call", {"name": "web_fetch", "arguments": {"url": "http://127.0.0.1:9/admin"}}, modern=m), ANSWER),
        (req(22, "tools/call", {"name": "answer", "arguments": {"query": "what is a setback?"},
                                "_meta": {"progressToken": "p-1"}}, modern=m), ANSWER),
        (req(23, "tools/call", {"name": "answer", "arguments": {"question": "what is a setback?"}}, modern=m), ANSWER),
        (req(24, "resources/list", modern=m), ANSWER),
        (req(25, "resources/templates/list", modern=m), ANSWER),
        (req(26, "prompts/list", modern=m), ANSWER),
        (req(27, "resources/read", {"uri": "file:///etc/passwd"}, modern=m), ANSWER),
        (req(28, "prompts/get", {"name": "x"}, modern=m), ANSWER),
        (req(29, "logging/setLevel", {"level": "debug"}, modern=m), ANSWER),
        (req(30, "logging/setLevel", {"level": "loud"}, modern=m), ANSWER),
        (req(31, "completion/complete", {"ref": {"type": "ref/prompt", "name": "x"},
                                         "argument": {"name": "a", "value": "b"}}, modern=m), ANSWER),
        (req(32, "completion/complete", {"ref": {}}, modern=m), ANSWER),
        (req(33, "nope/nothing", modern=m), ANSWER),
        (req(34, "resources/subscribe", {"uri": "file:///x"}, modern=m), ANSWER),
        (req(35, "tools/list", {"cursor": 5}, modern=m), ANSWER),
        (req("s-36", "tools/list", modern=m), ANSWER),
        ("{not json", QUIET),
        ("   ", QUIET),
        ('{"jsonrpc": "2.0", "id": 74, "method": "tools/call", "params": {"name": "web_search", '
         '"arguments": {"query": "zoning", "max_results": NaN}}}', ANSWER),  # NaN: read as the SDK reads it
        (json.dumps([json.loads(req(37, "tools/list", modern=m))]), QUIET),
        (json.dumps({"id": 38, "method": "tools/list"}), QUIET),
        (json.dumps({"jsonrpc": "2.0", "id": None, "method": "tools/list"}), QUIET),
        (json.dumps({"jsonrpc": "2.0", "id": 39}), QUIET),
        (json.dumps({"jsonrpc": "2.0", "id": 40, "method": "tools/list", "params": [1]}), QUIET),
        (note("notifications/unknown"), QUIET),
        # a call cancelled while it runs is never answered; four at once are all answered
        (req(41, "tools/call", {"name": "web_search", "arguments": {"query": "hang"}}, modern=m), QUIET),
        (note("notifications/cancelled", {"requestId": 41, "reason": "changed my mind"}), QUIET),
        ("\n".join(req(42 + i, "tools/call", {"name": "web_search", "arguments": {"query": f"zoning {i}"}}, modern=m)
                   for i in range(4)), ANSWER),
        (req(46, "tools/call", {"name": "web_search", "arguments": {"query": "hang"}}, modern=m), QUIET),
    ]  # the last call still runs at EOF: answered "Connection closed"


LEGACY = [
    (note("notifications/initialized"), QUIET),  # before any request: kept for the era the first request opens
    (req(1, "tools/list"), ANSWER),  # ... so this one is served: the gate is open
    (req(2, "initialize", INIT), ANSWER),
    (req(3, "initialize", {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}), ANSWER),
    (req(4, "initialize", {"protocolVersion": "2025-06-18"}), ANSWER),
    (req(5, "ping"), ANSWER),
    (req(6, "server/discover"), ANSWER),
    (req(7, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}), ANSWER),
    (req(8, "tools/list", {"_meta": ENVELOPE}), ANSWER),  # the other era's envelope on a handshake connection
    (req(9, "tools/list", {"_meta": {"progressToken": 3}}), ANSWER),
    # the edges of what a message and its parameters may be
    (json.dumps({"jsonrpc": "2.0", "id": 2.0, "method": "ping"}), QUIET),
    (json.dumps({"jsonrpc": "2.0", "id": True, "method": "ping"}), QUIET),
    (json.dumps({"jsonrpc": "2.0", "id": "", "method": "ping"}), ANSWER),
    (json.dumps({"jsonrpc": "2.0", "id": 60, "method": "ping", "params": None}), ANSWER),
    (json.dumps({"jsonrpc": "2.0", "id": 61, "method": "ping", "extra": 1}), ANSWER),
    (json.dumps({"jsonrpc": "1.0", "id": 62, "method": "ping"}), QUIET),
    (json.dumps({"jsonrpc": "2.0", "id": 63, "method": ""}), ANSWER),
    (json.dumps({"jsonrpc": "2.0", "id": 64, "method": 5}), QUIET),
    (json.dumps({"jsonrpc": "2.0", "id": 65, "result": {}}), QUIET),
    (req(66, "tools/call", {"name": "web_search", "arguments": None}), ANSWER),
    (req(67, "tools/call", {"name": "web_search", "arguments": {"query": "zoning"}, "_meta": {"progressToken": True}}), ANSWER),
    (req(68, "tools/list", {"cursor": None}), ANSWER),
    (req(69, "ping", {"_meta": "x"}), ANSWER),
    (req(70, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x"}}), ANSWER),
    (req(71, "prompts/get", {"name": "x", "arguments": {"a": 1}}), ANSWER),
    (req(72, "resources/read", {"uri": "not a uri"}), ANSWER),
    (req(73, "logging/setLevel", {"level": "DEBUG"}), ANSWER),
    *shared(False),
]

UNINITIALIZED = [  # a handshake connection before initialize: only ping and the refusals
    *[("{junk", QUIET)] * 8,  # eight lines before the first request: the notification after them is not kept
    (note("notifications/initialized"), QUIET),
    (req(1, "tools/list"), ANSWER),
    (req(2, "ping"), ANSWER),
    (req(3, "nope"), ANSWER),
    (req(4, "tools/call", {"name": "web_search", "arguments": {"query": "zoning"}}), ANSWER),
    (note("notifications/initialized"), QUIET),
    (req(5, "tools/list"), ANSWER),
]

MODERN = [
    (req(1, "server/discover", modern=True), ANSWER),
    (req(2, "ping", modern=True), ANSWER),
    (req(3, "ping"), ANSWER),
    (req(4, "initialize", INIT), ANSWER),
    (req(5, "initialize", {"protocolVersion": 5}), ANSWER),
    (req(6, "tools/list", {"_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}), ANSWER),
    (req(7, "tools/list", {"_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2025-06-18"}}), ANSWER),
    (req(8, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}), ANSWER),
    (req(9, "subscriptions/listen", modern=True), ANSWER),
    (req("listen-1", "subscriptions/listen", {"notifications": {"toolsListChanged": True, "promptsListChanged": False,
                                                                "resourceSubscriptions": ["file:///x"]}},
         modern=True), QUIET),  # acknowledged, then held open: cancelled below, never answered
    (note("notifications/cancelled", {"requestId": "listen-1"}), QUIET),
    (req("listen-2", "subscriptions/listen", {"notifications": {}}, modern=True), QUIET),
    (note("notifications/cancelled", {"requestId": "listen-2"}), QUIET),
    *shared(True),
]


def normalized(message: dict[str, Any]) -> Any:
    """``message`` with each attempt's ``duration_ms`` (a timing) set to 0."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (0 if k == "duration_ms" else walk(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(message)


def exchange(env: dict[str, str], cwd: Path, rows: list[tuple[str, object]]) -> tuple[list[str], str]:
    """Send ``rows`` to ``perplexed mcp`` on stdio, one after another; every message it wrote (normalized) and
    its stderr."""
    proc = subprocess.Popen([CLI, "mcp", "--provider", "searxng", "--timeout-ms", "60000", "--deadline-ms", "60000",
                             "--no-cache"],
                            env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    out: list[dict[str, Any]] = []
    buffer = b""

    def read_until(done: Any, timeout: float) -> None:
        nonlocal buffer
        end = time.monotonic() + timeout
        while not done() and time.monotonic() < end:
            if not selector.select(timeout=min(0.05, max(0.0, end - time.monotonic()))):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)  # type: ignore[union-attr]
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                out.append(json.loads(line))

    try:
        for line, expect in rows:
            ids = [json.loads(part).get("id") for part in line.split("\n")] if expect is ANSWER else []
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
            if expect is ANSWER:
                read_until(lambda ids=ids: all(any(m.get("id") == i and "method" not in m for m in out) for i in ids), 60)
            else:
                read_until(lambda: False, 0.4)
        proc.stdin.close()  # EOF: the server ends, answering what still runs
        read_until(lambda: False, 20)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    return sorted(json.dumps(normalized(m), sort_keys=True) for m in out), stderr


@pytest.fixture
def env(tmp_path: Path, loopback: LoopbackServer, agent_stand_in_url: str) -> dict[str, str]:
    def search(request: Any) -> Any:
        return Hang() if request.query.get("q") == ["hang"] else Json(searxng_json(4))

    loopback.route("/search", search)
    return server_env(tmp_path, loopback.url, agent_stand_in_url)


@pytest.mark.parametrize("rows", [LEGACY, UNINITIALIZED, MODERN], ids=["handshake", "uninitialized", "modern"])
def test_the_stdio_loop_answers_as_the_sdk_server(rows: list[tuple[str, object]], env: dict[str, str],
                                                  tmp_path: Path) -> None:
    fast, log = exchange(env, tmp_path, rows)
    sdk, _ = exchange({**env, "PERPLEXED_MCP_SDK": "1"}, tmp_path, rows)  # (the SDK logs a traceback for prompts/get)
    only_fast, only_sdk = [m for m in fast if m not in sdk], [m for m in sdk if m not in fast]
    assert (only_fast, only_sdk) == ([], []), "\n".join(["ONLY FAST:", *only_fast, "ONLY SDK:", *only_sdk])
    assert fast == sdk
    assert "Traceback" not in log and "pplx-" not in "".join(fast), log
    answered = [json.loads(m) for m in sdk]
    assert len(answered) >= sum(1 for _, expect in rows if expect is ANSWER)  # the table did exercise them
    if rows is not UNINITIALIZED:
        assert any(m.get("method") == "notifications/progress" for m in answered)
        assert any(m.get("result", {}).get("structuredContent", {}).get("hits") for m in answered)
        assert any(m.get("error", {}).get("message") == "Connection closed" for m in answered)
        assert not any(m.get("id") == 41 for m in answered)  # the cancelled call


@pytest.mark.parametrize("hatch", [False, True], ids=["fast", "PERPLEXED_MCP_SDK=1"])
def test_stdio_never_imports_the_mcp_sdk(tmp_path: Path, env: dict[str, str], hatch: bool) -> None:
    """The server as the console script runs it, its modules written at exit, after a real web_search; with
    the escape hatch set, the SDK's server serves instead."""
    if hatch:
        env = {**env, "PERPLEXED_MCP_SDK": "1"}
    dump = tmp_path / "modules.txt"
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: open({str(dump)!r}, 'w').write('\\n'.join(sorted(sys.modules))))\n"
            "from perplexed.cli import main\n"
            "sys.argv = ['perplexed', 'mcp', '--provider', 'searxng']\n"
            "raise SystemExit(main())\n")
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tmp_path, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        call = req(1, "tools/call", {"name": "web_search", "arguments": {"query": "zoning"}}, modern=True)
        proc.stdin.write(call.encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())  # answered before EOF: a call running at EOF is cancelled
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert answer["id"] == 1 and len(answer["result"]["structuredContent"]["hits"]) == 4, answer
    modules = set(dump.read_text().split())
    assert "perplexed.mcp._stdio" in modules and "perplexed.mcp_server" in modules
    banned = sorted(m for m in modules if m.split(".")[0] in ("mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette"))
    if hatch:
        assert "mcp.server.mcpserver" in banned and "mcp_types" in banned
    else:
        assert banned == [], banned


def test_eof_ends_the_server_at_once(tmp_path: Path, env: dict[str, str]) -> None:
    started = time.monotonic()
    done = subprocess.run([CLI, "mcp", "--provider", "searxng"], env=env, cwd=tmp_path, input=b"",
                          capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    assert done.stderr.decode().startswith("perplexed: MCP server on stdio; search: searxng")
    assert time.monotonic() - started < 30
