"""The command line speaks command line (issue 17 §4): no Python hints, where a bad value came from, no
``--index`` written into the environment, one wording for the max_results limit, perplexity-agent listed,
"1 document". In-process (``perplexed.cli.main``) with a clean environment; nothing leaves the machine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from perplexed import cli  # private: the perplexed command run in-process, not as a subprocess
from perplexed.providers.local import build_index


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("PERPLEXED_", "PERPLEXITY_")) or name.endswith(("_API_KEY", "_URL")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)  # not the clone: its .perplexed/ (the quickstart's index) would be found


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


PYTHON_HINTS = ("api_key=", "base_url=", "client=", "AgentClient", "on_empty=")


def test_answer_without_a_key_says_what_to_set(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(capsys, "answer", "what is a setback?", "-p", "searxng")
    assert code == 2
    assert "set the PERPLEXITY_API_KEY environment variable" in err
    assert not any(hint in err for hint in PYTHON_HINTS), err


def test_attempt_notes_have_no_python_hints(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(capsys, "search", "setbacks", "-p", "tavily,searxng")
    assert code == 1
    assert "set TAVILY_API_KEY" in out and "set SEARXNG_URL" in out
    assert not any(hint in out for hint in PYTHON_HINTS), out
    code, out, _ = run(capsys, "search", "setbacks", "-p", "tavily", "--json")
    doc = json.loads(out)
    assert "set TAVILY_API_KEY" in doc["error"]["message"] and "api_key=" not in doc["error"]["message"]


def test_a_bad_default_chain_names_its_variable(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERPLEXED_PROVIDER", "searxng,serpapi")
    code, _, err = run(capsys, "search", "setbacks")
    assert code == 2
    assert "unknown provider 'serpapi'" in err and "PERPLEXED_PROVIDER" in err


def test_index_option_is_given_to_the_local_provider_not_the_environment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "setbacks.md").write_text("# Setbacks\n\nA front yard setback is twenty feet.\n", encoding="utf-8")
    index = tmp_path / "mine.sqlite3"
    build_index([docs], index)
    code, out, err = run(capsys, "search", "setback", "-p", "local", "--index", str(index), "--json")
    assert code == 0, err
    assert json.loads(out)["hits"][0]["title"] == "Setbacks"
    assert "PERPLEXED_LOCAL_INDEX" not in os.environ
    # default chain (local,searxng) too, and a missing index is blamed on the file, not on a variable
    code, out, err = run(capsys, "search", "setback", "--index", str(tmp_path / "none.sqlite3"))
    assert "PERPLEXED_LOCAL_INDEX" not in out + err
    assert "PERPLEXED_LOCAL_INDEX" not in os.environ


@pytest.mark.parametrize("value", ["0", "500"])
def test_one_wording_for_the_max_results_limit(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, _, err = run(capsys, "search", "setbacks", "-p", "local", "--max-results", value)
    assert code == 2
    assert f"--max-results must be a whole number, at least 1 and at most 100, got {value}" in err


def test_providers_lists_perplexity_agent_and_counts_in_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    docs = tmp_path / "one"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    index = tmp_path / "one.sqlite3"
    build_index([docs], index)
    monkeypatch.setenv("PERPLEXED_LOCAL_INDEX", str(index))
    code, out, _ = run(capsys, "providers")
    assert code == 0
    assert "perplexity-agent" in out and "per use" in out
    assert "1 document in" in out and "1 documents" not in out
    monkeypatch.setenv("PERPLEXITY_API_KEY", "pplx-test-not-a-real-key")
    code, out, _ = run(capsys, "providers", "--json")
    agent = {row["name"]: row for row in json.loads(out)}["perplexity-agent"]
    assert agent["configured"] is True and agent["env"] == ["PERPLEXITY_API_KEY", "PERPLEXITY_BASE_URL"]
    assert "pplx-test-not-a-real-key" not in out


def test_perplexity_agent_inside_a_chain_is_told_in_flags(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERPLEXITY_API_KEY", "pplx-test-not-a-real-key")
    code, _, err = run(capsys, "answer", "setbacks?", "-p", "local,perplexity-agent")
    assert code == 2
    assert "pass --provider perplexity-agent alone" in err and "provider='" not in err
