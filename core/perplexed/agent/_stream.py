"""The stream engine: one streamed response, with resumption and polling, and the pure decision behind them.

:func:`after_drop` answers "the stream dropped: resume, poll, or raise?" from plain facts (tested
table-style in ``tests/agent/test_agent_stream_policy.py``); :class:`AsyncAgentStream` does the I/O: it
connects (a ``POST`` for a new run, a ``GET ?stream=true&starting_after=N`` to resume one), reads events
under the per-event and whole-stream bounds, and carries out what :func:`after_drop` decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import time
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import httpx

from perplexed import _otel
from perplexed._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    ResponseBodyError,
    ServerError,
    StreamError,
)
from perplexed._logs import get_logger
from perplexed.agent._elide import StringElider, restore
from perplexed.agent._outcome import (
    body_error,
    explain_unknown_field,
    parse_json,
    parse_response,
    raise_for_status,
    terminal_event_for,
)
from perplexed.agent._policy import MAX_STREAM_BYTES, backoff_delay
from perplexed.agent._request import AgentRequest, encode_body
from perplexed.agent._response import (
    TERMINAL_EVENTS,
    ErrorEvent,
    Response,
    ResponseFailedEvent,
    StreamAssembler,
    StreamEvent,
    UnknownEvent,
    parse_event,
)
from perplexed.agent.sse import SSEDecoder
from perplexed.net._http import aiter_decoded
from perplexed.policy._failures import classify_exception
from perplexed.policy._wire import scrub

__all__ = ["AsyncAgentStream", "Decision", "Step", "StreamIO", "after_drop"]

logger = get_logger("perplexed.agent")


# --- the decision ------------------------------------------------------------------------------------


class Step(enum.Enum):
    """What to do after a stream dropped."""

    RESUME = "resume"  #: reconnect after ``delay`` seconds, from the cursor
    POLL = "poll"  #: read the end of the run by polling it
    RAISE = "raise"  #: give up: raise the drop (a foreground stream is never re-sent)
    OVERDUE = "overdue"  #: the wait before reconnecting would pass the stream's deadline


@dataclass(frozen=True)
class Decision:
    step: Step
    delay: float = 0.0
    why: str = ""


def after_drop(
    *,
    background: bool,
    response_id: str | None,
    cursor: int | None,
    failures: int,
    max_resumes: int,
    remaining: float,
    cursor_rejected: bool = False,
    jitter: float | None = None,
) -> Decision:
    """The stream dropped (or reconnecting failed): resume, poll, or raise?

    ``failures`` counts the attempts since the stream last delivered an event that got nothing (0 when
    the dropped connection had delivered events); ``remaining`` is what is left of the stream's deadline
    (seconds); ``cursor_rejected`` says the API refused the ``starting_after`` cursor (400/404/409, e.g.
    it expired).

    - A foreground stream is never resumed: re-sending its request would start a new, billed run.
    - Without a response id or a cursor there is nothing to resume from.
    - A rejected cursor, or more than ``max_resumes`` failed reconnections in a row: poll for the end.
    - Otherwise reconnect, at once after progress, else after an exponential backoff, unless that wait
      does not fit in ``remaining``.
    """
    if not background:
        return Decision(Step.RAISE, why="foreground")
    if response_id is None or cursor is None:
        return Decision(Step.RAISE, why="nothing to resume from")
    if cursor_rejected:
        return Decision(Step.POLL, why="cursor rejected")
    if failures > max_resumes:
        return Decision(Step.POLL, why="reconnections exhausted")
    delay = backoff_delay(failures - 1, jitter=jitter) if failures else 0.0
    if delay >= remaining:
        return Decision(Step.OVERDUE, delay)
    return Decision(Step.RESUME, delay)


# --- the I/O it is handed ----------------------------------------------------------------------------


class StreamIO(Protocol):
    """The I/O a stream needs, handed in by its client (:class:`~perplexed.agent.AsyncAgentClient`): the
    stream decides when to connect, resume, poll or read a whole body; this carries it out over HTTP."""

    @property
    def max_resumes(self) -> int:
        """How many reconnections in a row without a new event a stream may make."""
        ...

    async def open(
        self,
        response_id: str | None,
        after: int | None,
        *,
        body: bytes | None,
        timeout: float,  # noqa: ASYNC109 - a per-call budget
        extra_headers: Mapping[str, str],
    ) -> httpx.Response:
        """The event stream, headers read: ``POST`` ``body`` (``response_id=None``), or reconnect to
        ``response_id`` after event ``after``. Failures raise the typed API errors."""
        ...

    async def poll(self, response_id: str, timeout: float) -> Response:  # noqa: ASYNC109
        """Poll the run until it is terminal (within ``timeout`` seconds)."""
        ...

    async def read_body(self, source: httpx.Response) -> bytes:
        """A whole 2xx body, capped (failures are typed errors)."""
        ...


# --- the engine --------------------------------------------------------------------------------------

_CURSOR_REFUSED = (BadRequestError, NotFoundError, ConflictError)


class AsyncAgentStream:
    """The events of one streamed response (``async for event in stream``).

    After iteration, :attr:`response` is the final response assembled from the stream;
    :meth:`get_final_response` consumes what is left and returns it. :attr:`resumed` counts reconnections
    and :attr:`polled` tells that the end was read by polling (the reconnect cursor had expired).
    """

    def __init__(
        self,
        io: StreamIO,
        request: AgentRequest | None,
        *,
        timeout: float,
        extra_headers: Mapping[str, str] | None,
        resume: tuple[str, int] | None = None,
        stream_timeout: float | None = None,
        body: bytes | None = None,
        server: str | None = None,
    ) -> None:
        self._io = io
        self._server = server  # the API's base URL, for the span's server.address
        self._request = request
        self._body = body  # the encoded request (encode_body), for the POST
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

    async def _run(self) -> AsyncGenerator[StreamEvent, None]:
        """The stream, in the call's span (``chat {model}``: started on the first iteration, ended with the
        stream; never the current span, as the stream is read across its caller's ``yield``s)."""
        span = _otel.open_chat_span(self._request, self._server)
        started = time.perf_counter()
        try:
            async with contextlib.aclosing(self._read()) as events:  # closed with the stream (its connection)
                async for event in events:
                    yield event
        except BaseException as exc:
            _otel.close_chat_span(span, self._final, exc)
            if not isinstance(exc, GeneratorExit):
                _otel.record_chat_metrics(time.perf_counter() - started, self._request, self._final, exc)
            elif self._final is not None:  # closed after the end (a reader that stopped early is no outcome)
                _otel.record_chat_metrics(time.perf_counter() - started, self._request, self._final, None)
            raise
        _otel.close_chat_span(span, self._final, None)
        _otel.record_chat_metrics(time.perf_counter() - started, self._request, self._final, None)

    async def _read(self) -> AsyncGenerator[StreamEvent, None]:
        started = asyncio.get_running_loop().time()
        self._deadline = started + self._stream_timeout
        source = await self._start()
        failures = 0
        # the wait for the first event starts when the caller asked for it, connecting included
        waiting_since: float | None = started
        while source is not None:
            progressed = False
            try:
                async with contextlib.aclosing(self._events(source, waiting_since)) as events:
                    async for event in events:
                        progressed = True
                        self._assembler.feed(event)
                        if event.type in TERMINAL_EVENTS:
                            self._final = self._assembler.response()
                            yield event
                            self._finish(event)
                            return
                        yield event
                drop: APIError = StreamError(
                    "the stream ended without a terminal event (last sequence_number "
                    f"{self._assembler.last_sequence_number})"
                )
            except (httpx.TransportError, TimeoutError) as exc:
                drop = self._drop_error(exc)
            except ResponseBodyError as exc:  # a bomb, or garbage under a Content-Encoding: not resumed
                raise body_error(exc, source) from None
            finally:
                await source.aclose()
            failures = 0 if progressed else failures + 1
            waiting_since = None  # after a reconnect, from the new connection
            source, failures = await self._recover(drop, failures)
        async for event in self._poll_to_end():
            yield event

    async def _start(self) -> httpx.Response | None:
        """The first connection: a new run's ``POST``, or a resumed one's ``GET`` (``None``: poll instead)."""
        if self._resume is None:
            return await self._connect(None, None)
        response_id, after = self._resume
        try:
            return await self._connect(response_id, after)
        except _CURSOR_REFUSED as exc:
            logger.info("stream of %s cannot resume (%s); polling instead", response_id, exc.message)
            return None

    async def _connect(self, response_id: str | None, after: int | None) -> httpx.Response:
        """Open the event stream: ``POST`` the request (``response_id=None``) or resume after ``after``."""
        body = None
        if response_id is None:
            assert self._request is not None
            if self._body is None:
                self._body = encode_body(self._request)
            body = self._body
        try:
            async with asyncio.timeout_at(self._deadline):
                return await self._io.open(
                    response_id, after, body=body, timeout=self._timeout, extra_headers=self._extra_headers
                )
        except TimeoutError:
            raise self._overdue() from None
        except BadRequestError as exc:
            if self._request is None or response_id is not None:
                raise
            raise explain_unknown_field(exc, self._request) from exc.__cause__

    def _drop_error(self, exc: BaseException) -> APIError:
        """Why the connection dropped, as the error raised if the stream cannot go on."""
        if classify_exception(exc).reason != "timeout":  # the failure map
            return StreamError(f"the stream broke: {type(exc).__name__}: {exc}")
        if isinstance(exc, httpx.TimeoutException):
            return APITimeoutError(
                f"the stream stalled for more than {self._timeout:g}s ({type(exc).__name__})"
            )
        return APITimeoutError(f"the stream sent no event for more than {self._timeout:g}s")  # the stall timer

    async def _recover(self, drop: APIError, failures: int) -> tuple[httpx.Response | None, int]:
        """Carry out :func:`after_drop`: a new connection, or ``None`` to poll; raises when it says so."""
        loop = asyncio.get_running_loop()
        rid = self.response_id
        cursor = self._assembler.last_sequence_number
        rejected = False
        while True:
            decision = after_drop(
                background=self._background,
                response_id=rid,
                cursor=cursor,
                failures=failures,
                max_resumes=self._io.max_resumes,
                remaining=self._deadline - loop.time(),
                cursor_rejected=rejected,
            )
            if decision.step is Step.RAISE:
                if decision.why == "foreground":
                    raise type(drop)(
                        drop.message + "; not retried: re-sending the request would start a new, billed "
                        "run (use background=True for a resumable stream)",
                        status=200,
                    )
                raise drop
            if decision.step is Step.OVERDUE:
                raise self._overdue()
            if decision.step is Step.POLL:
                if not rejected:
                    logger.info("stream of %s: %s; polling for its end", rid, drop.message)
                return None, failures
            assert rid is not None and cursor is not None
            await asyncio.sleep(decision.delay)
            try:
                source = await self._connect(rid, cursor)
            except _CURSOR_REFUSED as exc:  # e.g. the starting_after cursor expired: read the end by polling
                logger.info("stream of %s cannot resume (%s); polling instead", rid, exc.message)
                rejected = True
                continue
            except (APIConnectionError, ServerError) as exc:
                logger.info("stream of %s: reconnecting failed (%s)", rid, exc.message)
                failures += 1
                continue
            self.resumed += 1
            logger.info("stream of %s resumed after sequence_number %d", rid, cursor)
            return source, failures

    async def _poll_to_end(self) -> AsyncGenerator[StreamEvent, None]:
        """Poll the run to its end and yield one terminal event built from the polled response."""
        response_id = self.response_id
        assert response_id is not None
        self.polled = True
        remaining = self._deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise self._overdue()
        final = await self._io.poll(response_id, remaining)
        event = terminal_event_for(final) or ResponseFailedEvent(response=final, error=final.error)
        self._assembler.feed(event)
        self._final = self._assembler.response()
        yield event
        self._finish(event)

    async def _events(
        self, source: httpx.Response, waiting_since: float | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        content_type = source.headers.get("content-type", "")
        if "json" in content_type and "event-stream" not in content_type:
            # The server answered with a whole response instead of a stream.
            yield await self._whole_response(source, waiting_since)
            return
        parser = _EventParser(self._assembler.texts)
        decoder = SSEDecoder(data_filter=parser.data_filter)
        after = self._assembler.last_sequence_number
        # The stall timer counts events, not bytes: a server that drips bytes or sends only keep-alive
        # comments cannot hold the stream open past ``timeout`` without a single event (httpx's read
        # timeout resets on every byte). The timer wraps only the read, never the ``yield``. The stream's
        # overall deadline caps every read too, and is checked for every chunk (a read that did not have
        # to wait cannot time out).
        loop = asyncio.get_running_loop()
        deadline = self._deadline
        idle_until = (loop.time() if waiting_since is None else waiting_since) + self._timeout
        # decoded by perplexed in bounded steps (httpx's decoders are not bounded: a decompression bomb)
        chunks = aiter_decoded(source, MAX_STREAM_BYTES).__aiter__()
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
                event = parser.parse(name, data)
                del data
                idle_until = loop.time() + self._timeout
                seq = event.sequence_number
                if after is not None and seq is not None and seq <= after:
                    continue  # already delivered before a reconnect
                yield event

    async def _whole_response(self, source: httpx.Response, waiting_since: float | None) -> StreamEvent:
        """The terminal event of a server that answered a stream request with a whole JSON response."""
        loop = asyncio.get_running_loop()
        since = loop.time() if waiting_since is None else waiting_since
        try:  # a dripped body must not outlive the timeout
            async with asyncio.timeout_at(min(since + self._timeout, self._deadline)):
                body = await self._io.read_body(source)
        except TimeoutError:
            if loop.time() >= self._deadline:
                raise self._overdue() from None
            raise
        response = parse_response(parse_json(source.status_code, body))
        whole = terminal_event_for(response)
        if whole is None:
            raise StreamError(f"expected an event stream, got a response with status {response.status!r}")
        return whole

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
                body=scrub(event.model_dump(mode="json")),
            )
        if final is not None:
            raise_for_status(final)


