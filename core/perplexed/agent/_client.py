"""The Agent API client: the only module of ``perplexed.agent`` that does I/O.

:class:`AsyncAgentClient` holds the one implementation (create, stream with resume, retrieve, cancel,
wait); :class:`AgentClient` is a thin facade running the same coroutines on perplexed's portal loop.
Retry and backoff decisions (:func:`should_retry`, :func:`retry_delay`, :func:`parse_retry_after`) and the
mapping of HTTP errors to typed exceptions (:func:`error_from_response`) are pure functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import os
import random
import time
from collections.abc import AsyncGenerator, Generator, Iterator, Mapping
from types import TracebackType
from typing import Any, NotRequired, Unpack
from urllib.parse import quote

import httpx
from pydantic import SecretStr, ValidationError

from .. import _portal
from .._errors import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ConflictError,
    InvalidRequest,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    ResponseFailedError,
    ServerError,
    StreamError,
    redact,
    register_secret,
)
from .._http import get_client, read_capped
from .._models import Attempt, Outcome
from ._request import AgentRequest, RequestParams, build_request
from ._response import (
    FAILED_STATUSES,
    TERMINAL_EVENTS,
    CancelResult,
    ErrorEvent,
    Response,
    ResponseCancelledEvent,
    ResponseCompletedEvent,
    ResponseFailedEvent,
    ResponseIncompleteEvent,
    StreamAssembler,
    StreamEvent,
    UnknownEvent,
    parse_event,
)
from .sse import SSEDecoder

__all__ = [
    "DEFAULT_BASE_URL",
    "AgentClient",
    "AgentStream",
    "AsyncAgentClient",
    "AsyncAgentStream",
    "CreateParams",
    "ResponseCancelledError",
    "ResponseIncompleteError",
    "backoff_delay",
    "default_timeout",
    "error_from_response",
    "parse_retry_after",
    "retry_delay",
    "should_retry",
]

logger = logging.getLogger("perplexed.agent")

DEFAULT_BASE_URL = "https://api.perplexity.ai"
DEFAULT_API_PATH = "/v1/agent"  # "/v1/responses" is an equivalent alias (the SDK's)
ENV_API_KEY = "PERPLEXITY_API_KEY"
ENV_BASE_URL = "PERPLEXITY_BASE_URL"

CONNECT_TIMEOUT = 5.0
# Overall per-request timeouts (seconds), sized for what each preset/effort level does. Not the SDK's 900 s.
PRESET_TIMEOUTS: dict[str, float] = {
    "fast": 60.0,
    "low": 120.0,
    "medium": 300.0,
    "high": 600.0,
    "xhigh": 900.0,
    "fast-search": 60.0,
    "pro-search": 120.0,
    "deep-research": 300.0,
    "advanced-deep-research": 600.0,
}
MODEL_TIMEOUT = 120.0  # model-only requests and unknown presets
BACKGROUND_CREATE_TIMEOUT = 30.0  # a background create answers at once with status "queued"
CONTROL_TIMEOUT = 30.0  # retrieve / cancel
DEFAULT_WAIT_TIMEOUT = 1800.0  # wait(): deep research runs take minutes

DEFAULT_MAX_RETRIES = 2
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
MAX_BODY_BYTES = 32 * 1024 * 1024
RETRYABLE_STATUSES = frozenset({408, 409, 429})


class ResponseIncompleteError(ResponseFailedError):
    """The run ended ``incomplete``; ``reason`` says why (e.g. ``max_output_tokens``)."""


class ResponseCancelledError(ResponseFailedError):
    """The run was cancelled."""


# --- pure decisions ----------------------------------------------------------------------------------


def _lower(headers: Mapping[str, str] | None) -> dict[str, str]:
    if headers is None:
        return {}
    if isinstance(headers, httpx.Headers):
        return {k.lower(): v for k, v in headers.items()}
    return {str(k).lower(): str(v) for k, v in headers.items()}


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait as the server asked: ``retry-after-ms`` (preferred) or ``Retry-After``.

    ``Retry-After`` may be seconds or an HTTP date. Returns ``None`` when absent or unparseable; negative
    values count as 0.
    """
    h = _lower(headers)
    ms = h.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = h.get("retry-after")
    if ra is None:
        return None
    ra = ra.strip()
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def should_retry(status: int | None, headers: Mapping[str, str] | None = None) -> bool:
    """Whether a failed attempt is worth retrying.

    ``status=None`` is a connection error or timeout (retried). Otherwise 408, 409, 429 and 5xx are
    retried, unless the server says ``x-should-retry: false`` (and ``true`` forces a retry).
    """
    flag = _lower(headers).get("x-should-retry", "").strip().lower()
    if flag == "true":
        return True
    if flag == "false":
        return False
    if status is None:
        return True
    return status in RETRYABLE_STATUSES or status >= 500


def backoff_delay(retry_number: int, *, jitter: float | None = None) -> float:
    """Exponential backoff with jitter: ``min(0.5 * 2**n, 8) * (1 - 0.25 * jitter)`` for the n-th retry (0-based)."""
    j = random.random() if jitter is None else jitter
    base = min(INITIAL_RETRY_DELAY * (2.0**retry_number), MAX_RETRY_DELAY)
    return base * (1.0 - 0.25 * j)


