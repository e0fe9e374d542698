"""perplexed: reliable, cheap, cited web search.

    import perplexed
    result = perplexed.search("zoning setbacks", provider=["searxng", "ceramic", "firecrawl"])
    result.provider, result.hits, result.attempts, result.cost

See the README for the chain rules, the providers, grounded answers and the framework adapters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# first: every later import of httpx in the core goes through this one (without httpx's CLI, rich, click...)
from . import _httpx_import  # noqa: F401  # isort: skip
from . import providers, telemetry
from ._configure import configure, reset
from ._errors import (
    APIError,
    APITimeoutError,
    BodyTooLargeError,
    ConfigError,
    ContentDecodingError,
    CorruptIndexError,
    InvalidRequest,
    PerplexedError,
    ProviderError,
    ResponseBodyError,
    UpstreamError,
)
from ._fetch import afetch, afetch_many, fetch, fetch_many
from ._governance import aspend, spend
from ._models import Attempt, Hit, Outcome, Page, ProviderAnswer, Result
from ._options import ChainOptions, SearchOptions
from ._search import asearch, search

if TYPE_CHECKING:  # imported on first use (_LAZY): answer() pulls in the Agent API client, verify the lexicon
    from ._answer import (
        AGENT_PROVIDER,
        Answer,
        AnswerCitation,
        NoSourcesError,
        aanswer,
        answer,
        astream_answer,
        stream_answer,
    )
    from ._verify import Evidence, SentenceCheck, Verification, averify, verify

# --- evaluation and routing (issue 37): loaded lazily (see _LAZY), so `import perplexed` does not import them ---
if TYPE_CHECKING:
    from ._eval import aevaluate, evaluate
    from ._eval_report import EvalQuery, EvalReport
    from ._eval_report import EvalRow as EvalRow
    from ._eval_report import ProviderScore as ProviderScore
    from ._models import RouteStep as RouteStep
    from ._routing import Routing

__version__ = "0.1.0"

__all__ = [
    "AGENT_PROVIDER",
    "APIError",
    "APITimeoutError",
    "Answer",
    "AnswerCitation",
    "Attempt",
    "BodyTooLargeError",
    "ChainOptions",
    "ConfigError",
    "ContentDecodingError",
    "CorruptIndexError",
    "Evidence",
    "Hit",
    "InvalidRequest",
    "NoSourcesError",
    "Outcome",
    "Page",
    "PerplexedError",
    "ProviderAnswer",
    "ProviderError",
    "ResponseBodyError",
    "Result",
    "SearchOptions",
    "SentenceCheck",
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
    "configure",
    "fetch",
    "fetch_many",
    "providers",
    "reset",
    "search",
    "spend",
    "stream_answer",
    "telemetry",
    "verify",
]

# --- evaluation and routing (issue 37): a block of its own, loaded lazily (see _LAZY) ---
__all__ += [  # issue 37 (not counted in the 45: issue 41); their parts (EvalRow, ProviderScore, RouteStep) are
    # reachable as perplexed.NAME too, and documented with them
    "EvalQuery",
    "EvalReport",
    "Routing",
    "aevaluate",
    "evaluate",
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
    "verify": "perplexed._verify",
    "averify": "perplexed._verify",
    "Evidence": "perplexed._verify",
    "SentenceCheck": "perplexed._verify",
    "Verification": "perplexed._verify",
    # --- evaluation and routing (issue 37) ---
    "evaluate": "perplexed._eval",
    "aevaluate": "perplexed._eval",
    "EvalQuery": "perplexed._eval_report",
    "EvalReport": "perplexed._eval_report",
    "EvalRow": "perplexed._eval_report",
    "ProviderScore": "perplexed._eval_report",
    "Routing": "perplexed._routing",
    "RouteStep": "perplexed._models",
}

#: Names that moved out of the top level: still ``perplexed.NAME`` for one minor version, with a DeprecationWarning
#: naming the new place. The Agent API client's own errors live in :mod:`perplexed.agent` (``APIError`` and
#: ``APITimeoutError``, which ``answer()`` raises itself, stay here); the helpers of framework adapters and
#: services in :mod:`perplexed.integration`.
_MOVED = {
    **dict.fromkeys(
        (
            "APIConnectionError",
            "APIStatusError",
            "AuthenticationError",
            "BadRequestError",
            "ConflictError",
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
        "perplexed.agent",
    ),
    **dict.fromkeys(
        ("AnswerPlan", "FetchPlan", "check_fetch_content", "portable_schema", "prepare_answer", "prepare_fetch"),
        "perplexed.integration",
    ),
}


def __getattr__(name: str) -> Any:
    import importlib

    # answer() pulls in the Agent API client, verify() its lexicon: imported on first use so `import perplexed`
    # loads only what a search needs (tests/test_cold_start.py).
    module_name = _LAZY.get(name)
    if module_name is not None:
        value = getattr(importlib.import_module(module_name), name)
        globals()[name] = value
        return value
    moved_to = _MOVED.get(name)
    if moved_to is not None:  # not cached: every use from a new place warns
        import warnings

        warnings.warn(
            f"perplexed.{name} moved to {moved_to}.{name}: import it from {moved_to} "
            "(the old name is kept for one minor version)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(moved_to), name)
    raise AttributeError(f"module 'perplexed' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


# --- usage ledger and tracing (issue 38): begin ---
_LAZY.update({
    "usage": "perplexed._usage",
    "ausage": "perplexed._usage",
    "UsageReport": "perplexed._usage",
    "UsageRow": "perplexed._usage",
    "SpendWindow": "perplexed._usage",
    "Usage": "perplexed._models",
})
__all__ += ["UsageReport", "ausage", "usage"]  # issue 38; UsageRow, SpendWindow, Usage are reachable too
# --- usage ledger and tracing (issue 38): end ---
