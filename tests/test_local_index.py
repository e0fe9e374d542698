"""The local index: document text extraction, incremental builds, bad input, where the index lives."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from perplexed import ConfigError
from perplexed.extract._doctext import (  # private: the text extraction for each file type, below the index
    DocumentError,
    decode,
    extract,
)
from perplexed.index import (  # private: the stored rows and the per-platform data dir, not shown by Local
    INDEX_ENV,
    index_stats,
    platform_data_dir,
    query_index,
)
from perplexed.providers.local import build_index, default_index_path

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "corpus"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A private copy of the sample corpus, free to edit."""
    target = tmp_path / "corpus"
    shutil.copytree(SAMPLE, target)
    return target


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return tmp_path / "index" / "local.sqlite3"


def titles(index: Path) -> dict[str, str]:
    with sqlite3.connect(index) as conn:
        return {Path(p).name: t for p, t in conn.execute("SELECT path, title FROM docs")}


def paths_for(index: Path, query: str) -> list[str]:
    return [Path(r.path).name for r in query_index(index, query)]


def bump_mtime(path: Path, seconds: int = 10) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


# --- the sample corpus ----------------------------------------------------------------------------------


def test_sample_corpus_is_small_and_covers_every_format() -> None:
    files = sorted(p.name for p in SAMPLE.iterdir())
    assert 10 <= len(files) <= 20
    assert {Path(f).suffix for f in files} == {".md", ".txt", ".html", ".rst"}


def test_build_indexes_every_supported_document(corpus: Path, index: Path) -> None:
    report = build_index([corpus], index)
    expected = sorted(str(p) for p in corpus.iterdir())
    assert sorted(report.added) == expected
    assert report.errors == [] and report.skipped == [] and report.removed == []
    assert report.documents == len(expected) == index_stats(index).documents
    assert report.roots == [corpus.resolve()]


def test_titles_come_from_the_first_heading_or_the_file_name(corpus: Path, index: Path) -> None:
    build_index([corpus], index)
    found = titles(index)
    assert found["zoning-setbacks.md"] == "Residential zoning setbacks"  # Markdown ATX heading
    assert found["accessory-dwelling-units.md"] == "Accessory dwelling units (ADUs)"  # front matter
    assert found["variances.rst"] == "Applying for a zoning variance"  # reST underlined title
    assert found["connection-pooling.html"] == "Connection pooling and keep-alive"  # <title>
    assert found["fences-and-hedges.txt"] == "Fences, walls and hedges: height limits and sight triangles"
    assert found["rate-limits.txt"] == "Handling API rate limits"  # "# heading" in a .txt
    assert found["search-provider-fallback.txt"] == "search-provider-fallback.txt"  # no heading: file name


def test_urls_are_file_uris_of_the_documents(corpus: Path, index: Path) -> None:
    build_index([corpus], index)
    rows = query_index(index, "setbacks")
    assert rows
    for row in rows:
        assert row.url.startswith("file://")
        assert row.url == Path(row.path).as_uri()
        assert Path(row.path).is_file()


# --- incremental updates ---------------------------------------------------------------------------------


def test_a_second_run_reads_nothing_again(corpus: Path, index: Path) -> None:
    first = build_index([corpus], index)
    second = build_index([corpus], index)
    assert second.added == [] and second.updated == [] and second.removed == []
    assert sorted(second.unchanged) == sorted(first.added)
    assert second.documents == first.documents


def test_a_changed_file_is_re_read(corpus: Path, index: Path) -> None:
    build_index([corpus], index)
    doc = corpus / "rate-limits.txt"
    assert paths_for(index, "rate limits")[0] == "rate-limits.txt"
    doc.write_text("# Quota notes\n\nThe zorblax quota resets at midnight.\n", encoding="utf-8")
    bump_mtime(doc)
    report = build_index([corpus], index)
    assert report.updated == [str(doc)]
    assert report.added == [] and report.removed == []
    assert paths_for(index, "zorblax") == ["rate-limits.txt"]
    assert "rate-limits.txt" not in paths_for(index, "token bucket")  # the old text is gone
    assert titles(index)["rate-limits.txt"] == "Quota notes"


def test_a_touched_but_identical_file_is_not_re_indexed(corpus: Path, index: Path) -> None:
    build_index([corpus], index)
    doc = corpus / "sqlite-fts5.md"
    bump_mtime(doc)
    report = build_index([corpus], index)
    assert report.updated == [] and str(doc) in report.unchanged


