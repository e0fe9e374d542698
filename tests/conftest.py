"""Shared pytest configuration. Test support (loopback servers, the real SearXNG, fixtures) is the
``tests/testkit`` package; its fixtures are registered here as plugins."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Bytecode caches on, for this run and every process it starts (xdist workers, CLI and sample subprocesses),
# even where the shell sets PYTHONDONTWRITEBYTECODE: without them each process compiles perplexed and re-runs
# pytest's assertion rewriting from source (collection 28 s instead of 14 s per worker; +0.2 s per
# subprocess's `import perplexed`). The caches land in the clone's __pycache__ folders (git ignores them).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

_PROJECT_KEY = pytest.StashKey[dict[str, tuple[int, int]]]()

pytest_plugins = ["testkit.loopback", "testkit.searxng", "testkit.valkey_servers", "testkit.agent_stand_in"]

# Tests whose assertions are about wall-clock time (budgets, deadlines, overlap, back-off). They carry the
# ``timing`` marker, so `pytest -m timing` runs them alone, e.g. five times beside two CPU-bound processes
# (../shared/tools/loaded-run): their allowances must hold on a busy machine. Modules listed here are timing
# tests as a whole; elsewhere, mark a test with ``@pytest.mark.timing``.
TIMING_MODULES = (
    "tests/test_chain_budget.py",
    "tests/agent/test_agent_stream_deadline.py",
    "tests/agent/test_agent_retry_budget.py",
    "tests/reliability/test_rel_search_matrix.py",
    "tests/reliability/test_rel_agent_matrix.py",
    "tests/reliability/test_rel_leaks_load.py",
    "tests/reliability/test_rel_answer_deadline.py",
)
TIMING_TESTS = (
    "tests/test_chain_rules.py::test_rule5_providers_after_the_deadline_are_recorded_and_not_called",
    "tests/test_chain_rules.py::test_rule4",
    "tests/test_chain_rules.py::test_mock_transport_drip_is_bounded_by_the_budget",
    "tests/llama_index/test_li_retriever.py::test_aretrieve_with_an_async_function_provider_is_concurrent",
    "tests/agent/test_agent_client.py::test_retry_after_honoured",
    "tests/agent/test_agent_client.py::test_long_retry_after_raises_rate_limit_with_retry_after",
    "tests/agent/test_agent_client.py::test_overall_timeout",
    "tests/integration/test_searxng_server.py::test_upstream_failure_is_200_with_unresponsive_engine",
    "tests/integration/test_searxng_server.py::test_slow_upstream_inside_engine_timeout_still_answers",
)


@pytest.fixture(autouse=True)
def _isolated_local_index(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests never read or write the user's real local index (the quickstart builds one in the data dir)."""
    monkeypatch.setenv("PERPLEXED_LOCAL_INDEX", str(Path(tmp_path_factory.mktemp("index")) / "index.sqlite"))
    yield


@pytest.fixture(autouse=True)
def _fresh_governance() -> Iterator[None]:
    """Governance settings and the default state store do not leak from one test into the next."""
    yield
    import sys

    governance = sys.modules.get("perplexed.engine._governance")  # private: only governance, and only if a test loaded it
    if governance is not None:
        governance.reset()


#: The clone's own ``.perplexed/`` (the quickstart's index, found from the clone root): no test may touch it.
_PROJECT = Path(__file__).resolve().parents[1] / ".perplexed"


def _project_snapshot() -> dict[str, tuple[int, int]]:
    if not _PROJECT.is_dir():
        return {}
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in _PROJECT.iterdir()}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_PROJECT_KEY] = _project_snapshot()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A test that runs ``perplexed`` from the clone root finds the quickstart's ``.perplexed/`` there (the
    user's rule), reads the wrong index and writes ``state.db`` into the clone: fail the run if one did."""
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller checks once, at the end
        return
    before = session.config.stash.get(_PROJECT_KEY, None)
    if before is not None and _project_snapshot() != before:
        session.config.get_terminal_writer().line(
            f"a test changed {_PROJECT} (run perplexed with cwd=tmp_path): {before} -> {_project_snapshot()}",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the timing tests. The README's test command runs every other test on pytest-xdist workers, then the
    timing tests alone and serial (``-m timing``); should they run under xdist anyway (``pytest -n 3 --dist
    loadgroup``), they all go to the one ``timing`` group, so no two of them ever run at once."""
    timing = pytest.mark.timing
    serial = pytest.mark.xdist_group("timing")
    for item in items:
        node = item.nodeid
        if node.startswith(TIMING_MODULES) or node.startswith(TIMING_TESTS):
            item.add_marker(timing)
        if item.get_closest_marker("timing") is not None:
            item.add_marker(serial)
