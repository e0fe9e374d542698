"""Issue 12 section 6: a file name that is not valid UTF-8 is indexed while the run goes on, and reruns
converge (stale documents updated, deleted files dropped), from Python and from ``perplexed index``.

Before the fix, such a name raised ``UnicodeEncodeError`` (exit 1) mid-run: in a folder of 300 files, 100
stayed stale on every rerun and deleted files were never dropped.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from perplexed.index import query_index  # private: the index's rows (paths, urls) are read directly
from perplexed.providers.local import build_index, check_index

pytestmark = pytest.mark.skipif(
    sys.platform in ("win32", "darwin"), reason="needs a file system that accepts any bytes in a name"
)

BAD_NAME = b"caf\xe9-r\xe9sum\xe9.md"  # Latin-1 bytes: not valid UTF-8


def make_folder(root: Path, count: int = 300) -> Path:
    folder = root / "docs"
    folder.mkdir()
    for i in range(count):
        (folder / f"note{i:03d}.md").write_text(f"# Note {i}\n\noriginal{i} text\n", encoding="utf-8")
    # sorted between the first 200 and the last 100 files, like the report's layout
    with open(os.path.join(os.fsencode(folder), BAD_NAME), "wb") as fh:
        fh.write(b"# Bad name\n\nwombat lives here\n")
    return folder


def indexed_paths(index: Path) -> set[str]:
    with sqlite3.connect(index) as conn:
        return {row[0] for row in conn.execute("SELECT path FROM docs")}


def edit_and_delete(folder: Path) -> None:
    for i in range(300):
        path = folder / f"note{i:03d}.md"
        if i % 3 == 0:
            path.unlink()
        else:
            path.write_text(f"# Note {i}\n\nchanged{i} text, longer than before\n", encoding="utf-8")


def test_a_name_that_is_not_utf8_is_indexed_and_the_run_goes_on(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    index = tmp_path / "index.sqlite3"
    report = build_index(folder, index)
    assert report.errors == []
    assert report.documents == 301
    (bad,) = [p for p in report.added if "\\x" in p]
    assert bad.endswith("caf\\xe9-r\\xe9sum\\xe9.md")  # shown (and keyed) with its bad bytes escaped
    (row,) = query_index(index, "wombat")
    assert row.url.endswith("/caf%E9-r%E9sum%E9.md")  # a valid file URI of the real bytes
    assert check_index(index).ok


def test_reruns_converge_after_edits_and_deletions(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    index = tmp_path / "index.sqlite3"
    build_index(folder, index)
    edit_and_delete(folder)
    report = build_index(folder, index)
    assert len(report.removed) == 100 and len(report.updated) == 200 and report.errors == []
    assert report.documents == 201
    assert not query_index(index, "original7")  # nothing stale
    assert [Path(r.path).name for r in query_index(index, "changed299")] == ["note299.md"]
    again = build_index(folder, index)
    assert (len(again.unchanged), again.added, again.updated, again.removed) == (201, [], [], [])


def test_the_cli_indexes_the_folder_and_names_the_file(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    index = tmp_path / "index.sqlite3"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERPLEXED_")}
    for attempt in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "perplexed", "index", str(folder), "--index", str(index), "--json"],
            capture_output=True, env=env, timeout=120,
        )
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        assert b"Traceback" not in proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["errors"] == [] and doc["documents"] == (301 if attempt == 0 else 201)
        if attempt == 0:
            assert any("caf\\xe9" in p for p in doc["added"])
            edit_and_delete(folder)
        else:
            assert len(doc["removed"]) == 100 and len(doc["updated"]) == 200
    assert len(indexed_paths(index)) == 201


def test_folders_whose_names_are_not_utf8_are_listed_and_rebuilt(tmp_path: Path) -> None:
    from perplexed.providers.local import list_index, rebuild_index

    root = os.path.join(os.fsencode(tmp_path), b"r\xe9sum\xe9s")
    os.makedirs(os.path.join(root, b"sub\xff"))
    with open(os.path.join(root, b"sub\xff", b"n\xe9.md"), "wb") as fh:
        fh.write(b"# Koala\n\nkoala bear\n")
    index = tmp_path / "index.sqlite3"
    report = build_index(os.fsdecode(root), index)
    assert report.errors == [] and report.documents == 1
    (folder,) = list_index(index).folders
    assert folder.path.endswith("r\\xe9sum\\xe9s") and folder.exists and folder.documents == 1
    rebuilt = rebuild_index(index)  # the folder is found again from its real bytes
    assert rebuilt.documents == 1 and rebuilt.missing_roots == []
    assert [r.url.rsplit("/", 2)[-2:] for r in query_index(index, "koala")] == [["sub%FF", "n%E9.md"]]
