"""Issue 35, the command line's cold start: ``perplexed search --json`` makes no console (rich.console is not
imported), and only the process's own entry (``main()`` without arguments) spares its objects the last garbage
collections (``gc.freeze``); ``main([...])`` called in a process that goes on (tests, a script) leaves the
collector as it was. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> str:
    from perplexed.providers.local import build_index

    docs = tmp_path_factory.mktemp("docs")
    (docs / "setbacks.md").write_text("# Zoning setbacks\n\nA setback is the distance from the lot line.\n")
    index = str(tmp_path_factory.mktemp("index") / "index.db")
    build_index([str(docs)], index=index)
    return index


def run(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PERPLEXED_")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *argv], capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**clean, "PERPLEXED_STORE": "memory", "PYTHONPATH": os.pathsep.join((str(ROOT / "core"), str(ROOT)))},
    )


def test_search_json_makes_no_console_and_prints_the_same_document(small_index: str) -> None:
    proc = run(
        """
        import contextlib, gc, io, json, sys
        from perplexed.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["search", "zoning", "setbacks", "--provider", "local", "--index", sys.argv[1],
                         "--no-cache", "--json"])
        doc = json.loads(out.getvalue())
        assert code == 0 and doc["provider"] == "local" and doc["hits"][0]["url"].endswith("setbacks.md"), doc
        assert "rich.console" not in sys.modules, "a console was made for --json"
        assert gc.get_freeze_count() == 0, "main(argv) froze the collector of a process that goes on"
        print("ok")
        """,
        small_index,
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_search_json_of_a_failed_chain_still_says_why(tmp_path: Path) -> None:
    proc = run(
        """
        import sys
        from perplexed.cli import main
        code = main(["search", "zoning", "--provider", "local", "--index", sys.argv[1], "--no-cache", "--json"])
        assert "rich.console" not in sys.modules
        sys.exit(code)
        """,
        str(tmp_path / "missing.db"),
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode in (1, 2) and "error" in doc, (proc.returncode, proc.stdout, proc.stderr)


def test_the_process_entry_freezes_the_collector_once_the_command_has_run(small_index: str) -> None:
    proc = run(
        """
        import atexit, gc, os, sys
        from perplexed.cli import main
        atexit.register(lambda: os.write(2, f"frozen={gc.get_freeze_count() > 0}\\n".encode()))
        sys.argv = ["perplexed", "search", "zoning", "--provider", "local", "--index", sys.argv[1], "--no-cache"]
        sys.exit(main())
        """,
        small_index,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "setbacks.md" in proc.stdout and "frozen=True" in proc.stderr, (proc.stdout, proc.stderr)


def test_the_command_loads_its_modules_without_collections_then_collects_again(tmp_path: Path) -> None:
    script = tmp_path / "perplexed"  # as the console script is named
    script.write_text(textwrap.dedent(
        """
        import gc, sys
        assert gc.isenabled()
        from perplexed.cli import main
        print(f"frozen={gc.get_freeze_count() > 0} enabled={gc.isenabled()}", file=sys.stderr)
        sys.exit(main())
        """))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PERPLEXED_")}
    env = {**clean, "PYTHONPATH": os.pathsep.join((str(ROOT / "core"), str(ROOT)))}
    proc = subprocess.run([sys.executable, str(script), "--version"], capture_output=True, text=True, timeout=120,
                          env=env, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.startswith("perplexed "), proc.stderr[-3000:]
    assert "frozen=True enabled=True" in proc.stderr, proc.stderr
    # imported by anything else (here: a program named otherwise), the collector is left alone
    other = run("import gc, perplexed.cli; assert gc.isenabled() and gc.get_freeze_count() == 0; print('ok')")
    assert other.returncode == 0 and other.stdout.strip() == "ok", other.stderr[-3000:]
