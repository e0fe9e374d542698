"""`perplexed doctor` offline: keys (format only, never printed), SearXNG reachability (loopback), the local
index's integrity, the state store, the chain; exit 1 only when the configured chain needs what is missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import doctor
from perplexed.cli import main  # private: the perplexed command run in-process, not as a subprocess
from testkit.doctor_answers import KEYS, clean_env
from testkit.loopback import Html, Json, searxng_json, serve

env = clean_env  # the fixture, by name
pytestmark = pytest.mark.usefixtures("env")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["doctor", *args])
    out, err = capsys.readouterr()
    return code, out, err


def checks(diagnosis: doctor.Diagnosis) -> dict[str, doctor.Check]:
    return {c.name: c for c in diagnosis.checks}


def test_nothing_configured_is_not_ready_and_says_what_to_set(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 26: "Ready" only when at least one member of the chain can answer now (no SEARXNG_URL, no index:
    nothing can)."""
    diagnosis = doctor.diagnose()
    assert diagnosis.chain == ("local", "searxng") and diagnosis.chain_source == "default"
    found = checks(diagnosis)
    assert found["searxng"].status == "missing" and not found["searxng"].needed
    assert found["key:tavily"].status == "info" and "TAVILY_API_KEY" in found["key:tavily"].detail
    assert diagnosis.exit_code == 1 and not diagnosis.ready and not diagnosis.problems
    members = {m.name: m for m in diagnosis.members}
    assert not members["local"].can_run and "perplexed index" in str(members["local"].fix)
    assert not members["searxng"].can_run and "SEARXNG_URL" in str(members["searxng"].fix)
    code, out, _ = run_cli(capsys)
    assert code == 1 and "Chain: local → searxng (from default)" in out
    assert "Not ready: no member of the chain can answer now" in out and "set SEARXNG_URL" in out
    code, out, _ = run_cli(capsys, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False and doc["ready"] is False
    assert [(m["name"], m["can_run"]) for m in doc["members"]] == [("local", False), ("searxng", False)]
    assert all(m["fix"] for m in doc["members"])


def test_one_member_that_can_answer_is_ready(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    from perplexed.providers.local import build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Setbacks\n\nFront yard setbacks are 20 feet.\n", encoding="utf-8")
    build_index(docs, tmp_path / "mine.db")
    code, out, _ = run_cli(capsys, "--index", str(tmp_path / "mine.db"), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ready"] is True, doc
    assert doc["index"]["path"] == str(tmp_path / "mine.db") and doc["index"]["source"] == "argument"
    assert {m["name"]: m["can_run"] for m in doc["members"]} == {"local": True, "searxng": False}
    code, out, _ = run_cli(capsys, "--index", str(tmp_path / "mine.db"))
    assert code == 0 and "Ready: local can answer now." in out


def test_an_empty_index_is_not_ready(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                     tmp_path: Path) -> None:
    from perplexed.providers.local import build_index

    (tmp_path / "empty").mkdir()
    build_index(tmp_path / "empty", tmp_path / "empty.db")
    diagnosis = doctor.diagnose("local", index=tmp_path / "empty.db")
    index = checks(diagnosis)["index"]
    assert index.status == "missing" and "no documents" in index.detail and diagnosis.exit_code == 1
    code, out, _ = run_cli(capsys, "--index", str(tmp_path / "empty.db"))
    assert code == 1 and "no documents" in out


@pytest.mark.parametrize(
    ("chain_from", "expected_source"), [("env", "PERPLEXED_PROVIDER"), ("flag", "--provider"), ("configure", "configure()")]
)
def test_a_chain_member_without_key_is_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], chain_from: str, expected_source: str
) -> None:
    args: list[str] = ["--json"]
    if chain_from == "env":
        monkeypatch.setenv("PERPLEXED_PROVIDER", "tavily,exa")
    elif chain_from == "flag":
        args += ["--provider", "tavily,exa"]
    else:
        perplexed.configure(provider=["tavily", "exa"])
    monkeypatch.setenv("TAVILY_API_KEY", KEYS["tavily"])
    code, out, _ = run_cli(capsys, *args)
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False and doc["chain"] == ["tavily", "exa"]
    assert doc["chain_source"] == expected_source
    by_name = {c["name"]: c for c in doc["checks"]}
    assert by_name["key:exa"] == {"name": "key:exa", "status": "missing", "detail": "EXA_API_KEY is not set", "needed": True}
    assert by_name["key:tavily"]["status"] == "ok" and by_name["key:tavily"]["needed"]
    assert KEYS["tavily"] not in out
    monkeypatch.setenv("EXA_API_KEY", KEYS["exa"])
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and json.loads(out)["ok"] is True


@pytest.mark.parametrize(
    ("key", "status", "exit_code"),
    [
        (KEYS["exa"], "ok", 0),
        ("exa-unusual-but-maybe-fine-key", "warn", 0),  # not the usual shape: a warning only
        ("12345678 9abc def0", "error", 1),  # whitespace: cannot work in a header
        ('"00000000-0000-4000-8000-00000000d0c7"', "error", 1),
    ],
)
def test_key_format_in_the_report_never_shows_the_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key: str, status: str, exit_code: int
) -> None:
    monkeypatch.setenv("EXA_API_KEY", key)
    code, out, err = run_cli(capsys, "--provider", "exa")
    assert code == exit_code
    assert key not in out + err and key.strip('"') not in out + err
    assert checks(doctor.diagnose("exa"))["key:exa"].status == status