class _EventParser:
    """SSE data to typed events. A huge data line (a multi-megabyte ``response.completed``) arrives through
    :meth:`data_filter` with its long strings cut out (``_elide.py``) and matched against the text gathered
    from the deltas (``known``): the answer is then held once, not three times; :meth:`parse` puts them back.
    """

    def __init__(self, known: Callable[[], Sequence[str]]) -> None:
        self._known = known
        self._strings: dict[str, str] = {}

    def data_filter(self) -> _ElidedData:
        return _ElidedData(StringElider(self._known), self._strings)

    def parse(self, name: str, data: str) -> StreamEvent:
        try:
            payload = json.loads(data)
        except ValueError:
            self._strings.clear()
            return UnknownEvent(type=name, raw={"data": data})
        if self._strings:
            payload = restore(payload, self._strings)
            self._strings.clear()
        return parse_event(payload, name if name != "message" else None)


class _ElidedData:
    """The SSE decoder's filter for a huge data line: the compact JSON goes on, the long strings aside."""

    def __init__(self, elider: StringElider, strings: dict[str, str]) -> None:
        self._elider = elider
        self._strings = strings

    def feed(self, text: str) -> None:
        self._elider.feed(text)

    def finish(self) -> str:
        compact, strings = self._elider.finish()
        self._strings.update(strings)
        return compact
