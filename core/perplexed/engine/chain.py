"""Search: validation, the search operation the engine runs, and the provider-flow driver.

The run loop, timing, cancellation, cost accounting, governance and telemetry live in the engine
(``_engine``), once, for every operation; this module says what a search is (:class:`SearchOperation`) and
drives a provider's sans-io flow over HTTP (:func:`drive_flow`). The sync API runs the same coroutine: in the
caller's thread with httpx's sync client when every await of it completes at once (``net._direct``,
:func:`_runs_direct`), else on the portal loop (``_portal``), so sync and async behave identically. A cache
hit of the in-process store is answered before the engine is set up (``_cache_hit``; in the caller's thread
for the sync API).

Rules (README, "Chain rules"):

1. A single provider (not a list) is a plain call: one attempt.
2. Providers are tried in order; the first ``ok`` answer ends the chain.
3. ``fallback_on`` (default ``error`` and ``empty``) says which outcomes move on; ``timeout`` counts as
   ``error``.
4. Each provider gets ``provider_timeout_ms``, capped by what is left of ``deadline_ms``; an overrun is
   cancelled (connection closed) and recorded as ``timeout``.
5. Once the deadline has passed, the providers left are recorded as ``deadline`` and not called.
6. Every attempt carries its cost; ``Result.cost`` is the sum; an empty answer from a paid provider bills.
7. When every provider fails, an empty answer is still the result; with no answer at all,
   ``UpstreamError("all_providers_failed", attempts)``.
8. Each provider call is a span, and each attempt emits ``("perplexed", "search", "attempt")``.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import threading
from collections.abc import Callable, Coroutine, Generator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from perplexed import telemetry
from perplexed._errors import BodyTooLargeError, ContentDecodingError
from perplexed._logs import get_logger
from perplexed._models import Attempt, Hit, ProviderAnswer, Result, _result_of
from perplexed.engine import _cache_hit, _engine, _governance, _usage
from perplexed.engine._engine import AttemptCallback
from perplexed.engine._hits import _finalize, _norm_url, finalize_hits, fuse
from perplexed.engine._strategies import check_floor, judge
from perplexed.net import _direct, _portal
from perplexed.policy._keywords import check_names, check_search_options
from perplexed.policy._options import (
    _DEFAULT_SEARCH_OPTIONS,
    CHAIN_OPTION_NAMES,
    ChainOptions,
    SearchOptions,
    clean_query,
    split_options,
)
from perplexed.policy._policy import Purse
from perplexed.providers import CallableProvider, Provider, resolve
from perplexed.providers._base import to_answer
from perplexed.store.memory import MemoryStore

if TYPE_CHECKING:
    import httpx

# perplexed.net._http (httpx, httpcore) is imported where a request is made: a chain of in-process providers
# (``local``, a function) never imports httpx (issue 35: cold start)

__all__ = [
    "ATTEMPT_EVENT",
    "AttemptCallback",
    "Search",
    "SearchOperation",
    "asearch",
    "check_names",
    "check_options",
    "drive_flow",
    "finalize_hits",
    "prepare",
    "search",
]

_providers_logger = get_logger("perplexed.providers")

_HTTP: Any = None  # perplexed.net._http, once a request was made (imported then: see above)


def _http() -> Any:
    """:mod:`perplexed.net._http`, imported on the first request and kept (no import statement per call)."""
    global _HTTP
    if _HTTP is None:
        from perplexed.net import _http as module

        _HTTP = module
    return _HTTP

ATTEMPT_EVENT = ("perplexed", "search", "attempt")
T = TypeVar("T")
_ = _norm_url  # the de-duplication key, importable from here as before
_CHAIN_NAMES = frozenset(CHAIN_OPTION_NAMES)


class Search:
    """A validated search: query, providers, chain options and search options (built by :func:`prepare`)."""

    __slots__ = ("chain", "is_chain", "options", "providers", "query")

    def __init__(
        self,
        query: str,
        providers: list[Provider],
        is_chain: bool,
        chain: ChainOptions,
        options: SearchOptions,
    ) -> None:
        self.query = query
        self.providers = providers
        self.is_chain = is_chain
        self.chain = chain
        self.options = options


def prepare(query: object, provider: Any = None, **options: Any) -> Search:
    """Validate everything before any call: query, provider spec, chain and search options.

    A keyword that is neither a search nor a chain option, nor one a chain member declares, is an
    :class:`~perplexed.InvalidRequest` naming the closest valid one. Raises
    :class:`~perplexed.InvalidRequest` or :class:`~perplexed.ConfigError`.
    """
    return prepare_with(clean_query(query), provider, options)


def prepare_with(query: str, provider: Any, options: dict[str, Any], also: tuple[str, ...] = ()) -> Search:
    """:func:`prepare` for a cleaned query; ``also`` are other keywords valid where the call was made
    (offered as "did you mean" suggestions)."""
    chain_kw, search_kw = split_options(dict(options))
    chain = ChainOptions.build(**chain_kw)
    opts = SearchOptions.build(**search_kw)
    providers, is_chain = resolve(provider)
    check_search_options(opts, providers, also=also)
    check_floor(chain.min_hits, opts.max_results)
    return Search(query, providers, is_chain, chain, opts)


def check_options(provider: Any = None, *, suggest: tuple[str, ...] = (), **options: Any) -> None:
    """Validate a provider spec and its chain and search options without a query (what :func:`prepare`
    checks): for components that are configured once and queried later (the framework adapters).
    ``suggest``: other names valid where the options were given, offered in "did you mean" errors."""
    prepare_with("", provider, options, also=tuple(suggest))


def _prepare_plain(query: object, provider: Any) -> Search:
    """:func:`prepare` for a call that sets no option (the common case): the shared default options."""
    cleaned = clean_query(query)
    chain, opts = ChainOptions.build(), SearchOptions.build()
    providers, is_chain = resolve(provider)
    return Search(cleaned, providers, is_chain, chain, opts)


def _prepared(
    query: object,
    provider: Any,
    provider_timeout_ms: int | None,
    deadline_ms: int | None,
    fallback_on: Any,
    max_results: int | None,
    options: dict[str, Any],
) -> Search:
    """The argument dispatch of :func:`search` and :func:`asearch`: a call that sets no option (the common
    case) shares the default options; any other is validated in full by :func:`prepare`."""
    memo_key: tuple[Any, ...] | None = None
    if (len(options) == 1 and max_results is None and provider_timeout_ms is None and deadline_ms is None
            and fallback_on is None and type(query) is str):  # one option (cache_ttl_s=...): see _CHECKED
        ((name, value),) = options.items()
        kind = type(value)
        if kind is int or kind is float or kind is str or kind is bool:  # hashable, equal by value
            memo_key = (query, name, kind, value)
            known = _CHECKED.get(memo_key)  # only a chain option's calls are kept: a hit is one
            if known is not None:  # query and option checked before (pure checks): only the provider is new
                providers, is_chain = resolve(provider)
                return Search(known[0], providers, is_chain, known[1], _DEFAULT_SEARCH_OPTIONS)
    if (
        not options
        and provider_timeout_ms is None
        and deadline_ms is None
        and fallback_on is None
        and max_results is None
    ):
        return _prepare_plain(query, provider)
    if max_results is None and options and _CHAIN_NAMES.issuperset(options):
        # chain options only (cache_ttl_s=..., a service's settings): prepare()'s checks, in its order, without
        # the search options' (the defaults: nothing to check)
        cleaned = clean_query(query)
        chain = ChainOptions.build(provider_timeout_ms=provider_timeout_ms, deadline_ms=deadline_ms,
                                   fallback_on=fallback_on, **options)
        providers, is_chain = resolve(provider)
        check_floor(chain.min_hits, _DEFAULT_SEARCH_OPTIONS.max_results)
        if memo_key is not None:
            if len(_CHECKED) >= 256:
                _CHECKED.clear()
            _CHECKED[memo_key] = (cleaned, chain)
        return Search(cleaned, providers, is_chain, chain, _DEFAULT_SEARCH_OPTIONS)
    return prepare(
        query,
        provider,
        provider_timeout_ms=provider_timeout_ms,
        deadline_ms=deadline_ms,
        fallback_on=fallback_on,
        max_results=max_results,
        **options,
    )


# (query, chain option, its type, its value) -> (the cleaned query, the chain options) of a call that passed
# prepare()'s checks of them: clean_query, ChainOptions.build and check_floor are pure functions of those, so the
# same search again (a cache hit, usually) skips them; bounded, cleared when full
_CHECKED: dict[tuple[Any, ...], tuple[str, ChainOptions]] = {}


async def asearch(
    query: str,
    provider: Any = None,
    *,
    provider_timeout_ms: int | None = None,
    deadline_ms: int | None = None,
    fallback_on: Any = None,
    max_results: int | None = None,
    on_attempt: AttemptCallback | None = None,
    **options: Any,
) -> Result:
    """Search ``query`` through ``provider`` (a name, dict, Provider, function, or a list of them = a chain).

    ``provider=None`` uses the default chain (``PERPLEXED_PROVIDER``). Chain options: ``provider_timeout_ms``
    (default 15000), ``deadline_ms`` (default 30000), ``fallback_on`` (default ``("error", "empty")``);
    ``strategy`` (``"sequential"``, ``"hedged"`` with ``hedge_after_ms``, ``"merge"`` with
    ``merge_providers``) and the quality floor ``min_hits`` / ``accept`` (see docs/strategies.md).
    Search options (``max_results``, ``include_domains``, ``exclude_domains``, ``recency``,
    ``published_after``, ``published_before``, ``language``, ``country``, ``safe_search``, and any
    provider-specific option) go to every provider. ``on_attempt`` is called with each :class:`Attempt` as it
    ends. Raises :class:`~perplexed.UpstreamError` (``reason="all_providers_failed"``) when no provider
    answered, :class:`~perplexed.InvalidRequest` / :class:`~perplexed.ConfigError` for bad input.
    """
    prepared = _prepared(query, provider, provider_timeout_ms, deadline_ms, fallback_on, max_results, options)
    op = SearchOperation(prepared)
    probe = _cache_hit.lookup(op, on_attempt, asyncio.get_running_loop())  # a cache hit, at once
    if probe.result is not None:
        return probe.result
    # the engine at once (what run() does): each coroutine layer is resumed at every await of the request
    result: Result = await _engine.Engine(op, on_attempt, known_key=_known(probe)).run()
    return result


def search(
    query: str,
    provider: Any = None,
    *,
    provider_timeout_ms: int | None = None,
    deadline_ms: int | None = None,
    fallback_on: Any = None,
    max_results: int | None = None,
    on_attempt: AttemptCallback | None = None,
    **options: Any,
) -> Result:
    """Synchronous :func:`asearch`: same arguments, same rules, same budgets (it runs the same coroutine)."""
    prepared = _prepared(query, provider, provider_timeout_ms, deadline_ms, fallback_on, max_results, options)
    op = SearchOperation(prepared)
    probe: _cache_hit.Probe | None = None
    if on_attempt is None and not telemetry.listening() and not _portal.on_portal_thread():
        # a cache hit in the caller's thread: no hop to the portal loop (callbacks and events, when asked
        # for, run on the portal as for any other search)
        probe = _cache_hit.lookup(op, None, _portal.current_loop())
        if probe.result is not None:
            return probe.result
        if _runs_direct(op):  # the engine in this thread, with the sync I/O (see net._direct)
            return _direct.run(_run_op, op, None, probe)
    return _portal.run(_run_op, op, on_attempt, probe)


def _runs_direct(op: SearchOperation) -> bool:
    """Whether a sync search (no ``on_attempt``, no telemetry listener, not on the portal's thread: checked by
    :func:`search`) runs in the caller's thread with no event loop (``net._direct``) rather than on the
    portal: when every await of its run completes at once. That is: no event loop runs in this thread, the
    strategy is ``sequential``, nothing is governed (no cache, budget, store, rate limit, cool-down: no
    single flight nor store round trip), the usage ledger is in-process, and every member is an HTTP
    provider on the pooled client (a function or ``local`` provider runs in a thread of its own, awaited
    on a loop; a custom transport may be async)."""
    if op.chain.strategy != "sequential":
        return False
    for member in op.members:
        if isinstance(member, CallableProvider) or member.transport is not None:
            return False
    try:
        asyncio.get_running_loop()
        return False
    except RuntimeError:
        pass
    try:
        if _governance.plan(op) is not None:
            return False
        store = _usage.target()
    except Exception:  # an unopenable PERPLEXED_STORE: the engine says so, on the portal
        return False
    return _usage._is_default(store) or type(store) is MemoryStore


async def run(prepared: Search, *, on_attempt: AttemptCallback | None = None, deadline: float | None = None,
              purse: Purse | None = None) -> Result:
    """Run a prepared search down its providers (through the engine). ``deadline`` (absolute, the loop's
    clock) and ``purse`` (the call's ``budget_usd``) when the search is one step of a larger call."""
    op = SearchOperation(prepared)
    if deadline is None and purse is None:  # a search of its own: a cache hit at once
        probe = _cache_hit.lookup(op, on_attempt, asyncio.get_running_loop())
        if probe.result is not None:
            return probe.result
        result: Result = await _engine.Engine(op, on_attempt, known_key=_known(probe)).run()
        return result
    result = await _engine.Engine(op, on_attempt, deadline=deadline, purse=purse).run()
    return result


def _known(probe: _cache_hit.Probe) -> tuple[Provider, str] | None:
    """The cache key a look-up that missed computed, for the engine's admission of that member."""
    return (probe.member, probe.key) if probe.member is not None and probe.key is not None else None


async def _run_op(op: SearchOperation, on_attempt: AttemptCallback | None, probe: _cache_hit.Probe | None) -> Result:
    """A search of its own (its own deadline and budget): a cache hit answered at once (``_cache_hit``), else
    the engine (with the cache key the look-up computed). ``probe``: the look-up made already, if any."""
    if probe is None:
        probe = _cache_hit.lookup(op, on_attempt, asyncio.get_running_loop())
        if probe.result is not None:
            return probe.result
    result: Result = await _engine.Engine(op, on_attempt, known_key=_known(probe)).run()
    return result


class SearchOperation:
    """Search as an operation of the engine (see ``_engine``): query and options -> hits."""

    __slots__ = ("_options_key", "chain", "members", "options", "prepared", "subject")

    name = "search"
    subject_key = "query"
    nothing: list[Hit] = []  # never modified: Result copies its hit list

    def __init__(self, prepared: Search) -> None:
        self.prepared = prepared
        self.subject = prepared.query
        self.members = prepared.providers
        self.chain = prepared.chain
        self.options = options = prepared.options
        self._options_key: str | None = "" if options is _DEFAULT_SEARCH_OPTIONS else None  # search_options_key

    def client(self, member: Provider) -> httpx.AsyncClient | httpx.Client | None:
        if isinstance(member, CallableProvider):
            return None
        return (_HTTP or _http()).pooled(member.transport)  # type: ignore[no-any-return]

    def call(
        self, member: Provider, client: httpx.AsyncClient | httpx.Client | None
    ) -> Coroutine[Any, Any, tuple[ProviderAnswer, bool]]:
        return _call(member, self.subject, self.options, client)  # awaited by the engine: no frame of its own

    def finish(self, member: Provider, raw: tuple[ProviderAnswer, bool]) -> tuple[list[Hit], float, str | None]:
        answer, owned = raw
        hits = _finalize(answer.hits, member.label, self.options, owned)
        charged = answer.cost if answer.cost is not None else member.price(self.options)
        return hits, charged, answer.detail

    def is_empty(self, answer: list[Hit]) -> bool:
        return not answer

    def size(self, answer: list[Hit]) -> int:
        return len(answer)

    def insufficient(self, label: str, answer: list[Hit], attempts: Callable[[], list[Attempt]]) -> str | None:
        chain = self.chain
        if chain.min_hits is None and chain.accept is None:
            return None
        query = self.subject

        def as_result() -> Result:
            return Result(query=query, provider=label, hits=list(answer), attempts=attempts())

        return judge(answer, chain.min_hits, chain.accept, as_result)

    def price(self, member: Provider) -> float:
        return member.price(self.options)

    def cache_parts(self, member: Provider) -> tuple[str, ...] | None:
        if member.name == "local":  # the embedded index answers in milliseconds and changes when rebuilt
            return None
        if self._options_key is None:
            self._options_key = search_options_key(self.options)
        extra = ""
        if member.options:
            extra = json.dumps(member.options, sort_keys=True, default=repr, separators=(",", ":"))
        return ("cache", self.subject, self._options_key, extra)

    def to_cache(self, answer: list[Hit]) -> list[Hit]:
        return answer

    def from_cache(self, stored: Sequence[Hit]) -> list[Hit]:
        return list(stored)

    def combine(self, answers: Sequence[tuple[str, list[Hit]]]) -> list[Hit]:
        own = {m.label: m.url_schemes for m in self.members if m.url_schemes}  # file:// from local, ...
        return fuse(answers, self.options.max_results, own_schemes=own)

    def result(self, provider: str, answer: list[Hit], attempts: list[Attempt]) -> Result:
        for hit in answer:
            if type(hit) is not Hit:  # a store's own objects (dicts...): the validator makes them hits
                return Result(query=self.subject, provider=provider, hits=answer, attempts=attempts)
        # the hits and attempts are of their types already: the result without the validator (a list of its own)
        return _result_of(self.subject, provider, list(answer), attempts, 0.0)


def search_options_key(options: SearchOptions) -> str:
    """The search options that change an answer, as a stable string ("" for the defaults)."""
    if options is _DEFAULT_SEARCH_OPTIONS:
        return ""
    return json.dumps(options.model_dump(mode="json"), sort_keys=True, default=repr, separators=(",", ":"))


async def _call(
    provider: Provider, query: str, options: SearchOptions, client: httpx.AsyncClient | httpx.Client | None = None
) -> tuple[ProviderAnswer, bool]:
    """One provider call. Returns the answer and whether its hits are fresh objects the engine may modify."""
    if isinstance(provider, CallableProvider):
        if provider.is_async:
            value: Any = await provider.asearch(query, options)
        else:
            value = await _in_thread(provider.search, query, options)
        if inspect.isawaitable(value):  # a sync callable that returned a coroutine (a lambda around an async fn)
            value = await value
        return to_answer(value, provider.label), False
    if _providers_logger.isEnabledFor(logging.DEBUG):
        provider.log_ignored(options)
    answer: ProviderAnswer = await drive_flow(provider, provider.flow(query, options), client)
    return answer, True


async def read_body(provider: Provider, response: httpx.Response) -> bytes:
    """A streamed response's body, decoded and capped at ``provider.max_body_bytes``: a body past the cap is a
    ``body_too_large`` ProviderError, a corrupt or undecodable one ``malformed``."""
    try:
        return await (_HTTP or _http()).read_capped(response, provider.max_body_bytes)  # type: ignore[no-any-return]
    except BodyTooLargeError as exc:
        raise provider.fail("body_too_large", exc.message, response) from None
    except ContentDecodingError as exc:
        raise provider.fail("malformed", exc.message, response) from None


async def drive_flow(
    provider: Provider,
    flow: Generator[httpx.Request, httpx.Response, T],
    client: httpx.AsyncClient | httpx.Client | None = None,
) -> T:
    """Drive a provider's sans-io flow over HTTP: send each request it yields, read the response (capped at
    ``provider.max_body_bytes``, redirects only as :func:`_redirect` allows), send it back, until the flow
    returns its value. The one driver of provider flows (the chain; ``doctor --live`` records through a
    transport). Raises the flow's failures, ``ProviderError`` for a body too large, malformed or redirected.

    ``client`` may be the sync pooled client (the sync API's direct path, see ``net._direct``): the same
    logic, every await then completes at once (``_http.send``, ``read_capped`` and ``close`` see a sync
    client and response)."""
    http = _HTTP or _http()
    close = http.close
    try:
        request = next(flow)
        if client is None:
            client = http.pooled(provider.transport)
        hops = 0
        while True:
            response = await http.send(client, request)
            try:
                target = http.redirect_origin(response)
                if target is not None:  # never followed blindly: a key must not reach another origin
                    request = _redirect(provider, request, response, target, hops)
                    hops += 1
                    continue
                await read_body(provider, response)
            finally:
                await close(response)
            try:
                request = flow.send(response)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
    finally:
        flow.close()


def _redirect(
    provider: Provider, request: httpx.Request, response: httpx.Response, target: str, hops: int
) -> httpx.Request:
    """The request to send for a redirect, or a ``redirect`` ProviderError: only a provider that sends no
    credential may follow one (``Provider.max_redirects``), only to its own origin, and only so many times."""
    from perplexed.net._http import origin

    here = origin(request.url)
    if target == here and hops < provider.max_redirects and response.next_request is not None:
        return response.next_request
    if not provider.max_redirects:
        why = f"{provider.label} sends a credential and follows no redirect"
    elif target != here:
        why = f"another origin than {here}"
    else:
        why = f"more than {provider.max_redirects} redirects"
    raise provider.fail("redirect", f"HTTP {response.status_code} redirect to {target} not followed ({why})", response)


async def _in_thread(fn: Callable[..., T], /, *args: Any) -> T:
    """Run a blocking provider function in its own daemon thread and await its result.

    Unlike ``asyncio.to_thread`` (a bounded pool whose threads are joined at exit), a sync provider that
    hangs past its budget neither starves the next calls nor keeps the interpreter from exiting: on
    timeout the await is cancelled and the thread's eventual result is dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    ctx = contextvars.copy_context()

    def _deliver(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def _work() -> None:
        ok = False
        result: Any
        try:
            result = ctx.run(fn, *args)
            ok = True
        except BaseException as exc:  # delivered to the awaiting coroutine, not raised in this thread
            result = exc
        try:
            loop.call_soon_threadsafe(_deliver, ok, result)
        except RuntimeError:  # the loop closed while the function ran (its caller timed out long ago)
            pass

    threading.Thread(target=_work, name="perplexed-provider", daemon=True).start()
    return await future