def test_searxng_that_answers_is_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve({"/search": Json(searxng_json(2, unresponsive=[["brave", "timeout"]]))}) as server:
        monkeypatch.setenv("SEARXNG_URL", server.url)
        diagnosis = doctor.diagnose("searxng")
        assert server.requests[0].query["format"] == ["json"]
    check = checks(diagnosis)["searxng"]
    assert check.status == "ok" and check.needed and "2 hits" in check.detail and "1 engine" in check.detail
    assert diagnosis.exit_code == 0


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Html("<html>403 Forbidden</html>", status=403), "search.formats"),
        (Json({"error": "search error"}, 500), "HTTP 500"),
        (Html(), "did not answer JSON"),
        (Json({"answers": []}), "results"),  # JSON without the results the parser needs
    ],
)
def test_searxng_that_cannot_serve_the_chain_is_exit_1(monkeypatch: pytest.MonkeyPatch, reply: Any, words: str) -> None:
    with serve({"/search": reply}) as server:
        monkeypatch.setenv("SEARXNG_URL", server.url)
        diagnosis = doctor.diagnose("searxng")
    check = checks(diagnosis)["searxng"]
    assert check.status == "error" and words in check.detail and diagnosis.exit_code == 1


def test_searxng_hits_without_what_the_parser_expects_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve({"/search": Json({"results": [{"link": "https://a.example", "title": "A"}]})}) as server:
        monkeypatch.setenv("SEARXNG_URL", server.url)
        diagnosis = doctor.diagnose("searxng")
    check = checks(diagnosis)["searxng"]
    assert check.status == "warn" and "results[].url" in check.detail and diagnosis.exit_code == 0


def test_unreachable_searxng_fails_the_default_chain_too(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve() as server:
        url = server.url
    monkeypatch.setenv("SEARXNG_URL", url)  # configured, so the default chain needs it
    diagnosis = doctor.diagnose()
    check = checks(diagnosis)["searxng"]
    assert check.status == "error" and "unreachable" in check.detail and check.needed
    assert diagnosis.exit_code == 1
    # not in the chain: reported, not fatal
    assert doctor.diagnose("tavily").exit_code == 1  # (tavily has no key)
    assert checks(doctor.diagnose("tavily"))["searxng"].needed is False


def test_local_index_missing_ok_and_corrupt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    index = tmp_path / "index.sqlite"
    monkeypatch.setenv("PERPLEXED_LOCAL_INDEX", str(index))
    missing = doctor.diagnose("local")
    assert checks(missing)["index"].status == "missing" and missing.exit_code == 1
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "setbacks.md").write_text("# Setbacks\n\nFront yard setbacks are 20 feet.\n", encoding="utf-8")
    from perplexed.providers.local import build_index

    build_index(docs, index)
    good = doctor.diagnose("local")
    assert checks(good)["index"].status == "ok" and "1 documents" in checks(good)["index"].detail
    assert good.exit_code == 0
    index.write_bytes(b"SQLite format 3\x00" + b"\x00garbage" * 512)
    corrupt = doctor.diagnose("local")
    assert checks(corrupt)["index"].status == "error" and corrupt.exit_code == 1


