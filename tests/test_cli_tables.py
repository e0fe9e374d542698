"""Issue 26: every CLI table is readable at 80 and at 120 columns: no line wider than the terminal, no
environment variable or provider name split across lines, the header whole, no runs of blank lines, and the
column that says what to set (Note / What to do) kept. In process, with COLUMNS set as a terminal sets it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from perplexed import cli  # private: the perplexed command run in-process, not as a subprocess
from perplexed.providers.local import build_index
from testkit.loopback import Status, serve

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("PERPLEXED_LOCAL_INDEX", "PERPLEXITY_API_KEY", "PERPLEXITY_BASE_URL", "SEARXNG_URL", "TAVILY_API_KEY",
         "FIRECRAWL_API_KEY", "CERAMIC_API_KEY", "LINKUP_API_KEY", "perplexity-agent", "firecrawl")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("PERPLEXED_", "PERPLEXITY_")) or name.endswith(("_API_KEY", "_URL")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / "data"))
    monkeypatch.chdir(tmp_path)


def readable(out: str, width: int, *, must_show: tuple[str, ...] = ()) -> None:
    lines = out.splitlines()
    too_wide = [line for line in lines if len(line.rstrip()) > width]
    assert not too_wide, f"wider than {width}:\n" + "\n".join(too_wide)
    assert "\n\n\n" not in "\n".join(line.rstrip() for line in lines), out
    text = " ".join(line.strip() for line in lines)
    for name in NAMES:  # a name is either whole on one line or absent, never split
        pieces = [name[:k] for k in range(4, len(name))]
        for line in lines:
            tail = line.rstrip()
            if any(tail.endswith(piece) and name not in line for piece in pieces):
                raise AssertionError(f"{name} is split at {line!r}:\n{out}")
    for word in must_show:
        assert word in text, f"{word!r} missing at {width} columns:\n{out}"


def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int, *args: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    cli.main(list(args))
    return capsys.readouterr().out


@pytest.mark.parametrize("width", [80, 120])
def test_providers(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    out = run(capsys, monkeypatch, width, "providers")
    readable(out, width, must_show=("Provider", "Configured", "Price / call", "Note", "set SEARXNG_URL",
                                    "set TAVILY_API_KEY", "set PERPLEXITY_API_KEY", "perplexity-agent"))
    monkeypatch.setenv("PERPLEXED_RATE_LIMITS", "tavily=1/s")
    limited = run(capsys, monkeypatch, width, "providers")
    readable(limited, width, must_show=("Note", "set TAVILY_API_KEY", "1/s"))


@pytest.mark.parametrize("width", [80, 120])
def test_search_hits_and_attempts(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                  tmp_path: Path, width: int) -> None:
    build_index(ROOT / "examples" / "corpus", index=tmp_path / ".perplexed" / "index.db")
    with serve({"/search": Status(500, "down")}) as server:
        monkeypatch.setenv("SEARXNG_URL", server.url)
        out = run(capsys, monkeypatch, width, "search", "front yard setback", "-p", "searxng,tavily,local",
                  "--no-cache")
    readable(out, width, must_show=("Hit", "Source", "Attempts", "Provider", "Outcome", "Duration", "Cost", "Note",
                                    "set TAVILY_API_KEY", "Residential zoning setbacks", "Total cost"))


@pytest.mark.parametrize("width", [80, 120])
def test_doctor(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    out = run(capsys, monkeypatch, width, "doctor")
    readable(out, width, must_show=("Check", "Status", "Detail", "SEARXNG_URL is not set", "What to do",
                                    "set SEARXNG_URL", "Not ready"))


@pytest.mark.parametrize("width", [80, 120])
def test_index_list(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                    width: int) -> None:
    build_index(ROOT / "examples" / "corpus", index=tmp_path / ".perplexed" / "index.db")
    out = run(capsys, monkeypatch, width, "index", "--list")
    readable(out, width, must_show=("Folder", "Documents", "Last indexed", "Size", "16 documents",
                                    ".perplexed/ found in"))


def test_the_checker_sees_a_split_name() -> None:
    with pytest.raises(AssertionError, match="split"):
        readable("  set PERPLEXE\n  D_LOCAL_INDEX\n", 80)
    with pytest.raises(AssertionError, match="wider"):
        readable("x" * 81, 80)
    assert re.search("ok", "ok")


def test_long_file_urls_are_never_split(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                       tmp_path: Path) -> None:
    """Issue 39, #8: at 80 columns a hit's URL (here a ``file://`` URL longer than the terminal) is printed on a
    line of its own, whole, so a copied link works; everything else stays within the width."""
    deep = tmp_path / "documents" / "a-rather-long-folder-name" / "another-long-folder-name" / "and-one-more-level"
    deep.mkdir(parents=True)
    (deep / "zoning-setbacks.md").write_text((ROOT / "examples" / "corpus" / "zoning-setbacks.md").read_text())
    index = tmp_path / ".perplexed" / "index.db"
    build_index(tmp_path / "documents", index=index)
    url = (deep / "zoning-setbacks.md").as_uri()
    assert len(url) > 80
    out = run(capsys, monkeypatch, 80, "search", "front yard setback", "-p", "local,searxng", "--no-cache",
              "--index", str(index))
    lines = out.splitlines()
    assert [line.strip() for line in lines if "file://" in line] == [url]
    wide = [line for line in lines if len(line.rstrip()) > 80 and url not in line]
    assert not wide, wide
    assert any("not needed: local answered" in line for line in lines), out  # a note on one line, not a word a line


def test_fetch_shows_the_reason_of_a_url_refused_before_any_call(capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    """Issue 39, #8: ``perplexed fetch`` of a ``file://`` URL that is not indexed used to show an empty table and
    "0 attempts"; the reason was only in ``--json``."""
    index = tmp_path / ".perplexed" / "index.db"
    build_index(ROOT / "examples" / "corpus", index=index)
    missing = (tmp_path / "not-indexed" / "some-document-that-nobody-indexed.md").as_uri()
    monkeypatch.setenv("COLUMNS", "80")
    code = cli.main(["fetch", missing])
    out = capsys.readouterr().out
    assert code == 1
    assert "error (bad_request)" in out
    assert any(missing in line and "not a document of the local index" in line for line in out.splitlines()), out


def test_fetch_of_a_plain_path_suggests_its_file_url(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code = cli.main(["fetch", "notes/setbacks.md"])
    err = capsys.readouterr().err
    assert code == 2
    assert (tmp_path / "notes" / "setbacks.md").resolve().as_uri() in err.replace("\n", "")
