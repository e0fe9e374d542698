"""The chain engine: runs a search down an ordered list of providers until one answers.

This module owns all search I/O, timing, cancellation, cost accounting and telemetry, once. The sync API
runs the same coroutine on the portal loop (see ``_portal``), so sync and async behave identically.

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
import functools
import inspect
import logging
import math
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from . import _governance, _portal, telemetry
from ._errors import (
    BodyTooLargeError,
    ConfigError,
    ContentDecodingError,
    PerplexedError,
    ProviderError,
    UpstreamError,
    redact,
)
from ._http import get_client, origin, read_capped, redirect_origin
from ._keywords import check_names, check_search_options
from ._models import Attempt, Hit, Outcome, ProviderAnswer, Result
from ._options import ChainOptions, SearchOptions, clean_query, split_options
from .providers import CallableProvider, Provider, resolve
from .providers._base import to_answer

__all__ = [
    "ATTEMPT_EVENT", "Search", "asearch", "check_names", "check_options", "finalize_hits", "prepare", "search"
]

logger = logging.getLogger("perplexed.chain")
_providers_logger = logging.getLogger("perplexed.providers")

ATTEMPT_EVENT = ("perplexed", "search", "attempt")
AttemptCallback = Callable[[Attempt], None]
T = TypeVar("T")


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
    prepared = Search(query, providers, is_chain, chain, opts)
    if chain.min_hits is not None:
        from ._strategies import validate

        validate(prepared)
    return prepared


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
    if (
        not options
        and provider_timeout_ms is None
        and deadline_ms is None
        and fallback_on is None
        and max_results is None
    ):
        prepared = _prepare_plain(query, provider)
    else:
        prepared = prepare(
            query,
            provider,
            provider_timeout_ms=provider_timeout_ms,
            deadline_ms=deadline_ms,
            fallback_on=fallback_on,
            max_results=max_results,
            **options,
        )
    return await run(prepared, on_attempt=on_attempt)


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
    if (
        not options
        and provider_timeout_ms is None
        and deadline_ms is None
        and fallback_on is None
        and max_results is None
    ):
        prepared = _prepare_plain(query, provider)
    else:
        prepared = prepare(
            query,
            provider,
            provider_timeout_ms=provider_timeout_ms,
            deadline_ms=deadline_ms,
            fallback_on=fallback_on,
            max_results=max_results,
            **options,
        )
    return _portal.run(run, prepared, on_attempt=on_attempt)


async def run(prepared: Search, *, on_attempt: AttemptCallback | None = None) -> Result:
    """Run a prepared search down its providers (the engine)."""
    chain = prepared.chain
    if chain.strategy != "sequential" or chain.min_hits is not None or chain.accept is not None:
        from . import _strategies  # hedged, merge, the quality floor

        return await _strategies.run(prepared, on_attempt)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + chain.deadline_ms / 1000
    provider_budget = chain.provider_timeout_ms / 1000
    attempts: list[Attempt] = []
    empty: Provider | None = None
    last_error: BaseException | None = None
    # governance (cache, cool-downs, rate limits, budgets): None when nothing is configured = the plain chain
    gov = _governance.plan(prepared, _attempt)
    with telemetry.span(
        "perplexed.search",
        {"perplexed.query": prepared.query, "perplexed.providers": ",".join(p.label for p in prepared.providers)},
    ) as chain_span:
        reached_end = True
        for provider in prepared.providers:
            remaining = deadline - loop.time()
            if remaining <= 0:
                _record(attempts, Attempt(provider=provider.label, outcome=Outcome.DEADLINE,
                                          error="chain deadline passed before this provider was called"),
                        prepared.query, on_attempt)
                continue
            capped = remaining < provider_budget
            if gov is None:
                attempt, hits, exc = await _attempt(provider, prepared, remaining if capped else provider_budget, capped)
                if attempt.cost > 0:
                    _governance.note_spend(attempt.provider, attempt.cost)
            else:
                attempt, hits, exc = await gov.attempt(provider, remaining if capped else provider_budget, capped)
            if exc is not None:
                last_error = exc
            _record(attempts, attempt, prepared.query, on_attempt)
            outcome = attempt.outcome
            if outcome is Outcome.OK:
                if chain_span is not None:
                    _annotate(chain_span, provider.label, attempts)
                return Result(query=prepared.query, provider=provider.label, hits=hits, attempts=attempts)
            if outcome is Outcome.EMPTY and empty is None:
                empty = provider
            if not chain.moves_on(outcome.value):
                reached_end = False
                break
        if gov is not None and reached_end and empty is None:
            # no answer: the provider whose cool-down ends first gets its trial call now (one at a time)
            remaining = deadline - loop.time()
            trial = await gov.early_trial(min(remaining, provider_budget), remaining < provider_budget)
            if trial is not None:
                attempt, hits, exc = trial
                if exc is not None:
                    last_error = exc
                _record(attempts, attempt, prepared.query, on_attempt)
                if attempt.outcome is Outcome.OK:
                    if chain_span is not None:
                        _annotate(chain_span, attempt.provider, attempts)
                    return Result(query=prepared.query, provider=attempt.provider, hits=hits, attempts=attempts)
                if attempt.outcome is Outcome.EMPTY:
                    if chain_span is not None:
                        _annotate(chain_span, attempt.provider, attempts)
                    return Result(query=prepared.query, provider=attempt.provider, hits=[], attempts=attempts)
        if empty is not None:
            if chain_span is not None:
                _annotate(chain_span, empty.label, attempts)
            return Result(query=prepared.query, provider=empty.label, hits=[], attempts=attempts)
        if chain_span is not None:
            _annotate(chain_span, None, attempts)
        raise UpstreamError("all_providers_failed", attempts) from _safe_cause(last_error)


async def _attempt(
    provider: Provider, prepared: Search, budget: float, capped: bool = False
) -> tuple[Attempt, list[Hit], BaseException | None]:
    """Call one provider within ``budget`` seconds; never raises for the provider's own failures.

    Everything that depends on the provider's answer (coercion, hit normalisation, pricing) happens inside
    the guarded block, so a provider bug or a malformed hit is an ``error`` attempt, never a crashed chain.
    """
    start = time.perf_counter()
    hits: list[Hit] = []
    detail: str | None = None
    failure: BaseException | None = None
    charged: float | None
    with telemetry.span(
        "perplexed.search.provider",
        {"perplexed.provider": provider.label, "perplexed.budget_ms": int(budget * 1000)},
    ) as call_span:
        timer = asyncio.timeout(budget)
        try:
            # the pooled client is set up outside the budget: the first call in a loop must not pay for it
            client = None if isinstance(provider, CallableProvider) else get_client(provider.transport)
            async with timer:
                answer, owned = await _call(provider, prepared.query, prepared.options, client)
            hits, charged = _priced_hits(provider, prepared, answer, owned)
            outcome = Outcome.OK if hits else Outcome.EMPTY
            reason = error = None
            detail = None if answer.detail is None else redact(answer.detail)  # upstream text (Firecrawl's warning)
        except Exception as exc:
            outcome, reason, error, charged, failure = _failed(provider, exc, timer, budget, capped)
        cost = float(charged or 0.0)
        attempt = Attempt(
            provider=provider.label,
            outcome=outcome,
            cost=cost,
            duration_ms=int((time.perf_counter() - start) * 1000),
            billable=cost > 0,
            error=None if error is None else redact(error),
            detail=detail,
            reason=reason,
        )
        if call_span is not None:
            _annotate_call(call_span, attempt)
    return attempt, hits, failure


def _priced_hits(
    provider: Provider, prepared: Search, answer: ProviderAnswer, owned: bool
) -> tuple[list[Hit], float]:
    """The answer's hits, normalised, and what the call cost (reported, else the price table)."""
    hits = _finalize(answer.hits, provider.label, prepared.options, owned)
    charged = answer.cost if answer.cost is not None else provider.price(prepared.options)
    if not (math.isfinite(charged) and charged >= 0):  # result.cost must stay a real amount
        raise provider.fail("malformed", f"provider reported a cost of {charged!r} USD")
    return hits, charged


