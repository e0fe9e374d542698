"""Managing the local index (issue 17): list, remove, rebuild, reset, single files, one hit per content,
and the upgrade of a version-1 index in place."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import perplexed
import pytest
from perplexed import ConfigError
from perplexed.index import query_index  # private: what the index holds, row by row, after each change
from perplexed.providers import Local
from perplexed.providers.local import (
    build_index,
    check_index,
    list_index,
    rebuild_index,
    remove_from_index,
    reset_index,
)

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "corpus"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    target = tmp_path / "corpus"
    shutil.copytree(SAMPLE, target)
    return target


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return tmp_path / "idx" / "index.db"


def cli(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERPLEXED_")}
    # COLUMNS: wide enough that a temporary folder's path (longer under pytest-xdist) is never folded by a
    # table; the 80/120-column layouts are tests/test_cli_tables.py's
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), PYTHONIOENCODING="utf-8", NO_COLOR="1",
               COLUMNS="250")
    proc = subprocess.run(
        [sys.executable, "-m", "perplexed", *args], capture_output=True, text=True, encoding="utf-8",
        env=env, cwd=cwd, timeout=120,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


# --- list ------------------------------------------------------------------------------------------------


def test_list_shows_folders_documents_last_run_and_size(corpus: Path, index: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nplatypus\n", encoding="utf-8")
    build_index([corpus, notes], index)
    listing = list_index(index)
    assert listing.documents == 17 and listing.size == index.stat().st_size
    by_path = {f.path: f for f in listing.folders}
    folder, single = by_path[str(corpus)], by_path[str(notes)]
    assert (folder.kind, folder.documents, folder.exists) == ("folder", 16, True)
    assert folder.bytes == sum(p.stat().st_size for p in corpus.iterdir())
    assert folder.indexed_at is not None and abs(folder.indexed_at.timestamp() - notes.stat().st_mtime) < 600
    assert (single.kind, single.documents) == ("file", 1)
    shutil.rmtree(corpus)
    assert not {f.path: f for f in list_index(index).folders}[str(corpus)].exists
    doc = listing.to_dict()
    assert doc["documents"] == 17 and {f["path"] for f in doc["folders"]} == {str(corpus), str(notes)}


def test_cli_list(corpus: Path, tmp_path: Path) -> None:
    assert cli("index", str(corpus), "--index", "i.db", cwd=tmp_path, home=tmp_path).returncode == 0
    shown = cli("index", "--list", "--index", "i.db", cwd=tmp_path, home=tmp_path)
    assert shown.returncode == 0
    assert "16 documents" in shown.stdout and str(corpus) in shown.stdout and "Last indexed" in shown.stdout
    doc = json.loads(cli("index", "--list", "--index", "i.db", "--json", cwd=tmp_path, home=tmp_path).stdout)
    assert doc["folders"][0]["documents"] == 16 and doc["folders"][0]["path"] == str(corpus)
    missing = cli("index", "--list", "--index", "nothing.db", cwd=tmp_path, home=tmp_path)
    assert missing.returncode == 2 and "no local index" in missing.stderr


# --- remove ----------------------------------------------------------------------------------------------


def test_remove_drops_a_folder_and_its_documents_also_when_it_is_gone(corpus: Path, index: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "wombat.md").write_text("# Wombats\n\nwombat burrows\n", encoding="utf-8")
    build_index([corpus, other], index)
    shutil.rmtree(corpus)
    again = build_index(corpus, index)  # re-indexing a deleted folder says how to drop it
    assert again.missing_roots == [str(corpus)]
    assert "perplexed index --remove" in again.errors[0].reason and "16 documents" in again.errors[0].reason
    report = remove_from_index(corpus, index)
    assert len(report.removed) == 16 and report.documents == 1
    assert query_index(index, "setback") == []
    assert [f.path for f in list_index(index).folders] == [str(other)]
    with pytest.raises(ConfigError, match=r"not indexed in .*perplexed index --list"):
        remove_from_index(tmp_path / "never-indexed", index)


def test_remove_keeps_documents_another_folder_covers(corpus: Path, index: Path) -> None:
    sub = corpus / "sub"
    sub.mkdir()
    (sub / "deep.md").write_text("# Deep\n\naardvark\n", encoding="utf-8")
    build_index([corpus, sub], index)
    report = remove_from_index(sub, index)
    assert report.removed == [] and report.notes  # still under the corpus folder
    assert len(query_index(index, "aardvark")) == 1
    report = remove_from_index(corpus, index)
    assert len(report.removed) == 17 and report.documents == 0


def test_cli_remove(corpus: Path, tmp_path: Path) -> None:
    assert cli("index", str(corpus), "--index", "i.db", cwd=tmp_path, home=tmp_path).returncode == 0
    shutil.rmtree(corpus)
    gone = cli("index", "--remove", str(corpus), "--index", "i.db", cwd=tmp_path, home=tmp_path)
    assert gone.returncode == 0 and "16 removed" in gone.stdout
    unknown = cli("index", "--remove", str(corpus), "--index", "i.db", cwd=tmp_path, home=tmp_path)
    assert unknown.returncode == 2 and "is not indexed" in unknown.stderr
    both = cli("index", str(corpus), "--list", cwd=tmp_path, home=tmp_path)
    assert both.returncode == 2 and "take no PATH" in both.stderr
    nothing = cli("index", cwd=tmp_path, home=tmp_path)
    assert nothing.returncode == 2 and "--rebuild" in nothing.stderr


# --- reset and rebuild -------------------------------------------------------------------------------------


def test_reset_deletes_the_index(corpus: Path, index: Path) -> None:
    build_index(corpus, index)
    assert reset_index(index) == 16
    assert not index.exists() and reset_index(index) == 0
    assert not check_index(index).exists


def test_cli_rebuild_leaves_out_folders_that_are_gone(corpus: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    (gone / "x.md").write_text("# X\n\nquokka\n", encoding="utf-8")
    assert cli("index", str(corpus), str(gone), "--index", "i.db", cwd=tmp_path, home=tmp_path).returncode == 0
    shutil.rmtree(gone)
    run = cli("index", "--rebuild", "--index", "i.db", cwd=tmp_path, home=tmp_path)
    assert run.returncode == 0 and "16 documents" in run.stdout and "left out" in run.stdout
    bad = cli("index", "--rebuild", str(tmp_path / "nope"), "--index", "i.db", cwd=tmp_path, home=tmp_path)
    assert bad.returncode == 2 and "not found" in bad.stdout


def test_cli_reset_uses_the_default_index_unless_told(corpus: Path, tmp_path: Path) -> None:
    assert cli("index", str(corpus), cwd=tmp_path, home=tmp_path).returncode == 0
    default = tmp_path / "data" / "perplexed" / "local-index.sqlite3"
    if sys.platform == "darwin":  # pragma: no cover
        default = tmp_path / "Library" / "Application Support" / "perplexed" / "local-index.sqlite3"
    assert default.is_file()
    run = cli("index", "--reset", cwd=tmp_path, home=tmp_path)
    assert run.returncode == 0 and "16 documents" in run.stdout
    assert not default.exists()


def test_rebuild_from_the_indexed_folders_and_files(corpus: Path, index: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nplatypus\n", encoding="utf-8")
    gone = tmp_path / "gone"
    gone.mkdir()
    (gone / "x.md").write_text("# X\n\nquokka\n", encoding="utf-8")
    build_index([corpus, notes], index, follow_links=True)
    build_index(gone, index)
    shutil.rmtree(gone)
    report = rebuild_index(index)
    assert report.documents == 17 and report.missing_roots == [str(gone)]
    assert report.notes and "rebuilt" in report.notes[-1]
    assert query_index(index, "quokka") == [] and len(query_index(index, "platypus")) == 1
    folders = {f.path: f for f in list_index(index).folders}
    assert set(folders) == {str(corpus), str(notes)} and folders[str(corpus)].follow_links
    with pytest.raises(ConfigError, match="nothing to rebuild"):
        rebuild_index(tmp_path / "absent.db")


# --- single files ------------------------------------------------------------------------------------------


def test_a_single_file_can_be_indexed_and_kept_up_to_date(tmp_path: Path, index: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nplatypus\n", encoding="utf-8")
    report = build_index(notes, index)
    assert report.added == [str(notes)] and report.errors == []
    notes.write_text("# Notes\n\nechidna now\n", encoding="utf-8")
    os.utime(notes, ns=(notes.stat().st_atime_ns, notes.stat().st_mtime_ns + 10**10))
    assert build_index(notes, index).updated == [str(notes)]
    assert query_index(index, "platypus") == [] and len(query_index(index, "echidna")) == 1


def test_cli_indexes_a_single_file(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\nplatypus\n", encoding="utf-8")
    run = cli("index", "notes.md", "--index", "i.db", cwd=tmp_path, home=tmp_path)
    assert run.returncode == 0 and "1 added" in run.stdout
    found = cli("search", "platypus", "--provider", "local", "--index", "i.db", "--json", cwd=tmp_path, home=tmp_path)
    assert json.loads(found.stdout)["hits"][0]["url"].endswith("/notes.md")


# --- one hit per content -----------------------------------------------------------------------------------


def test_a_second_clone_gives_no_duplicate_hits(corpus: Path, index: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone" / "examples" / "corpus"
    shutil.copytree(corpus, clone)
    build_index([corpus, clone], index)
    assert list_index(index).documents == 32
    rows = query_index(index, "front yard setback", limit=10)
    hashes = [r.path.rsplit("/", 1)[-1] for r in rows]
    assert len(hashes) == len(set(hashes))  # each document once
    assert rows[0].duplicates and Path(rows[0].duplicates[0]).name == Path(rows[0].path).name
    result = perplexed.search("zoning setbacks", provider=Local(index=index), max_results=10)
    urls = [Path(h.url).name for h in result.hits]
    assert len(urls) == len(set(urls))
    assert any(h.raw.get("duplicates") for h in result.hits)


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")
def test_the_same_folder_through_a_link_is_indexed_once(corpus: Path, index: Path, tmp_path: Path) -> None:
    link = tmp_path / "link-to-corpus"
    link.symlink_to(corpus, target_is_directory=True)
    build_index(corpus, index)
    again = build_index(link, index)
    assert again.added == [] and len(again.unchanged) == 16
    assert [f.path for f in list_index(index).folders] == [str(corpus)]


# --- schema upgrade ------------------------------------------------------------------------------------------

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, url TEXT NOT NULL, title TEXT NOT NULL,
    kind TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL,
    extractor TEXT NOT NULL, indexed_at REAL NOT NULL);
CREATE VIRTUAL TABLE docs_fts USING fts5(title, body, tokenize = 'porter unicode61 remove_diacritics 2');
INSERT INTO meta (key, value) VALUES ('schema_version', '1');
INSERT INTO meta (key, value) VALUES ('updated_at', '2026-01-02T03:04:05+00:00');
"""


