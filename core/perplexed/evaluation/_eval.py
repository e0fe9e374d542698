"""``perplexed.evaluate``: which provider answers *your* queries best, at what price and latency.

Each entry of ``providers`` (a provider name or spec, a :class:`~perplexed.providers.Provider`, a chain as a
list or ``"a,b,c"``, or ``{"providers": [...], "strategy": ..., "name": ...}`` for a chain with its options)
runs every query on its own, through the same engine as :func:`perplexed.search` (so timeouts, failures and
costs are counted exactly as a search counts them). ``concurrency`` searches run at once; ``budget_usd`` caps
the whole run (each call's price reserved before it, across the concurrent searches); what did not fit is a
``skipped`` row with reason ``over_budget``. The result cache is off unless ``cache=True``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from perplexed._errors import ConfigError, InvalidRequest, UpstreamError
from perplexed._models import Attempt, Outcome, Result
from perplexed.engine import chain
from perplexed.engine._strategies import is_configured
from perplexed.evaluation._eval_report import (
    EvalQuery,
    EvalReport,
    EvalRow,
    answer_found,
    first_correct,
    ndcg_at_k,
)
from perplexed.net import _portal
from perplexed.policy import _ledger
from perplexed.policy._options import clean_query
from perplexed.providers import Provider, resolve

__all__ = ["Entry", "aevaluate", "evaluate", "load_queries", "run_eval"]

CACHE_TTL_S = 86400.0
Progress = Callable[[int, int], Any]
_CHAIN_KEYS = ("providers", "name")


def load_queries(queries: Any) -> list[EvalQuery]:
    """The queries: a JSON Lines file's path, or an iterable of dicts / :class:`EvalQuery`. An entry without
    an ``id`` gets its 1-based position. :class:`~perplexed.InvalidRequest` (``param="queries"``) names the
    first bad entry."""
    items: list[Any]
    where = ""
    if isinstance(queries, str | os.PathLike):
        where = f"{os.fspath(queries)}: "
        items = []
        try:
            with open(queries, encoding="utf-8") as fh:
                for number, line in enumerate(fh, start=1):
                    if not line.strip():
                        continue
                    try:
                        items.append(json.loads(line))
                    except ValueError as exc:
                        raise InvalidRequest(f"{where}line {number} is not JSON: {exc}", param="queries") from None
        except OSError as exc:
            raise InvalidRequest(f"cannot read the query file {os.fspath(queries)!r}: {exc.strerror or exc}",
                                 param="queries") from None
    elif isinstance(queries, Iterable) and not isinstance(queries, str | bytes | Mapping):
        items = list(queries)
    else:
        raise InvalidRequest("queries must be a JSON Lines file's path or a list of queries", param="queries")
    out: list[EvalQuery] = []
    seen: set[str] = set()
    for position, item in enumerate(items, start=1):
        try:
            if isinstance(item, EvalQuery):
                query = item
            elif isinstance(item, Mapping):
                data = dict(item)
                if data.get("id") is not None:
                    data["id"] = str(data["id"])
                query = EvalQuery.model_validate(data)
            else:
                raise InvalidRequest(f"{where}query {position} is a {type(item).__name__}, not an object",
                                     param="queries")
            cleaned = clean_query(query.query)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err.get("loc", ()))
            raise InvalidRequest(f"{where}query {position}: {field}: {err['msg']}", param="queries") from None
        except InvalidRequest as exc:
            if exc.param == "queries":
                raise
            raise InvalidRequest(f"{where}query {position}: {exc}", param="queries") from None
        qid = query.id or str(position)
        if qid in seen:
            raise InvalidRequest(f"{where}query {position}: the id {qid!r} is used twice", param="queries")
        seen.add(qid)
        out.append(query.model_copy(update={"id": qid, "query": cleaned}))
    if not out:
        raise InvalidRequest(f"{where}no queries to evaluate", param="queries")
    return out


@dataclass(frozen=True)
class Entry:
    """One evaluated entry: its name, what to search with (a Provider, or a list = a chain), chain options."""

    name: str
    spec: Any
    options: Mapping[str, Any]


def entries(providers: Any) -> list[Entry]:
    """The evaluated entries, resolved once (a function provider is the same member across queries)."""
    if isinstance(providers, str | Provider | Mapping) or not isinstance(providers, Iterable):
        providers = [providers]
    items = list(providers)
    if not items:
        raise InvalidRequest("providers names nothing to evaluate", param="providers")
    out: list[Entry] = []
    for item in items:
        options: dict[str, Any] = {}
        name: str | None = None
        spec = item
        if isinstance(item, Mapping) and "providers" in item:
            options = {k: v for k, v in item.items() if k not in _CHAIN_KEYS}
            spec, name = item["providers"], item.get("name")
        try:
            members, is_chain = resolve(spec)
            chain.check_options(members if is_chain else members[0], **options)
        except ConfigError as exc:
            raise InvalidRequest(f"providers: {exc}", param="providers") from None
        _runnable(members)
        resolved: Any = members if is_chain else members[0]
        label = name or ",".join(m.label for m in members)
        if any(e.name == label for e in out):
            raise InvalidRequest(f"providers: {label!r} is evaluated twice (give it a \"name\")", param="providers")
        out.append(Entry(label, resolved, options))
    return out


def _runnable(members: Sequence[Provider]) -> None:
    """:class:`~perplexed.ConfigError` (naming what to set) when no member of an entry can be called: an
    evaluation of it would only measure the missing key."""
    if any(is_configured(m) for m in members):
        return
    first = members[0]
    _ = first.base_url  # raises the ConfigError that names the variable
    if first.env_key:
        first.api_key()


def _check(k: Any, concurrency: Any, budget_usd: Any) -> None:
    for name, value, low in (("k", k, 1), ("concurrency", concurrency, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InvalidRequest(f"{name} must be a whole number of at least {low}, got {value!r}", param=name)
    if k > 100:
        raise InvalidRequest(f"k must be at most 100, got {k!r}", param="k")
    if budget_usd is not None and (isinstance(budget_usd, bool) or not isinstance(budget_usd, int | float)
                                   or not budget_usd >= 0 or budget_usd == float("inf")):
        raise InvalidRequest(f"budget_usd must be an amount of USD >= 0, got {budget_usd!r}", param="budget_usd")


def _row(query: EvalQuery, entry: Entry, k: int, result: Result | None, attempts: Sequence[Attempt],
         latency_ms: float) -> EvalRow:
    cost = float(sum(a.cost for a in attempts))
    if result is None:
        tried = [a for a in attempts if a.outcome is not Outcome.SKIPPED]
        if not tried:
            reasons = {a.reason for a in attempts}
            reason = "over_budget" if "over_budget" in reasons else next(iter(reasons), None)
            return EvalRow(query_id=query.id, provider=entry.name, outcome="skipped", reason=reason, query=query.query,
                           labelled=query.labelled)
        last = tried[-1]
        outcome = "timeout" if last.outcome in (Outcome.TIMEOUT, Outcome.DEADLINE) else "error"
        return EvalRow(query_id=query.id, provider=entry.name, outcome=outcome, reason=last.reason or outcome,
                       latency_ms=latency_ms, cost_usd=cost, query=query.query, labelled=query.labelled,
                       ndcg=0.0 if query.labelled else None,
                       answer_hit=False if query.answer else None)
    hits = result.hits[:k]
    answered = [a for a in attempts if a.outcome in (Outcome.OK, Outcome.EMPTY, Outcome.INSUFFICIENT)]
    return EvalRow(
        query_id=query.id, provider=entry.name, outcome="ok" if hits else "empty",
        rank=first_correct(query, hits, k), latency_ms=latency_ms, cost_usd=cost,
        urls=[h.url for h in hits], query=query.query, labelled=query.labelled, ndcg=ndcg_at_k(query, hits, k),
        answer_hit=(answer_found(query.answer, hits) is not None) if query.answer else None,
        cached=bool(answered) and all(a.cached for a in answered),
    )


async def _one(query: EvalQuery, entry: Entry, k: int, cache: bool) -> EvalRow:
    options = dict(entry.options)
    options.setdefault("max_results", k)
    if cache:
        options.setdefault("cache_ttl_s", CACHE_TTL_S)
    started = time.perf_counter()
    try:
        result: Result | None = await chain.asearch(query.query, entry.spec, **options)
        attempts = result.attempts if result is not None else []
    except UpstreamError as exc:
        result, attempts = None, list(exc.attempts)
    latency_ms = (time.perf_counter() - started) * 1000
    return _row(query, entry, k, result, attempts, latency_ms)


async def run_eval(
    queries: Any, providers: Any, *, k: int = 5, concurrency: int = 4, budget_usd: float | None = None,
    cache: bool = False, progress: Progress | None = None, done: Iterable[EvalRow] = (),
    on_row: Callable[[EvalRow], Any] | None = None,
) -> EvalReport:
    """:func:`aevaluate`, resumable: ``done`` rows (of an earlier run) are kept and their pairs not run
    again (a ``skipped`` row is run again); ``on_row`` sees each new row as it ends (the CLI's ``--out``)."""
    _check(k, concurrency, budget_usd)
    asked = load_queries(queries)
    evaluated = entries(providers)
    kept: dict[tuple[str, str], EvalRow] = {}
    for row in done:
        if row.outcome != "skipped":
            kept[(row.query_id, row.provider)] = row
    todo = [(q, e) for q in asked for e in evaluated if (q.id, e.name) not in kept]
    total, finished = len(asked) * len(evaluated), len(asked) * len(evaluated) - len(todo)
    results: dict[tuple[str, str], EvalRow] = {}
    ledger = _ledger.Ledger(budget_usd) if budget_usd is not None else None
    pending = iter(todo)

    def report(row: EvalRow) -> None:
        nonlocal finished
        finished += 1
        if on_row is not None:
            on_row(row)
        if progress is not None:
            progress(finished, total)

    async def worker() -> None:
        for query, entry in pending:
            row = await _one(query, entry, k, cache)
            results[(query.id, entry.name)] = row
            report(row)

    if progress is not None:
        progress(finished, total)
    with _ledger.capped(ledger):
        await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, len(todo))))))
    rows = []
    for query in asked:
        for entry in evaluated:
            key = (query.id, entry.name)
            found = results.get(key) or kept.get(key)
            if found is not None:
                rows.append(found)
    answers_only = not any(q.expected_urls for q in asked) and any(q.answer for q in asked)
    return EvalReport.build(k, [e.name for e in evaluated], rows, answers_only=answers_only)


