"""The declarations the adapters build from (``langchain_perplexed``, ``llama_index_perplexed``), public so they
import no private module: the options (:data:`OPTIONS`: name, type, default, bounds, flag, environment
variable, help; see :mod:`perplexed.policy._optionspec`) and the agent tools, each declared once (``web_search`` / ``perplexed_search``,
``web_fetch`` / ``perplexed_fetch``, ``answer`` / ``perplexed_answer``: names, description, argument schema,
the text a model reads back, the errors a model gets), as the MCP server builds its tools from them."""

from __future__ import annotations

from perplexed.policy._optionspec import OPTIONS, Option, option, options_table
from perplexed.tools._catalogue import (
    ANSWER,
    NO_RESULTS,
    TOOLS,
    WEB_FETCH,
    WEB_SEARCH,
    AgentTool,
    ToolArgument,
    format_answer,
    format_hits,
    narrowed,
    tool_named,
)

__all__ = [
    "ANSWER",
    "NO_RESULTS",
    "OPTIONS",
    "TOOLS",
    "WEB_FETCH",
    "WEB_SEARCH",
    "AgentTool",
    "Option",
    "ToolArgument",
    "format_answer",
    "format_hits",
    "narrowed",
    "option",
    "options_table",
    "tool_named",
]
