"""The environment documentation samples and examples run in: a user's, right after the README's main command.

- the working folder is a copy of the clone (its files linked, not copied) where the README's main command has
  run (``perplexed index examples/corpus --index .perplexed/index.db``), so the samples find the project's
  index from the working folder, as they do in a user's clone; the real clone's ``.perplexed/`` is never
  touched;
- ``HOME`` is a fresh temporary folder; no ``PERPLEXED_*``, ``XDG_*``, provider key or URL is set (no index
  variable either: no user has one);
- a sample that says ``# needs SEARXNG_URL`` gets the real SearXNG the test session starts on 127.0.0.1; one
  that says ``# needs PERPLEXITY_API_KEY`` gets a stand-in key and ``PERPLEXITY_BASE_URL`` pointing at a loopback
  Agent API serving the synthesized cassettes' bodies. Without them, such a sample must fail with a message
  naming what to set (test_doc_samples.py checks both).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docs_env import ROOT, STAND_IN_KEY, STRIPPED_ENV, DocEnv

#: Entries of the clone a sample never needs in its copy (the copy gets its own ``.perplexed/``).
_NOT_LINKED = {".perplexed", ".git", ".venv", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tmp", ".site"}


def readme_index_commands() -> list[list[str]]:
    """The ``perplexed index ...`` steps of the README's main command (the block after ``<!-- main-command -->``)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- main-command -->\s*```bash\n(.*?)\n```", readme, re.DOTALL)
    assert found, "README.md has no <!-- main-command --> block"
    steps = [shlex.split(step) for step in found.group(1).split("&&")]
    return [step[1:] for step in steps if step[:2] == [".venv/bin/perplexed", "index"]]


def _user_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED_ENV)}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1")
    return env


def _clone_copy(where: Path) -> Path:
    """A folder that looks like the clone: every top-level entry linked (``.perplexed/`` left out)."""
    where.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in _NOT_LINKED and not entry.name.endswith(".egg-info"):
            (where / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return where


@pytest.fixture(scope="session")
def quickstart_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's main command's ``perplexed index`` steps, run as a user runs them (the CLI, from a copy of
    the clone, in a fresh HOME); returns the ``.perplexed/`` folder they made."""
    base = tmp_path_factory.mktemp("quickstart")
    clone = _clone_copy(base / "clone")
    commands = readme_index_commands()
    assert commands, "the README's main command indexes nothing"
    for args in commands:
        proc = subprocess.run([sys.executable, "-m", "perplexed", *args], cwd=clone, env=_user_env(base / "home"),
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"perplexed {shlex.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    folder = clone / ".perplexed"
    assert (folder / "index.db").is_file(), "the README's main command did not create .perplexed/index.db"
    return folder


@pytest.fixture
def doc_env(tmp_path: Path, searxng: Any, agent_stand_in_url: str, quickstart_index: Path) -> DocEnv:
    clone = _clone_copy(tmp_path / "clone")
    shutil.copytree(quickstart_index, clone / ".perplexed")
    home = tmp_path / "home"
    home.mkdir()
    provided = {
        "SEARXNG_URL": {"SEARXNG_URL": searxng.base_url},
        "PERPLEXITY_API_KEY": {"PERPLEXITY_API_KEY": STAND_IN_KEY, "PERPLEXITY_BASE_URL": agent_stand_in_url},
    }
    return DocEnv(env=_user_env(home), cwd=clone, provided=provided)