def make_v1(index: Path, folder: Path) -> None:
    """An index as perplexed 0.1 wrote it (schema 1: no roots table, no CJK columns)."""
    index.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(index) as conn:
        conn.executescript(_V1)
        for i, path in enumerate(sorted(folder.rglob("*.md")), start=1):
            st = path.stat()
            text = path.read_text(encoding="utf-8")
            conn.execute(
                "INSERT INTO docs VALUES (?, ?, ?, ?, 'markdown', ?, ?, 'x', '2', 0)",
                (i, str(path), path.as_uri(), path.stem, st.st_size, st.st_mtime_ns),
            )
            conn.execute("INSERT INTO docs_fts (rowid, title, body) VALUES (?, ?, ?)", (i, path.stem, text))


def test_a_version_1_index_is_upgraded_in_place(tmp_path: Path, index: Path) -> None:
    folder = tmp_path / "notes"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "tomato.md").write_text("# Tomato\n\n番茄和罗勒是很好的伴生植物。\n", encoding="utf-8")
    (folder / "b.md").write_text("# B\n\nplatypus\n", encoding="utf-8")
    make_v1(index, folder)
    # a search upgrades it (no file read again): CJK substrings are found, the folder is listed
    assert [Path(r.path).name for r in query_index(index, "番茄")] == ["tomato.md"]
    listing = list_index(index)
    assert [f.path for f in listing.folders] == [str(folder)] and listing.documents == 2
    check = check_index(index, thorough=True)
    assert check.ok and check.schema_version == "2"
    report = build_index(folder, index)
    assert report.added == [] and report.documents == 2


