"""Fetching a page's content: :func:`fetch`, :func:`afetch`, :func:`fetch_many`, :func:`afetch_many` (search with
page content, ``search(..., fetch_content=N)``, is in :mod:`perplexed.operations._search`).

A fetch is the second operation of the chain: a URL goes down an ordered list of fetch providers (default
``["http"]``) with the search chain's rules: ``fallback_on`` (default ``error``, ``empty`` and ``insufficient``),
``provider_timeout_ms`` capped by ``deadline_ms``, ``deadline`` attempts, every attempt with its cost, and
``UpstreamError("all_providers_failed", attempts)`` when no provider answered. The quality floor ``min_chars``
applies to the whole extracted text; ``content`` is the slice ``[start_index, start_index + max_chars)``.

The trust boundary (see :mod:`perplexed.net._ssrf`): before any provider is called the URL's host is checked (a
literal non-public address in any spelling, or a name whose addresses are all non-public, is refused with
``InvalidRequest(reason="private_address")``); the ``http`` provider connects only to checked addresses and checks
every redirect hop. ``file://`` URLs are answered from the local index only, never read from disk: by the
``local`` page provider (:class:`LocalPages`), run by the same engine as any other fetch provider.

One deadline: :func:`run_fetch` takes the absolute time the fetch must end by (the running loop's clock), made
once at the entry (``deadline_ms`` from the call's start) or handed down by the call the fetch is a step of (a
search's page enrichment); the host check and the engine run both end by it.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping, Sequence  # noqa: F401 - Mapping: the name this module had
from typing import Any, Literal, cast

import httpx

from perplexed._errors import InvalidRequest, PerplexedError, UpstreamError
from perplexed._logs import get_logger
from perplexed._models import Attempt, Hit, Page
from perplexed.engine import _engine
from perplexed.engine.chain import _in_thread, drive_flow, read_body
from perplexed.fetchers import FetchAnswer, FetchOptions, FetchProvider, FunctionFetcher, resolve  # noqa: F401
from perplexed.fetchers.http import MAX_REDIRECTS, Http
from perplexed.net import _portal
from perplexed.net._fetch_net import check_url, guarded_client, robots_verdict, split_url
from perplexed.net._http import get_client
from perplexed.net._ssrf import Allowed, check_literal, normalise_url, parse_allow_private  # noqa: F401

# validating a fetch (prepare_fetch and its parts) lives apart, importing no HTTP client (issue 35: cold start);
# every name stays here too, the same objects
from perplexed.operations._fetch_plan import _FALLBACK_VALUES as _FALLBACK_VALUES
from perplexed.operations._fetch_plan import DEFAULT_FALLBACK_ON as DEFAULT_FALLBACK_ON
from perplexed.operations._fetch_plan import FETCH_CHAIN_NAMES as FETCH_CHAIN_NAMES
from perplexed.operations._fetch_plan import FETCH_OPTION_NAMES as FETCH_OPTION_NAMES
from perplexed.operations._fetch_plan import MAX_URL_CHARS as MAX_URL_CHARS
from perplexed.operations._fetch_plan import FetchPlan as FetchPlan
from perplexed.operations._fetch_plan import _check_local as _check_local
from perplexed.operations._fetch_plan import build_options as build_options
from perplexed.operations._fetch_plan import chain_has_local as chain_has_local
from perplexed.operations._fetch_plan import clean_url as clean_url
from perplexed.operations._fetch_plan import parse_fallback_on as parse_fallback_on
from perplexed.operations._fetch_plan import prepare_fetch as prepare_fetch
from perplexed.operations._fetch_plan import without_local as without_local
from perplexed.policy._failures import classify_exception, reason_of
from perplexed.policy._keywords import credential_hint, unknown_keyword  # noqa: F401
from perplexed.policy._options import ChainOptions, check_fetch_options  # noqa: F401
from perplexed.policy._policy import Purse
from perplexed.providers import Provider

__all__ = [
    "ATTEMPT_EVENT",
    "FETCH_OPTION_NAMES",
    "FetchPlan",
    "LocalPages",
    "afetch",
    "afetch_many",
    "build_options",
    "clean_url",
    "fetch",
    "fetch_many",
    "prepare_fetch",
    "run_fetch",
]

logger = get_logger("perplexed.fetch")

ATTEMPT_EVENT = ("perplexed", "fetch", "attempt")
AttemptCallback = Callable[[Attempt], None]
FetchOutcome = Literal["error", "empty", "insufficient", "timeout"]

_FETCH_NAMES = frozenset(FETCH_OPTION_NAMES)  # the hot path of search(): one set check


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
                reason = reason_of(exc)  # always one of the closed set (Reason)
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
        cleaned = clean_url(url, f"urls[{i}]")
        _check_local(cleaned, shared.local, shared.providers, f"urls[{i}]")
        plans.append(FetchPlan(cleaned, shared.providers, shared.is_chain, shared.options, shared.chain, shared.local))
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
        if isinstance(member, FunctionFetcher | LocalPages):
            return None
        if isinstance(member, Http):
            return guarded_client(self.plan.options.allow_private, member.resolver, member.transport)
        return get_client(member.transport)

    async def call(self, member: Provider, client: httpx.AsyncClient | None) -> FetchAnswer:
        answer = await _call_fetcher(cast(FetchProvider, member), self.plan, client)
        if answer.format != self.plan.options.format and self.plan.options.format == "text":
            # inside the provider's timer and off the event loop: hostile Markdown cannot outlive the deadline
            from perplexed.extract._worker import (
                text_in_worker,  # with the first page converted, not at import
            )

            answer = answer.model_copy(update={"text": await text_in_worker(answer.text), "format": "text"})
        return answer

    def finish(self, member: Provider, raw: FetchAnswer) -> tuple[FetchAnswer, float, str | None]:
        answer = _in_format(raw, self.plan.options.format)
        charged = answer.cost if answer.cost is not None else cast(FetchProvider, member).fetch_price(self.plan.options)
        return answer, charged, answer.detail

    def is_empty(self, answer: FetchAnswer | None) -> bool:
        return answer is None or not answer.text.strip()

    def size(self, answer: FetchAnswer | None) -> int:
        return 0 if answer is None else len(answer.text)

    def insufficient(self, label: str, answer: FetchAnswer | None, attempts: Callable[[], list[Attempt]]) -> str | None:
        size = 0 if answer is None else len(answer.text.strip())
        return None if size >= self.plan.options.min_chars else "min_chars"

    def price(self, member: Provider) -> float:
        return cast(FetchProvider, member).fetch_price(self.plan.options)

    def cache_parts(self, member: Provider) -> tuple[str, ...] | None:
        if isinstance(member, LocalPages):  # the embedded index answers in milliseconds and changes when rebuilt
            return None
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


async def run_fetch(plan: FetchPlan, *, on_attempt: AttemptCallback | None = None, deadline: float | None = None,
                    purse: Purse | None = None) -> Page:
    """Run a prepared fetch: the trust-boundary check, then the engine down the fetch providers, both ending by
    ``deadline`` (absolute, the loop's clock; default ``deadline_ms`` from now). ``purse``: the budget of the call
    the fetch is a step of (default: the fetch's own ``budget_usd``)."""
    _check_local(plan.url, plan.local, plan.providers)
    loop = asyncio.get_running_loop()
    if deadline is None:
        deadline = loop.time() + plan.chain.deadline_ms / 1000
    if plan.url[:7].lower() == "file://":
        return await _local_page(plan, on_attempt, deadline, purse)
    resolver = next((p.resolver for p in plan.providers if isinstance(p, Http) and p.resolver is not None), None)
    try:
        async with asyncio.timeout_at(deadline):
            await check_url(plan.url, plan.options.allow_private, resolver)
    except TimeoutError:
        pass  # the resolver did not answer in time: the providers' attempts say what happened
    page: Page = await _engine.run(FetchOperation(plan), on_attempt, deadline=deadline, purse=purse)
    return page


def _page(plan: FetchPlan, provider: str, answer: FetchAnswer, attempts: list[Attempt]) -> Page:
    from perplexed.extract._extract import (
        cut,  # page extraction loads with the first fetch, not with `import perplexed`
    )

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
    from perplexed.extract._extract import markdown_to_text

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
    if isinstance(provider, LocalPages):
        return await _in_thread(_local_answer, plan.url)
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
        return await provider.extract(response, body, url, options)


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


class LocalPages(FetchProvider):
    """The ``local`` page provider: a ``file://`` URL's indexed document (its full text), from the local index
    only, never read from disk. :func:`run_fetch` runs it for ``file://`` URLs, through the engine."""

    name = "local"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cost", 0.0)
        super().__init__(**kwargs)


_local_pages: list[LocalPages] = []


def _local_answer(url: str) -> FetchAnswer:
    """The indexed document of ``url``; :class:`~perplexed.InvalidRequest` when it is not one."""
    from perplexed.index._document import indexed_document

    document = indexed_document(url)
    if document is None:
        raise InvalidRequest(
            f"{url} is not a document of the local index: file:// URLs are answered from the index only "
            "(index the folder with `perplexed index PATH`)",
            param="url",
        )
    return FetchAnswer(text=document.text, format="text", final_url=document.url, title=document.title,
                       content_type="application/pdf" if document.kind == "pdf" else f"text/{document.kind}")


async def _local_page(plan: FetchPlan, on_attempt: AttemptCallback | None, deadline: float,
                      purse: Purse | None) -> Page:
    """A ``file://`` URL: the ``local`` page provider down the same engine (deadline, attempts, events)."""
    if not _local_pages:
        _local_pages.append(LocalPages())
    local = FetchPlan(plan.url, [_local_pages[0]], False, plan.options, plan.chain)
    try:
        page: Page = await _engine.run(FetchOperation(local), on_attempt, deadline=deadline, purse=purse)
    except UpstreamError as exc:
        cause = exc.__cause__
        if isinstance(cause, InvalidRequest) and cause.param == "url":  # not an indexed document
            raise cause from None
        raise
    return page
