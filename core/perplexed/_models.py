"""Result models: :class:`Hit`, :class:`Attempt`, :class:`Result`, :class:`Outcome`."""

from __future__ import annotations

from datetime import date
from enum import StrEnum
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, computed_field

from perplexed._plugin_scan import spare_the_scan

__all__ = ["Attempt", "Hit", "Outcome", "Page", "PageType", "ProviderAnswer", "Result", "RouteStep", "Usage"]

#: what kind of page a fetched HTML page is (:attr:`Page.page_type`)
PageType = Literal["article", "forum", "product", "collection", "listing", "documentation", "service", "other"]


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


spare_the_scan()  # the first models of the package are built next: pydantic's plugin scan only when it can find one


class Hit(BaseModel):
    """One search hit, normalised across providers.

    ``id`` is 1-based and stable within a result: it is what an answer's ``[n]`` marker points at.
    ``raw`` keeps the provider's own fields. ``published`` is a publication date; ``updated`` a last-update or
    crawl date when the provider reports one. ``sources`` is filled by the ``merge`` strategy: every provider
    that returned the hit and its rank there (``[{"provider": "exa", "rank": 1}, ...]``; an entry whose provider
    filled fields the first one lacked names them: ``"filled": ["snippet"]``); empty otherwise.

    A hit is immutable (a frozen model): assigning a field raises ``pydantic.ValidationError``; for a changed
    hit, ask for a copy: ``hit.model_copy(update={"title": "..."})``. A hit answered from the in-process cache is
    shared by every search that gets it, so its ``raw`` and ``sources`` (and a fetched ``page``'s containers) are
    read-only too (a ``dict`` / ``list`` that raises ``TypeError`` when changed): ``dict(hit.raw)``,
    ``list(hit.sources)`` or ``copy.deepcopy(hit.raw)`` give a copy of your own.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

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
    page: Page | None = None
    """The fetched page (``search(..., fetch_content=N)``), with the fetch's own attempts; None otherwise."""
    page_failure: Attempt | None = None
    """Why the page asked for with ``fetch_content=N`` did not come (``page`` is None): the attempt that ended
    its fetch, ``reason`` saying why: ``timeout`` (the call's deadline passed first), ``over_budget`` (its price
    did not fit ``budget_usd``), the refusal (``private_address``, ``bad_request``), or the fetch's failure
    (``not_found``, ``blocked``, ...). None when the page came or was not asked for."""

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


class Usage(BaseModel):
    """What one call used (``Result.usage``, ``Page.usage``): provider attempts that reached a provider
    (``calls``, cache hits included), those the vendors bill, their cost, the cache hits and what they saved
    (the providers' list prices)."""

    model_config = ConfigDict(frozen=True)

    calls: int = 0
    billable_calls: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0
    saved_usd: float = 0.0

    @classmethod
    def total(cls, usages: list[Usage]) -> Usage:
        """The sum of several calls' usage (a reader's pages, an answer's search and its Agent API call)."""
        return cls(calls=sum(u.calls for u in usages), billable_calls=sum(u.billable_calls for u in usages),
                   cost_usd=float(sum(u.cost_usd for u in usages)), cache_hits=sum(u.cache_hits for u in usages),
                   saved_usd=float(sum(u.saved_usd for u in usages)))

    @classmethod
    def of(cls, attempts: list[Attempt], saved: float) -> Usage:
        reached = [a for a in attempts if a.outcome not in (Outcome.SKIPPED, Outcome.DEADLINE)]
        return cls(calls=len(reached), billable_calls=sum(1 for a in reached if a.billable),
                   cost_usd=float(sum(a.cost for a in reached)), cache_hits=sum(1 for a in reached if a.cached),
                   saved_usd=float(saved))


