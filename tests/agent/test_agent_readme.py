"""The Agent API example (docs/agent-api.md) runs as written, against a loopback Agent API serving the synthesized
cassettes' bodies (a completed response, then a streamed transcript)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from testkit.loopback import Raw, serve

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes" / "synthesized" / "agent"


def _body(name: str) -> tuple[str, str]:
    data: dict[str, Any] = yaml.safe_load((CASSETTES / name).read_text())
    response = data["interactions"][0]["response"]
    ctype = response["headers"]["Content-Type"][0]
    return response["body"]["string"], ctype


def _readme_block() -> str:
    text = (ROOT / "docs" / "agent-api.md").read_text()
    section = re.search(r"<!-- section:agent -->(.*?)<!-- /section:agent -->", text, re.S)
    assert section, "docs/agent-api.md has no agent section"
    block = re.search(r"```python\n(.*?)```", section.group(1), re.S)
    assert block, "the agent section has no python example"
    return block.group(1)


def test_the_agent_example_runs_against_a_loopback_api() -> None:
    completed, completed_type = _body("create_completed.yaml")
    streamed, streamed_type = _body("stream_normal.yaml")
    bodies: list[bytes] = []

    def handle(request: Any) -> Raw:
        bodies.append(request.body)
        if b'"stream":true' in request.body.replace(b" ", b""):
            return Raw(streamed.encode(), content_type=streamed_type)
        return Raw(completed.encode(), content_type=completed_type)

    with serve() as server:
        server.route("/v1/agent", handle)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PERPLEXITY_", "PERPLEXED_"))}
        env.update(PERPLEXITY_API_KEY="pplx-test-not-a-real-key", PERPLEXITY_BASE_URL=server.url)
        proc = subprocess.run(
            [sys.executable, "-c", _readme_block()], capture_output=True, text=True, timeout=60, env=env, cwd=ROOT
        )

    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "digital-strategy.ec.europa.eu" in out  # a flattened search result
    assert re.search(r"^1 \(\d+, \d+\) https://", out, re.M)  # a citation with its span and url
    assert len(bodies) == 2  # one create, one stream; nothing retried
    assert "pplx-test-not-a-real-key" not in out + proc.stderr
