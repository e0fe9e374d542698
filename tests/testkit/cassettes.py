"""Cassettes in tests: replay (vcrpy, record mode ``none``), the fake keys they were written with, and the
headers that would carry a credential. Shared by the provider, answer and doctor tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import vcr

ROOT = Path(__file__).resolve().parents[2]
SYNTHESIZED = ROOT / "cassettes" / "synthesized"
RECORDED = ROOT / "cassettes" / "recorded"

PROVIDERS = ("ceramic", "firecrawl", "perplexity", "tavily", "exa", "brave", "linkup")

#: obviously fake keys: a real key never appears in a test or a cassette
FAKE_KEYS = {
    "ceramic": "ceramic-test-not-a-real-key",
    "firecrawl": "fc-test-not-a-real-key",
    "perplexity": "pplx-test-not-a-real-key",
    "tavily": "tvly-test-not-a-real-key",
    "exa": "exa-test-not-a-real-key",
    "brave": "brave-test-not-a-real-key",
    "linkup": "linkup-test-not-a-real-key",
}

#: the environment variables that configure providers (tests clear them so the machine cannot leak in)
PROVIDER_ENV = (
    "SEARXNG_URL",
    "CERAMIC_API_KEY",
    "CERAMIC_BASE_URL",
    "FIRECRAWL_API_KEY",
    "FIRECRAWL_API_URL",
    "PERPLEXITY_API_KEY",
    "PERPLEXITY_BASE_URL",
    "TAVILY_API_KEY",
    "EXA_API_KEY",
    "BRAVE_API_KEY",
    "LINKUP_API_KEY",
    "PERPLEXED_PROVIDER",
)

#: headers that would carry a credential; filtered if a cassette is ever recorded with this configuration
SECRET_HEADERS = ["authorization", "x-api-key", "x-subscription-token", "proxy-authorization", "cookie"]

PLAYER = vcr.VCR(
    record_mode="none",
    match_on=["method", "scheme", "host", "port", "path"],
    filter_headers=SECRET_HEADERS,
    decode_compressed_response=True,
)


def cassette(path: str | Path) -> Any:
    """Replay a cassette (relative to ``cassettes/synthesized`` unless absolute); every request must match."""
    full = Path(path) if Path(path).is_absolute() else SYNTHESIZED / path
    assert full.is_file(), f"missing cassette {full}"
    return PLAYER.use_cassette(str(full))



def combined_cassette(directory: Path, *parts: str | Path) -> Path:
    """One cassette holding the interactions of several (relative to ``cassettes/``), in order: a chain
    test replays a different provider's cassette for each member."""
    import yaml

    interactions: list[Any] = []
    for part in parts:
        data = yaml.safe_load((ROOT / "cassettes" / part).read_text(encoding="utf-8"))
        interactions.extend(data["interactions"])
    path = directory / "combined.yaml"
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}), encoding="utf-8")
    return path
