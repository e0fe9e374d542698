"""Issue 26: a handled failure is one log line (the search goes on); its traceback is logged at DEBUG only.
The cool-down sample of docs/production.md used to print two full tracebacks while the search succeeded."""

from __future__ import annotations

import logging
import subprocess
import sys

import perplexed
import pytest
from perplexed.providers import FunctionProvider


def test_an_unexpected_provider_failure_is_one_warning_line(caplog: pytest.LogCaptureFixture) -> None:
    def broken(query: str, options: object) -> list[dict[str, str]]:
        raise ConnectionError("upstream down\nsecond line")

    def backup(query: str, options: object) -> list[dict[str, str]]:
        return [{"url": "https://backup.example/a"}]

    with caplog.at_level(logging.DEBUG, logger="perplexed"):
        result = perplexed.search("zoning", [FunctionProvider(broken), FunctionProvider(backup)])
    assert result.provider == "backup"
    above_debug = [r for r in caplog.records if r.levelno > logging.DEBUG]
    assert len(above_debug) == 1, [r.getMessage() for r in above_debug]
    line = above_debug[0].getMessage()
    assert "\n" not in line and "Traceback" not in line and above_debug[0].exc_info is None
    assert "broken" in line and "ConnectionError: upstream down second line" in line
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any("Traceback" in message for message in debug)


def test_with_the_default_logging_a_handled_failure_prints_no_traceback() -> None:
    code = (
        "import logging, perplexed\n"
        "from perplexed.providers import FunctionProvider\n"
        "logging.basicConfig()\n"
        "def broken(q, o): raise ConnectionError('upstream down')\n"
        "def backup(q, o): return [{'url': 'https://backup.example/a'}]\n"
        "print(perplexed.search('zoning', [FunctionProvider(broken), FunctionProvider(backup)]).provider)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "backup", proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") <= 1, proc.stderr
