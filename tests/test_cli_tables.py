"""Issue 26: every CLI table is readable at 80 and at 120 columns: no line wider than the terminal, no
environment variable or provider name split across lines, the header whole, no runs of blank lines, and the
column that says what to set (Note / What to do) kept. In process, with COLUMNS set as a terminal sets it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from perplexed import cli
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
