"""`perplexed doctor --live` against loopback servers (127.0.0.1) that serve, for every provider path the doctor
checks, a good answer, drifted ones (a renamed field, a new field, a changed price) and failing ones; the CLI's
cost gate (nothing sent without --yes, exit 2), --json, --agent and --record (redacted cassettes that replay)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import perplexed
import pytest
import vcr
import yaml
from perplexed import InvalidRequest, doctor
from perplexed.cli import main  # private: the perplexed command run in-process, not as a subprocess
from perplexed.doctor import SHAPES, acheck_live
from perplexed.doctor._checks import check_shape  # private: cassettes against the declared shape
from perplexed.doctor._live import (  # private: the live check's request must be the declared one
    AGENT_INPUT,
    AGENT_PRESET,
    LIVE_QUERY,
)
from perplexed.providers import Provider, get
from testkit.doctor_answers import (
    KEYS,
    PATHS,
    PRICE_CHANGES,
    clean_env,
    good,
    renamed,
    repriced,
    with_new_field,
)
from testkit.loopback import Drip, Html, Json, Status, serve

env = clean_env  # the fixture, by name
pytestmark = pytest.mark.usefixtures("env")

WEB = ("searxng", "ceramic", "firecrawl", "perplexity", "tavily", "exa", "brave", "linkup")


def make(name: str, url: str, **kwargs: Any) -> Provider:
    if name == "searxng":
        return get(name)(base_url=url, **kwargs)
    if name == "firecrawl":  # a loopback URL is "self-hosted" (free): price it like the cloud API
        kwargs.setdefault("usd_per_credit", 0.001)
    return get(name)(base_url=url, api_key=KEYS[name], **kwargs)


async def check(name: str, reply: Any, **kwargs: Any) -> doctor.LiveRow:
    with serve({PATHS[name]: reply}) as server:
        report = await acheck_live([make(name, server.url, **kwargs)])
        assert len(server.requests) == 1  # one cheap query
        sent = server.requests[0]
        if name != "searxng":
            assert KEYS[name] in json.dumps(sent.headers)  # the key was really sent
    [row] = report.rows
    assert row.provider == name
    return row


@pytest.mark.parametrize("name", WEB)
async def test_good_answer_is_ok_with_cost_and_time(name: str) -> None:
    row = await check(name, Json(good(name)))
    assert row.status == "ok", row
    assert row.http_status == 200 and row.hits >= 1 and row.ms >= 0
    assert not row.missing and not row.wrong_type and row.error is None
    assert row.cost is not None and row.table_cost is not None
    assert row.cost == pytest.approx(row.table_cost)  # the synthesized answers bill what the table says


@pytest.mark.parametrize("name", WEB)
async def test_a_renamed_field_is_drift(name: str) -> None:
    row = await check(name, Json(renamed(name)))
    assert row.status == "drift"
    assert any(m.startswith(f"{SHAPES[name].items}[].url") for m in row.missing)
    assert f"{SHAPES[name].items}[].link" in row.unknown


@pytest.mark.parametrize("name", WEB)
async def test_a_new_field_is_listed_but_ok(name: str) -> None:
    row = await check(name, Json(with_new_field(name)))
    assert row.status == "ok"
    assert "brand_new_field" in row.unknown and f"{SHAPES[name].items}[].sparkle" in row.unknown


@pytest.mark.parametrize("name", sorted(PRICE_CHANGES))
async def test_a_changed_price_is_drift(name: str) -> None:
    row = await check(name, Json(repriced(name)))
    assert row.status == "drift" and not row.missing and not row.wrong_type
    assert row.cost == pytest.approx(PRICE_CHANGES[name][1])
    assert "price table" in row.cost_note and row.cost != pytest.approx(row.table_cost)


async def test_a_retyped_field_is_drift() -> None:
    body = good("exa")
    body["costDollars"]["total"] = "0.007"
    row = await check("exa", Json(body))
    assert row.status == "drift" and row.wrong_type == ["costDollars.total: str, expected num"]


FAILURES = {
    "500": (Json({"error": "internal"}, 500), 500),
    "401": (Json({"error": {"message": "bad key", "type": "auth"}}, 401), 401),
    "html": (Html(), 200),
    "malformed": (Status(200, b'{"results": [', content_type="application/json"), 200),
}


@pytest.mark.parametrize("name", WEB)
@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_failing_answers_are_errors(name: str, failure: str) -> None:
    reply, status = FAILURES[failure]
    row = await check(name, reply)
    assert row.status == "error" and row.http_status == status and row.error
    assert KEYS.get(name, "never") not in row.error


async def test_live_spend_is_recorded_in_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    perplexed.configure(store="memory")
    monkeypatch.setenv("PERPLEXITY_API_KEY", KEYS["perplexity"])
    with serve({"/search": Json(good("exa")), "/v1/agent": Json(good("agent"))}) as server:
        monkeypatch.setenv("PERPLEXITY_BASE_URL", server.url)
        await acheck_live([make("exa", server.url)], agent=True)
    spent = await perplexed.aspend("day")
    assert spent == {"exa": pytest.approx(0.007), "perplexity-agent": pytest.approx(good("agent")["usage"]["cost"]["total_cost"])}


async def test_unreachable_is_an_error_row() -> None:
    with serve() as server:
        url = server.url
    report = await acheck_live([make("tavily", url)])
    [row] = report.rows
    assert row.status == "error" and row.http_status is None and "connection" in (row.error or "")
    assert report.exit_code == 1


async def test_a_provider_without_key_is_an_error_row_and_nothing_is_sent() -> None:
    report = await acheck_live([get("exa")()])
    [row] = report.rows
    assert row.status == "error" and "EXA_API_KEY" in (row.error or "")


async def test_agent_good_drifted_and_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERPLEXITY_API_KEY", KEYS["perplexity"])
    rows = {}
    for case, reply in {
        "good": Json(good("agent")),
        "renamed": Json(renamed("agent")),
        "new": Json(with_new_field("agent")),
        "failing": Json({"error": {"message": "overloaded", "type": "server_error"}}, 503),
    }.items():
        with serve({PATHS["agent"]: reply}) as server:
            monkeypatch.setenv("PERPLEXITY_BASE_URL", server.url)
            report = await acheck_live([], agent=True)
            [rows[case]] = report.rows
            body = server.requests[0].json()
            assert body["preset"] == AGENT_PRESET and body["input"] == AGENT_INPUT
    assert rows["good"].status == "ok" and rows["good"].cost == pytest.approx(good("agent")["usage"]["cost"]["total_cost"])
    assert rows["renamed"].status == "drift" and "status" in rows["renamed"].missing
    assert rows["new"].status == "ok" and "brand_new_field" in rows["new"].unknown
    assert rows["failing"].status == "error" and rows["failing"].http_status == 503


# --- the command ---------------------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["doctor", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_live_without_yes_sends_nothing_and_exits_2(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with serve({"*": Json(good("perplexity"))}) as server:
        monkeypatch.setenv("PERPLEXITY_API_KEY", KEYS["perplexity"])
        monkeypatch.setenv("PERPLEXITY_BASE_URL", server.url)
        code, out, err = run_cli(capsys, "--live", "--agent", "perplexity")
        assert code == 2 and server.requests == []
        assert out.splitlines()[0] == "Estimated cost: $0.0150 (perplexity $0.0050, agent $0.0100)"
        assert "--yes" in err
        code, out, _ = run_cli(capsys, "--live", "perplexity", "--json")
        assert code == 2 and server.requests == []
        assert json.loads(out) == {"estimated_cost": 0.005, "estimate": {"perplexity": 0.005}, "sent": False, "rows": []}
        code, out, _ = run_cli(capsys, "--live", "--provider", "local,exa,perplexity", "--json")  # the chain's
        assert code == 2 and json.loads(out)["estimate"] == {"exa": 0.007, "perplexity": 0.005}


def test_live_with_yes_prints_the_estimate_first_then_a_row_per_provider(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def search(request: Any) -> Any:  # SearXNG GETs /search, Perplexity POSTs it
        return Json(good("searxng" if request.method == "GET" else "perplexity"))

    with serve({"/search": search, "/v1/agent": Json(good("agent"))}) as server:
        monkeypatch.setenv("PERPLEXITY_API_KEY", KEYS["perplexity"])
        monkeypatch.setenv("PERPLEXITY_BASE_URL", server.url)
        monkeypatch.setenv("SEARXNG_URL", server.url)
        code, out, _ = run_cli(capsys, "--live", "--yes")  # every configured provider: searxng, perplexity
        assert code == 0, out
        lines = out.splitlines()
        assert lines[0] == "Estimated cost: $0.0050 (searxng $0.0000, perplexity $0.0050)"
        assert any(line.split()[:2] == ["perplexity", "ok"] for line in lines)
        assert any(line.split()[:2] == ["searxng", "ok"] for line in lines)
        assert lines[-1] == "Total cost: $0.0050 (estimated $0.0050)"
        code, out, _ = run_cli(capsys, "--live", "--yes", "--json", "perplexity")
        doc = json.loads(out)
        assert code == 0 and doc["sent"] and doc["ok"] and doc["estimated_cost"] == 0.005
        [row] = doc["rows"]
        assert row["provider"] == "perplexity" and row["status"] == "ok" and row["cost"] == 0.005
        code, out, _ = run_cli(capsys, "--live", "--yes", "--json", "--agent")
        doc = json.loads(out)
        assert code == 0 and [r["provider"] for r in doc["rows"]] == ["agent"]


def test_live_exit_1_when_a_row_is_not_ok(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with serve({"/search": Json(renamed("perplexity"))}) as server:
        monkeypatch.setenv("PERPLEXITY_API_KEY", KEYS["perplexity"])
        monkeypatch.setenv("PERPLEXITY_BASE_URL", server.url)
        code, out, _ = run_cli(capsys, "--live", "--yes", "--json", "perplexity")
    assert code == 1 and json.loads(out)["rows"][0]["status"] == "drift"


@pytest.mark.parametrize(
    "args",
    [["--agent"], ["--record", "x"], ["exa"], ["--live", "nosuchprovider", "--yes"]],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and "error" in err


def test_record_writes_redacted_cassettes_that_replay(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = KEYS["perplexity"]

    def echo_key(request: Any) -> Any:  # a server that reflects the credential into the body and a cookie
        body = good("perplexity")
        body["echo"] = request.headers.get("authorization", "")
        return Json(body, headers={"Set-Cookie": f"session={key}"})

    def agent_echo(request: Any) -> Any:
        body = good("agent")
        body["echo"] = request.headers.get("authorization", "")
        return Json(body)

    with serve({"/search": echo_key, "/v1/agent": agent_echo}) as server:
        monkeypatch.setenv("PERPLEXITY_API_KEY", key)
        monkeypatch.setenv("PERPLEXITY_BASE_URL", server.url)
        code, out, _ = run_cli(capsys, "--live", "--yes", "--agent", "perplexity", "--record", str(tmp_path), "--json")
        base = server.url
    assert code == 0, out
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert files == ["agent/README.md", "agent/create_completed.yaml", "perplexity/README.md", "perplexity/ok.yaml"]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            assert key not in text and "session=" not in text
    for path in tmp_path.rglob("*.yaml"):
        cassette = yaml.safe_load(path.read_text(encoding="utf-8"))
        for interaction in cassette["interactions"]:
            assert "authorization" not in interaction["request"]["headers"]
            assert "set-cookie" not in interaction["response"]["headers"]
            assert "[REDACTED]" in interaction["response"]["body"]["string"]  # the echoed key, replaced
    cassette = yaml.safe_load((tmp_path / "perplexity" / "ok.yaml").read_text(encoding="utf-8"))
    [interaction] = cassette["interactions"]
    assert cassette["version"] == 1 and interaction["request"]["method"] == "POST"
    assert json.loads(interaction["request"]["body"])["query"] == LIVE_QUERY
    assert not check_shape(SHAPES["perplexity"], json.loads(interaction["response"]["body"]["string"])).drift
    assert "Recorded" in (tmp_path / "perplexity" / "README.md").read_text(encoding="utf-8")
    # the recorded cassette replays through the real engine, server gone (as the synthesized ones do)
    player = vcr.VCR(record_mode="none", match_on=["method", "scheme", "host", "port", "path"])
    with player.use_cassette(str(tmp_path / "perplexity" / "ok.yaml")) as cas:
        result = perplexed.search("anything", provider=[get("perplexity")(base_url=base, api_key=key)])
    assert cas.all_played and result.provider == "perplexity" and len(result.hits) == 3


async def test_a_dripping_provider_ends_at_the_checks_timeout() -> None:
    """Issue 40, #15: httpx's timeout bounds each read, so a server sending a byte every 0.2 s kept the live
    check running (150 s and more against the documented 60 s). The timeout bounds the whole check."""
    drip = Drip(body=json.dumps(good("searxng")), interval=0.2, chunks=200)  # 40 s to send it all
    with serve({PATHS["searxng"]: drip}) as server:
        started = time.monotonic()
        report = await acheck_live([make("searxng", server.url)], timeout_s=1.0)
        took = time.monotonic() - started
    [row] = report.rows
    assert row.status == "error"
    assert "timeout" in (row.error or "")
    assert took < 5.0, took


async def test_the_checks_timeout_is_validated() -> None:
    with pytest.raises(InvalidRequest, match="timeout_s"):
        await acheck_live([], timeout_s=0)
