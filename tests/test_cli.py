"""The ``perplexed`` command, run through its real entry points in a subprocess with no provider keys.

Every run gets a scrubbed environment: no provider keys or URLs, no ``PERPLEXED_*`` settings, and a fresh
home and data folder, so the default index location is private to the test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from perplexed import providers
from testkit.loopback import Json, searxng_json, serve

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "corpus"
SEARCH_KEYS = {"query", "provider", "hits", "attempts", "cost"}


def _provider_env_vars() -> set[str]:
    names: set[str] = set()
    for name in providers.available():
        cls = providers.get(name)
        names.update(v for v in (cls.env_key, cls.env_base_url) if v)
    return names


SCRUBBED = _provider_env_vars()


def registered_in_a_fresh_process() -> set[str]:
    """The provider names a new interpreter knows (tests may register more in this one)."""
    code = "import json; from perplexed import providers; print(json.dumps(providers.available()))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout))


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return self.out + self.err

    def json(self) -> object:
        return json.loads(self.out)  # the whole of stdout is one JSON document


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in SCRUBBED
        and not k.startswith(("PERPLEXED_", "PERPLEXITY_"))
        and not k.endswith(("_API_KEY", "_BASE_URL", "_API_URL"))
        and k not in ("COLUMNS", "LINES", "FORCE_COLOR")
    }
    home = tmp_path / "home"
    home.mkdir()
    clean.update(
        HOME=str(home),
        USERPROFILE=str(home),
        XDG_DATA_HOME=str(tmp_path / "data"),
        LOCALAPPDATA=str(tmp_path / "data"),
        PYTHONIOENCODING="utf-8",
        NO_COLOR="1",
    )
    return clean


@pytest.fixture
def cli(env: dict[str, str], tmp_path: Path):  # type: ignore[no-untyped-def]
    def run(*args: str, extra_env: dict[str, str] | None = None, timeout: float = 60) -> Run:
        proc = subprocess.run(
            [sys.executable, "-m", "perplexed", *args],
            env={**env, **(extra_env or {})},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=timeout,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    target = tmp_path / "corpus"
    shutil.copytree(SAMPLE, target)
    return target


@pytest.fixture
def indexed(cli, corpus: Path, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """The sample corpus indexed at the default location (the test's private data folder)."""
    run = cli("index", str(corpus))
    assert run.code == 0, run.both
    path = tmp_path / "data" / "perplexed" / "local-index.sqlite3"
    if sys.platform == "darwin":  # pragma: no cover - the data folder ignores XDG there
        return Path(run.out.split(" into ")[1].split()[0])
    assert path.is_file()
    return path


# --- index ---------------------------------------------------------------------------------------------


def test_index_builds_then_updates_incrementally(cli, corpus: Path) -> None:  # type: ignore[no-untyped-def]
    n = len(list(corpus.iterdir()))
    first = cli("index", str(corpus))
    assert first.code == 0
    assert f"{n} added" in first.out and f"{n} documents in the index" in first.out
    (corpus / "rag-overview.md").unlink()
    (corpus / "new.txt").write_text("Wombat burrows and setbacks\n", encoding="utf-8")
    second = cli("index", str(corpus))
    assert second.code == 0
    assert "1 added" in second.out and "1 removed" in second.out and f"{n - 1} unchanged" in second.out


def test_index_json_report(cli, corpus: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "custom" / "idx.sqlite3"
    run = cli("index", str(corpus), "--index", str(target), "--json")
    assert run.code == 0
    doc = run.json()
    assert isinstance(doc, dict)
    assert doc["index"] == str(target)
    assert len(doc["added"]) == doc["documents"] == len(list(corpus.iterdir()))
    assert doc["errors"] == [] and doc["removed"] == [] and doc["unchanged"] == 0
    assert target.is_file()


def test_index_reports_bad_files_and_carries_on(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nsetbacks\n", encoding="utf-8")
    (docs / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (docs / "cp1252.rst").write_bytes("Caf\xe9\n====\n".encode("cp1252"))
    (docs / "gone.md").symlink_to(tmp_path / "missing-target.md")
    run = cli("index", str(docs))
    assert run.code == 0
    assert "1 added" in run.out and "3 problems" in run.out
    for name, reason in [("blob.txt", "binary"), ("cp1252.rst", "not UTF-8"), ("gone.md", "cannot read")]:
        line = next(line for line in run.out.splitlines() if name in line)
        assert reason in line
    doc = cli("index", str(docs), "--json").json()
    assert isinstance(doc, dict)
    assert {Path(e["path"]).name for e in doc["errors"]} == {"blob.txt", "cp1252.rst", "gone.md"}


def test_index_of_a_missing_folder_is_reported_with_exit_2(cli, corpus: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    missing = tmp_path / "nope"
    run = cli("index", str(missing), str(corpus))
    assert run.code == 2
    assert "nope: folder not found" in run.out  # paths inside the working folder are shown relative
    assert f"{len(list(corpus.iterdir()))} added" in run.out  # the other folder was still indexed
    doc = cli("index", str(missing), "--json")
    assert doc.code == 2
    assert doc.json()["errors"] == [{"path": str(missing), "reason": "folder not found"}]  # type: ignore[index]


def test_index_location_follows_the_environment_variable(cli, corpus: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "from-env.sqlite3"
    run = cli("index", str(corpus), extra_env={"PERPLEXED_LOCAL_INDEX": str(target)})
    assert run.code == 0 and target.is_file()
    found = cli("search", "zoning setbacks", "--provider", "local", "--json",
                extra_env={"PERPLEXED_LOCAL_INDEX": str(target)})
    assert found.code == 0


# --- search --------------------------------------------------------------------------------------------


def test_search_prints_hits_attempts_and_total_cost(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]
    # wide enough for the temporary folder's file:// URLs (longer under pytest-xdist), which an 80-column
    # table folds; the 80/120-column layouts are tests/test_cli_tables.py's
    run = cli("search", "zoning", "setbacks", "--provider", "local,searxng,tavily", "--max-results", "3",
              extra_env={"COLUMNS": "250"})
    assert run.code == 0, run.both
    out = run.out
    assert "Residential zoning setbacks" in out
    assert "file://" in out and "zoning-setbacks.md" in out
    assert out.index("Residential zoning setbacks") < out.index("Attempts")
    attempts = out[out.index("Attempts"):]
    assert re.search(r"local\s+ok\s+\d+ ms\s+\$0\.0000", attempts)
    assert re.search(r"searxng\s+not called", attempts) and re.search(r"tavily\s+not called", attempts)
    assert "Total cost: $0.0000 · 3 hits from local · 1 attempt" in out


def test_search_json_is_one_document_with_the_documented_keys(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]
    run = cli("search", "HTTP client timeouts", "-p", "local,searxng", "--json", "-n", "2")
    assert run.code == 0
    doc = run.json()
    assert isinstance(doc, dict)
    assert set(doc) == SEARCH_KEYS
    assert doc["query"] == "HTTP client timeouts"
    assert doc["provider"] == "local"
    assert doc["cost"] == 0.0
    assert len(doc["hits"]) == 2
    top = doc["hits"][0]
    assert top["title"] == "HTTP client timeouts" and top["url"].endswith("http-client-timeouts.md")
    assert top["id"] == 1 and top["snippet"] and top["provider"] == "local"
    assert [(a["provider"], a["outcome"]) for a in doc["attempts"]] == [("local", "ok")]
    assert {"provider", "outcome", "duration_ms", "cost"} <= set(doc["attempts"][0])


def test_search_with_no_results_exits_1_and_shows_the_attempts(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]
    run = cli("search", "quantum chromodynamics", "--provider", "local")
    assert run.code == 1
    assert "No results" in run.out
    assert re.search(r"local\s+empty", run.out)
    doc = cli("search", "quantum chromodynamics", "--provider", "local", "--json")
    assert doc.code == 1
    data = doc.json()
    assert isinstance(data, dict) and set(data) == SEARCH_KEYS
    assert data["hits"] == [] and data["attempts"][0]["outcome"] == "empty"


def test_when_every_provider_fails_the_attempts_say_why_and_exit_is_1(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]
    run = cli("search", "zoning", "--provider", "searxng,tavily,exa")
    assert run.code == 1
    assert "All providers failed" in run.out
    for provider, var in [("searxng", "SEARXNG_URL"), ("tavily", "TAVILY_API_KEY"), ("exa", "EXA_API_KEY")]:
        assert re.search(rf"{provider}\s+error", run.out)
        assert var in run.out
    assert "Total cost: $0.0000 · no hits · 3 attempts" in run.out
    doc = cli("search", "zoning", "--provider", "searxng,tavily", "--json")
    assert doc.code == 1
    data = doc.json()
    assert isinstance(data, dict)
    assert SEARCH_KEYS <= set(data)
    assert data["hits"] == [] and data["provider"] is None and data["cost"] == 0.0
    assert [(a["provider"], a["outcome"], a["reason"]) for a in data["attempts"]] == [
        ("searxng", "error", "config"), ("tavily", "error", "config")
    ]
    assert data["error"]["reason"] == "all_providers_failed"


def test_default_chain_without_an_index_tells_the_user_to_run_index(cli) -> None:  # type: ignore[no-untyped-def]
    run = cli("search", "zoning")
    assert run.code == 1
    assert re.search(r"local\s+error", run.out) and re.search(r"searxng\s+error", run.out)
    assert "perplexed index" in " ".join(run.out.split())


def test_search_with_the_index_option(cli, corpus: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "explicit.sqlite3"
    assert cli("index", str(corpus), "--index", str(target)).code == 0
    run = cli("search", "BM25", "--provider", "local", "--index", str(target), "--json")
    assert run.code == 0
    data = run.json()
    assert isinstance(data, dict)
    assert data["hits"][0]["url"].endswith("bm25-ranking.html")


def test_a_chain_falls_back_past_local_to_a_web_provider(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]
    with serve({"/search": Json(searxng_json(2))}) as server:
        run = cli("search", "quantum chromodynamics", "--provider", "local,searxng", "--json",
                  extra_env={"SEARXNG_URL": server.url})
    assert run.code == 0
    data = run.json()
    assert isinstance(data, dict)
    assert data["provider"] == "searxng"
    assert [(a["provider"], a["outcome"]) for a in data["attempts"]] == [("local", "empty"), ("searxng", "ok")]
    assert [h["url"] for h in data["hits"]] == ["https://example.com/page1", "https://example.com/page2"]


def test_timeout_option_reaches_the_chain(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]
    with serve({"/search": Json(searxng_json(1), delay=5.0)}) as server:
        run = cli("search", "zoning", "--provider", "searxng,local", "--timeout-ms", "300", "--json",
                  extra_env={"SEARXNG_URL": server.url})
    assert run.code == 0
    data = run.json()
    assert isinstance(data, dict)
    assert [(a["provider"], a["outcome"]) for a in data["attempts"]] == [("searxng", "timeout"), ("local", "ok")]
    assert 250 <= data["attempts"][0]["duration_ms"] < 2500  # cut at the 300 ms budget, not after 5 s


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "zoning", "--provider", "nosuch"], "unknown provider 'nosuch'"),
        (["search", "zoning", "--max-results", "0"], "--max-results must be a whole number, at least 1 and at most 100"),
        (["search", "zoning", "--max-results", "many"], "whole number"),
        (["search", "zoning", "--deadline-ms", "-5"], "deadline-ms"),
        (["search", "zoning", "--max-results", "1000"], "--max-results must be a whole number, at least 1 and at most 100"),
        (["search"], "required"),
        (["search", "   "], "query is empty"),
        (["search", "zoning", "--frobnicate"], "unrecognized arguments"),
        (["frobnicate"], "invalid choice"),
        (["search", "zoning", "--provider", ","], "names no provider"),
    ],
)
def test_usage_and_config_errors_exit_2_with_a_message(cli, args: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    run = cli(*args)
    assert run.code == 2
    assert message in run.err
    assert run.out == ""


def test_usage_errors_with_json_print_a_json_error(cli) -> None:  # type: ignore[no-untyped-def]
    run = cli("search", "zoning", "--provider", "nosuch", "--json")
    assert run.code == 2
    data = run.json()
    assert isinstance(data, dict)
    assert data["error"]["type"] == "ConfigError" and "nosuch" in data["error"]["message"]


def test_no_command_prints_help_and_exits_2(cli) -> None:  # type: ignore[no-untyped-def]
    run = cli()
    assert run.code == 2
    assert "search" in run.err and "index" in run.err


def test_help_and_version(cli) -> None:  # type: ignore[no-untyped-def]
    helped = cli("search", "--help")
    assert helped.code == 0 and "--max-results" in helped.out and "--deadline-ms" in helped.out
    version = cli("--version")
    assert version.code == 0 and version.out.startswith("perplexed ")


# --- providers -----------------------------------------------------------------------------------------


def test_providers_lists_every_registered_provider(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]
    run = cli("providers")
    assert run.code == 0
    registered = registered_in_a_fresh_process()
    rows = {line.split()[0]: line for line in run.out.splitlines() if line.strip() and line.split()[0]
            in registered}
    assert set(rows) == registered >= {"local", "searxng", "tavily"}
    assert re.search(r"local\s+yes\s+free", rows["local"])
    assert re.search(r"searxng\s+no\s+free", rows["searxng"]) and "SEARXNG_URL" in rows["searxng"]
    assert re.search(r"tavily\s+no\s+\$0\.\d{4}", rows["tavily"]) and "TAVILY_API_KEY" in rows["tavily"]


def test_providers_json_shows_configuration_from_the_environment(cli) -> None:  # type: ignore[no-untyped-def]
    bare = cli("providers", "--json").json()
    assert isinstance(bare, list)
    by_name = {row["name"]: row for row in bare}
    assert set(by_name) == registered_in_a_fresh_process() | {"perplexity-agent"}
    agent = by_name["perplexity-agent"]  # a grounding mode of `perplexed answer`, listed too
    assert not agent["configured"] and agent["missing"] == ["PERPLEXITY_API_KEY"]
    assert not by_name["local"]["configured"] and "perplexed index" in by_name["local"]["note"]
    assert not by_name["tavily"]["configured"] and by_name["tavily"]["missing"] == ["TAVILY_API_KEY"]
    assert by_name["tavily"]["paid"] is True and by_name["tavily"]["price"] > 0
    assert by_name["searxng"]["price"] == 0.0
    keyed = cli("providers", "--json", extra_env={"TAVILY_API_KEY": "tvly-test-not-a-real-key",
                                                  "SEARXNG_URL": "http://127.0.0.1:9"})
    data = keyed.json()
    assert isinstance(data, list)
    by_name = {row["name"]: row for row in data}
    assert by_name["tavily"]["configured"] and by_name["tavily"]["missing"] == []
    assert by_name["searxng"]["configured"]
    assert "tvly-test-not-a-real-key" not in keyed.out


def test_providers_says_what_is_wrong_with_a_damaged_or_newer_index(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]
    def local_note() -> str:
        rows = cli("providers", "--json").json()
        assert isinstance(rows, list)
        local = next(row for row in rows if row["name"] == "local")
        assert not local["configured"]
        return str(local["note"])

    with sqlite3.connect(indexed) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    newer = local_note()
    assert str(indexed) in newer and "schema version 99 is newer" in newer and "upgrade perplexed" in newer
    assert "no index at" not in newer

    with sqlite3.connect(indexed) as conn:
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [r[0] for r in conn.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = 'docs'")]
    with open(indexed, "r+b") as fh:  # the docs table's pages (and its index's): no document count can be read
        for page in pages:
            fh.seek((page - 1) * page_size)
            fh.write(b"\xff" * page_size)
    damaged = local_note()
    assert str(indexed) in damaged and "damaged" in damaged and "perplexed index --rebuild" in damaged
    assert "no index at" not in damaged


# --- entry points and the terminal ---------------------------------------------------------------------


def test_the_installed_console_script(env: dict[str, str], indexed: Path, tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("perplexed.exe" if os.name == "nt" else "perplexed")
    if not script.exists():
        pytest.skip("the perplexed console script is not installed next to this interpreter")
    proc = subprocess.run([str(script), "search", "sight triangle", "-p", "local", "--json"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, encoding="utf-8", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["url"].endswith("fences-and-hedges.txt")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_the_spinner_names_each_provider_as_it_is_tried(env: dict[str, str], indexed: Path, tmp_path: Path) -> None:
    import pty

    with serve({"/search": Json({"results": []}, delay=0.6)}) as server:
        leader, follower = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "perplexed", "search", "zoning", "--provider", "searxng,local"],
            env={**env, "SEARXNG_URL": server.url, "TERM": "xterm", "COLUMNS": "120"},
            stdin=follower, stdout=follower, stderr=follower, close_fds=True, cwd=tmp_path,
        )
        os.close(follower)
        chunks: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        os.close(leader)
        assert proc.wait(timeout=30) == 0
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    assert "trying searxng (1/2)" in screen
    assert "trying local (2/2)" in screen
    assert "Residential zoning setbacks" in screen


def test_without_the_cli_extra_the_command_says_what_to_install(env: dict[str, str]) -> None:
    code = "import sys; sys.modules['rich'] = None; from perplexed.cli import main; raise SystemExit(main(['providers']))"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "perplexed-search[cli]" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("as_json", [False, True])
def test_providers_never_prints_a_url_password(cli, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """Issue 40, #15: ``perplexed providers`` printed SEARXNG_URL with its password."""
    args = ["providers", "--json"] if as_json else ["providers"]
    run = cli(*args, extra_env={"SEARXNG_URL": "http://operator:Hunter2-secret@127.0.0.1:9/", "COLUMNS": "200"})
    assert run.code == 0, run.both
    assert "Hunter2-secret" not in run.both
    assert "operator:" in run.both  # the URL is still recognisable: only the password is masked
