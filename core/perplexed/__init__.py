"""perplexed: reliable, cheap, cited web search (work in progress: the chain engine lands next)."""

from ._errors import (
    ConfigError,
    InvalidRequest,
    PerplexedError,
    ProviderError,
    UpstreamError,
)
from ._models import Attempt, Hit, Outcome, Result

__version__ = "0.1.0"
