"""The CLI's strategy and quality-floor flags (--strategy, --hedge-after, --merge-providers, --min-hits) reach
the chain: merged hits with their sources, a hedged slow provider cancelled, an insufficient answer moving
the chain on; bad values exit 2 naming the flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli import cli, corpus, env, indexed  # noqa: F401 - fixtures
from testkit.loopback import Json, searxng_json, serve


def test_merge_fuses_local_and_a_web_provider(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    with serve({"/search": Json(searxng_json(2))}) as server:
        run = cli("search", "BM25 ranking", "--provider", "local,searxng", "--strategy", "merge",
                  "--merge-providers", "2", "--json", extra_env={"SEARXNG_URL": server.url})
    assert run.code == 0, run.both
    data = run.json()
    assert isinstance(data, dict)
    assert data["provider"] == "local,searxng"
    assert [(a["provider"], a["outcome"]) for a in data["attempts"]] == [("local", "ok"), ("searxng", "ok")]
    providers = {s["provider"] for h in data["hits"] for s in h["sources"]}
    assert providers == {"local", "searxng"}
    assert [h["id"] for h in data["hits"]] == list(range(1, len(data["hits"]) + 1))


def test_merge_text_output_shows_the_sources(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    with serve({"/search": Json(searxng_json(2))}) as server:
        run = cli("search", "BM25 ranking", "--provider", "local,searxng", "--strategy", "merge",
                  extra_env={"SEARXNG_URL": server.url, "COLUMNS": "200"})
    assert run.code == 0, run.both
    assert "searxng #1" in run.out
    assert "local #1" in run.out


@pytest.mark.timing
def test_hedged_cancels_the_slow_provider(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    with serve({"/search": Json(searxng_json(1), delay=20.0)}) as server:
        run = cli("search", "BM25 ranking", "--provider", "searxng,local", "--strategy", "hedged",
                  "--hedge-after", "100", "--json", extra_env={"SEARXNG_URL": server.url})
    assert run.code == 0, run.both
    data = run.json()
    assert isinstance(data, dict)
    assert data["provider"] == "local"
    assert [(a["provider"], a["outcome"]) for a in data["attempts"]] == [("searxng", "cancelled"), ("local", "ok")]
    assert data["attempts"][0]["cost"] == 0.0
    assert data["attempts"][0]["duration_ms"] < 15_000  # not the 20 s the server would have taken


def test_min_hits_moves_on(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    with serve({"/search": Json(searxng_json(5))}) as server:
        run = cli("search", "BM25 ranking", "--provider", "local,searxng", "--min-hits", "5", "--json",
                  extra_env={"SEARXNG_URL": server.url})
    assert run.code == 0, run.both
    data = run.json()
    assert isinstance(data, dict)
    local = data["attempts"][0]
    assert (local["provider"], local["outcome"], local["reason"]) == ("local", "insufficient", "min_hits")
    assert data["provider"] == "searxng"
    assert len(data["hits"]) == 5


def test_min_hits_text_output_explains_the_floor(cli, indexed: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    run = cli("search", "BM25 ranking", "--provider", "local", "--min-hits", "50", "--max-results", "50",
              extra_env={"COLUMNS": "200"})
    assert run.code == 0, run.both
    assert "insufficient" in run.out
    assert "below the quality floor: fewer hits than --min-hits" in run.out  # issue 26: no Python names


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "fastest"], "invalid choice"),
        (["--hedge-after", "soon"], "'auto'"),
        (["--hedge-after", "-3"], "negative"),
        (["--merge-providers", "0"], "at least 1"),
        (["--min-hits", "0"], "at least 1"),
        (["--min-hits", "20", "--max-results", "5"], "--min-hits 20 can never be met with --max-results 5"),
    ],
)
def test_bad_values_exit_2(cli, args: list[str], message: str) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    run = cli("search", "zoning", "--provider", "local", *args)
    assert run.code == 2, run.both
    assert message in run.err
