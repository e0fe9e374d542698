"""The API fetch providers (jina, exa, tavily, firecrawl) against loopback servers replaying the synthesized
cassettes (their documented shapes; see cassettes/synthesized/fetch/*/README.md): the request each sends, the page
it yields, and the same failure reasons for a page's failure reported inside a successful reply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import perplexed
import pytest
import yaml
from perplexed import Outcome, UpstreamError
from synthesize_fetch_cassettes import PAGE, ROOT, render
from testkit.loopback import LoopbackServer, Raw

CASSETTES = sorted(ROOT.glob("*/*.yaml"))
KEY = "test-key-0123456789abcdef"


def test_the_cassettes_on_disk_are_what_the_synthesizer_writes() -> None:
    for path, text in render().items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run tests/fetch/synthesize_fetch_cassettes.py"


def _serve(loopback: LoopbackServer, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    interaction = data["interactions"][0]
    response = interaction["response"]
    route = urlsplit(interaction["request"]["uri"]).path
    loopback.route(route, Raw(response["body"]["string"].encode(), status=response["status"]["code"]))
    return interaction, data["expect"]


@pytest.mark.parametrize("path", CASSETTES, ids=lambda p: f"{p.parent.name}/{p.stem}")
async def test_each_vendor_cassette(path: Path, loopback: LoopbackServer) -> None:
    provider = path.parent.name
    interaction, expect = _serve(loopback, path)
    spec: dict[str, Any] = {"name": provider, "base_url": loopback.url, "api_key": KEY}
    if provider == "firecrawl":  # a base_url of our own is a self-hosted instance (free unless told)
        spec["usd_per_credit"] = 0.001
    if "reason" in expect:
        with pytest.raises(UpstreamError) as info:
            await perplexed.afetch(PAGE, spec, min_chars=50)
        attempt = info.value.attempts[0]
        assert attempt.outcome is Outcome.ERROR and attempt.reason == expect["reason"]
        if "cost" in expect:
            assert attempt.cost == pytest.approx(expect["cost"])
    else:
        page = await perplexed.afetch(PAGE, spec, min_chars=50)
        assert page.content == expect["text"] and page.provider == provider
        assert page.status is None and page.final_url == PAGE
        if "title" in expect:
            assert page.title == expect["title"]
        if "published" in expect:
            assert str(page.published) == expect["published"]
        if "cost" in expect:
            assert page.cost == pytest.approx(expect["cost"])
    sent = loopback.requests[-1]
    assert json.loads(sent.body) == json.loads(interaction["request"]["body"])
    assert KEY in (sent.headers.get("authorization", "") + sent.headers.get("x-api-key", ""))


@pytest.mark.parametrize(("provider", "field", "expected"), [
    ("firecrawl", "maxAge", 90_000),
    ("exa", "maxAgeHours", 1),
    ("jina", "x-cache-tolerance", "90"),
])
async def test_max_age_reaches_each_provider_in_its_unit(provider: str, field: str, expected: Any,
                                                         loopback: LoopbackServer) -> None:
    _serve(loopback, ROOT / provider / "ok.yaml")
    await perplexed.afetch(PAGE, {"name": provider, "base_url": loopback.url, "api_key": KEY}, max_age_s=90)
    sent = loopback.requests[-1]
    value = sent.headers.get(field) if field.startswith("x-") else json.loads(sent.body)[field]
    assert value == expected


async def test_text_format_from_a_markdown_vendor(loopback: LoopbackServer) -> None:
    _serve(loopback, ROOT / "firecrawl" / "ok.yaml")
    page = await perplexed.afetch(PAGE, {"name": "firecrawl", "base_url": loopback.url, "api_key": KEY},
                                  format="text")
    assert page.format == "text" and not page.content.startswith("#") and "front yard setback" in page.content


async def test_jina_without_a_key_sends_no_authorization_and_costs_nothing(loopback: LoopbackServer,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JINA_API_KEY", raising=False)
    _serve(loopback, ROOT / "jina" / "ok.yaml")
    page = await perplexed.afetch(PAGE, {"name": "jina", "base_url": loopback.url})
    assert page.cost == 0.0 and "authorization" not in loopback.requests[-1].headers
    assert loopback.requests[-1].headers["x-return-format"] == "markdown"


async def test_a_vendor_failure_falls_through_to_the_next_provider_with_costs_kept(loopback: LoopbackServer) -> None:
    _serve(loopback, ROOT / "firecrawl" / "page_404.yaml")
    backup = lambda url, options: "backup " * 100  # noqa: E731
    firecrawl = {"name": "firecrawl", "base_url": loopback.url, "api_key": KEY, "usd_per_credit": 0.001}
    page = await perplexed.afetch(PAGE, [firecrawl, backup])
    assert [a.reason for a in page.attempts] == ["not_found", None]
    assert page.cost == pytest.approx(0.001)  # the failed scrape's credit is not lost


def test_unknown_vendor_option_and_unknown_provider() -> None:
    with pytest.raises(perplexed.InvalidRequest) as info:
        perplexed.fetch(PAGE, "tavily", extract_dept="advanced")
    assert "extract_depth" in str(info.value)
    with pytest.raises(perplexed.ConfigError):
        perplexed.fetch(PAGE, "nope")
