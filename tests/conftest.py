"""Shared pytest configuration. The real-SearXNG harness is a plugin in tests/searxng_fixture.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["searxng_fixture", "valkey_fixture"]


@pytest.fixture(autouse=True)
def _isolated_local_index(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests never read or write the user's real local index (the quickstart builds one in the data dir)."""
    monkeypatch.setenv("PERPLEXED_LOCAL_INDEX", str(Path(tmp_path_factory.mktemp("index")) / "index.sqlite"))
    yield
