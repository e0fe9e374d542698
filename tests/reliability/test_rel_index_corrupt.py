"""Issue 12 section 6: a damaged local index is reported clearly, and ``perplexed index --rebuild`` mends it.

Garbage pages used to make ``perplexed index`` print a ``sqlite3.DatabaseError`` traceback, and garbage
full-text (FTS) pages made it exit 0 ("4000 docs, 0 errors") while every search failed. Now both exit 2
with one line naming the index file and the remedy, searches fail with a ``CorruptIndexError`` saying the
same, :func:`check_index` reports it cheaply, and ``--rebuild`` rebuilds the index from its folders.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import perplexed
import pytest
from perplexed import CorruptIndexError, Outcome
from perplexed.index import query_index  # private: the index's rows (paths, urls) are read directly
from perplexed.providers import Local
from perplexed.providers.local import build_index, check_index, rebuild_index

COUNT = 400


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("corrupt")
    folder = root / "docs"
    folder.mkdir()
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(3000)]
    for i in range(COUNT):
        words = " ".join(rng.choices(vocab, k=300))
        (folder / f"doc{i:04d}.md").write_text(f"# Doc {i}\n\nmarker{i} {words}\n", encoding="utf-8")
    index = root / "pristine.sqlite3"
    build_index(folder, index)
    return folder, index


def pages_of(index: Path, table: str) -> list[int]:
    with sqlite3.connect(index) as conn:
        try:
            return [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))]
        except sqlite3.OperationalError:  # SQLite built without dbstat: the pages after the first tenth
            count = conn.execute("PRAGMA page_count").fetchone()[0]
            return list(range(count // 10 + 2, count + 1))


def damaged(pristine: tuple[Path, Path], tmp_path: Path, table: str, pages: int = 6) -> Path:
    _, source = pristine
    index = tmp_path / f"damaged-{table}.sqlite3"
    index.write_bytes(source.read_bytes())
    with sqlite3.connect(source) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    rng = random.Random(table)
    with open(index, "r+b") as fh:
        for page in rng.sample(pages_of(source, table), pages):
            fh.seek((page - 1) * page_size)
            fh.write(rng.randbytes(page_size))
    return index


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERPLEXED_")}
    return subprocess.run(
        [sys.executable, "-m", "perplexed", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
    )


@pytest.mark.parametrize("table", ["docs", "docs_fts_data", "docs_fts_content"])
def test_perplexed_index_on_a_damaged_index_exits_2_naming_the_file_and_the_remedy(
    pristine: tuple[Path, Path], tmp_path: Path, table: str
) -> None:
    folder, _ = pristine
    index = damaged(pristine, tmp_path, table)
    proc = cli("index", str(folder), "--index", str(index), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "DatabaseError" not in proc.stderr
    assert str(index) in proc.stderr
    assert "perplexed index --rebuild" in proc.stderr
    assert proc.stderr.count("\n") == 1  # one line


@pytest.mark.parametrize(
    "garbage",
    [
        "UPDATE docs_fts_data SET block = randomblob(length(block)) WHERE id = 10",  # the FTS structure record
        # a structure record whose garbage sizes make SQLite report "out of memory" (Python: MemoryError)
        "UPDATE docs_fts_data SET block = X'b2b725541252f10e4ee8b3fb' WHERE id = 10",
        "UPDATE docs_fts_data SET block = randomblob(length(block))",  # every FTS record, in sound pages
        "DELETE FROM docs_fts_content WHERE id IN (3, 4)",  # full-text rows lost
    ],
)
def test_garbage_full_text_records_in_sound_pages_are_found_too(
    pristine: tuple[Path, Path], tmp_path: Path, garbage: str
) -> None:
    folder, source = pristine
    index = tmp_path / "garbage-records.sqlite3"
    index.write_bytes(source.read_bytes())
    with sqlite3.connect(index) as conn:
        conn.execute(garbage)
    proc = cli("index", str(folder), "--index", str(index), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert str(index) in proc.stderr and "perplexed index --rebuild" in proc.stderr
    check = check_index(index)
    assert not check.ok and check.remedy is not None and "--rebuild" in check.remedy
    assert cli("index", "--rebuild", "--index", str(index), cwd=tmp_path).returncode == 0
    assert check_index(index, thorough=True).ok


@pytest.mark.parametrize("table", ["docs", "docs_fts_data"])
def test_check_index_finds_the_damage_cheaply(pristine: tuple[Path, Path], tmp_path: Path, table: str) -> None:
    _, source = pristine
    good = check_index(source)
    assert good.ok and good.documents == COUNT and good.folders == 1 and good.problem is None
    check = check_index(damaged(pristine, tmp_path, table))
    assert not check.ok and check.exists
    assert check.problem is not None and "damaged" in check.problem
    assert check.remedy is not None and "perplexed index --rebuild" in check.remedy
    assert check.seconds < 5


def test_a_search_of_a_damaged_index_names_the_remedy(pristine: tuple[Path, Path], tmp_path: Path) -> None:
    index = damaged(pristine, tmp_path, "docs_fts_data", pages=40)
    failures = 0
    for i in range(0, COUNT, 20):  # terms spread over the whole index: some land on damaged pages
        try:
            query_index(index, f"marker{i} w{i}")
        except CorruptIndexError as exc:
            failures += 1
            assert str(index) in str(exc) and "perplexed index --rebuild" in str(exc)
    assert failures > 0
    # in a chain: an error attempt that says what to do, and the next provider answers
    result = perplexed.search(
        " ".join(f"marker{i}" for i in range(0, COUNT, 5)),
        provider=[Local(index=index), lambda q, o: [{"url": "https://example.com/x", "title": "x"}]],
    )
    first = result.attempts[0]
    if first.outcome is Outcome.ERROR:
        assert "perplexed index --rebuild" in (first.error or "")


@pytest.mark.parametrize("table", ["docs", "docs_fts_data"])
def test_rebuild_mends_a_damaged_index_from_its_folders(
    pristine: tuple[Path, Path], tmp_path: Path, table: str
) -> None:
    folder, _ = pristine
    index = damaged(pristine, tmp_path, table)
    proc = cli("index", "--rebuild", "--index", str(index), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["documents"] == COUNT and doc["roots"] == [str(folder)]
    assert check_index(index, thorough=True).ok
    assert [Path(r.path).name for r in query_index(index, "marker123")] == ["doc0123.md"]
    assert not Path(f"{index}.rebuild").exists()
    # the next plain run finds nothing to do
    again = build_index(folder, index)
    assert (again.added, again.updated, again.removed) == ([], [], [])


def test_rebuild_finds_the_folders_when_the_roots_page_is_damaged(
    pristine: tuple[Path, Path], tmp_path: Path
) -> None:
    folder, source = pristine
    index = damaged(pristine, tmp_path, "roots", pages=1)
    with sqlite3.connect(source) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    with open(index, "r+b") as fh:  # and the documents table: the folders cannot be inferred from it either
        for page in pages_of(source, "docs")[:3] + pages_of(source, "sqlite_autoindex_docs_1")[:1]:
            fh.seek((page - 1) * page_size)
            fh.write(b"\xee" * page_size)
    assert not check_index(index).ok
    report = rebuild_index(index)  # from the copy kept in the meta table
    assert report.documents == COUNT and [str(r) for r in report.roots] == [str(folder)]
    assert check_index(index, thorough=True).ok


def test_rebuild_needs_the_folders_when_they_cannot_be_read(tmp_path: Path, pristine: tuple[Path, Path]) -> None:
    folder, source = pristine
    index = tmp_path / "header-ok-rest-garbage.sqlite3"
    data = bytearray(source.read_bytes())
    data[100:] = random.Random(1).randbytes(len(data) - 100)  # page 1 (the schema) and everything after
    index.write_bytes(bytes(data))
    proc = cli("index", "--rebuild", "--index", str(index), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "perplexed index --rebuild FOLDER" in proc.stderr
    report = rebuild_index(index, [folder])
    assert report.documents == COUNT and check_index(index).ok


def test_a_file_that_is_not_an_index_is_never_overwritten(tmp_path: Path, pristine: tuple[Path, Path]) -> None:
    folder, _ = pristine
    notes = tmp_path / "notes.txt"
    notes.write_text("my precious notes\n", encoding="utf-8")
    for args in (("index", str(folder)), ("index", "--rebuild", str(folder)), ("index", "--reset")):
        proc = cli(*args, "--index", str(notes), cwd=tmp_path)
        assert proc.returncode == 2 and "not a perplexed local index" in proc.stderr
    assert notes.read_text(encoding="utf-8") == "my precious notes\n"


def test_a_damaged_index_is_one_line_and_verbose_shows_sqlites_report(
    pristine: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 26: one line however much SQLite reports (it can be 100+ lines); --verbose prints all of it."""
    folder, _ = pristine
    index = damaged(pristine, tmp_path, "docs", pages=len(pages_of(pristine[1], "docs")) // 2)
    proc = cli("index", str(folder), "--index", str(index), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "perplexed index --rebuild" in proc.stderr, proc.stderr
    verbose = cli("index", str(folder), "--index", str(index), "--verbose", cwd=tmp_path)
    assert verbose.returncode == 2 and verbose.stderr.count("\n") > 2, verbose.stderr
    assert "what SQLite reports" in verbose.stderr


def test_the_one_line_summarises_a_long_sqlite_report() -> None:
    from perplexed.index._db import corrupt  # private: corrupts the index file on purpose

    report = "*** in database main ***\n" + "\n".join(f"Page {n}: btree cell {n} extends past the end" for n in range(150))
    exc = corrupt(Path("i.db"), report)
    assert "\n" not in str(exc) and "Page 0:" in str(exc) and "149 more problems" in str(exc)
    assert len(exc.details) == 150 and exc.details[-1].startswith("Page 149")
