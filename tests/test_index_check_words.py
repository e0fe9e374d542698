"""``check_index`` (what ``doctor`` shows for the index) says what is wrong once and what to do once: a file
that is not an index is not told "choose another file, or delete it" and then "choose another index file
with --index FILE, or delete this one"."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from perplexed.providers.local import check_index


@pytest.mark.parametrize("kind", ["text", "another sqlite database"])
def test_not_an_index_says_the_problem_and_the_remedy_once(tmp_path: Path, kind: str) -> None:
    bad = tmp_path / "bad.db"
    if kind == "text":
        bad.write_bytes(b"garbage\n")
    else:
        with sqlite3.connect(bad) as conn:
            conn.execute("CREATE TABLE notes (x TEXT)")
        conn.close()
    found = check_index(bad)
    assert not found.ok and found.problem and found.remedy
    said = f"{found.problem}; {found.remedy}"
    assert said.count("choose another") == 1 and said.count("delete") == 1, said
    assert "--index FILE" in found.remedy