class Result(BaseModel):
    """The answer of a search: which provider answered, its hits, and every attempt the chain made.

    Immutable like its hits (a frozen model): ``result.model_copy(update=...)`` for a changed one. ``hits`` is a
    list of the result's own (reorder or filter it freely); the hits in it are frozen and may be shared with
    other results (the cache answers every search with the same hit objects)."""

    model_config = ConfigDict(frozen=True)

    query: str
    provider: str | None
    hits: list[Hit] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)
    _fetches: list[Attempt] = PrivateAttr(default_factory=list)
    _route: list[RouteStep] = PrivateAttr(default_factory=list)

    @property
    def route(self) -> list[RouteStep]:
        """``strategy="adaptive"``: the members in the order tried, each with its score and whether it was put
        first by exploration (empty under the other strategies)."""
        return self._route

    _saved_usd: float = PrivateAttr(default=0.0)

    @property
    def usage(self) -> Usage:
        """This search's usage: billable calls, cost, cache hits and what the cache saved (page fetches
        included)."""
        return Usage.of([*self.attempts, *self._fetches], self._saved_usd)

    @property
    def fetches(self) -> list[Attempt]:
        """The page fetches' attempts (``search(..., fetch_content=N)``), failed ones included; their cost is
        part of :attr:`cost` (each fetched hit's :attr:`Hit.page` has its own)."""
        return self._fetches

    def with_fetches(self, hits: list[Hit], fetches: list[Attempt]) -> Result:
        """A copy with ``hits`` (their pages fetched) and the fetches' attempts."""
        copy = self.model_copy(update={"hits": hits})
        copy._fetches = list(fetches)
        return copy

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost(self) -> float:
        """Total USD cost: the sum over all attempts (a paid provider that answered empty still bills), page
        fetches included."""
        return float(sum(a.cost for a in self.attempts) + sum(a.cost for a in self._fetches))

    def __len__(self) -> int:
        return len(self.hits)

    def __bool__(self) -> bool:
        return True


class RouteStep(NamedTuple):
    """One member of an adaptive chain's route (:attr:`Result.route`): its score when the chain was ordered
    (higher is tried earlier) and whether exploration put it first. Immutable (a named tuple)."""

    provider: str
    score: float
    explored: bool = False

#: the :attr:`Page.structured` keys that :meth:`Page.metadata` keeps
_META_STRUCTURED = ("title", "author", "published", "type", "name", "price", "currency", "availability")


class Page(BaseModel):
    """A page's content, fetched through a chain of fetch providers (:func:`perplexed.fetch`).

    ``url`` is the URL as asked, ``final_url`` where the content came from (after redirects). ``content`` is the
    requested slice (``start_index``, ``max_chars``) of the whole extracted text, in ``format`` (``"markdown"``
    or ``"text"``); ``total_chars`` is the whole text's length, ``truncated`` is true exactly when text remains
    after the slice, and ``next_index`` is where the next slice starts (None at the end). ``status`` is the
    HTTP status the ``http`` provider saw (None for API providers). ``attempts`` and ``cost`` as for a search.
    """

    model_config = ConfigDict(frozen=True)

    url: str
    final_url: str
    title: str = ""
    content: str = ""
    format: Literal["markdown", "text"] = "markdown"
    published: date | None = None
    language: str | None = None
    content_type: str | None = None
    status: int | None = None
    provider: str | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    truncated: bool = False
    total_chars: int = 0
    next_index: int | None = None
    _saved_usd: float = PrivateAttr(default=0.0)

    page_type: PageType | None = None
    """What kind of page this is: ``article``, ``forum``, ``product``, ``collection``, ``listing``,
    ``documentation``, ``service`` or ``other``, from the page's structure and structured data (the ``http``
    provider's HTML pages; None for other content types and providers). It picked the extraction strategy."""
    page_type_confidence: float | None = None
    """How sure :attr:`page_type` is, from 0 to 1."""
    structured: dict[str, Any] = Field(default_factory=dict)
    """What the page declares about itself in JSON-LD, microdata and OpenGraph: ``title``, ``author``,
    ``published``, ``type``, ``description``, and for a product ``name``, ``price``, ``currency``,
    ``availability`` (each only when declared)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost(self) -> float:
        """Total USD cost: the sum over all attempts."""
        return float(sum(a.cost for a in self.attempts))

    @property
    def usage(self) -> Usage:
        """This fetch's usage: billable calls, cost, cache hits and what the cache saved."""
        return Usage.of(self.attempts, self._saved_usd)

    def metadata(self) -> dict[str, Any]:
        """What the framework adapters keep beside the content: ``source`` (the URL asked), ``final_url``,
        ``title``, ``provider``, ``cost``, ``attempts`` (provider, outcome, cost, duration_ms each), ``truncated``,
        ``total_chars``, and ``language``, ``content_type``, ``next_index``, ``status``, ``published`` (ISO date),
        ``page_type``, ``page_type_confidence`` and ``structured`` (its short fields: ``title``, ``author``,
        ``published``, ``type``, ``name``, ``price``, ``currency``, ``availability``) when known."""
        meta: dict[str, Any] = {
            "source": self.url,
            "final_url": self.final_url,
            "title": self.title,
            "provider": self.provider,
            "cost": self.cost,
            "attempts": [a.summary() for a in self.attempts],
            "truncated": self.truncated,
            "total_chars": self.total_chars,
        }
        for name in ("language", "content_type", "next_index", "status", "page_type", "page_type_confidence"):
            value = getattr(self, name)
            if value is not None:
                meta[name] = value
        if self.published is not None:
            meta["published"] = self.published.isoformat()
        structured = {k: v[:200] if isinstance(v, str) else v for k, v in self.structured.items()
                      if k in _META_STRUCTURED}
        if structured:  # the short fields only: a long description would crowd the documents' metadata
            meta["structured"] = structured
        return meta

    def for_model(self) -> str:
        """The page as a tool shows it to a model: title, URL, content, and where the next slice starts when
        the content was cut."""
        head = f"{self.title}\nURL: {self.final_url}\n\n" if self.title else f"URL: {self.final_url}\n\n"
        text = head + self.content
        if self.truncated and self.next_index is not None:
            text += (f"\n\n[Content cut: {self.total_chars - self.next_index} more characters. "
                     f"Call again with start_index={self.next_index} to read on.]")
        return text


