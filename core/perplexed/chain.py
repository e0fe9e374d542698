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
import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from . import _portal, telemetry
from ._errors import PerplexedError, ProviderError, UpstreamError, redact
from ._http import get_client, read_capped
from ._models import Attempt, Hit, Outcome, ProviderAnswer, Result
from ._options import ChainOptions, SearchOptions, clean_query, split_options
from .providers import CallableProvider, Provider, resolve

__all__ = ["ATTEMPT_EVENT", "Search", "asearch", "prepare", "search"]

logger = logging.getLogger("perplexed.chain")

ATTEMPT_EVENT = ("perplexed", "search", "attempt")
AttemptCallback = Callable[[Attempt], None]


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

    Raises :class:`~perplexed.InvalidRequest` or :class:`~perplexed.ConfigError`.
    """
    cleaned = clean_query(query)
    chain_kw, search_kw = split_options(dict(options))
    chain = ChainOptions.build(**chain_kw)
    opts = SearchOptions.build(**search_kw)
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
    (default 15000), ``deadline_ms`` (default 30000), ``fallback_on`` (default ``("error", "empty")``).
    Search options (``max_results``, ``include_domains``, ``exclude_domains``, ``recency``,
    ``published_after``, ``published_before``, ``language``, ``country``, ``safe_search``, and any
    provider-specific option) go to every provider. ``on_attempt`` is called with each :class:`Attempt` as it
    ends. Raises :class:`~perplexed.UpstreamError` (``reason="all_providers_failed"``) when no provider
    answered, :class:`~perplexed.InvalidRequest` / :class:`~perplexed.ConfigError` for bad input.
    """
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
    loop = asyncio.get_running_loop()
    deadline = loop.time() + chain.deadline_ms / 1000
    attempts: list[Attempt] = []
    empty: tuple[Provider, list[Hit]] | None = None
    last_error: BaseException | None = None
    names = [p.label for p in prepared.providers]
    with telemetry.span(
        "perplexed.search",
        {"perplexed.query": prepared.query, "perplexed.providers": ",".join(names)},
    ) as chain_span:
        for provider in prepared.providers:
            remaining = deadline - loop.time()
            if remaining <= 0:
                _record(attempts, Attempt(provider=provider.label, outcome=Outcome.DEADLINE,
                                          error="chain deadline passed before this provider was called"),
                        prepared.query, on_attempt)
                continue
            budget = min(chain.provider_timeout_ms / 1000, remaining)
            attempt, hits, exc = await _attempt(provider, prepared, budget)
            last_error = exc or last_error
            _record(attempts, attempt, prepared.query, on_attempt)
            if attempt.outcome is Outcome.OK:
                _annotate(chain_span, provider.label, attempts)
                return Result(query=prepared.query, provider=provider.label, hits=hits, attempts=attempts)
            if attempt.outcome is Outcome.EMPTY and empty is None:
                empty = (provider, hits)
            if not chain.moves_on(attempt.outcome.value):
                break
        if empty is not None:
            _annotate(chain_span, empty[0].label, attempts)
            return Result(query=prepared.query, provider=empty[0].label, hits=[], attempts=attempts)
        _annotate(chain_span, None, attempts)
        raise UpstreamError("all_providers_failed", attempts) from last_error


async def _attempt(
    provider: Provider, prepared: Search, budget: float
) -> tuple[Attempt, list[Hit], BaseException | None]:
    """Call one provider within ``budget`` seconds; never raises for the provider's own failures."""
    start = time.perf_counter()
    outcome = Outcome.ERROR
    error: str | None = None
    reason: str | None = None
    charged: float | None = None
    detail: str | None = None
    hits: list[Hit] = []
    failure: BaseException | None = None
    with telemetry.span(
        "perplexed.search.provider",
        {"perplexed.provider": provider.label, "perplexed.budget_ms": int(budget * 1000)},
    ) as call_span:
        try:
            async with asyncio.timeout(budget):
                answer = await _call(provider, prepared.query, prepared.options)
        except TimeoutError:
            outcome, reason = Outcome.TIMEOUT, "timeout"
            error = f"no answer within {int(budget * 1000)} ms (cancelled)"
        except ProviderError as exc:
            reason, error, charged, failure = exc.reason, str(exc), exc.charged, exc
        except PerplexedError as exc:  # ConfigError (missing key), InvalidRequest raised by the provider
            reason = "config" if type(exc).__name__ == "ConfigError" else "bad_request"
            error, failure = f"{reason}: {exc}", exc
        except httpx.HTTPError as exc:
            reason = "connection"
            error, failure = f"connection: {type(exc).__name__}: {exc}".rstrip(": "), exc
        except Exception as exc:  # a provider bug must not break the chain; it is logged with its traceback
            logger.exception("provider %s raised unexpectedly", provider.label)
            reason, error, failure = "unexpected", f"unexpected: {type(exc).__name__}: {exc}", exc
        else:
            hits = finalize_hits(answer.hits, provider.label, prepared.options)
            outcome = Outcome.OK if hits else Outcome.EMPTY
            charged = answer.cost if answer.cost is not None else provider.price(prepared.options)
            detail = answer.detail
        duration_ms = int((time.perf_counter() - start) * 1000)
        cost = float(charged or 0.0)
        attempt = Attempt(
            provider=provider.label,
            outcome=outcome,
            cost=cost,
            duration_ms=duration_ms,
            billable=cost > 0,
            error=None if error is None else redact(error),
            detail=detail,
            reason=reason,
        )
        if call_span is not None:
            call_span.set_attribute("perplexed.outcome", outcome.value)
            call_span.set_attribute("perplexed.cost", cost)
            if error:
                call_span.set_attribute("perplexed.error", error)
    return attempt, hits, failure