def test_a_deleted_file_is_dropped(corpus: Path, index: Path) -> None:
    build_index([corpus], index)
    assert "bm25-ranking.html" in paths_for(index, "saturates")
    (corpus / "bm25-ranking.html").unlink()
    report = build_index([corpus], index)
    assert report.removed == [str(corpus / "bm25-ranking.html")]
    assert "bm25-ranking.html" not in paths_for(index, "saturates")
    assert report.documents == len(list(corpus.iterdir()))


def test_a_new_file_is_added(corpus: Path, index: Path) -> None:
    build_index([corpus], index)
    new = corpus / "sub" / "notes.md"
    new.parent.mkdir()
    new.write_text("# Gravel driveways\n\nGravel counts as impervious in some towns.\n", encoding="utf-8")
    report = build_index([corpus], index)
    assert report.added == [str(new)]
    assert paths_for(index, "gravel")[0] == "notes.md"


def test_two_folders_share_an_index_and_updating_one_keeps_the_other(tmp_path: Path, index: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "one.md").write_text("# One\n\nquokka\n", encoding="utf-8")
    (b / "two.md").write_text("# Two\n\nplatypus\n", encoding="utf-8")
    build_index([a, b], index)
    (a / "one.md").unlink()
    report = build_index([a], index)
    assert report.removed == [str((a / "one.md").resolve())]
    assert paths_for(index, "platypus") == ["two.md"]
    assert paths_for(index, "quokka") == []


def test_a_single_folder_may_be_given_without_a_list(corpus: Path, index: Path) -> None:
    assert build_index(corpus, index).documents == build_index(str(corpus), index).documents > 0


