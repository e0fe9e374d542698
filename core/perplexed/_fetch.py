"""Fetching a page's content: :func:`fetch`, :func:`afetch`, :func:`fetch_many`, :func:`afetch_many`, and search
with page content (``search(..., fetch_content=N)``).

A fetch is the second operation of the chain: a URL goes down an ordered list of fetch providers (default
``["http"]``) with the search chain's rules: ``fallback_on`` (default ``error``, ``empty`` and ``insufficient``),
``provider_timeout_ms`` capped by ``deadline_ms``, ``deadline`` attempts, every attempt with its cost, and
``UpstreamError("all_providers_failed", attempts)`` when no provider answered. The quality floor ``min_chars``
applies to the whole extracted text; ``content`` is the slice ``[start_index, start_index + max_chars)``.

The trust boundary (see :mod:`perplexed._ssrf`): before any provider is called the URL's host is checked (a
literal non-public address in any spelling, or a name whose addresses are all non-public, is refused with
``InvalidRequest(reason="private_address")``); the ``http`` provider connects only to checked addresses and checks
every redirect hop. ``file://`` URLs are answered from the local index only, never read from disk.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

import httpx

from . import _engine, _portal, telemetry
from ._errors import (
    InvalidRequest,
    PerplexedError,
    UpstreamError,
)
from ._extract import cut, markdown_to_text
from ._failures import classify_exception
from ._fetch_net import check_url, guarded_client, robots_verdict, split_url
from ._http import get_client
from ._keywords import credential_hint, unknown_keyword
from ._logs import get_logger
from ._models import Attempt, Hit, Outcome, Page, Result
from ._options import ChainOptions
from ._ssrf import Allowed, check_literal, parse_allow_private
from .chain import _in_thread, drive_flow, read_body
from .chain import asearch as _chain_asearch
from .chain import search as _chain_search
from .fetchers import FetchAnswer, FetchOptions, FetchProvider, FunctionFetcher, resolve
from .fetchers.http import MAX_REDIRECTS, Http
from .providers import Provider

__all__ = [
    "ATTEMPT_EVENT",
    "FETCH_OPTION_NAMES",
    "FetchPlan",
    "afetch",
    "afetch_many",
    "asearch",
    "check_fetch_content",
    "fetch",
    "fetch_many",
    "fetch_plan",
    "prepare_fetch",
    "search",
    "with_pages",
]

logger = get_logger("perplexed.fetch")

ATTEMPT_EVENT = ("perplexed", "fetch", "attempt")
AttemptCallback = Callable[[Attempt], None]
FetchOutcome = Literal["error", "empty", "insufficient", "timeout"]

#: options of a fetch (they reach the providers)
FETCH_OPTION_NAMES = (
    "format",
    "max_chars",
    "start_index",
    "min_chars",
    "max_age_s",
    "allow_private",
    "respect_robots",
)
_FETCH_NAMES = frozenset(FETCH_OPTION_NAMES)  # the hot path of search(): one set check
#: options of how the fetch chain runs
FETCH_CHAIN_NAMES = (
    "provider_timeout_ms",
    "deadline_ms",
    "fallback_on",
    "cache_ttl_s",
    "cache_single_flight",
    "budget_usd",
)
DEFAULT_FALLBACK_ON: frozenset[str] = frozenset({"error", "empty", "insufficient"})
_FALLBACK_VALUES = ("error", "empty", "insufficient", "timeout")
MAX_URL_CHARS = 8192


class FetchPlan:
    """A validated fetch: URL, providers, fetch options, chain options (built by :func:`prepare_fetch`)."""

    __slots__ = ("chain", "is_chain", "options", "providers", "url")

    def __init__(self, url: str, providers: list[FetchProvider], is_chain: bool, options: FetchOptions,
                 chain: ChainOptions) -> None:
        self.url = url
        self.providers = providers
        self.is_chain = is_chain
        self.options = options
        self.chain = chain


def clean_url(url: object, param: str = "url") -> str:
    """A URL to fetch: a non-empty ``http(s)`` (or ``file://``) string; InvalidRequest naming ``param``."""
    if not isinstance(url, str):
        raise InvalidRequest(f"{param} must be a string URL, not {type(url).__name__}", param=param)
    cleaned = url.strip()
    if not cleaned:
        raise InvalidRequest(f"{param} is empty", param=param)
    if len(cleaned) > MAX_URL_CHARS:
        raise InvalidRequest(f"{param} is {len(cleaned)} characters long; the limit is {MAX_URL_CHARS}", param=param)
    if any(ch in cleaned for ch in "\r\n\t\x00"):
        raise InvalidRequest(f"{param} contains control characters", param=param)
    if cleaned[:7].lower() == "file://":
        return cleaned
    split_url(cleaned, param)
    return cleaned


def _int_option(values: dict[str, Any], name: str, minimum: int) -> None:
    if name in values:
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InvalidRequest(f"{name} must be an integer >= {minimum}, got {value!r}", param=name)


def build_options(values: dict[str, Any], providers: Sequence[FetchProvider] = ()) -> FetchOptions:
    """Validate fetch options (given by name; None keeps the default) into :class:`FetchOptions`."""
    values = {k: v for k, v in values.items() if v is not None}
    extra_names = {name for p in providers for name in type(p).extra_options}
    extra = {k: values.pop(k) for k in list(values) if k in extra_names and k not in FETCH_OPTION_NAMES}
    if "format" in values and values["format"] not in ("markdown", "text"):
        raise InvalidRequest(f"format must be 'markdown' or 'text', got {values['format']!r}", param="format")
    _int_option(values, "max_chars", 1)
    _int_option(values, "start_index", 0)
    _int_option(values, "min_chars", 0)
    if "max_age_s" in values:
        age = values["max_age_s"]
        if isinstance(age, bool) or not isinstance(age, int | float) or not math.isfinite(age) or age < 0:
            raise InvalidRequest(f"max_age_s must be a non-negative number of seconds, got {age!r}", param="max_age_s")
    if "respect_robots" in values and not isinstance(values["respect_robots"], bool):
        raise InvalidRequest("respect_robots must be True or False", param="respect_robots")
    values["allow_private"] = parse_allow_private(values.get("allow_private"))
    return FetchOptions(**values, extra=extra)


def parse_fallback_on(value: Any) -> frozenset[str]:
    if value is None:
        return DEFAULT_FALLBACK_ON
    items = [value] if isinstance(value, str) else value
    try:
        out = frozenset(str(getattr(i, "value", i)) for i in items)
    except TypeError:
        raise InvalidRequest("fallback_on must be a list of outcomes", param="fallback_on") from None
    bad = sorted(out - set(_FALLBACK_VALUES))
    if bad:
        raise InvalidRequest(
            f"invalid fallback_on value {bad[0]!r} (fallback_on takes {', '.join(map(repr, _FALLBACK_VALUES))})",
            param="fallback_on",
        )
    return out


def prepare_fetch(url: object, provider: Any = None, **options: Any) -> FetchPlan:
    """Validate everything :func:`fetch` needs before any call: the URL (a literal private address in any
    spelling is refused here), the provider spec, fetch and chain options. Unknown keywords are
    :class:`~perplexed.InvalidRequest` naming the closest valid one. Returns the plan (for adapters and
    services that check their settings once)."""
    cleaned = clean_url(url)
    providers, is_chain = resolve(provider)
    extra_names = {name for p in providers for name in type(p).extra_options}
    known = set(FETCH_OPTION_NAMES) | set(FETCH_CHAIN_NAMES) | extra_names
    for name in options:
        if name not in known:
            raise unknown_keyword(name, ["provider", *known], what="fetch option",
                                  hint=credential_hint(name, providers) or "")
    chain_kw = {k: options.pop(k) for k in FETCH_CHAIN_NAMES if k in options}
    chain_kw["fallback_on"] = parse_fallback_on(chain_kw.get("fallback_on"))
    chain = ChainOptions.build(**chain_kw)
    opts = build_options(options, providers)
    if cleaned[:7].lower() != "file://":  # a literal private address (any spelling) is refused now
        check_literal(cleaned, split_url(cleaned).hostname or "", opts.allow_private)
    return FetchPlan(cleaned, providers, is_chain, opts, chain)


# --- the public API ------------------------------------------------------------------------------------------


async def afetch(url: str, provider: Any = None, *, on_attempt: AttemptCallback | None = None, **options: Any) -> Page:
    """Fetch ``url``'s content through ``provider`` (a fetch-provider name, dict, instance, function, or a list of
    them = a chain; default ``["http"]``). See the module docs and docs/fetch.md for the options.

    Raises :class:`~perplexed.UpstreamError` (``reason="all_providers_failed"``) when no provider answered, and
    :class:`~perplexed.InvalidRequest` for bad input (``reason="private_address"`` for a refused address)."""
    plan = prepare_fetch(url, provider, **options)
    return await run_fetch(plan, on_attempt=on_attempt)


def fetch(url: str, provider: Any = None, *, on_attempt: AttemptCallback | None = None, **options: Any) -> Page:
    """Synchronous :func:`afetch`: same arguments, same rules (it runs the same coroutine)."""
    plan = prepare_fetch(url, provider, **options)
    return _portal.run(run_fetch, plan, on_attempt=on_attempt)


PageOrError = Page | UpstreamError


async def afetch_many(
    urls: Sequence[str],
    provider: Any = None,
    concurrency: int = 8,
    *,
    on_result: Callable[[int, PageOrError], None] | None = None,
    **options: Any,
) -> list[PageOrError]:
    """Fetch every URL (at most ``concurrency`` at a time): a list in the input order, each a :class:`Page` or
    the :class:`~perplexed.UpstreamError` of that URL (its attempts and cost kept). Bad input (a URL that is not
    http(s), a literal private address, an unknown option) fails before anything is fetched. ``on_result(i,
    page_or_error)`` is called as each URL finishes (progress)."""
    plans = plan_many(urls, provider, concurrency, options)
    semaphore = asyncio.Semaphore(concurrency)
    results: list[PageOrError | None] = [None] * len(plans)

    async def one(i: int, plan: FetchPlan) -> None:
        async with semaphore:
            try:
                page: PageOrError = await run_fetch(plan)
            except UpstreamError as exc:
                page = exc
            except PerplexedError as exc:  # refused after resolving, a provider set-up error: this URL only
                reason = getattr(exc, "reason", None) or "failed"
                page = UpstreamError(reason, exc.attempts, message=f"{reason}: {exc.message}")
                page.__cause__ = exc
        results[i] = page
        if on_result is not None:
            try:
                on_result(i, page)
            except Exception:
                logger.exception("on_result callback raised; ignored")

    await asyncio.gather(*(one(i, plan) for i, plan in enumerate(plans)))
    return [cast(PageOrError, r) for r in results]


def fetch_many(
    urls: Sequence[str],
    provider: Any = None,
    concurrency: int = 8,
    *,
    on_result: Callable[[int, PageOrError], None] | None = None,
    **options: Any,
) -> list[PageOrError]:
    """Synchronous :func:`afetch_many`."""
    plan_many(urls, provider, concurrency, dict(options))  # bad input fails here, in the caller's thread
    return _portal.run(afetch_many, urls, provider, concurrency, on_result=on_result, **options)


def plan_many(urls: Any, provider: Any, concurrency: Any, options: dict[str, Any]) -> list[FetchPlan]:
    """Validate :func:`fetch_many`'s arguments (URLs, literal private addresses, options) into plans."""
    if isinstance(urls, str | bytes) or not isinstance(urls, Sequence):
        raise InvalidRequest("urls must be a list of URLs (for one URL use fetch())", param="urls")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InvalidRequest(f"concurrency must be an integer >= 1, got {concurrency!r}", param="concurrency")
    plans: list[FetchPlan] = []
    shared: FetchPlan | None = None
    for i, url in enumerate(urls):
        if shared is None:
            try:
                shared = prepare_fetch(url, provider, **dict(options))
            except InvalidRequest as exc:
                if exc.param == "url":
                    raise InvalidRequest(f"urls[{i}]: {exc.message}", param=f"urls[{i}]") from None
                raise
            plans.append(shared)
            continue
        try:
            cleaned = clean_url(url, f"urls[{i}]")
        except InvalidRequest:
            raise
        plans.append(FetchPlan(cleaned, shared.providers, shared.is_chain, shared.options, shared.chain))
    for i, plan in enumerate(plans):  # literal private addresses: refused before anything is fetched
        if not plan.url[:7].lower() == "file://":
            host = split_url(plan.url, f"urls[{i}]").hostname or ""
            try:
                check_literal(plan.url, host, plan.options.allow_private)
            except InvalidRequest as exc:
                raise InvalidRequest(f"urls[{i}]: {exc.message}", param=f"urls[{i}]", reason=exc.reason) from None
    return plans


# --- the operation ------------------------------------------------------------------------------------------


class FetchOperation:
    """Fetching as an operation of the engine (see ``_engine``): URL and fetch options -> the page's whole text."""

    __slots__ = ("_options_key", "chain", "members", "plan", "subject")

    name = "fetch"
    subject_key = "url"
    nothing: FetchAnswer | None = None

    def __init__(self, plan: FetchPlan) -> None:
        self.plan = plan
        self.subject = plan.url
        self.members = plan.providers
        self.chain = plan.chain
        self._options_key: str | None = None

    def client(self, member: Provider) -> httpx.AsyncClient | None:
        if isinstance(member, FunctionFetcher):
            return None
        if isinstance(member, Http):
            return guarded_client(self.plan.options.allow_private, member.resolver, member.transport)
        return get_client(member.transport)

    async def call(self, member: Provider, client: httpx.AsyncClient | None) -> FetchAnswer:
        return await _call_fetcher(cast(FetchProvider, member), self.plan, client)

    def finish(self, member: Provider, raw: FetchAnswer) -> tuple[FetchAnswer, float, str | None]:
        answer = _in_format(raw, self.plan.options.format)
        charged = answer.cost if answer.cost is not None else member.price()
        return answer, charged, answer.detail

    def is_empty(self, answer: FetchAnswer | None) -> bool:
        return answer is None or not answer.text.strip()

    def size(self, answer: FetchAnswer | None) -> int:
        return 0 if answer is None else len(answer.text)

    def insufficient(self, label: str, answer: FetchAnswer | None, attempts: Callable[[], list[Attempt]]) -> str | None:
        size = 0 if answer is None else len(answer.text.strip())
        return None if size >= self.plan.options.min_chars else "min_chars"

    def price(self, member: Provider) -> float:
        return member.price()

    def cache_parts(self, member: Provider) -> tuple[str, ...] | None:
        if self._options_key is None:
            opts = self.plan.options
            self._options_key = json.dumps(
                {"format": opts.format, "robots": opts.respect_robots, "private": opts.allow_private.key(),
                 "max_age_s": opts.max_age_s, "extra": dict(opts.extra)},
                sort_keys=True, default=repr, separators=(",", ":"),
            )
        extra = ""
        if member.options:
            extra = json.dumps(member.options, sort_keys=True, default=repr, separators=(",", ":"))
        return ("fetch", self.subject, self._options_key, extra)

    def to_cache(self, answer: FetchAnswer | None) -> list[Hit]:
        if answer is None:
            return []
        fields = answer.model_dump(mode="json", exclude={"text"})
        return [Hit(url=answer.final_url or self.subject, title=answer.title, content=answer.text,
                    raw={"fetch": fields})]

    def from_cache(self, stored: Sequence[Hit]) -> FetchAnswer | None:
        if not stored:
            return None
        hit = stored[0]
        fields: dict[str, Any] = hit.raw["fetch"] if isinstance(hit.raw.get("fetch"), dict) else {}
        return FetchAnswer(**{**fields, "text": hit.content or "", "cost": 0.0})

    def combine(self, answers: Sequence[tuple[str, FetchAnswer | None]]) -> FetchAnswer | None:
        return answers[0][1] if answers else None  # one page: the first member's answer

    def result(self, provider: str, answer: FetchAnswer | None, attempts: list[Attempt]) -> Page:
        return _page(self.plan, provider, answer or FetchAnswer(format=self.plan.options.format), attempts)


async def run_fetch(plan: FetchPlan, *, on_attempt: AttemptCallback | None = None) -> Page:
    """Run a prepared fetch: the trust-boundary check, then the engine down the fetch providers."""
    if plan.url[:7].lower() == "file://":
        return await _local_page(plan, on_attempt)
    resolver = next((p.resolver for p in plan.providers if isinstance(p, Http) and p.resolver is not None), None)
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        async with asyncio.timeout(plan.chain.deadline_ms / 1000):
            await check_url(plan.url, plan.options.allow_private, resolver)
    except TimeoutError:
        pass  # the resolver did not answer in time: the providers' attempts say what happened
    spent_ms = int((loop.time() - started) * 1000)
    if spent_ms > 0:  # the check is part of the fetch's deadline
        chain = plan.chain.model_copy(update={"deadline_ms": max(1, plan.chain.deadline_ms - spent_ms)})
        plan = FetchPlan(plan.url, plan.providers, plan.is_chain, plan.options, chain)
    page: Page = await _engine.run(FetchOperation(plan), on_attempt)
    return page


def _page(plan: FetchPlan, provider: str, answer: FetchAnswer, attempts: list[Attempt]) -> Page:
    piece = cut(answer.text, plan.options.start_index, plan.options.max_chars)
    return Page(
        url=plan.url,
        final_url=answer.final_url or plan.url,
        title=answer.title,
        content=piece.content,
        format=plan.options.format,
        published=answer.published,
        language=answer.language,
        content_type=answer.content_type,
        status=answer.status,
        provider=provider or None,
        attempts=list(attempts),
        truncated=piece.truncated,
        total_chars=piece.total_chars,
        next_index=piece.next_index,
        page_type=answer.page_type,
        page_type_confidence=answer.page_type_confidence,
        structured=answer.structured,
    )


def _in_format(answer: FetchAnswer, fmt: str) -> FetchAnswer:
    if answer.format == fmt or fmt == "markdown":  # plain text is valid Markdown
        return answer
    return answer.model_copy(update={"text": markdown_to_text(answer.text), "format": "text"})


async def _call_fetcher(provider: FetchProvider, plan: FetchPlan, client: httpx.AsyncClient | None) -> FetchAnswer:
    if isinstance(provider, FunctionFetcher):
        if provider.is_async:
            value = await provider.fn(plan.url, plan.options)
        else:
            value = await _in_thread(provider.fn, plan.url, plan.options)
        if inspect.isawaitable(value):
            value = await value
        return provider.coerce(value)
    if isinstance(provider, Http):
        return await _fetch_direct(provider, plan, client)
    return await drive_flow(provider, provider.fetch_flow(plan.url, plan.options), client)


async def _fetch_direct(provider: Http, plan: FetchPlan, client: httpx.AsyncClient | None) -> FetchAnswer:
    """The ``http`` provider's network part: robots.txt, the page, each redirect hop checked, at most 5."""
    options = plan.options
    allowed: Allowed = options.allow_private
    if client is None:
        client = guarded_client(allowed, provider.resolver, provider.transport)
    headers = provider.request_headers()
    url = plan.url
    hops = 0
    while True:
        if options.respect_robots:
            try:
                ok, why = await robots_verdict(client, url, provider.robots_token, allowed, headers)
            except InvalidRequest as exc:
                raise provider.fail(classify_exception(exc).reason, exc.message) from None
            if not ok:
                raise provider.fail("robots", why)
        try:
            response = await client.send(provider.page_request(url), stream=True)
        except InvalidRequest as exc:  # the guarded connection refused every address of the host
            raise provider.fail(classify_exception(exc).reason, exc.message) from None
        except httpx.RemoteProtocolError as exc:
            if "location" in str(exc).lower():
                raise provider.fail("redirect", f"redirect not followed ({exc})") from None
            raise
        try:
            if response.has_redirect_location:
                hops += 1
                url = _next_hop(provider, response, hops, allowed)
                continue
            provider.check_page(response)
            body = await read_body(provider, response)
        finally:
            await response.aclose()
        return await _in_thread(provider.parse_page, response, body, url, options)


def _next_hop(provider: Http, response: httpx.Response, hops: int, allowed: Allowed) -> str:
    """The URL a redirect leads to, checked like the first: only http(s), no refused address, at most 5."""
    target = response.next_request.url if response.next_request is not None else None
    if target is None:
        raise provider.redirect_failure(response, "invalid Location")
    if target.scheme not in ("http", "https"):
        raise provider.redirect_failure(response, f"to a {target.scheme}: URL; only http and https are fetched")
    if hops > MAX_REDIRECTS:
        raise provider.redirect_failure(response, f"more than {MAX_REDIRECTS} redirects")
    text = str(target)
    host = split_url(text).hostname or target.host
    try:
        check_literal(text, host, allowed)
    except InvalidRequest as exc:
        raise provider.fail("private_address", f"redirect hop refused: {exc.message}", response) from None
    return text


async def _local_page(plan: FetchPlan, on_attempt: AttemptCallback | None) -> Page:
    """A ``file://`` URL: the indexed document's full text, from the local index only."""
    from ._index._document import indexed_document

    start = time.perf_counter()
    document = await _in_thread(indexed_document, plan.url)
    if document is None:
        raise InvalidRequest(
            f"{plan.url} is not a document of the local index: file:// URLs are answered from the index only "
            "(index the folder with `perplexed index PATH`)",
            param="url",
        )
    attempt = Attempt(provider="local", outcome=Outcome.OK if document.text.strip() else Outcome.EMPTY,
                      duration_ms=int((time.perf_counter() - start) * 1000))
    attempts: list[Attempt] = []
    _record(attempts, attempt, plan.url, on_attempt)
    answer = FetchAnswer(text=document.text, format="text", final_url=document.url, title=document.title,
                         content_type="application/pdf" if document.kind == "pdf" else f"text/{document.kind}")
    piece = cut(answer.text, plan.options.start_index, plan.options.max_chars)
    return Page(url=plan.url, final_url=document.url, title=document.title, content=piece.content,
                format=plan.options.format, content_type=answer.content_type, provider="local", attempts=attempts,
                truncated=piece.truncated, total_chars=piece.total_chars, next_index=piece.next_index)


def _record(attempts: list[Attempt], attempt: Attempt, url: str, on_attempt: AttemptCallback | None) -> None:
    attempts.append(attempt)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("fetch attempt provider=%s outcome=%s duration_ms=%d cost=%.6f error=%s",
                     attempt.provider, attempt.outcome.value, attempt.duration_ms, attempt.cost, attempt.error)
    if telemetry.listening():
        telemetry.emit(
            ATTEMPT_EVENT,
            {"duration_ms": attempt.duration_ms, "cost": attempt.cost},
            {"provider": attempt.provider, "outcome": attempt.outcome.value, "billable": attempt.billable,
             "error": attempt.error, "detail": attempt.detail, "url": url, "cached": attempt.cached,
             "reason": attempt.reason},
        )
    if on_attempt is not None:
        try:
            on_attempt(attempt)
        except Exception:
            logger.exception("on_attempt callback raised; ignored")


# --- search with page content --------------------------------------------------------------------------------


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


FetchRequest = tuple[int, Any, dict[str, Any]]


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
    fetchers, _ = resolve(fetch_provider)
    build_options(dict(fetch_kw), fetchers)
    return count, fetch_provider, fetch_kw


def check_fetch_content(fetch_content: Any = None, fetch_provider: Any = None, **options: Any) -> None:
    """Validate search's ``fetch_content``, ``fetch_provider`` and fetch options (``allow_private``,
    ``max_chars``, ...) without searching: for components configured once and used later (the adapters)."""
    fetch_plan(fetch_content, fetch_provider, dict(options))


async def asearch(query: str, provider: Any = None, *, fetch_content: Any = None, fetch_provider: Any = None,
                  **options: Any) -> Result:
    """:func:`perplexed.chain.asearch`, plus ``fetch_content=N`` (the N top hits' pages, ``True`` for all;
    ``fetch_provider=`` picks the fetch chain, default ``["http"]``): each fetched hit gets ``content`` (the page's
    text) and ``page``; ``Result.cost`` includes what the fetches cost. Fetch options (``max_chars``,
    ``allow_private``, ``respect_robots``, ...) may be given too."""
    if fetch_content is None and fetch_provider is None and (not options or _FETCH_NAMES.isdisjoint(options)):
        return await _chain_asearch(query, provider, **options)
    fetch = fetch_plan(fetch_content, fetch_provider, options)  # before the search is paid for
    if fetch is None:
        return await _chain_asearch(query, provider, **options)
    started = asyncio.get_running_loop().time()
    result = await _chain_asearch(query, provider, **options)
    return await with_pages(result, *fetch, options.get("deadline_ms"), started)


async def with_pages(result: Result, count: int, fetch_provider: Any, fetch_kw: dict[str, Any],
                     deadline_ms: int | None, started: float) -> Result:
    """``result`` with its top ``count`` hits' pages fetched (``-1``: all)."""
    hits = result.hits if count < 0 else result.hits[:count]
    if not hits:
        return result
    loop = asyncio.get_running_loop()
    total_ms = deadline_ms if isinstance(deadline_ms, int) and not isinstance(deadline_ms, bool) else 30_000
    left_ms = max(1, int(total_ms - (loop.time() - started) * 1000))
    fetch_kw = {**fetch_kw, "deadline_ms": left_ms}
    fetchable = [i for i, h in enumerate(hits) if h.url[:7].lower() != "file://"]
    urls = [hits[i].url for i in fetchable]
    pages: list[PageOrError] = []
    if urls:
        try:
            pages = await afetch_many(urls, fetch_provider, **fetch_kw)
        except InvalidRequest as exc:  # one hit's URL is not fetchable (a literal private address): skip it
            logger.debug("fetch_content: %s", exc)
            pages = [await _one_page(url, fetch_provider, fetch_kw) for url in urls]
    new_hits = list(result.hits)
    fetches: list[Attempt] = list(result.fetches)
    for index, page in zip(fetchable, pages, strict=True):
        if isinstance(page, Page):
            new_hits[index] = new_hits[index].model_copy(update={"content": page.content, "page": page})
            fetches.extend(page.attempts)
        else:
            fetches.extend(page.attempts)
    return result.with_fetches(new_hits, fetches)


async def _one_page(url: str, fetch_provider: Any, fetch_kw: dict[str, Any]) -> PageOrError:
    try:
        return await afetch(url, fetch_provider, **fetch_kw)
    except UpstreamError as exc:
        return exc
    except PerplexedError as exc:
        reason = getattr(exc, "reason", None) or "failed"
        return UpstreamError(reason, exc.attempts, message=f"{reason}: {exc.message}")


def search(query: str, provider: Any = None, *, fetch_content: Any = None, fetch_provider: Any = None,
           **options: Any) -> Result:
    """Synchronous :func:`asearch` (the same coroutine on the portal)."""
    if fetch_content is None and fetch_provider is None and (not options or _FETCH_NAMES.isdisjoint(options)):
        return _chain_search(query, provider, **options)
    return _portal.run(asearch, query, provider, fetch_content=fetch_content, fetch_provider=fetch_provider,
                       **options)

