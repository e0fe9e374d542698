"""The agent-runtime examples run offline, from the clone after the quickstart: a LangGraph ReAct agent and a
LlamaIndex FunctionAgent, each driven by a scripted model that calls perplexed's search and answer tools.
They call the Agent API: their docstrings say they need ``PERPLEXITY_API_KEY``, and they get it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from docs_env import ROOT, STAND_IN_KEY, DocEnv, needs

EXAMPLES = ROOT / "examples" / "agents"


def _proc(name: str, doc_env: DocEnv, leave_out: str | None = None) -> subprocess.CompletedProcess[str]:
    wanted = needs((EXAMPLES / name).read_text(encoding="utf-8"))
    return subprocess.run(
        [sys.executable, f"examples/agents/{name}"], capture_output=True, text=True, timeout=180,
        env=doc_env.with_needs(wanted, leave_out=leave_out), cwd=doc_env.cwd,
    )


def _run(name: str, doc_env: DocEnv) -> list[str]:
    proc = _proc(name, doc_env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert STAND_IN_KEY not in proc.stdout + proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.integration
def test_langgraph_react_agent_calls_both_tools(doc_env: DocEnv) -> None:
    lines = _run("langgraph_agent.py", doc_env)
    tools = [line for line in lines if line.startswith("tool ")]
    assert [t.split(" ")[1] for t in tools] == ["perplexed_search", "perplexed_answer"]
    assert all("(success)" in t for t in tools), tools
    assert "[1]" in tools[0]  # the search tool's numbered hits
    assert lines[-1].startswith("final: A front yard setback")


@pytest.mark.integration
def test_llamaindex_function_agent_calls_both_tools(doc_env: DocEnv) -> None:
    lines = _run("llamaindex_agent.py", doc_env)
    tools = [line for line in lines if line.startswith("tool ")]
    assert len(tools) == 2, lines
    assert all("(error=False)" in t for t in tools), tools
    assert "search" in tools[0].split(" ")[1] and "answer" in tools[1].split(" ")[1]
    assert "[1]" in tools[0]
    assert lines[-1].startswith("final: Final: ")


@pytest.mark.parametrize("name", ["langgraph_agent.py", "llamaindex_agent.py"])
def test_each_example_says_what_it_needs(name: str) -> None:
    assert needs((EXAMPLES / name).read_text(encoding="utf-8")) == ["PERPLEXITY_API_KEY"]
