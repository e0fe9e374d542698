"""The Agent API client: :class:`AsyncAgentClient` (create, stream, resume, retrieve, cancel, wait).

It holds the one implementation; :class:`perplexed.agent.AgentClient` (``_sync.py``) runs the same
coroutines on perplexed's portal loop. Decisions live elsewhere and are pure: timeouts and retries in
``_policy.py``, the meaning of an HTTP answer in ``_outcome.py``, what to do when a stream drops in
``_stream.py`` (which also reads streams).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import weakref
from collections.abc import Mapping
from typing import Any, NamedTuple, NotRequired, Unpack
from urllib.parse import quote

import httpx
from pydantic import SecretStr

from perplexed import _otel
from perplexed._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    BadRequestError,
    ConfigError,
    InvalidRequest,
    MalformedResponseError,
    ResponseBodyError,
    register_secret,
)
from perplexed._logs import get_logger
from perplexed.agent._args import (
    DEFAULT_BASE_URL,
    check_base_url,
    check_count,
    check_headers,
    check_key,
    check_key_text,
    check_seconds,
)
from perplexed.agent._outcome import (
    body_error,
    error_from_response,
    explain_unknown_field,
    parse_json,
    parse_response,
    raise_for_status,
    redirect_error,
    with_note,
)
from perplexed.agent._policy import (
    CONNECT_TIMEOUT,
    CONTROL_TIMEOUT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_WAIT_TIMEOUT,
    ERROR_BODY_BYTES,
    MAX_BODY_BYTES,
    MAX_RETRY_AFTER,
    default_timeout,
    retry_delay,
    stream_timeouts,
)
from perplexed.agent._request import AgentRequest, RequestParams, build_request, encode_body
from perplexed.agent._response import CancelResult, Response
from perplexed.agent._stream import AsyncAgentStream
from perplexed.net._decode import accept_encoding
from perplexed.net._http import get_client, read_capped, warm_up
from perplexed.policy._failures import classify_exception

__all__ = ["DEFAULT_API_PATH", "DEFAULT_BASE_URL", "ENV_API_KEY", "AsyncAgentClient", "CreateParams"]

logger = get_logger("perplexed.agent")

DEFAULT_API_PATH = "/v1/agent"  # "/v1/responses" is an equivalent alias (the SDK's): api_path="/v1/responses"
ENV_API_KEY = "PERPLEXITY_API_KEY"


class CreateParams(RequestParams, total=False):
    """``create``/``stream`` keyword arguments: the request fields plus per-call ``timeout``,
    ``stream_timeout`` and ``extra_headers``."""

    timeout: NotRequired[float | None]
    stream_timeout: NotRequired[float | None]
    extra_headers: NotRequired[Mapping[str, str] | None]


def _split(params: Mapping[str, Any]) -> tuple[dict[str, Any], float | None, float | None, dict[str, str]]:
    """``create``/``stream`` keywords: (request fields, timeout, stream_timeout, extra headers), checked."""
    rest = dict(params)
    timeout = check_seconds(rest.pop("timeout", None), "timeout")
    stream_timeout = check_seconds(rest.pop("stream_timeout", None), "stream_timeout")
    return rest, timeout, stream_timeout, check_headers(rest.pop("extra_headers", None), "extra_headers")


class _Failure(NamedTuple):
    """One failed try of a request: the error to raise, and what the retry policy reads."""

    error: APIError
    status: int | None = None
    headers: Mapping[str, str] | None = None


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
    ``api_path`` is the endpoint (default ``/v1/agent``; ``/v1/responses`` is the SDK's equivalent alias).
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
        self._api_key = check_key(api_key)
        self.base_url = check_base_url(base_url)
        self.timeout = check_seconds(timeout, "timeout")
        self.stream_timeout = check_seconds(stream_timeout, "stream_timeout")
        self.max_retries = check_count(max_retries, "max_retries")
        self.connect_timeout = check_seconds(connect_timeout, "connect_timeout") or CONNECT_TIMEOUT
        self.max_retry_after = check_seconds(max_retry_after, "max_retry_after", zero_ok=True) or 0.0
        self.max_stream_resumes = check_count(max_stream_resumes, "max_stream_resumes")
        if not isinstance(api_path, str) or not api_path.strip("/") or any(c in api_path for c in "?# "):
            raise ConfigError(f"api_path must be a URL path such as '/v1/agent', got {api_path!r}")
        self.api_path = "/" + api_path.strip("/")
        if transport is not None and not isinstance(transport, httpx.AsyncBaseTransport):
            raise ConfigError(
                f"transport must be an httpx.AsyncBaseTransport, not {type(transport).__name__}"
            )
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            raise ConfigError(f"http_client must be an httpx.AsyncClient, not {type(http_client).__name__}")
        self._transport = transport
        self._http_client = http_client
        self._default_headers = check_headers(default_headers, "default_headers")
        # streams opened by this client and not finished: aclose() releases their connections
        self._streams: weakref.WeakSet[AsyncAgentStream] = weakref.WeakSet()
        # the pooled HTTP client is made on the first call, inside its timeout: the once-per-process set-up
        # (TLS context, httpcore's async backend: ~250 ms the first time) happens here instead
        warm_up()

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
            check_key_text(env, f"${ENV_API_KEY}")
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
            # only what perplexed decodes within bounds (also through a caller's http_client)
            "Accept-Encoding": accept_encoding(),
            **self._default_headers,
        }
        if extra:
            headers.update(extra)
        return headers

    async def _try(self, client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response | _Failure:
        """Send ``request`` once: the open 2xx response, or the failure (an error response is read, closed)."""
        what = f"{request.method} {request.url.path}"
        try:
            # never follow a redirect, whatever ``http_client`` says: the key must not reach another origin
            response = await client.send(request, stream=True, follow_redirects=False)
        except httpx.TransportError as exc:  # the failure map: a timeout, else the connection
            error: APIError
            if classify_exception(exc).reason == "timeout":
                error = APITimeoutError(f"{what} timed out: {type(exc).__name__}")
            else:
                error = APIConnectionError(f"{what} failed: {type(exc).__name__}: {exc}")
            error.__cause__ = exc
            return _Failure(error)
        if response.is_success:
            return response
        if 300 <= response.status_code < 400:
            await response.aclose()
            return _Failure(redirect_error(response), response.status_code, response.headers)
        try:
            body = await read_capped(response, ERROR_BODY_BYTES)
        except (ResponseBodyError, httpx.HTTPError):
            body = b""
        finally:
            await response.aclose()
        status, headers = response.status_code, response.headers
        return _Failure(error_from_response(status, body, headers), status, headers)

    async def _send(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
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
        if content is not None:
            headers["Content-Type"] = "application/json"
        loop = asyncio.get_running_loop()
        retry = 0
        while True:
            request = client.build_request(
                method,
                url,
                content=content,
                params=params,
                headers=headers,
                timeout=httpx.Timeout(timeout, connect=min(self.connect_timeout, timeout)),
            )
            outcome = await self._try(client, request)
            if not isinstance(outcome, _Failure):
                return outcome
            delay = retry_delay(
                retry,
                self.max_retries,
                outcome.status,
                outcome.headers,
                remaining=None if deadline is None else deadline - loop.time(),
                max_retry_after=self.max_retry_after,
            )
            if delay is None:
                raise outcome.error
            if failures is not None:
                failures.append(outcome.error)
            logger.info(
                "%s %s: %s (%s); retry %d/%d in %.2fs",
                method,
                request.url.path,
                type(outcome.error).__name__,
                outcome.error.message,
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
        content: bytes | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send with retries within ``timeout`` and return the body parsed as JSON."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        failures: list[APIError] = []
        try:
            async with asyncio.timeout(timeout):
                response = await self._send(
                    method,
                    url,
                    content=content,
                    stream=False,
                    timeout=timeout,
                    deadline=deadline,
                    extra_headers=extra_headers,
                    failures=failures,
                )
                try:
                    body = await self._read_body(response)
                finally:
                    await response.aclose()
        except TimeoutError:
            if failures:  # the budget ran out while retrying: what the API answered is the real error
                raise with_note(failures[-1], f"retrying it ran past the {timeout:g}s timeout") from None
            raise APITimeoutError(
                f"{method} {url.removeprefix(self.base_url)} took longer than {timeout:g}s"
            ) from None
        return parse_json(response.status_code, body)

    async def _read_body(self, response: httpx.Response) -> bytes:
        """A 2xx body, capped; failures while reading are typed errors."""
        what = f"{response.request.method} {response.url.path}"
        try:
            return await read_capped(response, MAX_BODY_BYTES)
        except httpx.TransportError as exc:  # the failure map: a timeout, else the connection
            if classify_exception(exc).reason == "timeout":
                raise APITimeoutError(f"{what}: reading the body timed out") from exc
            raise APIConnectionError(f"{what}: {type(exc).__name__}") from exc
        except ResponseBodyError as exc:  # too large, or not the encoding it claims
            raise body_error(exc, response) from None

    # -- public API -------------------------------------------------------------------------------------

    async def create(
        self, request: AgentRequest | None = None, /, **params: Unpack[CreateParams]
    ) -> Response:
        """Create a response (``POST /v1/agent``) and return it.

        Takes an :class:`AgentRequest` and/or its fields as keyword arguments. A response whose status is
        ``failed``, ``cancelled`` or ``incomplete`` raises :class:`perplexed.agent.ResponseFailedError` (carrying
        it). With ``background=True`` it returns at once (status ``queued``): use :meth:`wait`. With
        ``stream=True`` it streams and returns the response assembled from the stream; then ``timeout``
        bounds the wait for each event and ``stream_timeout`` the whole stream (see the class docstring).
        """
        fields, timeout, stream_timeout, extra_headers = _split(params)
        req = build_request(request, fields)
        if req.stream:  # the stream has the call's span
            stream = self._open_stream(req, timeout, stream_timeout, extra_headers)
            return await stream.get_final_response()
        total = timeout or self.timeout or default_timeout(req)
        content = encode_body(req)
        # one span for the call, retries included (the GenAI inference client span: ``chat {model}``)
        started = time.perf_counter()
        with _otel.chat_span(req, self.base_url) as span:
            try:
                try:
                    data = await self._request_json(
                        "POST", self._path(), timeout=total, content=content, extra_headers=extra_headers
                    )
                except BadRequestError as exc:
                    raise explain_unknown_field(exc, req) from exc.__cause__
                response = raise_for_status(parse_response(data))
            except BaseException as exc:
                _otel.chat_failed(span, exc)
                _otel.record_chat_metrics(time.perf_counter() - started, req, None, exc)
                raise
            _otel.chat_done(span, response)
        _otel.record_chat_metrics(time.perf_counter() - started, req, response, None)
        return response

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
        idle, total = stream_timeouts(
            req,
            timeout=timeout,
            stream_timeout=stream_timeout,
            client_timeout=self.timeout,
            client_stream_timeout=self.stream_timeout,
        )
        stream = AsyncAgentStream(
            _StreamIO(self), req, timeout=idle, stream_timeout=total, extra_headers=extra_headers, body=encode_body(req),
            server=self.base_url,
        )
        self._streams.add(stream)
        return stream

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
        if isinstance(starting_after, bool) or not isinstance(starting_after, int) or starting_after < 0:
            raise InvalidRequest(
                f"starting_after must be a sequence_number (an int >= 0), got {starting_after!r}",
                param="starting_after",
            )
        idle, total = stream_timeouts(
            None,
            timeout=check_seconds(timeout, "timeout"),
            stream_timeout=check_seconds(stream_timeout, "stream_timeout"),
            client_timeout=self.timeout,
            client_stream_timeout=self.stream_timeout,
        )
        stream = AsyncAgentStream(
            _StreamIO(self),
            None,
            timeout=idle,
            stream_timeout=total,
            extra_headers=None,
            resume=(response_id, starting_after),
            server=self.base_url,
        )
        self._streams.add(stream)
        return stream

    async def retrieve(
        self,
        response_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Response:
        """Fetch a response by id (``GET /v1/agent/{id}``), whatever its status (no exception for failed)."""
        limit = check_seconds(timeout, "timeout") or CONTROL_TIMEOUT
        data = await self._request_json("GET", self._path(response_id), timeout=limit)
        return parse_response(data)

    async def cancel(
        self,
        response_id: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> CancelResult:
        """Ask to cancel a background run. Asynchronous: the status is ``cancelling`` until it ends."""
        limit = check_seconds(timeout, "timeout") or CONTROL_TIMEOUT
        data = await self._request_json("POST", self._path(response_id, "/cancel"), timeout=limit)
        if not isinstance(data, dict):
            raise MalformedResponseError(
                "the API answered cancel with something that is not an object", status=200
            )
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
        self._path(response_id)  # validates the id
        response = await self._poll(
            response_id,
            check_seconds(timeout, "timeout"),
            check_seconds(poll_interval, "poll_interval", zero_ok=True) or 0.0,
            check_seconds(max_poll_interval, "max_poll_interval", zero_ok=True) or 0.0,
        )
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
        """Release what this client holds: the connections of its streams that are still open (they end).

        HTTP connections otherwise belong to perplexed's shared pool (or to your ``http_client``, which you
        close), so the client stays usable afterwards.
        """
        for stream in list(self._streams):
            with contextlib.suppress(RuntimeError):  # being iterated right now by another task: it ends there
                await stream.aclose()

    async def __aenter__(self) -> AsyncAgentClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _StreamIO:
    """The I/O a client hands each of its streams (:class:`~perplexed.agent._stream.StreamIO`): connecting,
    resuming, polling and reading a whole body go through the client's one request path, so a stream calls
    nothing private of the client."""

    __slots__ = ("_client",)

    def __init__(self, client: AsyncAgentClient) -> None:
        self._client = client

    @property
    def max_resumes(self) -> int:
        return self._client.max_stream_resumes

    async def open(
        self,
        response_id: str | None,
        after: int | None,
        *,
        body: bytes | None,
        timeout: float,  # noqa: ASYNC109 - a per-call budget
        extra_headers: Mapping[str, str],
    ) -> httpx.Response:
        client = self._client
        if response_id is None:  # a new run: POST the request
            return await client._send(
                "POST", client._path(), content=body, stream=True, timeout=timeout, extra_headers=extra_headers
            )
        params = {"stream": "true", "starting_after": str(after)}  # resume after event ``after``
        return await client._send(
            "GET", client._path(response_id), params=params, stream=True, timeout=timeout,
            extra_headers=extra_headers,
        )

    async def poll(self, response_id: str, timeout: float) -> Response:  # noqa: ASYNC109
        return await self._client._poll(response_id, timeout, 1.0, 10.0)

    async def read_body(self, source: httpx.Response) -> bytes:
        return await self._client._read_body(source)
