"""core/perplexed never imports langchain or llama_index: not on ``import perplexed``, not when every core
module is imported, not while searching. The adapters live in their own packages."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core"
FRAMEWORKS = ("langchain", "langchain_core", "langchain_community", "langsmith", "langgraph", "llama_index")


def run_isolated(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; return the framework modules it left in sys.modules."""
    script = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        frameworks = {FRAMEWORKS!r}
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in frameworks)))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(CORE), "PERPLEXED_PROVIDER": "searxng"},
    )
    assert proc.returncode == 0, proc.stderr
    loaded: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return loaded


def test_frameworks_are_installed_so_this_test_means_something() -> None:
    # if they were not installed, "not imported" would be trivially true
    assert run_isolated("import langchain_core, llama_index.core") != []


def test_import_perplexed_loads_no_framework() -> None:
    assert run_isolated("import perplexed") == []


def test_importing_every_core_module_loads_no_framework() -> None:
    loaded = run_isolated(
        """
        import importlib, pkgutil, perplexed
        for info in pkgutil.walk_packages(perplexed.__path__, "perplexed."):
            if info.name.endswith("__main__"):
                continue
            importlib.import_module(info.name)
        perplexed.answer  # the lazy attribute
        """
    )
    assert loaded == []


def test_searching_loads_no_framework() -> None:
    loaded = run_isolated(
        """
        import asyncio, perplexed
        from perplexed.providers import FunctionProvider
        fn = FunctionProvider(lambda q, o: [{"url": "https://a.example/"}])
        assert perplexed.search("q", fn).provider == "<lambda>"
        assert asyncio.run(perplexed.asearch("q", fn)).hits[0].id == 1
        """
    )
    assert loaded == []


def test_no_core_source_file_imports_a_framework() -> None:
    offenders = []
    for path in sorted((CORE / "perplexed").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.relative_to(CORE)}:{node.lineno} {n}" for n in names if n.split(".")[0] in FRAMEWORKS]
    assert offenders == []
