"""The cassette tests accept recorded cassettes as well as synthesized ones: every ``ok.yaml`` under
``cassettes/synthesized/<provider>/`` and ``cassettes/recorded/<provider>/`` (what ``perplexed doctor --live
--record DIR`` writes, copied in) replays through the real engine with the shape the doctor checks; and a
cassette the doctor records here, from loopback servers, replays the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import perplexed
import pytest
import vcr
import yaml
from perplexed import Outcome, doctor
from perplexed.doctor import SHAPES
from perplexed.doctor._checks import check_shape  # private: recorded bodies match the doctor's shapes
from perplexed.providers import Provider, get
from testkit.cassettes import FAKE_KEYS, ROOT
from testkit.doctor_answers import KEYS, PATHS, good
from testkit.loopback import Json, serve

WEB = ("searxng", "ceramic", "firecrawl", "perplexity", "tavily", "exa", "brave", "linkup")
LOOSE = vcr.VCR(record_mode="none", match_on=["method", "scheme", "host", "port", "path"])


def ok_cassettes() -> list[Path]:
    return sorted(p for p in (ROOT / "cassettes").glob("*/*/ok.yaml") if p.parent.name in WEB)


def provider_for(path: Path) -> Provider:
    """The provider of a cassette, pointed at the host it was recorded from (a fake key: none is in it)."""
    name = path.parent.name
    uri = yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"][0]["request"]["uri"]
    base = uri.split("?", 1)[0]
    assert base.endswith(PATHS[name]), uri
    base = base[: -len(PATHS[name])]
    if name == "searxng":
        return get(name)(base_url=base)
    return get(name)(base_url=base, api_key=FAKE_KEYS[name])


def replay_ok(path: Path) -> perplexed.Result:
    """Replay an ok cassette (recorded or synthesized) through the engine and check what the doctor checks."""
    provider = provider_for(path)
    with LOOSE.use_cassette(str(path)) as cas:
        result = perplexed.search("anything", provider=[provider])
    assert cas.all_played
    [attempt] = result.attempts
    assert attempt.outcome is Outcome.OK and result.hits
    assert all(h.url.startswith(("http://", "https://")) and h.provider == provider.label for h in result.hits)
    body: Any = json.loads(yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"][0]["response"]["body"]["string"])
    found = check_shape(SHAPES[path.parent.name], body)
    assert not found.drift, (found.missing, found.wrong_type)
    return result


@pytest.mark.parametrize("path", ok_cassettes(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_ok_cassettes_replay_recorded_or_synthesized(path: Path) -> None:
    replay_ok(path)


def test_both_kinds_are_there() -> None:
    kinds = {p.parent.parent.name for p in ok_cassettes()}
    assert kinds == {"recorded", "synthesized"}


@pytest.mark.parametrize("name", WEB)
async def test_a_cassette_recorded_by_the_doctor_replays(name: str, tmp_path: Path) -> None:
    with serve({PATHS[name]: Json(good(name))}) as server:
        if name == "searxng":
            provider = get(name)(base_url=server.url)
        else:
            provider = get(name)(base_url=server.url, api_key=KEYS[name])
        report = await doctor.acheck_live([provider], record=tmp_path)
    [row] = report.rows
    assert row.status == "ok" and row.cassette == str(tmp_path / name / "ok.yaml")
    text = (tmp_path / name / "ok.yaml").read_text(encoding="utf-8")
    assert KEYS.get(name, "never") not in text
    replay_ok(tmp_path / name / "ok.yaml")


async def test_recording_never_overwrites_a_readme_it_did_not_write(tmp_path: Path) -> None:
    readme = tmp_path / "searxng" / "README.md"
    readme.parent.mkdir()
    readme.write_text("# Recorded SearXNG cassettes\n\nFrom a real SearXNG, by another script.\n", encoding="utf-8")
    with serve({PATHS["searxng"]: Json(good("searxng"))}) as server:
        report = await doctor.acheck_live([get("searxng")(base_url=server.url)], record=tmp_path)
    assert report.rows[0].status == "ok" and (tmp_path / "searxng" / "ok.yaml").is_file()
    assert readme.read_text(encoding="utf-8").endswith("by another script.\n")
    with serve({PATHS["exa"]: Json(good("exa"))}) as server:
        await doctor.acheck_live([get("exa")(base_url=server.url, api_key=KEYS["exa"])], record=tmp_path)
        await doctor.acheck_live([get("exa")(base_url=server.url, api_key=KEYS["exa"])], record=tmp_path)
    assert "perplexed doctor --live --record" in (tmp_path / "exa" / "README.md").read_text(encoding="utf-8")
