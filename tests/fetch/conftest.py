from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _fresh_robots() -> Iterator[None]:
    """robots.txt verdicts are cached per origin: loopback ports are reused across tests."""
    import perplexed

    perplexed.reset()  # forgets the robots.txt rules too
    yield
    perplexed.reset()
