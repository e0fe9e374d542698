"""Issue 41, point 7: the modules moved into folders by concern. Their old import paths keep working for one
minor version, as the same module objects (so ``mock.patch("perplexed._http.x")`` patches the code that runs)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from unittest import mock

import pytest
from perplexed import _moved  # private: the old module paths are what this tests


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_path_is_the_module_at_its_new_one(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(_moved.MOVED[old])


def test_a_submodule_of_a_moved_package_and_a_patch_through_the_old_path() -> None:
    assert importlib.import_module("perplexed._index._db") is importlib.import_module("perplexed.index._db")  # private: the old module paths are what this tests
    new = importlib.import_module("perplexed.policy._policy")  # private: the old module paths are what this tests
    with mock.patch("perplexed._policy.MEMBER_DECAY", 0.5):  # private: the old module paths are what this tests
        assert new.MEMBER_DECAY == 0.5
    assert new.MEMBER_DECAY != 0.5
    assert new.__name__ == "perplexed.policy._policy" and new.__spec__ is not None
    assert new.__spec__.name == "perplexed.policy._policy"  # the module keeps its own name


def test_old_paths_in_a_fresh_interpreter() -> None:
    program = ("from perplexed._engine import Engine; from perplexed.chain import search; "
               "from perplexed._governance import spend; import perplexed._extract_worker as w; print(w.__name__)")
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "perplexed.extract._worker"


def test_no_module_is_over_800_lines() -> None:
    from pathlib import Path

    import perplexed

    core = Path(perplexed.__file__).parent
    long = {str(p.relative_to(core)): n for p in core.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 800}
    assert long == {}
