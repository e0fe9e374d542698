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


@pytest.mark.integration
@pytest.mark.parametrize("name", ["langgraph_agent.py", "llamaindex_agent.py"])
def test_each_example_without_the_key_fails_naming_it(name: str, doc_env: DocEnv) -> None:
    """As a user without ``PERPLEXITY_API_KEY`` runs it: a non-zero exit, and the variable to set on stderr
    (not only in what the scripted model was told)."""
    proc = _proc(name, doc_env, leave_out="PERPLEXITY_API_KEY")
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "PERPLEXITY_API_KEY" in proc.stderr, proc.stderr[-3000:]


def test_the_langgraph_example_without_langchain_says_how_to_install_it(doc_env: DocEnv) -> None:
    """``langchain`` (the agent runtime) is not one of perplexed's extras: without it, one line saying how."""
    program = ("import runpy, sys; sys.modules['langchain'] = None; "
               "runpy.run_path('examples/agents/langgraph_agent.py', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=180,
                          env=doc_env.env, cwd=doc_env.cwd)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "pip install langchain" in proc.stderr
