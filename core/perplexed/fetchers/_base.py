"""The fetch-provider shape: moved to :mod:`perplexed.providers._fetching` (one provider model); this module keeps
its earlier import path."""

from __future__ import annotations

from perplexed.policy._status import reason_from_text
from perplexed.providers._fetching import (
    FetchAnswer,
    FetchFlow,
    FetchOptions,
    FetchProvider,
    FunctionFetcher,
    credits_cost,
    page_failure,
    reported_page_failure,
    status_reason,
)

__all__ = [
    "FetchAnswer",
    "FetchFlow",
    "FetchOptions",
    "FetchProvider",
    "FunctionFetcher",
    "credits_cost",
    "page_failure",
    "reason_from_text",
    "reported_page_failure",
    "status_reason",
]