async def aevaluate(queries: Any, providers: Any, *, k: int = 5, concurrency: int = 4,
                    budget_usd: float | None = None, cache: bool = False,
                    progress: Progress | None = None) -> EvalReport:
    """Evaluate ``providers`` on ``queries`` (see :func:`evaluate`)."""
    return await run_eval(queries, providers, k=k, concurrency=concurrency, budget_usd=budget_usd, cache=cache,
                          progress=progress)


def evaluate(queries: Any, providers: Any, *, k: int = 5, concurrency: int = 4, budget_usd: float | None = None,
             cache: bool = False, progress: Progress | None = None) -> EvalReport:
    """Run every query through every entry of ``providers`` and score them: an :class:`~perplexed.EvalReport`.

    ``queries``: a JSON Lines file's path, or an iterable of dicts or :class:`~perplexed.EvalQuery`
    (``{"id"?, "query", "expected_urls"?, "answer"?}``). ``providers``: a list whose entries are each evaluated
    on their own (a provider name or spec, a Provider, or a chain: a list, ``"a,b,c"``, or
    ``{"providers": [...], "strategy": ..., "name": ...}``). ``k``: the hits scored per query. ``concurrency``:
    searches at once. ``budget_usd``: a hard cap on the whole run. ``cache``: serve repeats from the result
    cache (marked ``cached``). ``progress(done, total)`` is called as rows end."""
    return _portal.run(aevaluate, queries, providers, k=k, concurrency=concurrency, budget_usd=budget_usd,
                       cache=cache, progress=progress)
