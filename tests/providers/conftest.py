"""The provider tests' clean environment (no provider keys, no price overrides) for every test. Cassette
replay and the fake keys are in :mod:`testkit.cassettes`."""

from __future__ import annotations

import os
from collections.abc import Iterator

import perplexed
import pytest
from testkit.cassettes import PROVIDER_ENV

_ENV_PREFIXES = ("PERPLEXED_PRICE_",)
_ENV_NAMES = PROVIDER_ENV


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No provider keys or price overrides leak in from the machine, and ``configure()`` is undone."""
    for name in list(os.environ):
        if name in _ENV_NAMES or name.startswith(_ENV_PREFIXES):
            monkeypatch.delenv(name)
    perplexed.reset()
    yield
    perplexed.reset()