def _failed(
    provider: Provider, exc: Exception, timer: asyncio.Timeout, budget: float, capped: bool
) -> tuple[Outcome, str, str, float | None, BaseException | None]:
    """How a provider call that raised ``exc`` is recorded: (outcome, reason, error, charged, failure).

    The failure vocabulary of a search: ``timeout`` (the budget, or the provider's own timeout), the
    provider's classified reasons, ``config`` / ``bad_request`` for perplexed's own errors, ``connection``
    for transport errors, and ``unexpected`` for a provider bug (logged with its redacted traceback).
    """
    if isinstance(exc, TimeoutError):
        if timer.expired():
            why = "; capped by the chain deadline" if capped else ""
            return Outcome.TIMEOUT, "timeout", f"no answer within {int(budget * 1000)} ms (cancelled{why})", None, None
        # the provider's own timeout (e.g. a socket timeout inside a sync function)
        return Outcome.TIMEOUT, "timeout", f"timeout: {exc}".rstrip(": "), None, exc
    if isinstance(exc, ProviderError):
        return Outcome.ERROR, exc.reason, str(exc), exc.charged, exc
    if isinstance(exc, PerplexedError):  # ConfigError (missing key), InvalidRequest raised by the provider
        reason = "config" if isinstance(exc, ConfigError) else "bad_request"
        return Outcome.ERROR, reason, f"{reason}: {exc}", None, exc
    if isinstance(exc, httpx.InvalidURL):  # a base_url httpx cannot send to
        return Outcome.ERROR, "config", f"config: invalid URL: {exc}", None, exc
    if isinstance(exc, httpx.HTTPError):
        return Outcome.ERROR, "connection", f"connection: {type(exc).__name__}: {_exc_text(exc)}".rstrip(": "), None, exc
    # a provider bug must not break the chain
    logger.error(
        "provider %s raised unexpectedly:\n%s",
        provider.label,
        redact("".join(traceback.format_exception(exc)).rstrip()),
    )
    return Outcome.ERROR, "unexpected", f"unexpected: {type(exc).__name__}: {exc}".rstrip(": "), None, exc