def retry_delay(
    retry_number: int,
    max_retries: int,
    status: int | None,
    headers: Mapping[str, str] | None = None,
    *,
    remaining: float | None = None,
    max_retry_after: float = MAX_RETRY_AFTER,
    jitter: float | None = None,
) -> float | None:
    """How long to sleep before retry number ``retry_number`` (0-based), or ``None`` to give up.

    Gives up when retries are exhausted, the failure is not retryable, the server asks to wait longer than
    ``max_retry_after``, or the wait would not fit in ``remaining`` seconds of the caller's budget.
    """
    if retry_number >= max_retries or not should_retry(status, headers):
        return None
    asked = parse_retry_after(headers)
    if asked is not None:
        if asked > max_retry_after:
            return None
        delay = asked
    else:
        delay = backoff_delay(retry_number, jitter=jitter)
    if remaining is not None and delay >= remaining:
        return None
    return delay


def default_timeout(request: AgentRequest) -> float:
    """The overall timeout for ``request``: by preset/effort level, shorter for a background create."""
    if request.background and not request.stream:
        return BACKGROUND_CREATE_TIMEOUT
    level = (request.effort or request.preset or "").split("@", 1)[0].strip().lower()
    return PRESET_TIMEOUTS.get(level, MODEL_TIMEOUT)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    return value


_STATUS_ERRORS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: BadRequestError,
    429: RateLimitError,
}


def error_from_response(
    status: int, body: bytes | str | Any, headers: Mapping[str, str] | None = None
) -> APIStatusError:
    """The typed exception for an HTTP error response.

    Reads the ``{"error": {message, type, code, param}}`` envelope (and FastAPI's ``{"detail": [...]}``);
    the API's message is kept as the exception message (credentials scrubbed).
    """
    payload: Any = body
    if isinstance(body, bytes | str):
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    message: str | None = None
    etype: str | None = None
    code: str | int | None = None
    param: str | None = None
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict):
            message = _str_or_none(err.get("message"))
            etype = _str_or_none(err.get("type"))
            raw_code = err.get("code")
            code = raw_code if isinstance(raw_code, int | str) and not isinstance(raw_code, bool) else None
            param = _str_or_none(err.get("param"))
        elif isinstance(err, str):
            message = err
        elif isinstance(payload.get("detail"), list):
            details = [d for d in payload["detail"] if isinstance(d, dict)]
            message = "; ".join(str(d.get("msg", "")) for d in details) or None
            if details and isinstance(details[0].get("loc"), list) and details[0]["loc"]:
                param = str(details[0]["loc"][-1])
            etype = "validation_error"
        elif isinstance(payload.get("detail"), str):
            message = payload["detail"]
        elif isinstance(payload.get("message"), str):
            message = payload["message"]
    elif isinstance(payload, str) and payload.strip():
        message = payload.strip()[:500]
    if not message:
        message = f"HTTP {status}"
    cls = _STATUS_ERRORS.get(status) or (ServerError if status >= 500 else APIStatusError)
    return cls(
        message,
        status=status,
        type=etype,
        code=code,
        param=param,
        retry_after=parse_retry_after(headers),
        body=_scrub(payload),
    )


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _failed_error(response: Response) -> ResponseFailedError:
    """The exception for a response whose status is ``failed``, ``cancelled`` or ``incomplete``."""
    rid = response.id or "?"
    info = response.error
    attempts = [
        Attempt(
            provider="perplexity-agent",
            outcome=Outcome.ERROR,
            cost=response.cost or 0.0,
            billable=True,
            error=response.status,
        )
    ]
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        return ResponseIncompleteError(
            f"response {rid} is incomplete: {reason or 'no reason given'}",
            response=response,
            reason=reason,
            status=200,
            attempts=attempts,
        )
    if response.status == "cancelled":
        return ResponseCancelledError(
            f"response {rid} was cancelled",
            response=response,
            reason="cancelled",
            status=200,
            type=info.type if info else None,
            code=info.code if info else None,
            attempts=attempts,
        )
    message = info.message if info and info.message else "no error message given"
    return ResponseFailedError(
        f"response {rid} failed: {message}",
        response=response,
        reason=str(info.code) if info and info.code is not None else (info.type if info else None),
        status=200,
        type=info.type if info else None,
        code=info.code if info else None,
        param=info.param if info else None,
        attempts=attempts,
    )


def raise_for_status(response: Response) -> Response:
    """Return ``response``, or raise :class:`ResponseFailedError` when its status is not success."""
    if response.status in FAILED_STATUSES:
        raise _failed_error(response)
    return response


def terminal_event_for(response: Response) -> StreamEvent | None:
    """The terminal event matching a terminal response's status (``None`` while it is still running)."""
    if response.status == "completed":
        return ResponseCompletedEvent(response=response)
    if response.status == "incomplete":
        return ResponseIncompleteEvent(response=response)
    if response.status == "cancelled":
        return ResponseCancelledEvent(response=response)
    if response.status == "failed":
        return ResponseFailedEvent(response=response, error=response.error)
    return None


