"""Constants and the environment type shared by the documentation tests (fixtures are in conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENT_CASSETTES = ROOT / "cassettes" / "synthesized" / "agent"
STAND_IN_KEY = "pplx-docs-stand-in-key-0000"
STRIPPED_ENV = ("PERPLEXED_", "PERPLEXITY_", "TAVILY_", "EXA_", "BRAVE_", "FIRECRAWL_", "LINKUP_", "CERAMIC_",
                "SEARXNG_", "OPENAI_", "ANTHROPIC_")


@dataclass
class DocEnv:
    """The environment variables and working directory a sample runs with."""

    env: dict[str, str]
    cwd: Path
