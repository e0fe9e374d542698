"""The agent-runtime examples run offline, as the README says, from the clone after the quickstart: a LangChain
agent (``create_agent``, on LangGraph) and a LlamaIndex FunctionAgent, each driven by a scripted model that
searches the local index and reads a local page; the final answer's citation is checked with ``verify``. No
key, no network (issue 39, #4). A real model the user names but cannot use is one line on stderr and exit 1."""

from __future__ import annotations

import subprocess
import sys

import pytest
from docs_env import ROOT, DocEnv, needs

EXAMPLES = ROOT / "examples" / "agents"
NAMES = ["langgraph_agent.py", "llamaindex_agent.py"]


def _proc(name: str, doc_env: DocEnv, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, f"examples/agents/{name}"], capture_output=True, text=True, timeout=180,
        env={**doc_env.env, **extra}, cwd=doc_env.cwd,
    )


@pytest.mark.parametrize("name", NAMES)
def test_each_example_needs_no_key(name: str) -> None:
    assert needs((EXAMPLES / name).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("name", NAMES)
def test_each_example_searches_reads_a_local_page_and_checks_its_citation(name: str, doc_env: DocEnv) -> None:
    proc = _proc(name, doc_env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr and "Warning: " not in proc.stderr, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    tools = [line for line in lines if line.startswith("tool ")]
    assert [t.split(" ")[1] for t in tools] == ["perplexed_search", "perplexed_fetch"], lines
    assert all("(success)" in t or "(error=False)" in t for t in tools), tools
    assert "[1]" in tools[0] and "file://" in tools[0]  # the search tool's numbered hits, from the local index
    assert any(line.startswith("final: A setback is") for line in lines), lines
    assert lines[-1] == "verify: supported"


def test_a_real_model_that_cannot_start_is_one_line_and_exit_code_1(doc_env: DocEnv) -> None:
    """``PERPLEXED_EXAMPLE_MODEL`` names a real model; without its package or key the user reads one line."""
    proc = _proc("langgraph_agent.py", doc_env, PERPLEXED_EXAMPLE_MODEL="openai:gpt-5.1")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "PERPLEXED_EXAMPLE_MODEL=openai:gpt-5.1" in proc.stderr


def test_the_langgraph_example_without_langchain_says_how_to_install_it(doc_env: DocEnv) -> None:
    """``langchain`` (the agent runtime) comes with the ``agents`` extra: without it, one line saying how."""
    program = ("import runpy, sys; sys.modules['langchain'] = None; "
               "runpy.run_path('examples/agents/langgraph_agent.py', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=180,
                          env=doc_env.env, cwd=doc_env.cwd)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert 'pip install -e ".[agents]"' in proc.stderr