def _parse_response(data: Any) -> Response:
    if not isinstance(data, dict):
        raise APIError("the API answered with something that is not a response object", status=200)
    try:
        return Response.model_validate(data)
    except ValidationError as exc:
        raise APIError(
            f"could not parse the API's response: {exc.error_count()} errors", status=200
        ) from None


# --- the async client --------------------------------------------------------------------------------


class CreateParams(RequestParams, total=False):
    """``create``/``stream`` keyword arguments: the request fields plus per-call ``timeout``,
    ``stream_timeout`` and ``extra_headers``."""

    timeout: NotRequired[float | None]
    stream_timeout: NotRequired[float | None]
    extra_headers: NotRequired[Mapping[str, str] | None]


def _split(params: Mapping[str, Any]) -> tuple[dict[str, Any], float | None, float | None, dict[str, str]]:
    rest = dict(params)
    timeout = rest.pop("timeout", None)
    stream_timeout = rest.pop("stream_timeout", None)
    if stream_timeout is not None and stream_timeout <= 0:
        raise ConfigError("stream_timeout must be positive")
    headers = rest.pop("extra_headers", None) or {}
    return rest, timeout, stream_timeout, dict(headers)


class AsyncAgentClient:
    """Async client of the Perplexity Agent API.

    ``api_key`` defaults to ``$PERPLEXITY_API_KEY`` (read when a call is made; missing → ``ConfigError``),
    ``base_url`` to ``$PERPLEXITY_BASE_URL`` or ``https://api.perplexity.ai``. ``timeout`` is the overall
    per-request timeout in seconds (default: sized by preset, see :data:`PRESET_TIMEOUTS`; for streams it
    bounds the wait for each event); connecting is bounded by 5 s. ``stream_timeout`` bounds the total
    duration of a stream (request, every event, reconnections and polling included; exceeding it raises
    :class:`perplexed.APITimeoutError`); by default it is the preset-sized overall timeout, or ``timeout``
    when that is longer (a resumed stream: 30 minutes, as :meth:`wait`). ``max_retries`` (default 2) retries
    connection errors, 408, 409, 429 and 5xx before any byte of a response was used. HTTP goes through the
    pooled client of the running loop (``transport=`` for tests) unless ``http_client`` is given.
    """

    def __init__(
        self,
        *,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        stream_timeout: float | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
        default_headers: Mapping[str, str] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        max_retry_after: float = MAX_RETRY_AFTER,
        max_stream_resumes: int = 5,
        api_path: str = DEFAULT_API_PATH,
    ) -> None:
        if isinstance(api_key, str):
            api_key = SecretStr(api_key) if api_key else None
        if api_key is not None:
            register_secret(api_key.get_secret_value())
        self._api_key: SecretStr | None = api_key
        url = (base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL).strip().rstrip("/")
        if url.endswith("/v1"):  # an OpenAI-style base URL
            url = url[:-3]
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL, got {url!r}")
        self.base_url = url
        if timeout is not None and timeout <= 0:
            raise ConfigError("timeout must be positive")
        if stream_timeout is not None and stream_timeout <= 0:
            raise ConfigError("stream_timeout must be positive")
        if max_retries < 0:
            raise ConfigError("max_retries must be >= 0")
        self.timeout = timeout
        self.stream_timeout = stream_timeout
        self.max_retries = max_retries
        self.connect_timeout = connect_timeout
        self.max_retry_after = max_retry_after
        self.max_stream_resumes = max_stream_resumes
        self.api_path = "/" + api_path.strip("/")
        self._transport = transport
        self._http_client = http_client
        self._default_headers = dict(default_headers or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, max_retries={self.max_retries})"

    # -- plumbing ---------------------------------------------------------------------------------------

    def _key(self) -> str:
        key = self._api_key
        if key is None:
            env = os.environ.get(ENV_API_KEY, "").strip()
            if not env:
                raise ConfigError(
                    f"no Perplexity API key: pass api_key= or set the {ENV_API_KEY} environment variable"
                )
            register_secret(env)
            return env
        return key.get_secret_value()

    def _client(self) -> httpx.AsyncClient:
        return self._http_client if self._http_client is not None else get_client(self._transport)

    def _path(self, response_id: str | None = None, suffix: str = "") -> str:
        if response_id is None:
            return self.base_url + self.api_path
        if not isinstance(response_id, str) or not response_id.strip() or "/" in response_id:
            raise InvalidRequest(f"not a response id: {response_id!r}", param="response_id")
        return f"{self.base_url}{self.api_path}/{quote(response_id.strip(), safe='')}{suffix}"

    def _headers(self, stream: bool, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self._key()}",
            "Accept": "text/event-stream" if stream else "application/json",
            "User-Agent": "perplexed (python)",
            **self._default_headers,
        }
        if extra:
            headers.update(extra)
        return headers

    async def _send(
        self,
        method: str,
        url: str,
        *,
        json_body: Any = None,
        params: Mapping[str, str] | None = None,
        stream: bool,
        timeout: float,  # noqa: ASYNC109 - a per-call budget, applied with asyncio.timeout
        deadline: float | None = None,
        extra_headers: Mapping[str, str] | None = None,
        failures: list[APIError] | None = None,
    ) -> httpx.Response:
        """Send with retries; return the open 2xx response (the caller reads and closes it).

        Each retried failure is appended to ``failures`` (when given), so a caller whose budget ends during
        a retry can report what the API actually answered rather than a bare timeout.
        """
        client = self._client()
        headers = self._headers(stream, extra_headers)
        loop = asyncio.get_running_loop()
        retry = 0
        while True:
            request = client.build_request(
                method,
                url,
                json=json_body,
                params=params,
                headers=headers,
                timeout=httpx.Timeout(timeout, connect=min(self.connect_timeout, timeout)),
            )
            status: int | None = None
            response_headers: Mapping[str, str] | None = None
            error: APIError
            try:
                response = await client.send(request, stream=True)
            except httpx.TimeoutException as exc:
                error = APITimeoutError(f"{method} {request.url.path} timed out: {type(exc).__name__}")
                error.__cause__ = exc
            except httpx.TransportError as exc:
                error = APIConnectionError(f"{method} {request.url.path} failed: {type(exc).__name__}: {exc}")
                error.__cause__ = exc
            else:
                if response.is_success:
                    return response
                status, response_headers = response.status_code, response.headers
                try:
                    body = await read_capped(response, 1024 * 1024)
                except (ProviderError, httpx.HTTPError):
                    body = b""
                finally:
                    await response.aclose()
                error = error_from_response(status, body, response_headers)
            remaining = None if deadline is None else deadline - loop.time()
            delay = retry_delay(
                retry,
                self.max_retries,
                status,
                response_headers,
                remaining=remaining,
                max_retry_after=self.max_retry_after,
            )
            if delay is None:
                raise error
            if failures is not None:
                failures.append(error)
            logger.info(
                "%s %s: %s (%s); retry %d/%d in %.2fs",
                method,
                request.url.path,
                type(error).__name__,
                error.message,
                retry + 1,
                self.max_retries,
                delay,
            )
            retry += 1
            await asyncio.sleep(delay)

    async def _request_json(
        self,
        method: str,
        url: str,
        *,
        timeout: float,  # noqa: ASYNC109 - a per-call budget, applied with asyncio.timeout
        json_body: Any = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        failures: list[APIError] = []
        try:
            async with asyncio.timeout(timeout):
                response = await self._send(
                    method,
                    url,
                    json_body=json_body,
                    stream=False,
                    timeout=timeout,
                    deadline=deadline,
                    extra_headers=extra_headers,
                    failures=failures,
                )
                try:
                    body = await read_capped(response, MAX_BODY_BYTES)
                except httpx.TimeoutException as exc:
                    raise APITimeoutError(
                        f"{method} {response.url.path}: reading the body timed out"
                    ) from exc
                except httpx.TransportError as exc:
                    raise APIConnectionError(f"{method} {response.url.path}: {type(exc).__name__}") from exc
                except ProviderError as exc:
                    raise APIError(exc.message, status=response.status_code) from None
                finally:
                    await response.aclose()
        except TimeoutError:
            if failures:  # the budget ran out while retrying: what the API answered is the real error
                last = failures[-1]
                last.message = f"{last.message} (retrying it ran past the {timeout:g}s timeout)"
                last.args = (last.message,)
                raise last from None
            raise APITimeoutError(
                f"{method} {url.removeprefix(self.base_url)} took longer than {timeout:g}s"
            ) from None
        try:
            return json.loads(body)
        except ValueError:
            raise APIError(
                f"the API answered HTTP {response.status_code} with a body that is not JSON",
                status=response.status_code,
                body=redact(body[:500].decode("utf-8", "replace")),
            ) from None

    # -- public API -------------------------------------------------------------------------------------

    async def create(
        self, request: AgentRequest | None = None, /, **params: Unpack[CreateParams]
    ) -> Response:
        """Create a response (``POST /v1/agent``) and return it.

        Takes an :class:`AgentRequest` and/or its fields as keyword arguments. A response whose status is
        ``failed``, ``cancelled`` or ``incomplete`` raises :class:`perplexed.ResponseFailedError` (carrying
        it). With ``background=True`` it returns at once (status ``queued``): use :meth:`wait`. With
        ``stream=True`` it streams and returns the response assembled from the stream; then ``timeout``
        bounds the wait for each event and ``stream_timeout`` the whole stream (see the class docstring).
        """
        fields, timeout, stream_timeout, extra_headers = _split(params)
        req = build_request(request, fields)
        if req.stream:
            stream = self._open_stream(req, timeout, stream_timeout, extra_headers)
            return await stream.get_final_response()
        total = timeout or self.timeout or default_timeout(req)
        data = await self._request_json(
            "POST", self._path(), timeout=total, json_body=req.to_body(), extra_headers=extra_headers
        )
        return raise_for_status(_parse_response(data))

    def stream(
        self, request: AgentRequest | None = None, /, **params: Unpack[CreateParams]
    ) -> AsyncAgentStream:
        """Create a response with ``stream=True`` and iterate over its events (``async for``).

        Every event is yielded in order, ending with the terminal one; after a ``response.failed``,
        ``response.incomplete``, ``response.cancelled`` or ``error`` event the iteration raises a typed
        exception. The request is validated now and sent on the first iteration. For ``background=True``
        runs a dropped stream resumes from the last ``sequence_number``; other streams are never re-POSTed.
        ``timeout`` bounds the wait for each event; ``stream_timeout`` the whole stream, from the first
        iteration (default: the preset-sized overall timeout, or ``timeout`` when longer); either one
        running out raises :class:`perplexed.APITimeoutError`.
        """
        fields, timeout, stream_timeout, extra_headers = _split(params)
        req = build_request(request, fields)
        return self._open_stream(req, timeout, stream_timeout, extra_headers)

    def _open_stream(
        self,
        req: AgentRequest,
        timeout: float | None,
        stream_timeout: float | None,
        extra_headers: Mapping[str, str] | None,
    ) -> AsyncAgentStream:
        req = req.model_copy(update={"stream": True})
        idle = timeout or self.timeout or default_timeout(req)
        total = stream_timeout or self.stream_timeout or max(default_timeout(req), idle)
        return AsyncAgentStream(self, req, timeout=idle, stream_timeout=total, extra_headers=extra_headers)

    def resume(
        self,
        response_id: str,
        *,
        starting_after: int,
        timeout: float | None = None,
        stream_timeout: float | None = None,
    ) -> AsyncAgentStream:
        """Reconnect to a background run's stream after event ``starting_after``.

        ``timeout`` bounds the wait for each event; ``stream_timeout`` the whole stream (default: the
        client's, else 30 minutes, as :meth:`wait`).
        """
        self._path(response_id)  # validates the id
        if stream_timeout is not None and stream_timeout <= 0:
            raise ConfigError("stream_timeout must be positive")
        idle = timeout or self.timeout or MODEL_TIMEOUT
        return AsyncAgentStream(
            self,
            None,
            timeout=idle,
            stream_timeout=stream_timeout or self.stream_timeout or max(DEFAULT_WAIT_TIMEOUT, idle),
            extra_headers=None,
            resume=(response_id, starting_after),
        )

    async def retrieve(
        self,
        response_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Response:
        """Fetch a response by id (``GET /v1/agent/{id}``), whatever its status (no exception for failed)."""
        data = await self._request_json("GET", self._path(response_id), timeout=timeout or CONTROL_TIMEOUT)
        return _parse_response(data)

    async def cancel(
        self,
        response_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> CancelResult:
        """Ask to cancel a background run. Asynchronous: the status is ``cancelling`` until it ends."""
        data = await self._request_json(
            "POST", self._path(response_id, "/cancel"), timeout=timeout or CONTROL_TIMEOUT
        )
        if not isinstance(data, dict):
            raise APIError("the API answered cancel with something that is not an object", status=200)
        return CancelResult.model_validate(data)

    async def wait(
        self,
        response_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - a per-call budget, applied with asyncio.timeout
        poll_interval: float = 1.0,
        max_poll_interval: float = 10.0,
    ) -> Response:
        """Poll a run until it is terminal and return it (``failed``/``cancelled``/``incomplete`` raise).

        Polls with backoff (``poll_interval`` growing 1.5-fold up to ``max_poll_interval``) for at most
        ``timeout`` seconds (default 30 minutes), then raises :class:`perplexed.APITimeoutError`.
        """
        response = await self._poll(response_id, timeout, poll_interval, max_poll_interval)
        return raise_for_status(response)

    async def _poll(
        self,
        response_id: str,
        timeout: float | None,  # noqa: ASYNC109
        poll_interval: float,
        max_poll_interval: float,
    ) -> Response:
        loop = asyncio.get_running_loop()
        limit = DEFAULT_WAIT_TIMEOUT if timeout is None else timeout
        deadline = loop.time() + limit
        interval = max(0.0, poll_interval)
        status = "unknown"
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise APITimeoutError(f"response {response_id} still {status} after {limit:g}s", status=200)
            response = await self.retrieve(response_id, timeout=min(CONTROL_TIMEOUT, remaining))
            if response.is_terminal:
                return response
            status = response.status or "unknown"
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise APITimeoutError(
                    f"response {response_id} still {response.status} after {limit:g}s", status=200
                )
            await asyncio.sleep(min(interval, remaining))
            interval = min(max(interval * 1.5, 0.05), max_poll_interval)

    async def aclose(self) -> None:
        """Nothing to release: HTTP connections belong to the shared pool (or to your ``http_client``)."""

    async def __aenter__(self) -> AsyncAgentClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# --- streams -----------------------------------------------------------------------------------------


class AsyncAgentStream:
    """The events of one streamed response (``async for event in stream``).

    After iteration, :attr:`response` is the final response assembled from the stream;
    :meth:`get_final_response` consumes what is left and returns it. :attr:`resumed` counts reconnections
    and :attr:`polled` tells that the end was read by polling (the reconnect cursor had expired).
    """

    def __init__(
        self,
        client: AsyncAgentClient,
        request: AgentRequest | None,
        *,
        timeout: float,
        extra_headers: Mapping[str, str] | None,
        resume: tuple[str, int] | None = None,
        stream_timeout: float | None = None,
    ) -> None:
        self._client = client
        self._request = request
        self._timeout = timeout
        self._stream_timeout = timeout if stream_timeout is None else stream_timeout
        self._deadline = 0.0  # loop time; set when the stream starts
        self._extra_headers = dict(extra_headers or {})
        self._assembler = StreamAssembler()
        self._resume = resume
        self._final: Response | None = None
        self.resumed = 0
        self.polled = False
        if resume is not None:
            self._assembler.last_sequence_number = resume[1]
        self._gen = self._run()

    # -- iteration --------------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncAgentStream:
        return self

    def __await__(self) -> Generator[Any, None, AsyncAgentStream]:
        """``await client.stream(...)`` gives the stream itself (the request is sent on first iteration)."""

        async def _self() -> AsyncAgentStream:
            return self

        return _self().__await__()

    async def __anext__(self) -> StreamEvent:
        return await self._gen.__anext__()

    async def aclose(self) -> None:
        """Stop reading and release the connection."""
        await self._gen.aclose()

    async def __aenter__(self) -> AsyncAgentStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def response(self) -> Response | None:
        """The final response, once the terminal event arrived (``None`` before)."""
        return self._final

    @property
    def snapshot(self) -> Response:
        """The response as assembled so far."""
        return self._assembler.response()

    @property
    def response_id(self) -> str | None:
        """The response id, once ``response.created`` arrived."""
        return self._assembler.response_id or (self._resume[0] if self._resume else None)

    @property
    def last_sequence_number(self) -> int | None:
        """The ``sequence_number`` of the last event received (the resume cursor)."""
        return self._assembler.last_sequence_number

    async def get_final_response(self) -> Response:
        """Consume the rest of the stream and return the final response (failures raise)."""
        async for _ in self:
            pass
        if self._final is None:  # pragma: no cover - the generator always ends with a final or raises
            raise StreamError("the stream ended without a final response")
        return self._final

    # -- the engine -------------------------------------------------------------------------------------

    @property
    def _background(self) -> bool:
        return self._resume is not None or bool(self._request is not None and self._request.background)

    def _overdue(self) -> APITimeoutError:
        return APITimeoutError(
            f"the stream took longer than stream_timeout={self._stream_timeout:g}s", status=200
        )

    async def _open(self) -> httpx.Response:
        client = self._client
        assert self._request is not None
        try:
            async with asyncio.timeout_at(self._deadline):
                return await client._send(
                    "POST",
                    client._path(),
                    json_body=self._request.to_body(),
                    stream=True,
                    timeout=self._timeout,
                    extra_headers=self._extra_headers,
                )
        except TimeoutError:
            raise self._overdue() from None

    async def _reconnect(self, response_id: str, after: int) -> httpx.Response:
        client = self._client
        try:
            async with asyncio.timeout_at(self._deadline):
                return await client._send(
                    "GET",
                    client._path(response_id),
                    params={"stream": "true", "starting_after": str(after)},
                    stream=True,
                    timeout=self._timeout,
                    extra_headers=self._extra_headers,
                )
        except TimeoutError:
            raise self._overdue() from None

    async def _run(self) -> AsyncGenerator[StreamEvent, None]:
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + self._stream_timeout
        source: httpx.Response | None
        if self._resume is None:
            source = await self._open()
        else:
            first_id, first_after = self._resume
            try:
                source = await self._reconnect(first_id, first_after)
            except (BadRequestError, NotFoundError, ConflictError) as exc:
                logger.info("stream of %s cannot resume (%s); polling instead", first_id, exc.message)
                source = None
            if source is None:
                async for event in self._poll_to_end(first_id):
                    yield event
                return
        failures = 0
        while True:
            assert source is not None
            progressed = False
            drop: APIError
            try:
                async with contextlib.aclosing(self._events(source)) as events:
                    async for event in events:
                        progressed = True
                        self._assembler.feed(event)
                        if event.type in TERMINAL_EVENTS:
                            self._final = self._assembler.response()
                            yield event
                            self._finish(event)
                            return
                        yield event
                drop = StreamError(
                    "the stream ended without a terminal event (last sequence_number "
                    f"{self._assembler.last_sequence_number})"
                )
            except httpx.TimeoutException as exc:
                drop = APITimeoutError(
                    f"the stream stalled for more than {self._timeout:g}s ({type(exc).__name__})"
                )
            except TimeoutError:  # the event stall timer of _events
                drop = APITimeoutError(f"the stream sent no event for more than {self._timeout:g}s")
            except httpx.TransportError as exc:
                drop = StreamError(f"the stream broke: {type(exc).__name__}: {exc}")
            finally:
                await source.aclose()
            source = None
            rid = self.response_id
            after = self._assembler.last_sequence_number
            if not self._background:
                raise type(drop)(
                    drop.message + "; not retried: re-sending the request would start a new, billed run "
                    "(use background=True for a resumable stream)",
                    status=200,
                )
            if rid is None or after is None:
                raise drop
            failures = 0 if progressed else failures + 1
            while failures <= self._client.max_stream_resumes:
                delay = backoff_delay(failures - 1) if failures else 0.0
                if loop.time() + delay >= self._deadline:
                    raise self._overdue()
                await asyncio.sleep(delay)
                try:
                    source = await self._reconnect(rid, after)
                except (BadRequestError, NotFoundError, ConflictError) as exc:
                    # e.g. the starting_after cursor expired: read the end by polling
                    logger.info("stream of %s cannot resume (%s); polling instead", rid, exc.message)
                    break
                except (APIConnectionError, ServerError) as exc:
                    logger.info("stream of %s: reconnecting failed (%s)", rid, exc.message)
                    failures += 1
                    continue
                self.resumed += 1
                logger.info("stream of %s resumed after sequence_number %d", rid, after)
                break
            if source is not None:
                continue
            logger.info("stream of %s: %s; polling for its end", rid, drop.message)
            async for event in self._poll_to_end(rid):
                yield event
            return

    async def _poll_to_end(self, response_id: str) -> AsyncGenerator[StreamEvent, None]:
        """Poll the run to its end and yield one terminal event built from the polled response."""
        self.polled = True
        remaining = self._deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise self._overdue()
        final = await self._client._poll(response_id, remaining, 1.0, 10.0)
        event = terminal_event_for(final) or ResponseFailedEvent(response=final, error=final.error)
        self._assembler.feed(event)
        self._final = self._assembler.response()
        yield event
        self._finish(event)

    async def _events(self, source: httpx.Response) -> AsyncGenerator[StreamEvent, None]:
        content_type = source.headers.get("content-type", "")
        if "json" in content_type and "event-stream" not in content_type:
            # The server answered with a whole response instead of a stream.
            loop = asyncio.get_running_loop()
            try:  # a dripped body must not outlive the timeout
                async with asyncio.timeout_at(min(loop.time() + self._timeout, self._deadline)):
                    body = await read_capped(source, MAX_BODY_BYTES)
            except TimeoutError:
                if loop.time() >= self._deadline:
                    raise self._overdue() from None
                raise
            except ProviderError as exc:  # body_too_large: an Agent API error, not a search provider's
                raise APIError(exc.message, status=source.status_code) from None
            try:
                payload = json.loads(body)
            except ValueError:
                raise APIError(
                    f"the API answered HTTP {source.status_code} with a body that is not JSON",
                    status=source.status_code,
                    body=redact(body[:500].decode("utf-8", "replace")),
                ) from None
            response = _parse_response(payload)
            whole = terminal_event_for(response)
            if whole is None:
                raise StreamError(f"expected an event stream, got a response with status {response.status!r}")
            yield whole
            return
        decoder = SSEDecoder()
        after = self._assembler.last_sequence_number
        # The stall timer counts events, not bytes: a server that drips bytes or sends only keep-alive
        # comments cannot hold the stream open past ``timeout`` without a single event (httpx's read
        # timeout resets on every byte). The timer wraps only the read, never the ``yield``. The stream's
        # overall deadline caps every read too, and is checked for every chunk (a read that did not have
        # to wait cannot time out).
        loop = asyncio.get_running_loop()
        deadline = self._deadline
        idle_until = loop.time() + self._timeout
        chunks = source.aiter_bytes().__aiter__()
        while True:
            try:
                async with asyncio.timeout_at(min(idle_until, deadline)):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                if loop.time() >= deadline:
                    raise self._overdue() from None
                raise
            if loop.time() >= deadline:
                raise self._overdue()
            # Each event's raw data is released as soon as it is parsed (a multi-megabyte
            # ``response.completed`` is then held once, parsed, while it is yielded), hence the pops.
            batch = decoder.feed(chunk)
            batch.reverse()
            while batch:
                name, data = batch.pop()[:2]
                if data.startswith("[DONE]"):
                    return
                try:
                    payload = json.loads(data)
                except ValueError:
                    event: StreamEvent = UnknownEvent(type=name, raw={"data": data})
                else:
                    event = parse_event(payload, name if name != "message" else None)
                    del payload
                del data
                idle_until = loop.time() + self._timeout
                seq = event.sequence_number
                if after is not None and seq is not None and seq <= after:
                    continue  # already delivered before a reconnect
                yield event

    def _finish(self, event: StreamEvent) -> None:
        final = self._final
        if isinstance(event, ErrorEvent):
            info = event.info
            raise StreamError(
                info.message or "the stream reported an error",
                type=info.type,
                code=info.code,
                param=info.param,
                status=200,
                body=_scrub(event.model_dump(mode="json")),
            )
        if final is not None:
            raise_for_status(final)


# --- the sync facade ---------------------------------------------------------------------------------


class AgentStream(Iterator[StreamEvent]):
    """Sync view of :class:`AsyncAgentStream`: ``for event in stream``; same :attr:`response`."""

    def __init__(self, inner: AsyncAgentStream) -> None:
        self._inner = inner
        self._iter: Iterator[StreamEvent] | None = None

    def _iterator(self) -> Iterator[StreamEvent]:
        if self._iter is None:
            self._iter = _portal.iterate(self._inner)
        return self._iter

    def __iter__(self) -> AgentStream:
        return self

    def __next__(self) -> StreamEvent:
        return next(self._iterator())

    def close(self) -> None:
        """Stop reading and release the connection."""
        if self._iter is not None:
            close = getattr(self._iter, "close", None)
            if close is not None:
                close()
        else:
            _portal.run(self._inner.aclose)

    def __enter__(self) -> AgentStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def response(self) -> Response | None:
        """The final response, once the terminal event arrived."""
        return self._inner.response

    @property
    def response_id(self) -> str | None:
        """The response id, once known."""
        return self._inner.response_id

    @property
    def last_sequence_number(self) -> int | None:
        """The resume cursor."""
        return self._inner.last_sequence_number

    @property
    def resumed(self) -> int:
        """How many times the stream reconnected."""
        return self._inner.resumed

    @property
    def polled(self) -> bool:
        """True when the end of the run was read by polling."""
        return self._inner.polled

    def get_final_response(self) -> Response:
        """Consume the rest of the stream and return the final response (failures raise)."""
        for _ in self:
            pass
        final = self._inner.response
        if final is None:  # pragma: no cover
            raise StreamError("the stream ended without a final response")
        return final


class AgentClient:
    """Sync client of the Perplexity Agent API: the same coroutines as :class:`AsyncAgentClient`, run on
    perplexed's background loop. Takes the same arguments (see there)."""

    def __init__(
        self,
        *,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        stream_timeout: float | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
        default_headers: Mapping[str, str] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        max_retry_after: float = MAX_RETRY_AFTER,
        max_stream_resumes: int = 5,
        api_path: str = DEFAULT_API_PATH,
    ) -> None:
        self._async = AsyncAgentClient(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            stream_timeout=stream_timeout,
            max_retries=max_retries,
            transport=transport,
            http_client=http_client,
            default_headers=default_headers,
            connect_timeout=connect_timeout,
            max_retry_after=max_retry_after,
            max_stream_resumes=max_stream_resumes,
            api_path=api_path,
        )

    def __repr__(self) -> str:
        return f"AgentClient(base_url={self.base_url!r}, max_retries={self.max_retries})"

    @property
    def async_client(self) -> AsyncAgentClient:
        """The async client doing the work."""
        return self._async

    @property
    def base_url(self) -> str:
        """The API base URL."""
        return self._async.base_url

    @property
    def max_retries(self) -> int:
        """Retries per request."""
        return self._async.max_retries

    @property
    def timeout(self) -> float | None:
        """The configured overall timeout (``None``: sized by preset)."""
        return self._async.timeout

    @property
    def stream_timeout(self) -> float | None:
        """The configured bound on a stream's total duration (``None``: sized by preset)."""
        return self._async.stream_timeout

    def create(self, request: AgentRequest | None = None, /, **params: Unpack[CreateParams]) -> Response:
        """See :meth:`AsyncAgentClient.create`."""
        return _portal.run(self._async.create, request, **params)

    def stream(self, request: AgentRequest | None = None, /, **params: Unpack[CreateParams]) -> AgentStream:
        """See :meth:`AsyncAgentClient.stream`: ``for event in client.stream(...)``."""
        return AgentStream(self._async.stream(request, **params))

    def resume(
        self,
        response_id: str,
        *,
        starting_after: int,
        timeout: float | None = None,
        stream_timeout: float | None = None,
    ) -> AgentStream:
        """See :meth:`AsyncAgentClient.resume`."""
        return AgentStream(
            self._async.resume(
                response_id, starting_after=starting_after, timeout=timeout, stream_timeout=stream_timeout
            )
        )

    def retrieve(self, response_id: str, *, timeout: float | None = None) -> Response:
        """See :meth:`AsyncAgentClient.retrieve`."""
        return _portal.run(self._async.retrieve, response_id, timeout=timeout)

    def cancel(self, response_id: str, *, timeout: float | None = None) -> CancelResult:
        """See :meth:`AsyncAgentClient.cancel`."""
        return _portal.run(self._async.cancel, response_id, timeout=timeout)

    def wait(
        self,
        response_id: str,
        *,
        timeout: float | None = None,
        poll_interval: float = 1.0,
        max_poll_interval: float = 10.0,
    ) -> Response:
        """See :meth:`AsyncAgentClient.wait`."""
        return _portal.run(
            self._async.wait,
            response_id,
            timeout=timeout,
            poll_interval=poll_interval,
            max_poll_interval=max_poll_interval,
        )

    def close(self) -> None:
        """Nothing to release (connections are pooled)."""

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