def test_an_index_from_a_newer_perplexed_is_refused_with_the_remedy(tmp_path: Path, index: Path, corpus: Path) -> None:
    build_index(corpus, index)
    with sqlite3.connect(index) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ConfigError, match=r"newer perplexed.*perplexed index --rebuild"):
        query_index(index, "setback")
    assert not check_index(index).ok


def test_reset_on_a_missing_index_says_so(tmp_path: Path) -> None:
    """Issue 26: --reset on an index that does not exist does not claim to have deleted one."""
    run = cli("index", "--reset", "--index", "none.db", cwd=tmp_path, home=tmp_path)
    assert run.returncode == 0 and "No index at" in run.stdout and "nothing to delete" in run.stdout
    assert "Deleted" not in run.stdout
    doc = json.loads(cli("index", "--reset", "--index", "none.db", "--json", cwd=tmp_path, home=tmp_path).stdout)
    assert doc["existed"] is False and doc["reset"] is False


@pytest.mark.parametrize("what", ["missing folder", "unsupported file"])
def test_a_failed_run_leaves_no_index_file_it_created(tmp_path: Path, what: str) -> None:
    """Issue 26: a run that indexes nothing (a folder that is not there, a file type that is not indexed)
    leaves no index file, nor the folder it made for it (an empty .perplexed/ would change which index is used)."""
    target = tmp_path / "nope"
    if what == "unsupported file":
        target = tmp_path / "image.png"
        target.write_bytes(b"\x89PNG")
    index = tmp_path / "new" / ".perplexed" / "index.db"
    run = cli("index", str(target), "--index", str(index), cwd=tmp_path, home=tmp_path)
    assert run.returncode == 2 and "no index was created" in run.stdout, run.stdout + run.stderr
    assert not index.exists() and not (tmp_path / "new").exists()
    # an index that was there before is kept as it was
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    assert cli("index", str(docs), "--index", str(index), cwd=tmp_path, home=tmp_path).returncode == 0
    assert cli("index", str(target), "--index", str(index), cwd=tmp_path, home=tmp_path).returncode == 2
    assert index.exists() and check_index(index).documents == 1