Hit.model_rebuild()
Result.model_rebuild()

_ATTEMPT_DEFAULTS = {name: field.default for name, field in Attempt.model_fields.items() if name != "provider"}
_CACHED_SET = frozenset(("provider", "outcome", "billable", "cached", "duration_ms", "detail"))


def _cached_attempt(provider: str, duration_ms: int, detail: str | None) -> Attempt:
    """A cache hit's attempt, equal to ``Attempt(provider=..., outcome=OK, billable=False, cached=True,
    duration_ms=..., detail=...)`` without the validator: the values are of their fields' types already (the
    engine's cache-hit path; pydantic's validation is a third of what a hit costs)."""
    values = dict(_ATTEMPT_DEFAULTS)
    values["provider"] = provider
    values["outcome"] = Outcome.OK
    values["cached"] = True
    values["duration_ms"] = duration_ms
    values["detail"] = detail
    return _attempt_of(values, set(_CACHED_SET))


_ANSWERED_SET = frozenset(("provider", "outcome", "cost", "duration_ms", "billable", "error", "detail", "reason"))


def _answered_attempt(provider: str, outcome: Outcome, cost: float, duration_ms: int, detail: str | None) -> Attempt:
    """A call's ``ok`` or ``empty`` attempt, equal to ``Attempt(provider=..., outcome=..., cost=..., duration_ms=...,
    billable=cost > 0, error=None, detail=..., reason=None)`` without the validator, for values of their fields'
    types already (``str``, an :class:`Outcome`, a ``float``, an ``int``, a ``str`` or None: the engine's call,
    which checks them)."""
    values = dict(_ATTEMPT_DEFAULTS)
    values["provider"] = provider
    values["outcome"] = outcome
    values["cost"] = cost
    values["duration_ms"] = duration_ms
    values["billable"] = cost > 0
    values["detail"] = detail
    return _attempt_of(values, set(_ANSWERED_SET))


def _attempt_of(values: dict[str, Any], fields_set: set[str]) -> Attempt:
    attempt = object.__new__(Attempt)
    object.__setattr__(attempt, "__dict__", values)
    object.__setattr__(attempt, "__pydantic_fields_set__", fields_set)
    object.__setattr__(attempt, "__pydantic_extra__", None)
    object.__setattr__(attempt, "__pydantic_private__", None)
    return attempt


def _result_of(query: str, provider: str, hits: list[Hit], attempts: list[Attempt], saved_usd: float) -> Result:
    """``Result(query=..., provider=..., hits=hits, attempts=attempts)`` (with ``_saved_usd``) without the
    validator, for values that are of their fields' types already (the engine's cache-hit path: validating ten
    cached hits again is most of what building the result costs). ``hits`` and ``attempts`` become the
    result's own lists: pass fresh ones."""
    result = object.__new__(Result)
    object.__setattr__(result, "__dict__", {"query": query, "provider": provider, "hits": hits,
                                            "attempts": attempts})
    object.__setattr__(result, "__pydantic_fields_set__", {"query", "provider", "hits", "attempts"})
    object.__setattr__(result, "__pydantic_extra__", None)
    object.__setattr__(result, "__pydantic_private__", {"_fetches": [], "_route": [], "_saved_usd": saved_usd})
    return result
