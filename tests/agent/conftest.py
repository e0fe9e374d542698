"""Fixtures of the Agent API tests: no real key or base URL from the environment."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test depends on (or leaks) a real key or base URL from the environment."""
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)
    monkeypatch.delenv("PERPLEXITY_BASE_URL", raising=False)