async def _call(provider: Provider, query: str, options: SearchOptions) -> ProviderAnswer:
    if isinstance(provider, CallableProvider):
        if provider.is_async:
            return await provider.asearch(query, options)
        return await asyncio.to_thread(provider.search, query, options)
    provider.log_ignored(options)
    flow = provider.flow(query, options)
    request = next(flow)
    client = get_client(provider.transport)
    while True:
        response = await client.send(request, stream=True)
        try:
            await read_capped(response, provider.max_body_bytes)
        except ProviderError as exc:
            exc.provider = provider.label
            raise
        finally:
            await response.aclose()
        try:
            request = flow.send(response)
        except StopIteration as stop:
            answer: ProviderAnswer = stop.value
            return answer


def _record(
    attempts: list[Attempt], attempt: Attempt, query: str, on_attempt: AttemptCallback | None
) -> None:
    attempts.append(attempt)
    logger.debug(
        "attempt provider=%s outcome=%s duration_ms=%d cost=%.6f error=%s",
        attempt.provider, attempt.outcome.value, attempt.duration_ms, attempt.cost, attempt.error,
    )
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
        },
    )
    if on_attempt is not None:
        try:
            on_attempt(attempt)
        except Exception:
            logger.exception("on_attempt callback raised; ignored")


def _annotate(chain_span: Any, answered_by: str | None, attempts: list[Attempt]) -> None:
    if chain_span is None:
        return
    chain_span.set_attribute("perplexed.answered_by", answered_by or "")
    chain_span.set_attribute("perplexed.attempts", len(attempts))
    chain_span.set_attribute("perplexed.cost", float(sum(a.cost for a in attempts)))


# --- hit normalisation, the same for every provider -----------------------------------------------------


def _norm_url(url: str) -> str:
    """A key under which two URLs of the same page compare equal (scheme, www., trailing slash, fragment)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    host = (parts.hostname or "").lower().removeprefix("www.")
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(("", host + port, parts.path.rstrip("/") or "/", parts.query, ""))


def _domain_match(url: str, domains: list[str]) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    host = (parts.hostname or "").lower().removeprefix("www.")
    path = parts.path
    for d in domains:
        d_host, _, d_path = d.partition("/")
        if d_host.startswith("*."):
            d_host = d_host[2:]
        if (host == d_host or host.endswith("." + d_host)) and (not d_path or path.lstrip("/").startswith(d_path)):
            return True
    return False


def finalize_hits(hits: list[Hit], provider: str, options: SearchOptions) -> list[Hit]:
    """Apply client-side domain filters, merge duplicate URLs, cap at ``max_results``, number 1..n."""
    merged: dict[str, Hit] = {}
    for hit in hits:
        if not hit.url:
            continue
        if options.include_domains and not _domain_match(hit.url, options.include_domains):
            continue
        if options.exclude_domains and _domain_match(hit.url, options.exclude_domains):
            continue
        key = _norm_url(hit.url)
        seen = merged.get(key)
        if seen is None:
            merged[key] = hit
            continue
        updates = {
            field: getattr(hit, field)
            for field in ("title", "snippet", "content", "published", "score")
            if not getattr(seen, field) and getattr(hit, field)
        }
        if updates:
            merged[key] = seen.model_copy(update=updates)
    out = []
    for n, hit in enumerate(list(merged.values())[: options.max_results], start=1):
        out.append(hit.model_copy(update={"id": n, "provider": hit.provider or provider}))
    return out
