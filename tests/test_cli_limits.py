"""Issue 26: the CLI sets rate limits, cool-downs and spend limits (flags named like the library options, each
with an environment variable), and its errors are in the command line's words: flags, not Python names;
"unrecognized arguments" points at the subcommand's --help. Real entry points, in subprocesses."""

from __future__ import annotations

import json

import pytest
from test_cli import cli, corpus, env, indexed  # noqa: F401  (fixtures, used by name)
from testkit.loopback import Json, Status, searxng_json, serve


def _attempts(out: str) -> list[dict[str, object]]:
    doc = json.loads(out)
    return list(doc["attempts"])


def test_rate_limit_flag_and_variable(cli) -> None:  # noqa: F811
    """--rate-limit searxng=1/min: the second search in the minute finds no slot (the limit lives in state.db,
    so it holds across runs) and the chain says so."""
    with serve({"/search": Json(searxng_json(2))}) as server:
        extra = {"SEARXNG_URL": server.url}
        args = ("-p", "searxng", "--no-cache", "--rate-limit", "searxng=1/min", "--rate-limit-wait-ms", "0", "--json")
        first = cli("search", "q", *args, extra_env=extra)
        second = cli("search", "q", *args, extra_env=extra)
        assert first.code == 0, first.both
        assert second.code == 1 and len(server.requests) == 1, second.both
        assert _attempts(second.out)[0]["outcome"] == "skipped" and "rate" in str(_attempts(second.out)[0]["reason"])
        # the same from the environment variables
        from_env = cli("search", "q", "-p", "searxng", "--no-cache", "--json", extra_env={
            **extra, "PERPLEXED_RATE_LIMITS": "searxng=1/min", "PERPLEXED_RATE_LIMIT_WAIT_MS": "0"})
        assert from_env.code == 1 and len(server.requests) == 1, from_env.both


def test_cooldown_after_flag_and_variable(cli, indexed) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """--cooldown-after 1: after one failure, searxng rests and the next search skips it (local answers)."""
    with serve({"/search": Status(500, "down")}) as server:
        extra = {"SEARXNG_URL": server.url}
        args = ("-p", "searxng,local", "--no-cache", "--cooldown-after", "1", "--cooldown-s", "60", "--json")
        assert cli("search", "setback", *args, extra_env=extra).code == 0
        resting = cli("search", "setback", *args, extra_env=extra)
        assert resting.code == 0 and len(server.requests) == 1, resting.both
        first = _attempts(resting.out)[0]
        assert first["outcome"] == "skipped" and first["reason"] == "cooling_down"
    with serve({"/search": Status(500, "down")}) as server:
        extra = {"SEARXNG_URL": server.url, "PERPLEXED_COOLDOWN_AFTER": "searxng=1"}
        for _ in range(2):
            assert cli("search", "setback", "-p", "searxng,local", "--no-cache", extra_env=extra).code == 0
        assert len(server.requests) == 1


def test_spend_limit_flag_and_variable(cli) -> None:  # noqa: F811
    """--spend-limit day=0: a paid provider is skipped before it is called; the free one still answers."""
    with serve({"/search": Json({"results": [{"title": "T", "url": "https://e.com", "content": "c"}]})}) as paid:
        extra = {"CERAMIC_API_KEY": "ceramic-test-key-0000", "CERAMIC_BASE_URL": paid.url}
        run = cli("search", "q", "-p", "ceramic", "--no-cache", "--spend-limit", "day=0", "--json", extra_env=extra)
        assert run.code == 1 and not paid.requests, run.both
        assert _attempts(run.out)[0]["outcome"] == "skipped" and _attempts(run.out)[0]["reason"] == "over_budget"
        run = cli("search", "q", "-p", "ceramic", "--no-cache", "--json",
                  extra_env={**extra, "PERPLEXED_SPEND_LIMITS": "day=0"})
        assert run.code == 1 and not paid.requests, run.both
        cli("search", "q", "-p", "ceramic", "--no-cache", extra_env=extra)
        assert paid.requests  # without the limit, the paid provider is called


@pytest.mark.parametrize(
    ("args", "extra", "words"),
    [
        (["--rate-limit", "tavily"], {}, "--rate-limit takes NAME=RATE, got 'tavily'"),
        (["--rate-limit", "tavily=fast"], {}, "--rate-limit for 'tavily' must look like '5/s'"),
        (["--spend-limit", "year=5"], {}, "--spend-limit: unknown window 'year'"),
        (["--spend-limit", "day=lots"], {}, "--spend-limit: expected an amount of USD, got 'lots'"),
        (["--cooldown-after", "0"], {}, "--cooldown-after must be a positive integer, got 0"),
        ([], {"PERPLEXED_COOLDOWN_AFTER": "0"}, "PERPLEXED_COOLDOWN_AFTER must be a positive integer, got 0"),
        ([], {"PERPLEXED_SPEND_LIMITS": "day"}, "PERPLEXED_SPEND_LIMITS takes WINDOW=USD"),
        (["--min-hits", "5", "-n", "3"], {}, "--min-hits 5 can never be met with --max-results 3"),
    ],
)
def test_errors_name_flags_and_variables_never_python_names(cli, args: list[str], extra: dict[str, str],  # noqa: F811
                                                            words: str) -> None:
    run = cli("search", "q", "-p", "local", *args, extra_env=extra)
    assert run.code == 2 and words in run.err, run.err
    assert run.err.count("\n") == 1
    for python in ("min_hits", "max_results", "rate_limits", "spend_limits", "cooldown_after", "None", "[\'"):
        assert python not in run.err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["search", "q", "--frobnicate"], "unrecognized arguments: --frobnicate (see `perplexed search --help`)"),
        (["search", "q", "--jsn"], "--jsn (did you mean --json?)"),
        (["index", "--list", "--nope"], "(see `perplexed index --help`)"),
        (["doctor", "--nope"], "(see `perplexed doctor --help`)"),
        (["providers", "--nope"], "(see `perplexed providers --help`)"),
        (["--nope"], "(see `perplexed --help`)"),
    ],
)
def test_unrecognized_arguments_point_at_the_subcommands_help(cli, args: list[str], words: str) -> None:  # noqa: F811
    run = cli(*args)
    assert run.code == 2 and words in run.err and run.out == "", run.err


def test_a_refused_fetch_names_the_flag_not_the_python_argument(cli) -> None:  # noqa: F811
    run = cli("fetch", "http://127.0.0.1:9/x")
    assert run.code != 0 and "--allow-private" in run.err and "allow_private" not in run.err, run.both
