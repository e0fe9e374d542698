"""The routing file: what an evaluation measured per provider, and the order that gives the most correct
answers per dollar among the providers at or above a quality floor (``EvalReport.routing``).

JSON, versioned (``"version": 1``), readable; ``strategy="adaptive"`` takes it as priors (``routing=`` a path or
a :class:`Routing`)::

    {"version": 1, "metric": "hit_at_k", "k": 5, "min_quality": 0.65, "order": ["b", "a", "c"],
     "providers": {"a": {"quality": 0.9, "cost_per_query_usd": 0.01, ...}, ...}}
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from perplexed._errors import ConfigError

__all__ = ["ROUTING_VERSION", "ProviderPrior", "Routing", "load_routing", "routing_order"]

ROUTING_VERSION = 1


class ProviderPrior(BaseModel):
    """One provider's measured figures in a routing file (``quality``: the routing's metric, None when the
    evaluation had no label for it)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    quality: float | None = None
    cost_per_query_usd: float = 0.0
    cost_per_correct_usd: float | None = None
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    failure_rate: float = 0.0
    queries: int = 0


class Routing(BaseModel):
    """A routing file: per provider its measured quality, cost and latency, and the recommended ``order``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    version: int = ROUTING_VERSION
    metric: Literal["hit_at_k", "answer_recall_at_k"] = "hit_at_k"
    k: int = 5
    min_quality: float | None = None
    order: list[str] = Field(default_factory=list)
    providers: dict[str, ProviderPrior] = Field(default_factory=dict)

    @classmethod
    def build(cls, providers: Mapping[str, ProviderPrior], *, metric: str = "hit_at_k", k: int = 5,
              min_quality: float | None = None) -> Routing:
        """A routing with its ``order`` computed (:func:`routing_order`)."""
        return cls(metric=metric, k=k, min_quality=min_quality, providers=dict(providers),
                   order=routing_order(providers, min_quality))

    def meets(self, name: str) -> bool | None:
        """Whether ``name`` is at or above ``min_quality`` (None: not in the file, or no quality measured)."""
        prior = self.providers.get(name)
        if prior is None or prior.quality is None:
            return None
        return self.min_quality is None or prior.quality >= self.min_quality - 1e-12

    def to_json(self, indent: int | None = 2) -> str:
        """The routing file's text."""
        return json.dumps(self.model_dump(mode="json"), indent=indent, sort_keys=False)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the routing file."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_json() + "\n")

    @classmethod
    def from_json(cls, text: str | bytes) -> Routing:
        """A routing from its JSON text: :class:`~perplexed.ConfigError` when it is not one."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"routing: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ConfigError("routing: expected a JSON object")
        version = data.get("version")
        if version != ROUTING_VERSION:
            raise ConfigError(f"routing: version {version!r} is not supported (expected {ROUTING_VERSION})")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ()))
            raise ConfigError(f"routing: {where}: {err['msg']}") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Routing:
        """Read a routing file (:class:`~perplexed.ConfigError` when it cannot be read or is not one)."""
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise ConfigError(f"routing: cannot read {os.fspath(path)!r}: {exc.strerror or exc}") from None
        return cls.from_json(text)


def load_routing(value: object, param: str = "routing") -> Routing | None:
    """``routing=``: None, a :class:`Routing`, a mapping, or a path to a routing file."""
    if value is None or isinstance(value, Routing):
        return value
    if isinstance(value, Mapping):
        return Routing.from_json(json.dumps(dict(value)))
    if isinstance(value, str | os.PathLike):
        return Routing.load(value)
    raise ConfigError(f"{param} must be a routing file's path or a perplexed.Routing, got {type(value).__name__}")


def routing_order(providers: Mapping[str, ProviderPrior], min_quality: float | None) -> list[str]:
    """The recommended order: first the providers at or above ``min_quality`` (every measured one when None),
    most correct answers per dollar first (a free provider before any paid one; higher quality first among
    equals, then the faster p50); then the others, by quality; those without a measured quality last."""

    def value(prior: ProviderPrior) -> float:
        quality = prior.quality or 0.0
        if prior.cost_per_query_usd <= 0:
            return math.inf
        return quality / prior.cost_per_query_usd

    def latency(prior: ProviderPrior) -> float:
        return prior.latency_p50_ms if prior.latency_p50_ms is not None else math.inf

    names: Sequence[str] = list(providers)
    measured = [n for n in names if providers[n].quality is not None]
    floor = -math.inf if min_quality is None else min_quality - 1e-12
    eligible = [n for n in measured if (providers[n].quality or 0.0) >= floor]
    others = [n for n in measured if n not in eligible]
    eligible.sort(key=lambda n: (-value(providers[n]), -(providers[n].quality or 0.0), latency(providers[n])))
    others.sort(key=lambda n: (-(providers[n].quality or 0.0), providers[n].cost_per_query_usd,
                               latency(providers[n])))
    rest = [n for n in names if providers[n].quality is None]
    rest.sort(key=lambda n: (providers[n].cost_per_query_usd, latency(providers[n])))
    return eligible + others + rest


