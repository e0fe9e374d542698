"""Result models: :class:`Hit`, :class:`Attempt`, :class:`Result`, :class:`Outcome`."""

from __future__ import annotations

from datetime import date
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field

__all__ = ["Attempt", "Hit", "Outcome", "ProviderAnswer", "Result"]


class Outcome(StrEnum):
    """How one provider attempt ended."""

    OK = "ok"
    EMPTY = "empty"
    TIMEOUT = "timeout"
    DEADLINE = "deadline"
    ERROR = "error"
    SKIPPED = "skipped"
    """Not called: cooling down, rate limited or over budget (``Attempt.reason`` says which)."""
    CANCELLED = "cancelled"
    """Called, then cancelled because another provider answered first (hedged strategy)."""
    INSUFFICIENT = "insufficient"
    """Answered, but below the quality floor (``min_hits`` or ``accept``)."""


class Hit(BaseModel):
    """One search hit, normalised across providers.

    ``id`` is 1-based and stable within a result: it is what an answer's ``[n]`` marker points at.
    ``raw`` keeps the provider's own fields. ``published`` is a publication date; ``updated`` a last-update or
    crawl date when the provider reports one. ``sources`` is filled by the ``merge`` strategy: every provider
    that returned the hit and its rank there (``[{"provider": "exa", "rank": 1}, ...]``); empty otherwise.
    """

    model_config = ConfigDict(extra="forbid")

    id: int = 0
    title: str = ""
    url: str
    snippet: str = ""
    content: str | None = None
    published: date | None = None
    updated: date | None = None
    score: float | None = None
    provider: str = ""
    sources: list[dict[str, Any]] = Field(default_factory=list)
    raw: dict[str, Any] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        """The hit's full content when known, else its snippet."""
        return self.content or self.snippet


class Attempt(BaseModel):
    """One provider attempt inside a chain run."""

    model_config = ConfigDict(frozen=True)

    provider: str
    outcome: Outcome
    cost: float = 0.0
    duration_ms: int = 0
    billable: bool = False
    error: str | None = None
    detail: str | None = None
    reason: str | None = None
    cached: bool = False

    def summary(self) -> dict[str, Any]:
        """The four fields adapters show: provider, outcome, cost, duration_ms."""
        return {
            "provider": self.provider,
            "outcome": self.outcome.value,
            "cost": self.cost,
            "duration_ms": self.duration_ms,
        }


class ProviderAnswer(BaseModel):
    """What a provider's ``parse_response`` (or a callable provider) returns: hits plus what it cost.

    ``cost`` is ``None`` when the provider does not report a charge: the engine then uses the price table.
    """

    hits: list[Hit] = Field(default_factory=list)
    cost: float | None = None
    detail: str | None = None


class Result(BaseModel):
    """The answer of a search: which provider answered, its hits, and every attempt the chain made."""

    query: str
    provider: str | None
    hits: list[Hit] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost(self) -> float:
        """Total USD cost: the sum over all attempts (a paid provider that answered empty still bills)."""
        return float(sum(a.cost for a in self.attempts))

    def __len__(self) -> int:
        return len(self.hits)

    def __bool__(self) -> bool:
        return True
