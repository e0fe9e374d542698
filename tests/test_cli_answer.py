"""``perplexed answer`` through the real entry point, against an Agent API mock on a loopback socket.

The sources come from the ``local`` provider over the sample corpus; ``PERPLEXITY_BASE_URL`` points the
Agent API client at a loopback server that answers JSON (``stream: false``) or an SSE stream.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from perplexed import providers
from test_answer_fakes import response_json, sse_bytes, sse_events
from testkit.loopback import Json, LoopbackServer, Raw, Request, serve

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "corpus"
FAKE_KEY = "pplx-cli-test-not-a-real-key"
ANSWER_KEYS = {"text", "citations", "sources", "search", "cost"}
TEXT = (
    "A setback is the minimum distance between a building and a property line [1]. "
    "Front setbacks of 20 to 30 ft are common, and corner lots often need two [1][2]."
)


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def _scrubbed_env(tmp_path: Path) -> dict[str, str]:
    names: set[str] = set()
    for name in providers.available():
        cls = providers.get(name)
        names.update(v for v in (cls.env_key, cls.env_base_url) if v)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in names
        and not k.startswith(("PERPLEXED_", "PERPLEXITY_"))
        and not k.endswith(("_API_KEY", "_BASE_URL", "_API_URL"))
        and k not in ("COLUMNS", "FORCE_COLOR")
    }
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        LOCALAPPDATA=str(tmp_path / "data"),
        PYTHONIOENCODING="utf-8",
        NO_COLOR="1",
        PERPLEXED_LOCAL_INDEX=str(tmp_path / "index.sqlite3"),
    )
    return env


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., Run]:
    env = _scrubbed_env(tmp_path)
    shutil.copytree(SAMPLE, tmp_path / "corpus")
    built = subprocess.run([sys.executable, "-m", "perplexed", "index", str(tmp_path / "corpus")], env=env,
                           cwd=tmp_path, capture_output=True, text=True, encoding="utf-8", timeout=60)
    assert built.returncode == 0, built.stderr

    def run(*args: str, extra_env: dict[str, str] | None = None) -> Run:
        proc = subprocess.run([sys.executable, "-m", "perplexed", *args], env={**env, **(extra_env or {})},
                              cwd=tmp_path, capture_output=True, text=True, encoding="utf-8", timeout=60)
        assert "Traceback" not in proc.stderr, proc.stderr
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def agent_api() -> Iterator[LoopbackServer]:
    """The Agent API on 127.0.0.1: ``/v1/agent`` answers :data:`TEXT` (JSON, or SSE when streaming)."""
    resp = response_json(TEXT, cost=0.0042)

    def reply(request: Request) -> Json | Raw:
        if request.json().get("stream"):
            return Raw(sse_bytes(sse_events(resp)), content_type="text/event-stream")
        return Json(resp)

    with serve({"/v1/agent": reply}) as server:
        yield server


def agent_env(server: LoopbackServer) -> dict[str, str]:
    return {"PERPLEXITY_API_KEY": FAKE_KEY, "PERPLEXITY_BASE_URL": server.url}


def test_answer_prints_text_footnotes_linked_to_sources_and_cost(cli, agent_api: LoopbackServer) -> None:  # type: ignore[no-untyped-def]
    run = cli("answer", "zoning setbacks corner lots", "--provider", "local,searxng",
              extra_env=agent_env(agent_api))
    assert run.code == 0, run.err
    assert " ".join(TEXT.split()) in " ".join(run.out.split())
    footnotes = [line for line in run.out.splitlines() if re.match(r"\[\d+\] ", line)]
    assert len(footnotes) == 2
    assert footnotes[0].startswith("[1] Residential zoning setbacks — file://")
    assert footnotes[0].endswith("zoning-setbacks.md")
    assert footnotes[1].startswith("[2] ")
    assert re.search(r"Cost: \$0\.0042 \(search \$0\.0000, Agent API \$0\.0042\)", run.out)
    # the model was given the local hits as numbered sources
    (request,) = agent_api.requests
    body = request.json()
    assert "Residential zoning setbacks" in json.dumps(body["input"])
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert FAKE_KEY not in run.out + run.err


def test_answer_stream_prints_the_text_as_it_arrives(cli, agent_api: LoopbackServer) -> None:  # type: ignore[no-untyped-def]
    run = cli("answer", "zoning setbacks", "-p", "local", "--stream", extra_env=agent_env(agent_api))
    assert run.code == 0, run.err
    assert run.out.startswith(TEXT)  # the deltas, written as they came, make up the text
    assert "[1] Residential zoning setbacks" in run.out
    assert "Cost: $0.0042" in run.out
    assert agent_api.requests[0].json()["stream"] is True


@pytest.mark.parametrize("stream", [False, True])
def test_answer_json_is_one_document(cli, agent_api: LoopbackServer, stream: bool) -> None:  # type: ignore[no-untyped-def]
    args = ["answer", "zoning setbacks", "-p", "local", "--json"] + (["--stream"] if stream else [])
    run = cli(*args, extra_env=agent_env(agent_api))
    assert run.code == 0, run.err
    doc = run.json()
    assert set(doc) == ANSWER_KEYS
    assert doc["text"] == TEXT
    assert [c["n"] for c in doc["citations"]] == [1, 1, 2]
    assert doc["citations"][0]["url"] == doc["sources"][0]["url"]
    assert doc["sources"][0]["url"].startswith("file://") and doc["sources"][0]["id"] == 1
    assert doc["search"]["provider"] == "local"
    assert [a["outcome"] for a in doc["search"]["attempts"]] == ["ok"]
    assert doc["cost"] == pytest.approx(0.0042)


def test_answer_passes_the_preset(cli, agent_api: LoopbackServer) -> None:  # type: ignore[no-untyped-def]
    run = cli("answer", "HTTP timeouts", "-p", "local", "--preset", "pro-search", "--json",
              extra_env=agent_env(agent_api))
    assert run.code == 0, run.err
    assert agent_api.requests[0].json()["preset"] == "pro-search"


def test_answer_without_a_key_is_a_config_error(cli) -> None:  # type: ignore[no-untyped-def]
    run = cli("answer", "zoning setbacks", "-p", "local")
    assert run.code == 2
    assert "PERPLEXITY_API_KEY" in run.err
    assert run.out == ""
    as_json = cli("answer", "zoning setbacks", "-p", "local", "--json")
    assert as_json.code == 2 and as_json.json()["error"]["type"] == "ConfigError"


def test_answer_with_nothing_found_exits_1_without_asking_the_model(cli, agent_api: LoopbackServer) -> None:  # type: ignore[no-untyped-def]
    run = cli("answer", "quantum chromodynamics", "-p", "local", extra_env=agent_env(agent_api))
    assert run.code == 1
    assert "found nothing to answer from" in run.out
    assert re.search(r"local\s+empty", run.out)
    assert agent_api.requests == []
    failed = cli("answer", "zoning", "-p", "searxng", "--json", extra_env=agent_env(agent_api))
    assert failed.code == 1
    doc = failed.json()
    assert doc["error"]["reason"] == "all_providers_failed"
    assert doc["search"]["attempts"][0]["provider"] == "searxng"


def test_agent_api_errors_are_reported_without_a_traceback(cli) -> None:  # type: ignore[no-untyped-def]
    envelope = {"error": {"message": "Invalid API key", "type": "authentication_error", "code": 401}}
    with serve({"/v1/agent": Json(envelope, status=401)}) as server:
        run = cli("answer", "zoning", "-p", "local", extra_env=agent_env(server))
    assert run.code == 2
    assert "Invalid API key" in run.err
    failed = response_json("", status="failed", error={"code": "server_error", "message": "model crashed"})
    with serve({"/v1/agent": Json(failed)}) as server:
        run = cli("answer", "zoning", "-p", "local", extra_env=agent_env(server))
    assert run.code == 1
    assert "model crashed" in run.err


def test_perplexity_agent_mode_uses_the_agents_own_search(cli) -> None:  # type: ignore[no-untyped-def]
    results = [{"id": 1, "title": "Agent found this", "url": "https://example.org/agent-source",
                "snippet": "setbacks"}]
    resp = response_json("Setbacks keep buildings apart [1].", cost=0.01, search_results=[results])
    with serve({"/v1/agent": Json(resp)}) as server:
        run = cli("answer", "zoning setbacks", "--provider", "perplexity-agent", extra_env=agent_env(server))
        (request,) = server.requests
    assert run.code == 0, run.err
    assert "[1] Agent found this — https://example.org/agent-source" in run.out
    assert "Cost: $0.0100" in run.out
    assert "sources from perplexity-agent" in run.out
    assert request.json().get("tools")  # the agent searched by itself