def test_state_store_checked_when_configured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert checks(doctor.diagnose())["store"].status == "info"
    monkeypatch.setenv("PERPLEXED_STORE", "sqlite:///" + str(tmp_path / "state.db"))
    check = checks(doctor.diagnose())["store"]
    assert check.status == "ok" and check.needed
    monkeypatch.setenv("PERPLEXED_STORE", "nosuchscheme://somewhere")
    diagnosis = doctor.diagnose()
    assert checks(diagnosis)["store"].status == "error" and diagnosis.exit_code == 1
    monkeypatch.delenv("PERPLEXED_STORE")
    perplexed.configure(store="sqlite:///" + str(tmp_path / "configured.db"))  # configure() wins
    check = checks(doctor.diagnose())["store"]
    assert check.status == "ok" and "SQLiteStore" in check.detail


def test_unknown_chain_member_and_bad_price_override(monkeypatch: pytest.MonkeyPatch) -> None:
    diagnosis = doctor.diagnose("nosuch")
    assert checks(diagnosis)["chain"].status == "error" and diagnosis.exit_code == 1
    monkeypatch.setenv("PERPLEXED_PRICE_EXA", "cheap")
    monkeypatch.setenv("EXA_API_KEY", KEYS["exa"])
    found = checks(doctor.diagnose())
    assert found["price:exa"].status == "error" and "PERPLEXED_PRICE_EXA" in found["price:exa"].detail
    assert not found["price:exa"].needed and not doctor.diagnose().problems  # exa is not in the chain
    in_chain = doctor.diagnose("exa")
    assert checks(in_chain)["price:exa"].needed and in_chain.exit_code == 1


def test_self_hosted_firecrawl_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRECRAWL_API_URL", "http://127.0.0.1:3002")
    diagnosis = doctor.diagnose("firecrawl")
    assert checks(diagnosis)["key:firecrawl"].status == "ok" and diagnosis.exit_code == 0


def test_text_output_names_the_problems(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PERPLEXED_PROVIDER", "brave")
    code, out, _ = run_cli(capsys)
    assert code == 1 and "Not ready: key:brave" in out and "BRAVE_API_KEY is not set" in out


def test_a_configured_chain_of_objects_is_checked_by_registry_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from perplexed.providers import get

    def my_search(query: str, options: Any) -> list[Any]:
        return []

    with serve({"/search": Json(searxng_json(1))}) as server:
        searx = get("searxng")(base_url=server.url)  # a base_url in code, no SEARXNG_URL
        perplexed.configure(provider=[searx, my_search])
        found = checks(doctor.diagnose())
        assert found["searxng"].status == "ok" and server.url in found["searxng"].detail
    perplexed.configure(provider=[my_search, {"name": "tavily"}, get("exa")(api_key=KEYS["exa"])])
    diagnosis = doctor.diagnose()
    assert diagnosis.chain == ("tavily", "exa") and diagnosis.chain_source == "configure()"
    found = checks(diagnosis)
    assert found["chain"].status == "ok"  # the function is not an unknown provider
    assert found["key:tavily"].status == "missing" and found["key:tavily"].needed
    assert found["key:exa"].status == "ok" and "exa's api_key" in found["key:exa"].detail  # the object's key
    assert KEYS["exa"] not in found["key:exa"].detail
    assert diagnosis.exit_code == 1


async def test_live_on_a_non_http_provider_is_an_error_row_not_a_crash() -> None:
    from perplexed.providers import get

    report = await doctor.acheck_live([get("local")()])
    assert report.rows[0].status == "error" and "offline" in (report.rows[0].error or "")


def test_doctor_lists_the_extras_from_the_packages_own_metadata() -> None:
    """Issue 39, #7: ``doctor`` lists the extras installed and missing. What each extra installs is read from
    the installed package's metadata (pyproject.toml's optional-dependencies), so the list cannot drift."""
    import tomllib
    from pathlib import Path

    declared = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    extras = declared["project"]["optional-dependencies"]
    checks = {c.name: c for c in doctor.diagnose("local").checks if c.name.startswith("extra:")}
    assert set(checks) <= {f"extra:{name}" for name in extras}
    for feature in ("cli", "fetch", "mcp", "langchain", "llama-index"):  # the test extra installs them all
        check = checks[f"extra:{feature}"]
        assert check.status == "ok", check
        for requirement in extras[feature]:
            name = requirement.split(">")[0].split("<")[0].split("[")[0].split("~")[0].split("=")[0].strip()
            if not name.startswith("perplexed-search"):
                assert name.lower().replace("_", "-") in check.detail.lower().replace("_", "-"), (name, check)
    assert all(not c.needed for c in checks.values())  # an extra the chain does not need never fails doctor
