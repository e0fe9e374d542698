"""Issue 39, #10: the package imports correctly from any folder, the clone's parent included. From the parent,
the clone's own folder (named ``perplexed`` when cloned under that name) used to be imported as an empty namespace
package (``ImportError: cannot import name 'Attempt' from 'perplexed' (unknown location)``): the editable
install now puts ``core/`` on ``sys.path`` (a path entry, where a regular package beats a namespace folder)
instead of an import hook asked after the working folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = "import perplexed, langchain_perplexed, llama_index_perplexed; print(perplexed.Attempt.__name__)"


@pytest.mark.parametrize("name", ["perplexed", "langchain_perplexed", "llama_index_perplexed"])
def test_from_the_parent_of_a_clone_named_like_the_package(tmp_path: Path, name: str) -> None:
    parent = tmp_path / "projects"
    parent.mkdir()
    os.symlink(ROOT, parent / name, target_is_directory=True)  # the clone, as the parent folder sees it
    proc = subprocess.run([sys.executable, "-c", PROGRAM], cwd=parent, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "Attempt"


def test_from_an_unrelated_folder(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", PROGRAM], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
