"""Issue 12 section 6: the local index is consistent after any interruption, and a rerun always converges.

A run is stopped part-way, by an exception in the progress callback (Ctrl-C) and by SIGKILL in a child
process. Afterwards the index passes its integrity check, every document row has its full-text row, deleted
files no longer answer (they are dropped before any file is read), and one more run brings the index
exactly to the folder's state.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from perplexed.index import query_index  # private: the index's rows (paths, urls) are read directly
from perplexed.providers.local import build_index, check_index

COUNT = 300


def make_folder(root: Path) -> Path:
    folder = root / "docs"
    folder.mkdir()
    for i in range(COUNT):
        (folder / f"note{i:03d}.md").write_text(f"# Note {i}\n\noriginal{i} text\n", encoding="utf-8")
    return folder


def edit_and_delete(folder: Path) -> None:
    for i in range(COUNT):
        path = folder / f"note{i:03d}.md"
        if i % 3 == 0:
            path.unlink()
        else:
            path.write_text(f"# Note {i}\n\nchanged{i} text, longer than before\n", encoding="utf-8")


def assert_consistent(index: Path) -> None:
    check = check_index(index, thorough=True)
    assert check.ok, check.problem
    with sqlite3.connect(index) as conn:
        docs = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        fts = conn.execute("SELECT count(*) FROM docs_fts").fetchone()[0]
        orphans = conn.execute(
            "SELECT count(*) FROM docs WHERE id NOT IN (SELECT rowid FROM docs_fts)"
        ).fetchone()[0]
    assert docs == fts and orphans == 0


def assert_converged(folder: Path, index: Path) -> None:
    report = build_index(folder, index)
    assert report.errors == []
    assert report.documents == len(list(folder.iterdir()))
    assert not query_index(index, " ".join(f"original{i}" for i in range(0, COUNT, 3)))  # deleted files
    stale = [r.path for r in query_index(index, " ".join(f"original{i}" for i in range(COUNT)), limit=COUNT)]
    assert stale == []
    for i in (1, 151, 299):
        assert [Path(r.path).name for r in query_index(index, f"changed{i}")] == [f"note{i:03d}.md"]
    again = build_index(folder, index)
    assert (again.added, again.updated, again.removed) == ([], [], [])
    assert_consistent(index)


def test_an_interrupted_run_leaves_a_consistent_index_and_a_rerun_converges(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    index = tmp_path / "index.sqlite3"
    build_index(folder, index)
    edit_and_delete(folder)

    def stop_midway(done: int, total: int, path: str) -> None:
        if done == 150:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_index(folder, index, progress=stop_midway)
    assert_consistent(index)
    # deleted files were dropped before any file was read: they no longer answer, even now
    assert not query_index(index, " ".join(f"original{i}" for i in range(0, COUNT, 3)))
    assert_converged(folder, index)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("kill_at", [1, 137, 199, 200])  # 200 files to read: 200 changed, 100 deleted
def test_a_killed_indexer_leaves_a_consistent_index_and_a_rerun_converges(tmp_path: Path, kill_at: int) -> None:
    folder = make_folder(tmp_path)
    index = tmp_path / "index.sqlite3"
    build_index(folder, index)
    edit_and_delete(folder)
    child = textwrap.dedent(
        f"""
        import os, signal, sys
        from perplexed.providers.local import build_index

        def progress(done, total, path):
            if done == {kill_at}:
                os.kill(os.getpid(), signal.SIGKILL)

        build_index(sys.argv[1], sys.argv[2], progress=progress)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERPLEXED_")}
    proc = subprocess.run([sys.executable, "-c", child, str(folder), str(index)], env=env, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert_consistent(index)
    assert_converged(folder, index)