def _annotate_call(call_span: Any, attempt: Attempt) -> None:
    call_span.set_attribute("perplexed.outcome", attempt.outcome.value)
    call_span.set_attribute("perplexed.cost", attempt.cost)
    call_span.set_attribute("perplexed.duration_ms", attempt.duration_ms)
    if attempt.error:
        call_span.set_attribute("perplexed.error", attempt.error)


def _exc_text(exc: BaseException) -> str:
    """An exception's message, else the first message down its cause chain (httpx's ReadError wraps
    httpcore's, which wraps anyio's, all empty, around the ``ConnectionResetError`` that says what happened)."""
    inner: BaseException | None = exc
    for _ in range(8):
        if inner is None:
            break
        text = str(inner)
        if text:
            return text if inner is exc else f"{type(inner).__name__}: {text}"
        inner = inner.__cause__ or inner.__context__
    return ""


def _safe_cause(exc: BaseException | None) -> BaseException | None:
    """The last provider failure, to chain onto UpstreamError, unless its message would leak a credential."""
    if exc is None or isinstance(exc, PerplexedError):  # perplexed's own messages are redacted already
        return exc
    text = str(exc)
    if redact(text) != text:
        return ProviderError("unexpected", f"{type(exc).__name__}: {text}")  # redacted by PerplexedError
    return exc


async def _call(
    provider: Provider, query: str, options: SearchOptions, client: httpx.AsyncClient | None = None
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
    flow = provider.flow(query, options)
    try:
        request = next(flow)
        if client is None:
            client = get_client(provider.transport)
        hops = 0
        while True:
            response = await client.send(request, stream=True)
            try:
                target = redirect_origin(response)
                if target is not None:  # never followed blindly: a key must not reach another origin
                    request = _redirect(provider, request, response, target, hops)
                    hops += 1
                    continue
                await read_capped(response, provider.max_body_bytes)
            except BodyTooLargeError as exc:
                raise provider.fail("body_too_large", exc.message, response) from None
            except ContentDecodingError as exc:
                raise provider.fail("malformed", exc.message, response) from None
            finally:
                await response.aclose()
            try:
                request = flow.send(response)
            except StopIteration as stop:
                answer: ProviderAnswer = stop.value
                return answer, True
    finally:
        flow.close()


def _redirect(
    provider: Provider, request: httpx.Request, response: httpx.Response, target: str, hops: int
) -> httpx.Request:
    """The request to send for a redirect, or a ``redirect`` ProviderError: only a provider that sends no
    credential may follow one (``Provider.max_redirects``), only to its own origin, and only so many times."""
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


def _record(
    attempts: list[Attempt], attempt: Attempt, query: str, on_attempt: AttemptCallback | None
) -> None:
    attempts.append(attempt)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "attempt provider=%s outcome=%s duration_ms=%d cost=%.6f error=%s",
            attempt.provider, attempt.outcome.value, attempt.duration_ms, attempt.cost, attempt.error,
        )
    if telemetry.listening():
        telemetry.emit(
            ATTEMPT_EVENT,
            {"duration_ms": attempt.duration_ms, "cost": attempt.cost},
            {
                "provider": attempt.provider,
                "outcome": attempt.outcome.value,
                "billable": attempt.billable,
                "error": attempt.error,
                "detail": attempt.detail,
                "query": query,
                "cached": attempt.cached,
                "reason": attempt.reason,
            },
        )
    if on_attempt is not None:
        try:
            on_attempt(attempt)
        except Exception:
            logger.exception("on_attempt callback raised; ignored")


def _annotate(chain_span: Any, answered_by: str | None, attempts: list[Attempt]) -> None:
    chain_span.set_attribute("perplexed.answered_by", answered_by or "")
    chain_span.set_attribute("perplexed.attempts", len(attempts))
    chain_span.set_attribute("perplexed.cost", float(sum(a.cost for a in attempts)))


# --- hit normalisation, the same for every provider -----------------------------------------------------


_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


