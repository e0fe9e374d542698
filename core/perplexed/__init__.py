"""perplexed: reliable, cheap, cited web search.

    import perplexed
    result = perplexed.search("zoning setbacks", provider=["searxng", "ceramic", "firecrawl"])
    result.provider, result.hits, result.attempts, result.cost

See the README for the chain rules, the providers, grounded answers and the framework adapters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# first: the first import of httpx, whenever it comes, goes through this one's finder (without httpx's CLI, rich,
# click...); httpx itself loads when something needs it
from perplexed import _moved, _httpx_import # noqa: F401  # isort: skip

# Every public name is loaded on first use (PEP 562: see _LAZY and __getattr__ below), so `import perplexed` runs
# this file and little else; `perplexed.search` imports the search and what it needs, `perplexed.Hit` the models.
# Type checkers and the docs read the real imports here.
if TYPE_CHECKING:
    from perplexed import providers, telemetry
    from perplexed._configure import configure, reset
    from perplexed._errors import (
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
    from perplexed._models import Attempt, Hit, Outcome, Page, ProviderAnswer, Result
    from perplexed.engine._governance import aspend, spend
    from perplexed.operations._fetch import afetch, afetch_many, fetch, fetch_many
    from perplexed.operations._search import asearch, search
    from perplexed.policy._options import ChainOptions, SearchOptions

if TYPE_CHECKING:  # imported on first use (_LAZY): answer() pulls in the Agent API client, verify the lexicon
    from perplexed.grounding._answer import (
        AGENT_PROVIDER,
        Answer,
        AnswerCitation,
        NoSourcesError,
        aanswer,
        answer,
        astream_answer,
        stream_answer,
    )
    from perplexed.grounding._verify import Evidence, SentenceCheck, Verification, averify, verify

# --- evaluation and routing (issue 37): loaded lazily (see _LAZY), so `import perplexed` does not import them ---
if TYPE_CHECKING:
    from perplexed._models import RouteStep as RouteStep
    from perplexed.evaluation._eval import aevaluate, evaluate
    from perplexed.evaluation._eval_report import EvalQuery, EvalReport
    from perplexed.evaluation._eval_report import EvalRow as EvalRow
    from perplexed.evaluation._eval_report import ProviderScore as ProviderScore
    from perplexed.policy._routing import Routing

__version__ = "0.1.0"

_moved.install()  # the old paths of modules that moved into folders keep importing

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
    # what a search needs (each loads with its module on first use)
    **dict.fromkeys(("configure", "reset"), "perplexed._configure"),
    **dict.fromkeys(
        (
            "APIError",
            "APITimeoutError",
            "BodyTooLargeError",
            "ConfigError",
            "ContentDecodingError",
            "CorruptIndexError",
            "InvalidRequest",
            "PerplexedError",
            "ProviderError",
            "ResponseBodyError",
            "UpstreamError",
        ),
        "perplexed._errors",
    ),
    **dict.fromkeys(("Attempt", "Hit", "Outcome", "Page", "ProviderAnswer", "Result"), "perplexed._models"),
    **dict.fromkeys(("aspend", "spend"), "perplexed.engine._governance"),
    **dict.fromkeys(("afetch", "afetch_many", "fetch", "fetch_many"), "perplexed.operations._fetch"),
    **dict.fromkeys(("asearch", "search"), "perplexed.operations._search"),
    **dict.fromkeys(("ChainOptions", "SearchOptions"), "perplexed.policy._options"),
    # answer() pulls in the Agent API client, verify() its lexicon
    "answer": "perplexed.grounding._answer",
    "aanswer": "perplexed.grounding._answer",
    "stream_answer": "perplexed.grounding._answer",
    "astream_answer": "perplexed.grounding._answer",
    "Answer": "perplexed.grounding._answer",
    "NoSourcesError": "perplexed.grounding._answer",
    "AnswerCitation": "perplexed.grounding._answer",
    "AGENT_PROVIDER": "perplexed.grounding._answer",
    "verify": "perplexed.grounding._verify",
    "averify": "perplexed.grounding._verify",
    "Evidence": "perplexed.grounding._verify",
    "SentenceCheck": "perplexed.grounding._verify",
    "Verification": "perplexed.grounding._verify",
    # --- evaluation and routing (issue 37) ---
    "evaluate": "perplexed.evaluation._eval",
    "aevaluate": "perplexed.evaluation._eval",
    "EvalQuery": "perplexed.evaluation._eval_report",
    "EvalReport": "perplexed.evaluation._eval_report",
    "EvalRow": "perplexed.evaluation._eval_report",
    "ProviderScore": "perplexed.evaluation._eval_report",
    "Routing": "perplexed.policy._routing",
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


#: Public submodules, imported on first use as attributes too (``perplexed.providers.FunctionProvider``).
_SUBMODULES = frozenset({"providers", "telemetry"})

#: What ``import perplexed`` used to import at once. A private subpackage reached as an attribute
#: (``perplexed.engine.chain`` after a bare ``import perplexed``) loads these first, so such attribute chains
#: keep resolving as they did; ``import perplexed.engine.chain`` and the public names load only what they need.
_EAGER_BEFORE = (
    "perplexed.providers",
    "perplexed.telemetry",
    "perplexed._configure",
    "perplexed._errors",
    "perplexed._models",
    "perplexed.engine._governance",
    "perplexed.operations._fetch",
    "perplexed.operations._search",
    "perplexed.policy._options",
)


def __getattr__(name: str) -> Any:
    import importlib

    # each public name is imported on first use, so `import perplexed` loads only this file (and _moved, _httpx_import);
    # tests/test_cold_start.py holds the deny list
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
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if not name.startswith("__"):  # a private submodule reached as an attribute (see _EAGER_BEFORE)
        import importlib.util

        if importlib.util.find_spec(f"{__name__}.{name}") is not None:
            if not _importing():  # not `from perplexed import _x` inside the package's own imports
                for module in _EAGER_BEFORE:
                    importlib.import_module(module)
            return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'perplexed' has no attribute {name!r}")


def _importing() -> bool:
    """Whether a module of this package is being imported now (its ``from perplexed import _x`` lands in
    ``__getattr__`` before ``_x`` is bound)."""
    import sys

    return any(
        getattr(getattr(module, "__spec__", None), "_initializing", False)
        for name, module in list(sys.modules.items())
        if name == __name__ or name.startswith(f"{__name__}.")
    )


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


# --- usage ledger and tracing (issue 38): begin ---
if TYPE_CHECKING:
    from perplexed._models import Usage as Usage  # reachable, not in __all__
    from perplexed.engine._usage import SpendWindow as SpendWindow
    from perplexed.engine._usage import UsageReport, ausage, usage
    from perplexed.engine._usage import UsageRow as UsageRow
_LAZY.update({
    "usage": "perplexed.engine._usage",
    "ausage": "perplexed.engine._usage",
    "UsageReport": "perplexed.engine._usage",
    "UsageRow": "perplexed.engine._usage",
    "SpendWindow": "perplexed.engine._usage",
    "Usage": "perplexed._models",
})
__all__ += ["UsageReport", "ausage", "usage"]  # issue 38; UsageRow, SpendWindow, Usage are reachable too
# --- usage ledger and tracing (issue 38): end ---
