"""Constants, the environment type and the ``# needs VAR`` convention shared by the documentation tests
(fixtures are in conftest.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAND_IN_KEY = "pplx-docs-stand-in-key-0000"

#: Variables a user's shell may hold that would change what a sample does; the samples run without them
#: (a fresh HOME, no provider key, no perplexed setting), as on a new machine.
STRIPPED_ENV = ("PERPLEXED_", "PERPLEXITY_", "TAVILY_", "EXA_", "BRAVE_", "FIRECRAWL_", "LINKUP_", "CERAMIC_",
                "SEARXNG_", "OPENAI_", "ANTHROPIC_", "XDG_", "COLUMNS", "LINES")

#: What a sample may say it needs (``# needs SEARXNG_URL`` in the block), and what the docs tell the user it is.
PROVIDED = ("SEARXNG_URL", "PERPLEXITY_API_KEY")

_NEEDS = re.compile(r"#\s*needs\b(.*)$", re.MULTILINE | re.IGNORECASE)
_NEEDS_DOC = re.compile(r"\bneeds\s+``([A-Z][A-Z0-9]*_[A-Z0-9_]+)``")
_VAR = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")  # SEARXNG_URL, PERPLEXITY_API_KEY (not "API")


def needs(source: str) -> list[str]:
    """The variables a sample says it needs: ``# needs VAR [and VAR ...]`` comments, and in a script's
    docstring ``needs ``VAR``\u200b``."""
    found = [var for line in _NEEDS.findall(source) for var in _VAR.findall(line)]
    found += _NEEDS_DOC.findall(source)
    return list(dict.fromkeys(found))


@dataclass
class DocEnv:
    """The environment variables and working directory a sample runs with, and what each provided variable
    (:data:`PROVIDED`) is set to when a sample says it needs it."""

    env: dict[str, str]
    cwd: Path
    provided: dict[str, dict[str, str]] = field(default_factory=dict)

    def with_needs(self, names: list[str], *, leave_out: str | None = None) -> dict[str, str]:
        """The environment with what ``names`` need set (except ``leave_out``)."""
        env = dict(self.env)
        for name in names:
            if name != leave_out and name in self.provided:
                env.update(self.provided[name])
        return env
