"""Shared helpers of the doctor tests: a clean environment, and the good, drifted and failing answers each
provider path serves from a loopback server (the good ones are the bodies of the synthesized cassettes)."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import perplexed
import pytest
import yaml
from perplexed.doctor import SHAPES

from testkit.cassettes import PROVIDER_ENV

ROOT = Path(__file__).resolve().parents[2]

#: provider -> the path its request goes to (after base_url)
PATHS = {
    "searxng": "/search",
    "ceramic": "/search",
    "firecrawl": "/v2/search",
    "perplexity": "/search",
    "tavily": "/search",
    "exa": "/search",
    "brave": "/res/v1/web/search",
    "linkup": "/v1/search",
    "agent": "/v1/agent",
}
PAID = ("ceramic", "firecrawl", "perplexity", "tavily", "exa", "brave", "linkup")

#: keys shaped like each vendor's (so the offline format check says ok); obviously not real
KEYS = {
    "ceramic": "ceramic-doctor-test-key-0000",
    "firecrawl": "fc-doctortestkey0123456789abcdef",
    "perplexity": "pplx-doctortestkey0123456789abcdefghijkl",
    "tavily": "tvly-doctor-test-key-0123456789",
    "exa": "00000000-0000-4000-8000-00000000d0c7",
    "brave": "BSAdoctortestkey0123456789abcd",
    "linkup": "00000000-0000-4000-8000-00000000cafe",
}

_ENV = (*PROVIDER_ENV, "PERPLEXED_STORE")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No provider key, URL, chain, store or price override from the machine; configure() undone."""
    for name in list(os.environ):
        if name in _ENV or name.startswith("PERPLEXED_PRICE_"):
            monkeypatch.delenv(name)
    perplexed.reset()
    yield
    perplexed.reset()


def good(provider: str) -> dict[str, Any]:
    """The ok answer of ``provider`` (agent: a completed response), from its cassette."""
    if provider == "searxng":
        path = ROOT / "cassettes" / "recorded" / "searxng" / "ok.yaml"
    elif provider == "agent":
        path = ROOT / "cassettes" / "synthesized" / "agent" / "create_completed.yaml"
    else:
        path = ROOT / "cassettes" / "synthesized" / provider / "ok.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    body: dict[str, Any] = json.loads(data["interactions"][0]["response"]["body"]["string"])
    return body


def _items(body: dict[str, Any], provider: str) -> list[dict[str, Any]]:
    value: Any = body
    for part in SHAPES[provider].items.split("."):
        value = value[part]
    return [i for i in value if isinstance(i, dict)]


def renamed(provider: str) -> dict[str, Any]:
    """The ok answer with the hits' ``url`` renamed ``link`` (agent: ``status`` renamed ``state``)."""
    body = copy.deepcopy(good(provider))
    if provider == "agent":
        body["state"] = body.pop("status")
        return body
    for item in _items(body, provider):
        item["link"] = item.pop("url")
    return body


def with_new_field(provider: str) -> dict[str, Any]:
    """The ok answer plus a field nobody knows, at the top and in each hit (not drift)."""
    body = copy.deepcopy(good(provider))
    body["brand_new_field"] = {"added": "2027"}
    if provider != "agent":
        for item in _items(body, provider):
            item["sparkle"] = 1
    return body


#: provider -> (how to change the reported price, the new reported USD) for the providers that report one
PRICE_CHANGES = {
    "exa": (lambda b: b["costDollars"].update(total=0.012), 0.012),
    "firecrawl": (lambda b: b.update(creditsUsed=5), 0.005),
    "tavily": (lambda b: b["usage"].update(credits=2), 0.016),
}


def repriced(provider: str) -> dict[str, Any]:
    body = copy.deepcopy(good(provider))
    PRICE_CHANGES[provider][0](body)
    return body