def test_progress_is_reported_per_file(corpus: Path, index: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    build_index([corpus], index, progress=lambda done, total, path: seen.append((done, total, path)))
    n = len(list(corpus.iterdir()))
    assert [s[0] for s in seen] == list(range(1, n + 1))
    assert {s[1] for s in seen} == {n}


# --- bad input -------------------------------------------------------------------------------------------


def test_bad_files_are_reported_one_by_one_and_the_run_goes_on(tmp_path: Path, index: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nsetback rules\n", encoding="utf-8")
    (folder / "binary.txt").write_bytes(b"PK\x03\x04\x00\x00binary junk")
    (folder / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve text".encode("latin-1"))
    (folder / "utf16.txt").write_text("hello", encoding="utf-16")
    (folder / "dangling.rst").symlink_to(tmp_path / "nowhere.rst")
    if hasattr(os, "mkfifo"):
        os.mkfifo(folder / "pipe.html")
    (folder / "also-good.html").write_text("<title>Also good</title><p>setback</p>", encoding="utf-8")

    report = build_index([folder], index)

    reasons = {Path(p.path).name: p.reason for p in report.errors}
    assert "binary" in reasons["binary.txt"]
    assert "not UTF-8" in reasons["latin1.md"] and "0xe9" in reasons["latin1.md"]
    assert "UTF-16" in reasons["utf16.txt"]
    assert "cannot read" in reasons["dangling.rst"]
    if hasattr(os, "mkfifo"):
        assert "not a regular file" in reasons["pipe.html"]
    assert sorted(Path(p).name for p in report.added) == ["also-good.html", "good.md"]
    assert sorted(paths_for(index, "setback")) == ["also-good.html", "good.md"]


def test_a_file_that_turns_bad_is_dropped_and_reported(corpus: Path, index: Path) -> None:
    build_index([corpus], index)
    doc = corpus / "rag-overview.md"
    doc.write_bytes(b"\xff\xfe\x00garbage")
    bump_mtime(doc)
    report = build_index([corpus], index)
    assert [Path(p.path).name for p in report.errors] == ["rag-overview.md"]
    assert "dropped" in report.errors[0].reason
    assert report.removed == []  # reported once, as an error
    assert "rag-overview.md" not in paths_for(index, "retrieval augmented generation")


def test_a_missing_folder_is_reported_and_the_other_folders_indexed(corpus: Path, index: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    unsupported = tmp_path / "data.csv"
    unsupported.write_text("a,b\n", encoding="utf-8")
    report = build_index([missing, unsupported, corpus], index)
    assert report.missing_roots == [str(missing), str(unsupported)]
    reasons = {p.path: p.reason for p in report.errors}
    assert reasons[str(missing)] == "folder not found"
    assert "unsupported file type" in reasons[str(unsupported)]
    assert report.documents == len(list(corpus.iterdir()))


def test_unsupported_and_hidden_files_are_left_out(tmp_path: Path, index: Path) -> None:
    folder = tmp_path / "docs"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "notes.md").write_text("# hidden folder\n", encoding="utf-8")
    (folder / ".draft.md").write_text("# hidden file\n", encoding="utf-8")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (folder / "script.py").write_text("print('hi')\n", encoding="utf-8")
    (folder / "README.MD").write_text("# Upper-case suffix\n\nwombat\n", encoding="utf-8")
    report = build_index([folder], index)
    assert [Path(p).name for p in report.added] == ["README.MD"]
    assert sorted(Path(p.path).name for p in report.skipped) == ["photo.png", "script.py"]
    assert report.errors == []


def test_an_index_file_that_is_not_an_index_is_a_config_error(tmp_path: Path, corpus: Path) -> None:
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ConfigError, match="not a perplexed local index"):
        build_index([corpus], junk)
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE unrelated (x)")
    with pytest.raises(ConfigError, match="not a perplexed local index"):
        build_index([corpus], other)
    with pytest.raises(ConfigError, match="not a perplexed local index"):
        query_index(other, "setbacks")


def test_querying_a_missing_or_empty_index_says_to_run_perplexed_index(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"perplexed index PATH"):
        query_index(tmp_path / "absent.sqlite3", "setbacks")
    empty = tmp_path / "empty"
    empty.mkdir()
    build_index([empty], tmp_path / "empty.sqlite3")
    with pytest.raises(ConfigError, match=r"no documents.*perplexed index PATH"):
        query_index(tmp_path / "empty.sqlite3", "setbacks")


# --- where the index lives -------------------------------------------------------------------------------


def test_the_environment_overrides_the_default_index_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no project .perplexed/ folder here or above
    monkeypatch.setenv(INDEX_ENV, str(tmp_path / "mine.sqlite3"))
    assert default_index_path() == tmp_path / "mine.sqlite3"
    monkeypatch.delenv(INDEX_ENV)
    assert default_index_path().name == "local-index.sqlite3"
    assert default_index_path().parent.name == "perplexed"


def test_build_index_without_an_index_argument_uses_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, corpus: Path
) -> None:
    monkeypatch.setenv(INDEX_ENV, str(tmp_path / "env.sqlite3"))
    report = build_index([corpus])
    assert report.index == tmp_path / "env.sqlite3"
    assert index_stats().documents == report.documents


@pytest.mark.parametrize(
    ("platform", "environ", "expected"),
    [
        ("linux", {}, "/Users/u/.local/share/perplexed"),
        ("linux", {"XDG_DATA_HOME": "/data/xdg"}, "/data/xdg/perplexed"),
        ("linux", {"XDG_DATA_HOME": "relative/ignored"}, "/Users/u/.local/share/perplexed"),
        ("darwin", {}, "/Users/u/Library/Application Support/perplexed"),
        ("win32", {"LOCALAPPDATA": "C:/Users/u/AppData/Local"}, "C:/Users/u/AppData/Local/perplexed"),
        ("win32", {}, "/Users/u/AppData/Local/perplexed"),
    ],
)
def test_platform_data_dir_follows_each_platform(platform: str, environ: dict[str, str], expected: str) -> None:
    assert platform_data_dir(platform=platform, environ=environ, home=Path("/Users/u")) == Path(expected)


def test_platform_data_dir_agrees_with_platformdirs() -> None:
    platformdirs = pytest.importorskip("platformdirs")
    assert platform_data_dir() == Path(platformdirs.user_data_dir("perplexed", appauthor=False))


# --- text extraction -------------------------------------------------------------------------------------


def test_markdown_text_drops_markup_and_keeps_words() -> None:
    source = (
        "---\ntitle: 'From front matter'\n---\n"
        "Intro with a [link](https://example.org) and ![an image](x.png) and `code`.\n\n"
        "Setext heading\n==============\n\n"
        "```python\nfence_keyword = 1\n```\n"
        "> quoted **bold** and _em_ text\n"
        "- item one\n"
        "[ref]: https://example.org/ref\n"
    )
    doc = extract(source.encode(), "x.md")
    assert doc.title == "From front matter"
    assert doc.kind == "markdown"
    for words in ("link", "an image", "code", "Setext heading", "fence_keyword = 1", "quoted bold and em text",
                  "item one"):
        assert words in doc.text
    for markup in ("](", "**", "```", "==", "https://example.org/ref", "title:"):
        assert markup not in doc.text


def test_markdown_title_is_the_first_heading_of_any_level() -> None:
    assert extract(b"Some text\n\n## Second level\n\n# Later\n", "a.md").title == "Second level"
    assert extract(b"Title here\n---\n\nbody\n", "a.md").title == "Title here"
    assert extract(b"```\n# not a heading\n```\nplain\n", "plain.md").title == "plain.md"


def test_rst_title_roles_and_directives() -> None:
    source = (
        "=========\nOverlined\n=========\n\n"
        "See :ref:`the guide <guide>` and `a link <https://example.org>`_ and ``literal``.\n\n"
        ".. note:: Keep this sentence.\n\n"
        ".. image:: picture.png\n"
        ".. _target:\n"
        "Example::\n\n    indented code\n"
    )
    doc = extract(source.encode(), "x.rst")
    assert doc.title == "Overlined"
    assert "See the guide and a link and literal." in doc.text
    assert "Keep this sentence." in doc.text
    assert "picture.png" not in doc.text and "_target" not in doc.text and "::" not in doc.text


def test_html_title_text_and_hidden_parts() -> None:
    source = (
        "<html><head><title>Page &amp; title</title><meta name='description' content='A summary.'>"
        "<style>.x{color:red}</style></head><body><h1>Heading</h1><p>Caf&eacute; <b>bold</b></p>"
        "<script>var secret = 1;</script><p>second&nbsp;paragraph</p></body></html>"
    )
    doc = extract(source.encode(), "x.html")
    assert doc.title == "Page & title"
    assert "A summary." in doc.text and "Café bold" in doc.text and "second paragraph" in doc.text
    assert "secret" not in doc.text and "color" not in doc.text
    assert extract(b"<body><h2>Only heading</h2><p>x</p></body>", "y.htm").title == "Only heading"


def test_plain_text_title_from_a_heading_or_the_file_name() -> None:
    underlined = extract(b"Underlined\n==========\n\ntext", "a.txt")
    assert (underlined.title, underlined.text) == ("Underlined", "text")  # the heading is not repeated
    assert extract(b"just some text\nmore text", "notes.txt").title == "notes.txt"


def test_decode_accepts_utf8_with_bom_and_rejects_everything_else() -> None:
    assert decode("\ufeffcafé".encode()) == "café"
    with pytest.raises(DocumentError, match="binary"):
        decode(b"abc\x00def")
    with pytest.raises(DocumentError, match="not UTF-8"):
        decode("café".encode("cp1252"))
    with pytest.raises(DocumentError, match="UTF-16"):
        decode("x".encode("utf-16"))


@pytest.mark.skipif(sys.platform == "win32", reason="file URIs differ on Windows")
def test_non_ascii_file_names_become_valid_file_uris(tmp_path: Path, index: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "café notes.md").write_text("# Café\n\nespresso setbacks\n", encoding="utf-8")
    build_index([folder], index)
    (row,) = query_index(index, "espresso")
    assert row.url.endswith("/caf%C3%A9%20notes.md")
    assert row.title == "Café"


def test_the_core_and_the_local_provider_do_not_import_the_cli_dependencies(tmp_path: Path) -> None:
    # httpx itself imports rich when rich and click are installed (httpx._main); only count what we add
    code = (
        "import sys, json\n"
        "def cli_modules(): return {m for m in sys.modules if m.split('.')[0] in ('rich', 'platformdirs')}\n"
        "import httpx\n"
        "baseline = cli_modules()\n"
        "import perplexed\n"
        "from perplexed.providers import Local\n"
        "from perplexed.providers.local import build_index\n"
        "import perplexed.index, perplexed.extract._doctext\n"
        "print(json.dumps(sorted(cli_modules() - baseline)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_index_works_without_platformdirs(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['platformdirs'] = None  # as if the cli extra were not installed\n"
        "from perplexed.index import default_index_path, platform_data_dir\n"
        "assert default_index_path() == platform_data_dir() / 'local-index.sqlite3', default_index_path()\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != INDEX_ENV}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env,
                          cwd=tmp_path)  # not the clone: its .perplexed/ (the quickstart's index) would be found
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
