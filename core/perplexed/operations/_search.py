"""The search entry point: :func:`search` / :func:`asearch`, the chain search of :mod:`perplexed.engine.chain` plus page
content (``fetch_content=N``: the top hits' pages, :func:`with_pages`).

One call, one deadline, one budget. The entry makes the call's absolute deadline (``deadline_ms`` from its start,
on the running loop's clock) and its :class:`~perplexed.policy._policy.Purse` (``budget_usd``) once, and hands both
down: the search runs by that deadline, then the page fetches run by the same deadline, drawing on the same
budget. Page enrichment is a step inside the call: it ends by the deadline with the pages that finished; each hit
whose page did not come keeps its place and says why in :attr:`~perplexed.Hit.page_failure` (``timeout``,
``over_budget``, ``private_address``, or the fetch's own failure). Each paid fetch reserves its price against
``budget_usd`` (and the spend limits) before it is made, like a search attempt (the engine's reservation).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from perplexed._errors import InvalidRequest, PerplexedError, UpstreamError
from perplexed._logs import get_logger
from perplexed._models import Attempt, Outcome, Page, Result
from perplexed.engine.chain import asearch as _chain_asearch
from perplexed.engine.chain import prepare, run
from perplexed.engine.chain import search as _chain_search
from perplexed.net import _portal
from perplexed.net._ssrf import check_literal
from perplexed.policy._options import FETCH_OPTION_NAMES, ChainOptions
from perplexed.policy._policy import Purse

if TYPE_CHECKING:
    from perplexed.operations._fetch import FetchPlan

# the fetching side (perplexed.fetchers, operations._fetch, net._fetch_net: httpx) is imported when a search asks
# for pages (fetch_content=N): a plain search never imports it (issue 35: cold start)

__all__ = [
    "ENRICH_CONCURRENCY",
    "FetchRequest",
    "asearch",
    "check_fetch_content",
    "fetch_plan",
    "search",
    "with_pages",
]

logger = get_logger("perplexed.fetch")

_FETCH_NAMES = frozenset(FETCH_OPTION_NAMES)  # the hot path of search(): one set check
#: how many of a search's pages are fetched at once
ENRICH_CONCURRENCY = 8
# what the call may run past its deadline while the fetches still running are cancelled and closed
_CLOSE_S = 0.02

FetchRequest = tuple[int, Any, dict[str, Any]]
"""``fetch_content`` validated: (how many top hits, -1 for all; the fetch-provider spec; the fetch options)."""


def _split_fetch_kw(options: dict[str, Any]) -> dict[str, Any]:
    return {k: options.pop(k) for k in FETCH_OPTION_NAMES if k in options}


def _count(fetch_content: Any) -> int | None:
    """How many top hits to fetch: None for none, -1 for all; InvalidRequest for anything else."""
    if fetch_content is None or fetch_content is False:
        return None
    if fetch_content is True:
        return -1
    if isinstance(fetch_content, int) and fetch_content >= 0:
        return fetch_content or None
    raise InvalidRequest(
        f"fetch_content must be True, False or a number of top hits, got {fetch_content!r}", param="fetch_content"
    )


def fetch_plan(fetch_content: Any, fetch_provider: Any, options: dict[str, Any]) -> FetchRequest | None:
    """``fetch_content`` / ``fetch_provider`` and the fetch options (taken out of ``options``), validated before
    the search is paid for: (how many top hits, -1 for all; the fetch chain; fetch options), or None."""
    count = _count(fetch_content)
    fetch_kw = _split_fetch_kw(options)
    if count is None:
        if fetch_provider is not None:
            raise InvalidRequest("fetch_provider needs fetch_content=N (how many top hits to fetch)",
                                 param="fetch_provider")
        if fetch_kw:
            name = next(iter(fetch_kw))
            raise InvalidRequest(f"{name} is a fetch option: pass fetch_content=N to fetch the top hits' pages",
                                 param=name)
        return None
    from perplexed.fetchers import resolve
    from perplexed.operations._fetch import build_options

    fetchers, _ = resolve(fetch_provider)
    build_options(dict(fetch_kw), fetchers)
    return count, fetch_provider, fetch_kw


def check_fetch_content(fetch_content: Any = None, fetch_provider: Any = None, **options: Any) -> None:
    """Validate search's ``fetch_content``, ``fetch_provider`` and fetch options (``allow_private``,
    ``max_chars``, ...) without searching: for components configured once and used later (the adapters)."""
    fetch_plan(fetch_content, fetch_provider, dict(options))


async def asearch(query: str, provider: Any = None, *, fetch_content: Any = None, fetch_provider: Any = None,
                  **options: Any) -> Result:
    """:func:`perplexed.engine.chain.asearch`, plus ``fetch_content=N`` (the N top hits' pages, ``True`` for all;
    ``fetch_provider=`` picks the fetch chain, default ``["http"]``): each fetched hit gets ``content`` (the page's
    text) and ``page``; ``Result.cost`` includes what the fetches cost. Fetch options (``max_chars``,
    ``allow_private``, ``respect_robots``, ...) may be given too. ``deadline_ms`` and ``budget_usd`` hold for the
    whole call, page fetches included; a hit whose page did not come says why in ``Hit.page_failure``."""
    if fetch_content is None and fetch_provider is None and (not options or _FETCH_NAMES.isdisjoint(options)):
        return await _chain_asearch(query, provider, **options)
    fetch = fetch_plan(fetch_content, fetch_provider, options)  # before the search is paid for
    if fetch is None:
        return await _chain_asearch(query, provider, **options)
    started = asyncio.get_running_loop().time()
    on_attempt = options.pop("on_attempt", None)
    prepared = prepare(query, provider, **options)
    deadline = started + prepared.chain.deadline_ms / 1000  # the call's one deadline
    purse = Purse(prepared.chain.budget_usd)  # the call's one budget
    result = await run(prepared, on_attempt=on_attempt, deadline=deadline, purse=purse)
    return await with_pages(result, fetch, deadline, purse)


def search(query: str, provider: Any = None, *, fetch_content: Any = None, fetch_provider: Any = None,
           **options: Any) -> Result:
    """Synchronous :func:`asearch` (the same coroutine on the portal)."""
    if fetch_content is None and fetch_provider is None and (not options or _FETCH_NAMES.isdisjoint(options)):
        return _chain_search(query, provider, **options)
    return _portal.run(asearch, query, provider, fetch_content=fetch_content, fetch_provider=fetch_provider,
                       **options)


# --- page enrichment -----------------------------------------------------------------------------------------


async def with_pages(result: Result, request: FetchRequest, deadline: float, purse: Purse | None = None) -> Result:
    """``result`` with its top hits' pages fetched (``request``: see :func:`fetch_plan`), every fetch ending by
    ``deadline`` (absolute, the loop's clock) and reserving its price in ``purse`` (the call's ``budget_usd``).

    Returns by the deadline (plus the few milliseconds it takes to close the fetches still running) with every
    hit: a fetched one has ``content`` and ``page``; one whose page did not come has ``page_failure``. A URL the
    trust boundary refuses (a literal private address) is refused at once, never fetched, never waited for."""
    count, fetch_provider, fetch_kw = request
    hits = result.hits if count < 0 else result.hits[:count]
    if not hits:
        return result
    from perplexed.fetchers import resolve
    from perplexed.net._fetch_net import split_url
    from perplexed.operations._fetch import DEFAULT_FALLBACK_ON, FetchPlan, build_options, clean_url

    providers, is_chain = resolve(fetch_provider)
    options = build_options(dict(fetch_kw), providers)
    chain = ChainOptions.build(fallback_on=DEFAULT_FALLBACK_ON)  # the member budgets; the deadline is the call's
    label = ",".join(p.label for p in providers)
    failures: dict[int, Attempt] = {}
    plans: dict[int, FetchPlan] = {}
    for i, hit in enumerate(hits):
        if hit.url[:7].lower() == "file://":
            continue  # a local document's hit: its text is the index's own
        try:  # the trust boundary's literal check, per URL: a refused one never holds the others up
            url = clean_url(hit.url)
            check_literal(url, split_url(url).hostname or "", options.allow_private)
        except InvalidRequest as exc:
            failures[i] = _refused(label, exc)
            continue
        plans[i] = FetchPlan(url, providers, is_chain, options, chain)
    pages = await _fetch_all(plans, deadline, purse, label) if plans else {}
    new_hits = list(result.hits)
    fetches: list[Attempt] = list(result.fetches)
    for i in range(len(hits)):
        got = pages.get(i)
        if isinstance(got, Page):
            new_hits[i] = new_hits[i].model_copy(update={"content": got.content, "page": got})
            fetches.extend(got.attempts)
            continue
        if isinstance(got, UpstreamError):
            fetches.extend(got.attempts)
            why: Attempt | None = _why(got, label)
        elif isinstance(got, Attempt):
            why = got
        else:
            why = failures.get(i)
        if why is not None:
            new_hits[i] = new_hits[i].model_copy(update={"page_failure": why})
    return result.with_fetches(new_hits, fetches)


async def _fetch_all(plans: dict[int, FetchPlan], deadline: float, purse: Purse | None,
                     label: str) -> dict[int, Page | UpstreamError | Attempt]:
    """Fetch every plan (at most :data:`ENRICH_CONCURRENCY` at a time) by ``deadline``; what has not finished
    then is cancelled and recorded as a ``timeout``."""
    from perplexed.operations._fetch import run_fetch

    loop = asyncio.get_running_loop()
    semaphore = asyncio.Semaphore(ENRICH_CONCURRENCY)
    out: dict[int, Page | UpstreamError | Attempt] = {}

    async def one(i: int, plan: FetchPlan) -> None:
        async with semaphore:
            if loop.time() >= deadline:
                out[i] = _late(label)
                return
            try:
                out[i] = await run_fetch(plan, deadline=deadline, purse=purse)
            except UpstreamError as exc:
                out[i] = exc
            except PerplexedError as exc:  # refused once resolved (a name of private addresses), a set-up error
                out[i] = _refused(label, exc)

    tasks = [asyncio.create_task(one(i, plan)) for i, plan in plans.items()]
    try:
        _done, pending = await asyncio.wait(tasks, timeout=max(0.0, deadline - loop.time()) + _CLOSE_S)
        if pending:  # the engine caps every call at the deadline: this is a fetch stuck in its set-up
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=_CLOSE_S)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
    for i in plans:
        out.setdefault(i, _late(label))
    return out


def _late(label: str) -> Attempt:
    return Attempt(provider=label, outcome=Outcome.TIMEOUT, reason="timeout",
                   error="the call's deadline passed before this page was fetched")


def _refused(label: str, exc: PerplexedError) -> Attempt:
    reason = getattr(exc, "reason", None) or "bad_request"
    return Attempt(provider=label, outcome=Outcome.ERROR, reason=reason, error=f"{reason}: {exc.message}")


def _why(exc: UpstreamError, label: str) -> Attempt:
    """The attempt that says why a page did not come: the last one with a reason (a member left uncalled by the
    deadline is a ``timeout``)."""
    attempts = exc.attempts
    for attempt in reversed(attempts):
        if attempt.reason is not None:
            return attempt
    if attempts:
        last = attempts[-1]
        if last.outcome is Outcome.DEADLINE:
            return last.model_copy(update={"reason": "timeout"})
        return last
    return Attempt(provider=label, outcome=Outcome.ERROR, reason=exc.reason, error=exc.message)

