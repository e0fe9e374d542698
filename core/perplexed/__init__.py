"""perplexed: reliable, cheap, cited web search.

    import perplexed
    result = perplexed.search("zoning setbacks", provider=["searxng", "ceramic", "firecrawl"])
    result.provider, result.hits, result.attempts, result.cost

See the README for the chain rules, the providers, grounded answers and the framework adapters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import providers, telemetry
from ._configure import configure, reset
from ._errors import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    BodyTooLargeError,
    ConfigError,
    ConflictError,
    ContentDecodingError,
    CorruptIndexError,
    InvalidRequest,
    MalformedResponseError,
    NotFoundError,
    PermissionDeniedError,
    PerplexedError,
    ProviderError,
    RateLimitError,
    ResponseBodyError,
    ResponseCancelledError,
    ResponseFailedError,
    ResponseIncompleteError,
    ServerError,
    StreamError,
    UpstreamError,
)
from ._fetch import (
    FetchPlan,
    afetch,
    afetch_many,
    asearch,
    check_fetch_content,
    fetch,
    fetch_many,
    prepare_fetch,
    search,
)
from ._governance import aspend, spend
from ._models import Attempt, Hit, Outcome, Page, ProviderAnswer, Result
from ._options import ChainOptions, SearchOptions
from ._toolschema import portable_schema
from ._verify import Evidence, SentenceCheck, Verification, averify, verify

if TYPE_CHECKING:  # answer() is imported lazily (it pulls in the Agent API client)
    from ._answer import (
        AGENT_PROVIDER,
        Answer,
        AnswerCitation,
        AnswerPlan,
        NoSourcesError,
        aanswer,
        answer,
        astream_answer,
        prepare_answer,
        stream_answer,
    )

__version__ = "0.1.0"

__all__ = [
    "AGENT_PROVIDER",
    "APIConnectionError",
    "APIError",
    "APIStatusError",
    "APITimeoutError",
    "Answer",
    "AnswerCitation",
    "AnswerPlan",
    "Attempt",
    "AuthenticationError",
    "BadRequestError",
    "BodyTooLargeError",
    "ChainOptions",
    "ConfigError",
    "ConflictError",
    "ContentDecodingError",
    "CorruptIndexError",
    "Evidence",
    "FetchPlan",
    "Hit",
    "InvalidRequest",
    "MalformedResponseError",
    "NoSourcesError",
    "NotFoundError",
    "Outcome",
    "Page",
    "PermissionDeniedError",
    "PerplexedError",
    "ProviderAnswer",
    "ProviderError",
    "RateLimitError",
    "ResponseBodyError",
    "ResponseCancelledError",
    "ResponseFailedError",
    "ResponseIncompleteError",
    "Result",
    "SearchOptions",
    "SentenceCheck",
    "ServerError",
    "StreamError",
    "UpstreamError",
    "Verification",
    "aanswer",
    "afetch",
    "afetch_many",
    "answer",
    "asearch",
    "aspend",
    "astream_answer",
    "averify",
    "check_fetch_content",
    "configure",
    "fetch",
    "fetch_many",
    "portable_schema",
    "prepare_answer",
    "prepare_fetch",
    "providers",
    "reset",
    "search",
    "spend",
    "stream_answer",
    "telemetry",
    "verify",
]

_LAZY = {
    "answer": "perplexed._answer",
    "aanswer": "perplexed._answer",
    "stream_answer": "perplexed._answer",
    "astream_answer": "perplexed._answer",
    "Answer": "perplexed._answer",
    "NoSourcesError": "perplexed._answer",
    "AnswerCitation": "perplexed._answer",
    "AGENT_PROVIDER": "perplexed._answer",
    "AnswerPlan": "perplexed._answer",
    "prepare_answer": "perplexed._answer",
}


def __getattr__(name: str) -> Any:
    # answer() pulls in the Agent API client; import it on first use so `import perplexed` stays cheap.
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'perplexed' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(module_name)
    value = getattr(module, name)
    globals()[name] = value
    return value


# --- usage ledger and tracing (issue 38): begin ---
_LAZY.update({
    "usage": "perplexed._usage",
    "ausage": "perplexed._usage",
    "UsageReport": "perplexed._usage",
    "UsageRow": "perplexed._usage",
    "SpendWindow": "perplexed._usage",
    "Usage": "perplexed._models",
})
__all__ += ["SpendWindow", "Usage", "UsageReport", "UsageRow", "ausage", "usage"]
# --- usage ledger and tracing (issue 38): end ---
