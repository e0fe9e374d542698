"""The sync facade: :class:`AgentClient` and :class:`AgentStream` run :class:`AsyncAgentClient`'s
coroutines on perplexed's portal loop (one implementation, as the house rules want)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Unpack

import httpx
from pydantic import SecretStr

from perplexed._errors import StreamError
from perplexed.agent._client import DEFAULT_API_PATH, AsyncAgentClient, CreateParams
from perplexed.agent._policy import CONNECT_TIMEOUT, DEFAULT_MAX_RETRIES, MAX_RETRY_AFTER
from perplexed.agent._request import AgentRequest
from perplexed.agent._response import CancelResult, Response, StreamEvent
from perplexed.agent._stream import AsyncAgentStream
from perplexed.net import _portal

__all__ = ["AgentClient", "AgentStream"]


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
        """Release what this client holds: the connections of its streams still open (see
        :meth:`AsyncAgentClient.aclose`); the client stays usable."""
        _portal.run(self._async.aclose)

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
