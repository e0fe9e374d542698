"""The provider shape. Providers are sans-io: they build requests and parse responses; the engine does I/O.

An HTTP provider implements :meth:`Provider.build_request` and :meth:`Provider.parse_response` (a multi-step
provider overrides :meth:`Provider.flow`, a generator that yields requests and receives responses, like
httpx's ``auth_flow``). A non-HTTP provider subclasses :class:`CallableProvider` and implements ``search``
(sync) or ``asearch`` (async); the engine applies the same budget, cancellation, cost and event rules.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Generator, Mapping
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import SecretStr

from perplexed._errors import (
    ConfigError,
    ProviderError,
    Reason,
    mask_url,
    register_secret,
    register_url_secret,
)
from perplexed._logs import get_logger, redact_loggers
from perplexed._models import Hit, ProviderAnswer
from perplexed.net._decode import DEFAULT_MAX_BODY_BYTES
from perplexed.policy._bounds import check_usd
from perplexed.policy._failures import StatusRule, match_rule
from perplexed.policy._options import SearchOptions
from perplexed.policy._policy import check_provider_settings
from perplexed.policy._settings import env_secret, env_str, price_override
from perplexed.policy._status import Context, StatusRow, lookup, reason_from_text
from perplexed.policy._wire import check_key, clip, parse_error_envelope, parse_retry_after

__all__ = [
    "OPERATIONS",
    "CallableProvider",
    "Flow",
    "FunctionProvider",
    "Operation",
    "Provider",
    "parse_published",
    "parse_retry_after",
]

logger = get_logger("perplexed.providers")
# the redacting filters on httpx's and httpcore's loggers, as when this module imported perplexed.net._http (which
# sets them too, and now loads with the first HTTP request): in place before any provider exists
redact_loggers()

if TYPE_CHECKING:
    import httpx

    Flow = Generator[httpx.Request, httpx.Response, ProviderAnswer]
else:

    def __getattr__(name: str) -> Any:
        """``Flow`` (a sans-io flow: yields requests, is sent responses) is built on first use: httpx is imported
        then, not by a search of in-process providers (the annotations here are strings)."""
        if name == "Flow":
            import httpx

            value = globals()["Flow"] = Generator[httpx.Request, httpx.Response, ProviderAnswer]
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


Operation = Literal["search", "fetch"]
#: the operations a provider may declare (``Provider.operations``)
OPERATIONS: tuple[Operation, ...] = ("search", "fetch")


class Provider:
    """Base class of every search provider.

    Class attributes describe the provider: ``name`` (registry name), ``env_key`` / ``env_base_url`` (the
    environment variables it reads), ``default_base_url``, ``default_price`` (USD per call, list price; see
    the README's price table), ``native_options`` (common options the API itself supports; the others are
    done on the hits when possible, else ignored with a debug log).

    Constructor: ``base_url``, ``api_key`` (kept as SecretStr), ``cost`` (USD per call, overrides the price
    table), ``name`` (a label for attempts, default the registry name), ``transport`` (an httpx transport,
    for tests), ``max_body_bytes`` (response cap, default 8 MB) and provider-specific ``**options``.

    Governance settings (see docs/production.md; unset = ``perplexed.configure(...)``'s default for this
    label or registry name): ``rate_limit`` (``"N/s"``, ``"N/min"``, ``"N/hour"``, ``"N/day"``: at most N
    admitted calls in any rolling window), ``rate_limit_wait_ms`` (default 1000: how long an attempt may wait
    for a slot), ``cooldown_after`` (consecutive unhealthy failures that start a cool-down; None = off) and
    ``cooldown_s`` (default 30: the first cool-down's length).

    ``cache_key`` (a string) names this provider's cached answers for sharing across processes: providers with
    the same ``cache_key`` and label share cached answers wherever they share a store. Setting it is your
    promise that their answers are interchangeable. Without it, a function, callable or retriever provider's
    cached answers belong to the object doing the work (the wrapped function, the callable or retriever
    instance) in this process only, and an HTTP provider's to its name, base URL and key.
    """

    name: ClassVar[str] = ""
    #: what this provider can do: ``search`` (this class's protocol), ``fetch`` (a page's content: see
    #: :class:`~perplexed.providers.FetchProvider`), or both; asking it for another is a ConfigError at validation
    operations: ClassVar[frozenset[Operation]] = frozenset({"search"})
    #: per operation, the modules it imports and the extra that installs them (``{"fetch": (("trafilatura",
    #: "fetch"),)}``): one that is not installed is a ConfigError at validation naming the extra, never an
    #: attempt that fails over to the next member
    requires: ClassVar[Mapping[str, tuple[tuple[str, str], ...]]] = {}
    env_key: ClassVar[str | None] = None
    env_base_url: ClassVar[str | None] = None
    default_base_url: ClassVar[str | None] = None
    default_price: ClassVar[float] = 0.0
    native_options: ClassVar[frozenset[str]] = frozenset()
    #: URL schemes besides http(s) this provider mints for its own hits (``file`` for ``local``): a merge keeps
    #: them from this provider only and drops every other non-web URL
    url_schemes: ClassVar[frozenset[str]] = frozenset()
    #: options done on the hits by the engine for every provider
    client_side_options: ClassVar[frozenset[str]] = frozenset(
        {"max_results", "include_domains", "exclude_domains"}
    )
    #: same-origin redirects a call follows (None: see :attr:`max_redirects`)
    redirects: ClassVar[int | None] = None
    #: this provider's own readings of statuses (data for the failure map), checked before the general table
    status_rules: ClassVar[tuple[StatusRule, ...]] = ()

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        cost: float | None = None,
        name: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        rate_limit: str | None = None,
        rate_limit_wait_ms: int | None = None,
        cooldown_after: int | None = None,
        cooldown_s: float | None = None,
        cache_key: str | None = None,
        **options: Any,
    ) -> None:
        self.cache_key = _check_cache_key(cache_key, name or self.name)
        self._gov = check_provider_settings(
            rate_limit=rate_limit, rate_limit_wait_ms=rate_limit_wait_ms, cooldown_after=cooldown_after,
            cooldown_s=cooldown_s, owner=f"provider {name or self.name!r}",
        )
        self._gov_cache: Any = None
        #: this provider alone turns governance on (a rate limit or cool-downs of its own)
        self._gov_on = "rate_limit" in self._gov or "cooldown_after" in self._gov
        if cost is not None:
            cost = check_usd(cost, f"cost for provider {name or self.name!r}")
        if api_key is not None:
            if isinstance(api_key, str | SecretStr):  # remembered for redaction even if it is rejected below
                register_secret(api_key if isinstance(api_key, str) else api_key.get_secret_value())
            api_key = SecretStr(check_key(api_key, argument=f"api_key of provider {self.name!r}"))
        if base_url is not None and not isinstance(base_url, str):
            raise ConfigError(
                f"base_url of provider {self.name!r} must be a string URL, got {type(base_url).__name__}"
            )
        if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes <= 0:
            raise ConfigError(f"max_body_bytes of provider {self.name!r} must be a positive int")
        register_url_secret(base_url)  # a password in the URL's user info is a credential too
        self._base_url = base_url.rstrip("/") if base_url else None
        self._api_key = api_key
        self._cost = None if cost is None else float(cost)
        self.label = name or self.name
        self.transport = transport
        self.max_body_bytes = max_body_bytes
        self.options = options

    def __repr__(self) -> str:
        key = "set" if self._api_key is not None or (self.env_key and env_str(self.env_key)) else "missing"
        url = self._base_url or (self.env_base_url and env_str(self.env_base_url)) or self.default_base_url
        parts = [f"name={self.label!r}"]
        if url:
            parts.append(f"base_url={mask_url(url)!r}")
        if self.env_key:
            parts.append(f"api_key={key}")
        return f"{type(self).__name__}({', '.join(parts)})"

    __str__ = __repr__

    # -- configuration ------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The base URL: constructor, else environment, else the provider's default. ConfigError when none."""
        url = self._base_url or (self.env_base_url and env_str(self.env_base_url)) or self.default_base_url
        if not url:
            hint = f" or set {self.env_base_url}" if self.env_base_url else ""
            raise ConfigError(f"provider {self.label!r} needs a base_url: pass base_url=...{hint}")
        if "@" in url:
            register_url_secret(url)
        return url.rstrip("/")

    @property
    def configured(self) -> bool:
        """Whether the provider has what it needs (key and URL) to be called."""
        try:
            _ = self.base_url
            if self.env_key:
                self.api_key()
        except ConfigError:
            return False
        return True

    @property
    def max_redirects(self) -> int:
        """How many redirects to the provider's own origin a call follows: :attr:`redirects` when the class
        sets it, else 0 for a provider that sends a credential (it follows none) and 5 for one that does not.
        A redirect to another origin is never followed (an ``error`` attempt, ``reason="redirect"``)."""
        if self.redirects is not None:
            return self.redirects
        return 0 if self.env_key or self._api_key is not None else 5

    def api_key(self) -> str:
        """The API key (constructor, else the provider's env var); ConfigError naming the env var when missing
        or not a valid key (the message never holds the key)."""
        key = self._api_key or (env_secret(self.env_key) if self.env_key else None)
        if key is None or not key.get_secret_value():
            raise ConfigError(
                f"provider {self.label!r} needs an API key: set {self.env_key} or pass api_key=..."
            )
        return key.get_secret_value()

    def price_override(self) -> float | None:
        """The USD-per-call price set by the caller (constructor ``cost``, ``configure(prices=...)`` or
        ``PERPLEXED_PRICE_<NAME>``), or None when the provider's own pricing applies."""
        if self._cost is not None:
            return self._cost
        configured = price_override(self.label) if self.label != self.name else None
        if configured is None:
            configured = price_override(self.name)
        return configured

    def price(self, options: SearchOptions | None = None) -> float:
        """USD per call: the constructor's ``cost``, else a configured price, else the price table."""
        configured = self.price_override()
        return self.default_price if configured is None else configured

    @property
    def paid(self) -> bool:
        """Whether a call to this provider costs money (under the current price table)."""
        return self.price() > 0

    # -- the sans-io protocol -----------------------------------------------------------------------------

    def flow(self, query: str, options: SearchOptions) -> Flow:
        """Yield HTTP requests and receive their (fully read) responses; return the answer.

        The default is one request and one response. Raise :class:`ProviderError` to classify a failure.
        """
        response = yield self.build_request(query, options)
        return self.parse_response(response, query, options)

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        """Build the HTTP request for ``query``."""
        raise NotImplementedError

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        """Turn a fully read response into hits, or raise :class:`ProviderError`."""
        raise NotImplementedError

    # -- helpers shared by providers -----------------------------------------------------------------------

    def ignored(self, options: SearchOptions) -> list[str]:
        """Common options set by the caller that neither the API nor the engine can honour (logged)."""
        supported = self.native_options | self.client_side_options
        return [
            k
            for k, v in options.model_dump(exclude={"extra"}).items()
            if v is not None and k not in supported and k != "max_results"
        ]

    def log_ignored(self, options: SearchOptions) -> None:
        """Debug-log the options this provider ignores."""
        ignored = self.ignored(options)
        if ignored:
            logger.debug("provider %s ignores options it does not support: %s", self.label, ", ".join(ignored))

    def fail(self, reason: Reason, message: str, response: httpx.Response | None = None, **kw: Any) -> ProviderError:
        """Build a classified :class:`ProviderError` for this provider."""
        return ProviderError(
            reason,
            message,
            provider=self.label,
            status=None if response is None else response.status_code,
            **kw,
        )

    def status_row(self, response: httpx.Response, context: Context = "api") -> StatusRow:
        """The status table's row for ``response`` (:mod:`perplexed.policy._status`): this provider's own rows first."""
        return lookup(response.status_code, context, vendor=self.name, body=response.content)

    def error_message(self, response: httpx.Response) -> str:
        """The upstream's own words for a failed response (redacted; a provider that puts them elsewhere
        overrides this)."""
        return parse_error_envelope(response.content).message or ""

    def check_status(self, response: httpx.Response, *, url: str = "", context: Context = "api") -> None:
        """Raise a classified :class:`ProviderError` for a response the status table reads as a failure (this
        provider's :attr:`status_rules` first, then its rows in the table, then the general rows). ``url``: the
        page asked for (a fetch), for the message; ``context``: ``fetch`` for an API's answer to a fetch."""
        row = self.status_row(response, context)
        if row.reason is None:
            return
        status = response.status_code
        if self.status_rules:
            rule = match_rule(self.status_rules, status, parse_error_envelope(response.content))
            if rule is not None:
                raise self.fail(rule.reason, self._status_text(rule.message, response, url).strip(), response)
        reason: Reason = row.reason
        if row.from_text:
            reason = reason_from_text(self.error_message(response)) or reason
        if row.vendor:
            raise self.fail(reason, self._status_text(row.message, response, url).strip(), response)
        if reason == "redirect":  # a 3xx the flow was handed: never followed here either
            reason = "bad_request"
        retry = self.retry_after(response) if row.retry_after else None
        note = "" if retry is None else f" (retry after {retry:g} s)"
        raise self.fail(reason, self._status_text(row.message, response, url) + note, response, retry_after=retry)

    def _status_text(self, template: str, response: httpx.Response, url: str) -> str:
        envelope = parse_error_envelope(response.content)
        return template.format(
            status=response.status_code,
            code="" if envelope.code is None else str(envelope.code).upper(),
            message=clip(self.error_message(response), ERROR_TEXT_LIMIT),
            detail=_error_text(response) if "{detail}" in template else "",
            url=url,
        )

    def retry_after(self, response: httpx.Response) -> float | None:
        """Seconds to wait after a 429, from ``retry-after-ms`` / ``Retry-After`` (a provider that reports it
        elsewhere, e.g. in the body, overrides this)."""
        return parse_retry_after(response.headers)

    def json_body(self, response: httpx.Response) -> Any:
        """Check the status, then parse the body as JSON; HTML or broken JSON is a ``malformed`` error."""
        self.check_status(response)
        ctype = response.headers.get("content-type", "")
        text = response.content
        if "html" in ctype or text.lstrip()[:1] == b"<":
            raise self.fail("malformed", f"expected JSON, got {ctype or 'HTML'}", response)
        try:
            return json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise self.fail("malformed", f"response is not valid JSON ({exc})", response) from None

    def json_object(self, response: httpx.Response) -> dict[str, Any]:
        """Like :meth:`json_body`, requiring a JSON object."""
        data = self.json_body(response)
        if not isinstance(data, dict):
            raise self.fail("malformed", f"expected a JSON object, got {type(data).__name__}", response)
        return data

    def headers(self, **extra: str) -> dict[str, str]:
        """Default JSON headers plus ``extra``."""
        return {"Accept": "application/json", "User-Agent": "perplexed-search/0.1", **extra}


def _check_cache_key(value: object, owner: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 512 or not value.isprintable():
        raise ConfigError(
            f"cache_key of provider {owner!r} must be a non-empty printable string (at most 512 characters), "
            f"got {value!r}"[:300]
        )
    return value


class CallableProvider(Provider):
    """A non-HTTP provider: implement ``asearch`` (preferred) or ``search``; both return a ProviderAnswer.

    A sync ``search`` runs in a worker thread so it cannot block the event loop; on timeout its result is
    discarded (a thread cannot be killed, so a sync provider should honour its own limits too).
    """

    def search(self, query: str, options: SearchOptions) -> ProviderAnswer:
        """Synchronous search (override this or :meth:`asearch`)."""
        raise NotImplementedError

    async def asearch(self, query: str, options: SearchOptions) -> ProviderAnswer:
        """Asynchronous search (override this or :meth:`search`)."""
        raise NotImplementedError

    @property
    def is_async(self) -> bool:
        """Whether ``asearch`` is implemented."""
        return type(self).asearch is not CallableProvider.asearch

    @property
    def _cache_subject(self) -> object:
        """The object doing the work, whose identity (in this process) names the cached answers when no
        ``cache_key`` is set: the provider itself here; the wrapped function or retriever in subclasses."""
        return self


class FunctionProvider(CallableProvider):
    """Wrap a plain function (sync or async) ``fn(query, options) -> hits`` as a chain member.

    ``fn`` may return a :class:`ProviderAnswer`, or a list of :class:`Hit` / dicts with at least ``url``.
    """

    name = "function"

    def __init__(
        self,
        fn: Callable[[str, SearchOptions], Any],
        *,
        name: str | None = None,
        cost: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name or getattr(fn, "__name__", "function"), cost=cost, **kwargs)
        self._fn = fn
        import inspect

        # a coroutine function, a partial of one, or an object whose __call__ is one
        self._fn_is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004
        )

    @property
    def is_async(self) -> bool:
        return self._fn_is_async

    @property
    def _cache_subject(self) -> object:
        return self._fn

    def search(self, query: str, options: SearchOptions) -> ProviderAnswer:
        return to_answer(self._fn(query, options), self.label)

    async def asearch(self, query: str, options: SearchOptions) -> ProviderAnswer:
        result: Awaitable[Any] = self._fn(query, options)
        return to_answer(await result, self.label)


def to_answer(value: Any, provider: str) -> ProviderAnswer:
    """Coerce what a callable provider returned into a ProviderAnswer."""
    if isinstance(value, ProviderAnswer):
        return value
    if value is None:
        return ProviderAnswer()
    hits: list[Hit] = []
    for item in value:
        if isinstance(item, Hit):
            hits.append(item)
        elif isinstance(item, Mapping):
            hits.append(Hit(**{k: v for k, v in item.items() if k in Hit.model_fields}))
        else:
            raise ProviderError("malformed", f"provider returned {type(item).__name__}, not a hit", provider=provider)
    return ProviderAnswer(hits=hits)


def parse_published(value: Any) -> date | None:
    """Parse a provider's date (ISO 8601, RFC 2822, epoch seconds, 'YYYY-MM-DD'); None when unparseable."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, datetime):
            return value.date()
        if isinstance(value, date):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                return None
            return datetime.fromtimestamp(float(value), tz=UTC).date()
        if not isinstance(value, str):
            return None
        text = value.strip()
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
        except ValueError:
            pass
        try:
            return date.fromisoformat(text[:10])
        except ValueError:
            pass
        for fmt in ("%m/%d/%Y", "%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y"):
            try:
                return datetime.strptime(text, fmt).date()
            except ValueError:
                continue
        return parsedate_to_datetime(text).date()
    except (ValueError, TypeError, OverflowError, OSError, IndexError):
        return None


#: how much of an upstream's error text goes into a message (after redaction)
ERROR_TEXT_LIMIT = 300


def _error_text(response: httpx.Response, limit: int = ERROR_TEXT_LIMIT) -> str:
    """The upstream's error message for a failed response: redacted, then cut to ``limit`` characters."""
    envelope = parse_error_envelope(response.content)
    if not envelope.is_json:
        text = (envelope.message or "").strip()
        return "(HTML body)" if text.startswith("<") else clip(text, limit)
    if envelope.message:
        return clip(envelope.message, limit)
    payload = envelope.payload
    if isinstance(payload, dict):
        for key in ("error", "message", "detail", "errors"):
            if key in payload:
                return clip(str(payload[key]), limit)
    return clip(str(payload), limit)
