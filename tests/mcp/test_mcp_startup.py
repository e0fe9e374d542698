"""``perplexed mcp`` as an operator and a desktop client meet it: the real command in a subprocess, a temporary
HOME, started from a folder unrelated to the index.

- docs/mcp.md's client snippet, with its placeholders filled in, finds the index from any folder;
- the one start-up line: chain, index and document count, members that cannot run, fetch chain, ``answer``,
  authentication;
- a chain that cannot run tells the model it is the server's configuration and that retrying will not help;
  a failure that passes says retrying may help;
- a private address is refused without advice the model cannot follow; the operator's flags go to the log;
- blank tokens refuse to start, naming where they came from;
- bound to a wildcard address, the machine's own names and addresses are accepted Hosts, ``--allow-host``
  adds others, anything else is 403;
- "no local index" from another folder says where it looked and how to point at an index.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from test_mcp_hostile import running
from test_mcp_transports import CLI, INIT, JSON_HEADERS, TOKEN, server_env

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "corpus"


@pytest.fixture(scope="module")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart's index, built in a folder of its own."""
    home = tmp_path_factory.mktemp("indexhome")
    index = home / "project" / ".perplexed" / "index.db"
    env = server_env(home, "http://127.0.0.1:9")
    env.pop("PERPLEXED_LOCAL_INDEX")
    done = subprocess.run([CLI, "index", str(CORPUS), "--index", str(index)], env=env, cwd=home,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return index


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """A fresh user's environment: no index variable, no keys, nothing listening at SEARXNG_URL."""
    env = server_env(home, "http://127.0.0.1:9")
    for name in ("PERPLEXED_LOCAL_INDEX", "SEARXNG_URL"):
        env.pop(name)
    env.update(COLUMNS="400", **extra)
    return env


def unrelated(tmp_path: Path) -> Path:
    folder = tmp_path / "somewhere" / "else"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def first_stderr_line(args: list[str], env: dict[str, str], cwd: Path) -> str:
    """The line a stdio server writes at start (its stdin closed at once, so it then exits)."""
    done = subprocess.run([CLI, *args], env=env, cwd=cwd, input="", capture_output=True, text=True, timeout=60)
    return done.stderr.splitlines()[0] if done.stderr else ""


def docs_client_config() -> dict[str, Any]:
    """The Claude Desktop / Cursor snippet of docs/mcp.md."""
    page = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", page, flags=re.S)
    configs = [json.loads(block) for block in blocks]
    return next(c for c in configs if "mcpServers" in c)["mcpServers"]["perplexed"]  # type: ignore[no-any-return]


def test_every_docs_client_snippet_passes_an_absolute_index() -> None:
    page = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:json|python)\n(.*?)```", page, flags=re.S)
    starting = [b for b in blocks if "/.venv/bin/perplexed" in b]
    assert len(starting) >= 4  # Claude Desktop / Cursor, VS Code, LangChain, LlamaIndex
    for block in starting:
        assert '"--index", "/ABSOLUTE/PATH/TO/index.db"' in block, block
    assert "perplexed index --list --json" in page


async def test_the_docs_client_snippet_finds_the_index_from_an_unrelated_folder(tmp_path: Path,
                                                                                built_index: Path) -> None:
    config = docs_client_config()
    assert config["command"] == "PATH/TO/YOUR/CLONE/.venv/bin/perplexed"
    args = [str(built_index) if a == "/ABSOLUTE/PATH/TO/index.db" else a for a in config["args"]]
    env = {**user_env(tmp_path), **config["env"]}
    env["TAVILY_API_KEY"] = ""  # the snippet's placeholder key is not a key: no call may leave the machine
    params = StdioServerParameters(command=CLI, args=args, env=env, cwd=unrelated(tmp_path))
    async with Client(params, read_timeout_seconds=60) as client:
        result = await client.call_tool("web_search", {"query": "fence height", "max_results": 2})
    assert not result.is_error, result.content[0].text
    assert result.structured_content["provider"] == "local" and len(result.structured_content["hits"]) == 2


def test_the_start_up_line(tmp_path: Path, built_index: Path) -> None:
    line = first_stderr_line(["mcp", "--provider", "local,searxng,tavily", "--index", str(built_index)],
                             user_env(tmp_path), unrelated(tmp_path))
    assert line.startswith("perplexed: MCP server on stdio; search: local (index "), line
    assert f"{built_index}, 16 documents" in line
    assert "searxng (CANNOT RUN:" in line and "SEARXNG_URL" in line
    assert "tavily (CANNOT RUN:" in line and "TAVILY_API_KEY" in line
    assert "web_fetch: http" in line and "answer not offered" in line and "PERPLEXITY_API_KEY" in line
    assert "authentication: none (stdio" in line
    # no index found: named in the line, with what the operator can do; the server still starts
    line = first_stderr_line(["mcp", "--provider", "local"], user_env(tmp_path), unrelated(tmp_path))
    assert "local (CANNOT RUN: no local index at" in line and "--index" in line, line


def test_the_http_start_up_line_says_its_authentication(tmp_path: Path) -> None:
    env = {**user_env(tmp_path), "PERPLEXED_MCP_TOKEN": TOKEN}
    proc = subprocess.Popen([CLI, "mcp", "--http", "--port", "0", "--provider", "searxng"], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert re.match(r"perplexed: MCP server on http://127\.0\.0\.1:\d+/mcp; search: searxng \(CANNOT RUN", line), line
    assert line.rstrip().endswith("authentication: bearer token (from PERPLEXED_MCP_TOKEN)"), line


async def call_stdio(args: list[str], env: dict[str, str], cwd: Path, tool: str,
                     arguments: dict[str, Any]) -> tuple[Any, str]:
    log = cwd / "server.log"
    with log.open("w") as errlog:
        async with Client(stdio_client(StdioServerParameters(command=CLI, args=args, env=env, cwd=cwd),
                                       errlog=errlog), read_timeout_seconds=60) as client:
            result = await client.call_tool(tool, arguments)
    return result, log.read_text()


async def test_a_chain_that_cannot_run_is_the_servers_configuration(tmp_path: Path) -> None:
    result, log = await call_stdio(["mcp", "--provider", "local,tavily"], user_env(tmp_path), unrelated(tmp_path),
                                   "web_search", {"query": "fence height"})
    text = result.content[0].text
    assert result.is_error
    assert "server's configuration" in text and "retrying will not help" in text, text
    assert "local" in text and "tavily" in text and "TAVILY_API_KEY" in text
    assert "try again" not in text.lower() and "api_key=" not in text
    assert "Traceback" not in log


async def test_a_failure_that_passes_says_retrying_may_help(tmp_path: Path) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: connection refused
    env = user_env(tmp_path, SEARXNG_URL=f"http://127.0.0.1:{port}")
    result, _ = await call_stdio(["mcp", "--provider", "searxng"], env, tmp_path, "web_search", {"query": "q"})
    text = result.content[0].text
    assert result.is_error and "retrying later may help" in text, text
    assert "configuration" not in text


async def test_a_private_address_is_refused_in_words_the_model_can_act_on(tmp_path: Path) -> None:
    result, log = await call_stdio(["mcp", "--provider", "searxng"], user_env(tmp_path), tmp_path, "web_fetch",
                                   {"url": "http://127.0.0.1:9/admin"})
    text = result.content[0].text
    assert result.is_error and "this server does not fetch private or local addresses" in text.lower(), text
    assert "allow_private" not in text and "--allow" not in text
    assert "--allow-private" in log and "--allow-network" in log  # the operator's fix, in the server's log
    assert "Traceback" not in log


@pytest.mark.parametrize(("args", "env", "named"), [
    (["--token", ""], {}, "--token is empty"),
    (["--token", "   "], {}, "--token is empty"),
    (["--host", "0.0.0.0", "--token", "  "], {}, "--token is empty"),
    ([], {"PERPLEXED_MCP_TOKEN": ""}, "PERPLEXED_MCP_TOKEN is empty"),
    ([], {"PERPLEXED_MCP_TOKEN": " \t "}, "PERPLEXED_MCP_TOKEN is empty"),
])
def test_a_blank_token_refuses_to_start(tmp_path: Path, args: list[str], env: dict[str, str], named: str) -> None:
    done = subprocess.run([CLI, "mcp", "--http", "--port", "0", "--provider", "searxng", *args],
                          env={**user_env(tmp_path), **env}, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "refusing to start" in done.stderr and "Traceback" not in done.stderr


def _machine_address() -> str | None:
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return str(address.address)
    return None


def test_a_wildcard_bind_accepts_the_machines_names(tmp_path: Path) -> None:
    env = {**user_env(tmp_path), "PERPLEXED_MCP_TOKEN": TOKEN}
    args = [CLI, "mcp", "--http", "--host", "0.0.0.0", "--port", "0", "--provider", "searxng",
            "--allow-host", "mcp.example.internal"]
    with running(args, env, tmp_path) as (_, port):
        auth = {**JSON_HEADERS, "Authorization": f"Bearer {TOKEN}"}

        def status(address: str, host: str) -> int:
            return httpx.post(f"http://{address}:{port}/mcp", json=INIT, timeout=30,
                              headers={**auth, "Host": host}).status_code

        assert status("127.0.0.1", f"127.0.0.1:{port}") == 200
        assert status("127.0.0.1", f"localhost:{port}") == 200
        assert status("127.0.0.1", f"{socket.gethostname()}:{port}") == 200
        assert status("127.0.0.1", f"mcp.example.internal:{port}") == 200  # --allow-host
        assert status("127.0.0.1", f"evil.example:{port}") == 403
        assert status("127.0.0.1", f"0.0.0.0:{port}") == 403
        address = _machine_address()
        if address is not None:  # the address a client on the network uses
            assert status(address, f"{address}:{port}") == 200
            assert status(address, f"127.0.0.1:{port}") == 403  # not the address this connection came to
        no_token = httpx.post(f"http://127.0.0.1:{port}/mcp", json=INIT, headers=JSON_HEADERS, timeout=30)
        assert no_token.status_code == 401


def test_no_local_index_from_another_folder_says_where_it_looked(tmp_path: Path) -> None:
    folder = unrelated(tmp_path)
    done = subprocess.run([CLI, "index", "--list"], env=user_env(tmp_path), cwd=folder, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    words = " ".join(done.stderr.split())
    assert "no local index at" in words
    assert f"Looked for .perplexed/index.db in {folder} and every folder above it" in words, words
    assert "--index FILE" in words and "PERPLEXED_LOCAL_INDEX" in words


@pytest.mark.parametrize("token", ["", "   ", "\t\n"])
def test_the_library_refuses_a_blank_token(token: str) -> None:
    from perplexed import ConfigError
    from perplexed.mcp_server import create_server, http_app

    server = create_server(lambda query, options: [])
    with pytest.raises(ConfigError, match="token is empty"):
        http_app(server, token=token)
    with pytest.raises(ConfigError, match="token is empty"):
        http_app(server, host="0.0.0.0", token=token)


def test_token_flags_without_http_are_a_usage_error(tmp_path: Path) -> None:
    for extra in (["--token", ""], ["--allow-host", "a.example"]):
        done = subprocess.run([CLI, "mcp", "--provider", "searxng", *extra], env=user_env(tmp_path), cwd=tmp_path,
                              input="", capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "go with --http" in done.stderr, done.stderr


async def test_a_mixed_failure_names_the_configuration_and_what_may_pass(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from perplexed.mcp_server import create_server

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    server = create_server(["tavily", {"name": "searxng", "base_url": f"http://127.0.0.1:{port}"}])
    async with Client(server) as client:
        result = await client.call_tool("web_search", {"query": "q"})
    text = result.content[0].text
    assert result.is_error
    assert "Part of this is the server's configuration (tavily" in text, text
    assert "searxng failed for a reason that passes: retrying later may help" in text
