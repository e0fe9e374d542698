"""Client of the Perplexity Agent API (``POST /v1/agent``).

>>> from perplexed.agent import AgentClient, WebSearch
>>> client = AgentClient()                      # $PERPLEXITY_API_KEY
>>> resp = client.create(preset="fast", input="What changed in the EU AI Act?",
...                      tools=[WebSearch(search_recency_filter="month")])
>>> resp.output_text, resp.search_results, resp.citations, resp.cost
>>> for event in client.stream(preset="fast", input="Explain quantum computing"):
...     if event.type == "response.output_text.delta":
...         print(event.delta, end="")

:class:`AsyncAgentClient` is the implementation; :class:`AgentClient` runs the same coroutines from sync
code. Requests are validated before sending (:class:`perplexed.InvalidRequest`); HTTP errors become typed
:class:`perplexed.APIError` subclasses; a run that ends ``failed``/``cancelled``/``incomplete`` raises
:class:`perplexed.agent.ResponseFailedError`.

This package exports what ``docs/agent-api.md`` documents (see its "Names" paragraph) and nothing else.
Internals stay importable from their private modules for tests and tools: ``_policy`` (timeouts, retry and
backoff decisions), ``_outcome`` (HTTP answers as errors and responses), ``_stream`` (the stream engine and
its resume/poll/raise decision), ``_request`` (``build_request``, ``encode_body``), ``_response``
(``parse_event``, ``StreamAssembler``), ``sse`` (the SSE decoder).

Layout: ``_client`` (AsyncAgentClient) -> ``_stream`` -> ``_outcome``/``_policy``/``_args`` -> ``_request``/``_response``;
``_sync`` is the facade; ``sonar`` translates Sonar chat-completions calls.
"""

from perplexed._errors import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ConflictError,
    InvalidRequest,
    MalformedResponseError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ResponseCancelledError,
    ResponseFailedError,
    ResponseIncompleteError,
    ServerError,
    StreamError,
)
from perplexed.agent._client import AsyncAgentClient
from perplexed.agent._request import (
    AgentRequest,
    FetchUrl,
    FinanceSearch,
    FunctionCallInput,
    FunctionCallOutput,
    FunctionTool,
    ImageSearch,
    InputFile,
    InputImage,
    InputMessage,
    InputText,
    JsonSchemaFormat,
    McpTool,
    PeopleSearch,
    Reasoning,
    Sandbox,
    UserLocation,
    WebSearch,
)
from perplexed.agent._response import (
    CancelResult,
    FunctionCallItem,
    MessageItem,
    OutputItem,
    Response,
    SearchResult,
    SearchResultsItem,
    StreamEvent,
    UnknownEvent,
    UnknownOutputItem,
    Usage,
)
from perplexed.agent._stream import AsyncAgentStream
from perplexed.agent._sync import AgentClient, AgentStream
from perplexed.agent.sonar import MigrationWarning, from_sonar

__all__ = [
    "APIConnectionError",
    "APIError",
    "APIStatusError",
    "APITimeoutError",
    "AgentClient",
    "AgentRequest",
    "AgentStream",
    "AsyncAgentClient",
    "AsyncAgentStream",
    "AuthenticationError",
    "BadRequestError",
    "CancelResult",
    "ConfigError",
    "ConflictError",
    "FetchUrl",
    "FinanceSearch",
    "FunctionCallInput",
    "FunctionCallItem",
    "FunctionCallOutput",
    "FunctionTool",
    "ImageSearch",
    "InputFile",
    "InputImage",
    "InputMessage",
    "InputText",
    "InvalidRequest",
    "JsonSchemaFormat",
    "MalformedResponseError",
    "McpTool",
    "MessageItem",
    "MigrationWarning",
    "NotFoundError",
    "OutputItem",
    "PeopleSearch",
    "PermissionDeniedError",
    "RateLimitError",
    "Reasoning",
    "Response",
    "ResponseCancelledError",
    "ResponseFailedError",
    "ResponseIncompleteError",
    "Sandbox",
    "SearchResult",
    "SearchResultsItem",
    "ServerError",
    "StreamError",
    "StreamEvent",
    "UnknownEvent",
    "UnknownOutputItem",
    "Usage",
    "UserLocation",
    "WebSearch",
    "from_sonar",
]
