"""The provider tests' clean environment (no provider keys, no price overrides) for every test. Cassette
replay and the fake keys are in :mod:`testkit.cassettes`."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from perplexed import _settings

_ENV_PREFIXES = ("PERPLEXED_PRICE_",)
_ENV_NAMES = (
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


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No provider keys or price overrides leak in from the machine, and ``configure()`` is undone."""
    for name in list(os.environ):
        if name in _ENV_NAMES or name.startswith(_ENV_PREFIXES):
            monkeypatch.delenv(name)
    _settings.reset()
    yield
    _settings.reset()
