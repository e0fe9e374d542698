"""perplexed redacts keys in log records with filters on its own, httpx's and httpcore's loggers; importing it
changes nothing global in logging (no record factory, no handler, no level)."""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from perplexed._errors import register_secret  # private: registers a made-up key to be redacted
from perplexed._logs import (  # private: the filters on the loggers are what is tested
    RedactingFilter,
    get_logger,
)

CORE = Path(__file__).resolve().parents[1] / "core"
SECRET = "lg7Filtered9KeyValue"


def run_fresh(code: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(CORE), "PERPLEXED_PROVIDER": "searxng"},
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_importing_perplexed_leaves_global_logging_alone() -> None:
    state = run_fresh(
        """
        import json, logging
        def snapshot():
            root = logging.getLogger()
            return {"factory": repr(logging.getLogRecordFactory()), "logger_class": repr(logging.getLoggerClass()),
                    "root_handlers": len(root.handlers), "root_level": root.level, "root_filters": len(root.filters),
                    "disable": logging.root.manager.disable}
        before = snapshot()
        factory = logging.getLogRecordFactory()
        import perplexed, perplexed.agent, perplexed.store, perplexed.doctor, perplexed.cli
        perplexed.answer  # the lazily imported answer module
        after = snapshot()
        print(json.dumps({"before": before, "after": after,
                          "same_factory": logging.getLogRecordFactory() is factory}))
        """
    )
    assert state["same_factory"] is True
    assert state["before"] == state["after"]


def test_every_logger_of_the_redacted_trees_carries_the_filter() -> None:
    state = run_fresh(
        """
        import json, logging, pkgutil, importlib
        import perplexed
        for info in pkgutil.walk_packages(perplexed.__path__, "perplexed."):
            if info.name.endswith("__main__"):
                continue
            importlib.import_module(info.name)
        from perplexed._logs import RedactingFilter
        names = [n for n, lg in logging.root.manager.loggerDict.items()
                 if isinstance(lg, logging.Logger) and n.partition(".")[0] in ("perplexed", "httpx", "httpcore")]
        bare = [n for n in names if not any(isinstance(f, RedactingFilter) for f in logging.getLogger(n).filters)]
        print(json.dumps({"names": sorted(names), "bare": bare}))
        """
    )
    names = state["names"]
    assert isinstance(names, list)
    assert {"perplexed.engine.chain", "httpx", "httpcore.http11", "httpcore.http2"} <= set(names)
    assert state["bare"] == []


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def root_lines() -> Iterator[list[str]]:
    handler = _Collect()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@pytest.mark.parametrize("name", ["httpcore.http11", "httpcore.http2", "httpcore.connection", "httpx", "perplexed.engine.chain"])
def test_a_key_logged_on_a_filtered_logger_reaches_the_root_handler_redacted(name: str, root_lines: list[str]) -> None:
    register_secret(SECRET)
    if name.startswith("perplexed."):  # a module's logger exists once the module is loaded (run alone, it is not)
        importlib.import_module(name)  # private: the module whose own logger is tested
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug("receive_response_headers.complete return_value=%r", [(b"Location", f"https://u:{SECRET}@x")])
        try:
            raise RuntimeError(f"upstream said key={SECRET}")
        except RuntimeError:
            logger.debug("failed", exc_info=True)
    finally:
        logger.setLevel(level)
    assert any(line.startswith(name) for line in root_lines)
    assert not any(SECRET in line for line in root_lines)


def test_a_new_module_logger_is_filtered() -> None:
    logger = get_logger("perplexed.a_new_module_for_this_test")
    assert [f for f in logger.filters if isinstance(f, RedactingFilter)]
    assert len([f for f in get_logger("perplexed.a_new_module_for_this_test").filters
                if isinstance(f, RedactingFilter)]) == 1  # attached once
