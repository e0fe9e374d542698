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

from typing import TYPE_CHECKING, Any

# Every name is imported on first use (PEP 562, as the top-level package): `import perplexed.agent._request`
# (an answer plan validating its request) loads the request models, not the client and the response models.
# Type checkers and the docs read the real imports here.
if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
            "APIConnectionError",
            "APIError",
            "APIStatusError",
            "APITimeoutError",
            "AuthenticationError",
            "BadRequestError",
            "ConfigError",
            "ConflictError",
            "InvalidRequest",
            "MalformedResponseError",
            "NotFoundError",
            "PermissionDeniedError",
            "RateLimitError",
            "ResponseCancelledError",
            "ResponseFailedError",
            "ResponseIncompleteError",
            "ServerError",
            "StreamError",
        ),
        "perplexed._errors",
    ),
    **dict.fromkeys(
        (
            "AsyncAgentClient",
        ),
        "perplexed.agent._client",
    ),
    **dict.fromkeys(
        (
            "AgentRequest",
            "FetchUrl",
            "FinanceSearch",
            "FunctionCallInput",
            "FunctionCallOutput",
            "FunctionTool",
            "ImageSearch",
            "InputFile",
            "InputImage",
            "InputMessage",
            "InputText",
            "JsonSchemaFormat",
            "McpTool",
            "PeopleSearch",
            "Reasoning",
            "Sandbox",
            "UserLocation",
            "WebSearch",
        ),
        "perplexed.agent._request",
    ),
    **dict.fromkeys(
        (
            "CancelResult",
            "FunctionCallItem",
            "MessageItem",
            "OutputItem",
            "Response",
            "SearchResult",
            "SearchResultsItem",
            "StreamEvent",
            "UnknownEvent",
            "UnknownOutputItem",
            "Usage",
        ),
        "perplexed.agent._response",
    ),
    **dict.fromkeys(
        (
            "AsyncAgentStream",
        ),
        "perplexed.agent._stream",
    ),
    **dict.fromkeys(
        (
            "AgentClient",
            "AgentStream",
        ),
        "perplexed.agent._sync",
    ),
    **dict.fromkeys(
        (
            "MigrationWarning",
            "from_sonar",
        ),
        "perplexed.agent.sonar",
    ),
}

#: what this package imported at once before its names were lazy: a submodule reached as an attribute
#: (``perplexed.agent.sse`` after ``import perplexed.agent``) loads these first, as it did then
_EAGER_BEFORE = tuple(dict.fromkeys(_LAZY.values()))


def __getattr__(name: str) -> Any:
    import importlib

    module_name = _LAZY.get(name)
    if module_name is not None:
        value = getattr(importlib.import_module(module_name), name)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        import importlib.util

        if importlib.util.find_spec(f"{__name__}.{name}") is not None:
            for module in _EAGER_BEFORE:
                importlib.import_module(module)
            return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