@functools.lru_cache(maxsize=1024)  # the same URLs come back search after search (urlsplit caches them too)
def _norm_url(url: str) -> str:
    """A key under which two URLs of the same page compare equal: no scheme, no ``www.``, no user info, no
    default port, no fragment, no trailing slash; host lower-cased. Never raises."""
    if url[:1].isspace() or url[-1:].isspace():
        url = url.strip()
    # Fast path for the usual ``http(s)://`` URL in plain ASCII: split it by hand exactly as urlsplit
    # would (netloc up to the first ``/?#``, then fragment, then query). Anything urlsplit treats specially
    # (tabs or newlines it removes, IPv6 brackets it checks, non-ASCII netlocs) takes the general path.
    if url.startswith("https://"):
        start, default_port = 8, ":443"
    elif url.startswith("http://"):
        start, default_port = 7, ":80"
    else:
        return _norm_url_split(url)
    if not url.isascii() or "\t" in url or "\n" in url or "\r" in url or "[" in url or "]" in url:
        return _norm_url_split(url)
    end = len(url)
    for delim in "/?#":
        pos = url.find(delim, start, end)
        if pos >= 0:
            end = pos
    host = url[start:end]
    rest = url[end:]
    if "#" in rest:
        rest = rest.partition("#")[0]
    path, _, query = rest.partition("?")
    if "@" in host:
        host = host.rpartition("@")[2]
    host = host.lower()
    if host.startswith("www."):
        host = host[4:]
    if ":" in host and host.endswith(default_port):
        host = host[: -len(default_port)]
    if path.endswith("/"):
        path = path.rstrip("/")
    key = host + (path or "/")
    return f"{key}?{query}" if query else key


def _norm_url_split(url: str) -> str:
    """:func:`_norm_url` for any URL, through ``urlsplit``."""
    try:
        parts = urlsplit(url)  # cached by urllib for repeated URLs
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = netloc.rpartition("@")[2]
    host = netloc.lower()
    if host.startswith("www."):
        host = host[4:]
    if ":" in host:
        default_port = _DEFAULT_PORTS.get(parts.scheme.lower())
        if default_port and host.endswith(default_port):
            host = host[: -len(default_port)]
    path = parts.path
    if path.endswith("/"):
        path = path.rstrip("/")
    key = host + (path or "/")
    query = parts.query
    return f"{key}?{query}" if query else key


def _domain_match(url: str, domains: list[str]) -> bool:
    """Whether ``url`` is on one of ``domains`` (``example.com`` also matches its subdomains; a domain with a
    path, ``example.com/blog``, matches that path and what is under it, segment-wise)."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower().removeprefix("www.")
    except ValueError:
        return False
    path = parts.path.strip("/")
    for d in domains:
        d_host, _, d_path = d.partition("/")
        d_host = d_host.removeprefix("*.")
        if host != d_host and not host.endswith("." + d_host):
            continue
        d_path = d_path.strip("/")
        if not d_path or path == d_path or path.startswith(d_path + "/"):
            return True
    return False


def finalize_hits(hits: list[Hit], provider: str, options: SearchOptions) -> list[Hit]:
    """Apply client-side domain filters, merge duplicate URLs, cap at ``max_results``, number 1..n.

    The input hits are not modified: the result holds copies (with ``id`` and ``provider`` set).
    """
    return _finalize(hits, provider, options, owned=False)


def _finalize(hits: list[Hit], provider: str, options: SearchOptions, owned: bool) -> list[Hit]:
    """:func:`finalize_hits`; with ``owned=True`` the hits (fresh from a provider's parser) are numbered in
    place instead of copied."""
    include = options.include_domains
    exclude = options.exclude_domains
    merged: dict[str, Hit] = {}
    seen_key = merged.get
    for hit in hits:
        url = hit.url
        if not url or url.isspace():
            continue
        if include and not _domain_match(url, include):
            continue
        if exclude and _domain_match(url, exclude):
            continue
        key = _norm_url(url)
        seen = seen_key(key)
        if seen is None:
            merged[key] = hit
            continue
        updates = {
            field: getattr(hit, field)
            for field in _MERGED_FIELDS
            if not getattr(seen, field) and getattr(hit, field)
        }
        if updates:
            merged[key] = seen.model_copy(update=updates)
    out: list[Hit] = []
    limit = options.max_results
    n = 0
    for hit in merged.values():
        n += 1
        if n > limit:
            break
        fields = hit.__dict__
        if fields["id"] == n and fields["provider"]:
            out.append(hit)
        elif owned:  # fresh from the provider's parser: number in place (a copy costs ~4 us a hit)
            fields["id"] = n
            fields_set = hit.__pydantic_fields_set__
            fields_set.add("id")
            if not fields["provider"]:
                fields["provider"] = provider
                fields_set.add("provider")
            out.append(hit)
        else:
            out.append(hit.model_copy(update={"id": n, "provider": fields["provider"] or provider}))
    return out


_MERGED_FIELDS = ("title", "snippet", "content", "published", "score")
