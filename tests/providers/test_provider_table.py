"""The README's provider tables equal the ones generated from code, and the support table tells the truth
about the requests; the cassettes are current, labelled and free of credentials; connection errors."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import httpx
import perplexed
import pytest
import synthesize_cassettes
import yaml
from perplexed import Outcome, SearchOptions, UpstreamError, providers
from perplexed.policy._options import COMMON_OPTIONS
from perplexed.providers import Provider, support_table
from perplexed.providers._table import WEB_PROVIDERS, price_table, provider_table, support
from testkit.cassettes import FAKE_KEYS, RECORDED, ROOT, SECRET_HEADERS, SYNTHESIZED

SAMPLES: dict[str, Any] = {
    "max_results": 3,
    "include_domains": ["a.org"],
    "exclude_domains": ["b.org"],
    "recency": "week",
    "published_after": "2025-01-02",
    "published_before": "2025-02-03",
    "language": "de",
    "country": "de",
    "safe_search": "strict",
}


def readme_section(name: str) -> str:
    text = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- section:{name} -->\n(.*?)<!-- /section:{name} -->", text, re.S)
    assert match, f"docs/providers.md has no section {name}"
    return match.group(1)


def test_readme_support_table_is_the_generated_one() -> None:
    section = readme_section("providers")
    hint = "paste the output of perplexed.providers._table.{}() into docs/providers.md"
    assert support_table() in section, hint.format("support_table")
    assert price_table() in section, hint.format("price_table")
    assert provider_table() in section, hint.format("provider_table")


def test_support_table_shape() -> None:
    lines = support_table().splitlines()
    assert lines[0] == "| option | " + " | ".join(f"`{n}`" for n in WEB_PROVIDERS) + " |"
    assert [line.split("|")[1].strip(" `") for line in lines[2:]] == list(COMMON_OPTIONS)
    assert all(
        set(cell.strip() for cell in line.split("|")[2:-1]) <= {"API", "client", "-"} for line in lines[2:]
    )


def make(name: str) -> Provider:
    if name == "searxng":
        return providers.get(name)(base_url="http://127.0.0.1:8888")
    return providers.get(name)(api_key=FAKE_KEYS[name])


def fingerprint(request: httpx.Request) -> tuple[str, str, bytes]:
    return request.method, str(request.url), request.content


@pytest.mark.parametrize("name", WEB_PROVIDERS)
def test_support_table_matches_the_requests(name: str) -> None:
    provider = make(name)
    plain = fingerprint(provider.build_request("q", SearchOptions.build()))
    for option, kind in support(type(provider)).items():
        with_option = fingerprint(
            provider.build_request("q", SearchOptions.build(**{option: SAMPLES[option]}))
        )
        if kind == "native":
            assert with_option != plain, f"{name}: {option} is marked API but the request does not change"
        else:
            assert with_option == plain, f"{name}: {option} is marked {kind} but the request changes"
            if kind == "ignored":
                assert option in provider.ignored(SearchOptions.build(**{option: SAMPLES[option]}))


def test_synthesized_cassettes_are_current() -> None:
    rendered = synthesize_cassettes.render()
    on_disk = {
        p for name in synthesize_cassettes.CASES for p in (SYNTHESIZED / name).rglob("*") if p.is_file()
    }
    assert on_disk == set(rendered)
    for path, text in rendered.items():
        assert path.read_text(encoding="utf-8") == text, f"{path} differs from synthesize_cassettes.py"


@pytest.mark.parametrize("name", sorted(synthesize_cassettes.CASES))
def test_synthesized_cassettes_are_labelled(name: str) -> None:
    readme = (SYNTHESIZED / name / "README.md").read_text(encoding="utf-8")
    assert "Not recorded" in readme and "documented" in readme
    if name == "searxng":  # its standard cases are recorded from a real instance (cassettes/recorded/searxng)
        return
    for case in ("ok", "empty", "401", "429", "5xx", "malformed"):
        assert (SYNTHESIZED / name / f"{case}.yaml").is_file()
        assert f"`{case}.yaml`" in readme


ALL_CASSETTES = sorted(
    [
        *(p for name in synthesize_cassettes.CASES for p in (SYNTHESIZED / name).glob("*.yaml")),
        *(RECORDED / "searxng").glob("*.yaml"),
    ]
)
_KEYLIKE = re.compile(r"\b(pplx|tvly|fc|sk|exa|lk)-[A-Za-z0-9_\-]{16,}|Bearer\s+[A-Za-z0-9._\-]{8,}")


@pytest.mark.parametrize("path", ALL_CASSETTES, ids=lambda p: str(Path(p).relative_to(ROOT / "cassettes")))
def test_no_credentials_in_cassettes(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for key in FAKE_KEYS.values():
        assert key not in text
    assert not _KEYLIKE.search(text)
    data = yaml.safe_load(text)
    for interaction in data["interactions"]:
        headers = {h.lower() for h in interaction["request"]["headers"]}
        assert not headers & set(SECRET_HEADERS)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_connection_refused_is_an_error_and_the_chain_moves_on() -> None:
    port = _closed_port()
    dead = providers.get("ceramic")(api_key=FAKE_KEYS["ceramic"], base_url=f"http://127.0.0.1:{port}")

    def backup(query: str, options: SearchOptions) -> list[dict[str, str]]:
        return [{"url": "https://a.org/backup", "title": "backup"}]

    result = await perplexed.asearch("q", provider=[dead, backup])
    first, second = result.attempts
    assert first.outcome is Outcome.ERROR and first.reason == "connection" and first.cost == 0
    assert second.outcome is Outcome.OK and result.hits[0].url == "https://a.org/backup"


async def test_connection_refused_alone_raises_upstream_error() -> None:
    dead = providers.get("exa")(api_key=FAKE_KEYS["exa"], base_url=f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(UpstreamError) as info:
        await perplexed.asearch("q", provider=dead)
    assert info.value.attempts[0].reason == "connection"
