"""Issue 12 section 6: symbolic links that lead out of an indexed folder are not followed by default
(``/etc/passwd`` became searchable); ``follow_links=True`` / ``perplexed index --follow-links`` allows it.

Links that stay inside the folder still work; a file indexed through an outside link before is dropped by
the next run without ``follow_links``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from perplexed.index import query_index  # private: the index's rows (paths, urls) are read directly
from perplexed.providers.local import build_index

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    secret_dir = tmp_path / "outside"
    secret_dir.mkdir()
    (secret_dir / "passwd.txt").write_text("root:x:0:0:zebracorn:/root:/bin/bash\n", encoding="utf-8")
    (secret_dir / "more.md").write_text("# More\n\nhippogriff secrets\n", encoding="utf-8")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "real.md").write_text("# Real\n\nunicorn notes\n", encoding="utf-8")
    (folder / "passwd.txt").symlink_to(secret_dir / "passwd.txt")  # a file link leaving the folder
    (folder / "outside-dir").symlink_to(secret_dir, target_is_directory=True)  # a folder link leaving it
    (folder / "inner-link.md").symlink_to(folder / "real.md")  # a link that stays inside
    return folder, tmp_path / "index.sqlite3"


def test_links_leaving_the_folder_are_not_followed_by_default(tree: tuple[Path, Path]) -> None:
    folder, index = tree
    report = build_index(folder, index)
    assert query_index(index, "zebracorn") == []
    assert query_index(index, "hippogriff") == []
    skipped = {Path(p.path).name: p.reason for p in report.skipped}
    assert "leading out of the indexed folder" in skipped["passwd.txt"]
    assert "--follow-links" in skipped["passwd.txt"]
    assert "outside-dir" in skipped
    # a link inside the folder is fine (and its content is the same file: one hit)
    assert {Path(p).name for p in report.added} == {"real.md", "inner-link.md"}
    assert len(query_index(index, "unicorn")) == 1


def test_follow_links_indexes_them(tree: tuple[Path, Path]) -> None:
    folder, index = tree
    report = build_index(folder, index, follow_links=True)
    assert report.skipped == []
    assert [Path(r.path).name for r in query_index(index, "zebracorn")] == ["passwd.txt"]
    assert [Path(r.path).name for r in query_index(index, "hippogriff")] == ["more.md"]
    # indexed again without follow_links: what was reached through the links is dropped
    again = build_index(folder, index)
    assert {Path(p).name for p in again.removed} == {"passwd.txt", "more.md"}
    assert query_index(index, "zebracorn") == [] and query_index(index, "hippogriff") == []


def test_follow_links_must_be_a_bool(tree: tuple[Path, Path]) -> None:
    from perplexed import ConfigError

    folder, index = tree
    with pytest.raises(ConfigError, match="follow_links"):
        build_index(folder, index, follow_links="yes")  # type: ignore[arg-type]


def test_the_cli_follows_links_only_when_asked(tree: tuple[Path, Path]) -> None:
    folder, index = tree
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERPLEXED_")}

    def run(*extra: str) -> dict[str, object]:
        proc = subprocess.run(
            [sys.executable, "-m", "perplexed", "index", str(folder), "--index", str(index), "--json", *extra],
            capture_output=True, text=True, env=env, timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        doc: dict[str, object] = json.loads(proc.stdout)
        return doc

    skipped = {Path(str(p["path"])).name for p in run()["skipped"]}  # type: ignore[attr-defined]
    assert "passwd.txt" in skipped
    assert query_index(index, "zebracorn") == []
    run("--follow-links")
    assert [Path(r.path).name for r in query_index(index, "zebracorn")] == ["passwd.txt"]
