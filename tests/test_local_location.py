"""Which local index is in use, and why: an explicit path, ``$PERPLEXED_LOCAL_INDEX``, the nearest project
``.perplexed/`` folder from the working folder upward (as git finds ``.git``), else the per-user data folder.
The CLI keeps its ``state.db`` beside whichever index is in use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from perplexed.providers.local import build_index, default_index_path, locate_index

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "examples" / "corpus"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with a sub-folder, HOME elsewhere, no PERPLEXED_LOCAL_INDEX."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.delenv("PERPLEXED_LOCAL_INDEX", raising=False)
    proj = tmp_path / "proj"
    (proj / "src" / "deep").mkdir(parents=True)
    return proj


@pytest.mark.parametrize(
    ("has_project", "env", "given", "source"),
    [
        (False, False, False, "user"),
        (True, False, False, "project"),
        (True, True, False, "environment"),
        (True, True, True, "argument"),
        (False, False, True, "argument"),
    ],
)
def test_the_rule_in_order(project: Path, monkeypatch: pytest.MonkeyPatch, has_project: bool, env: bool,
                           given: bool, source: str) -> None:
    if has_project:
        (project / ".perplexed").mkdir()
    if env:
        monkeypatch.setenv("PERPLEXED_LOCAL_INDEX", str(project / "from-env.db"))
    monkeypatch.chdir(project / "src" / "deep")
    location = locate_index(project / "given.db" if given else None)
    assert location.source == source
    expected = {
        "user": Path(os.environ["XDG_DATA_HOME"]) / "perplexed" / "local-index.sqlite3",
        "project": project / ".perplexed" / "index.db",
        "environment": project / "from-env.db",
        "argument": project / "given.db",
    }[source]
    assert os.path.abspath(location.path) == os.path.abspath(expected)
    assert location.why
    if source == "project":
        assert str(project) in location.why
    if not given:
        assert default_index_path() == location.path


def test_the_nearest_project_folder_wins(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / ".perplexed").mkdir()
    (project / "src" / ".perplexed").mkdir()
    monkeypatch.chdir(project / "src" / "deep")
    assert locate_index().path == project / "src" / ".perplexed" / "index.db"
    monkeypatch.chdir(project)
    assert locate_index().path == project / ".perplexed" / "index.db"


def test_a_file_named_dot_perplexed_is_not_a_project(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / ".perplexed").write_text("not a folder")
    monkeypatch.chdir(project)
    assert locate_index().source == "user"


def test_the_quickstart_index_is_found_by_the_library(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the README does: index into .perplexed/index.db, then search with no --index and no variable."""
    import perplexed

    monkeypatch.chdir(project)
    build_index(CORPUS, index=Path(".perplexed/index.db"))
    monkeypatch.chdir(project / "src")
    result = perplexed.search("front yard setback", provider="local", max_results=1)
    assert result.provider == "local" and result.hits


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERPLEXED_", "COLUMNS"))}
    return subprocess.run([sys.executable, "-m", "perplexed", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


def test_the_cli_uses_the_project_index_and_keeps_its_state_beside_it(project: Path) -> None:
    indexed = _cli(["index", str(CORPUS), "--index", ".perplexed/index.db"], project)
    assert indexed.returncode == 0, indexed.stderr
    found = _cli(["search", "front yard setback", "--provider", "local", "--json"], project / "src" / "deep")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["provider"] == "local"
    assert (project / ".perplexed" / "state.db").exists()
    assert not (Path(os.environ["XDG_DATA_HOME"]) / "perplexed").exists()
    listed = _cli(["index", "--list"], project / "src")
    assert listed.returncode == 0, listed.stderr
    assert ".perplexed/ found in" in listed.stdout and str(project) in listed.stdout
    doc = json.loads(_cli(["index", "--list", "--json"], project).stdout)
    assert doc["source"] == "project" and doc["documents"] > 0


def test_state_db_is_beside_an_explicit_index(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert _cli(["index", str(CORPUS), "--index", str(other / "i.db")], project).returncode == 0
    found = _cli(["search", "fence height", "-p", "local", "--index", str(other / "i.db"), "--json"], project)
    assert found.returncode == 0, found.stderr
    assert (other / "state.db").exists()
    assert not (Path(os.environ["XDG_DATA_HOME"]) / "perplexed").exists()
