"""The agent tools, each declared once: ``web_search``, ``web_fetch`` and ``answer``.

One :class:`AgentTool` per tool holds everything a model sees of it, whatever the surface: its names (the MCP
server's ``web_search`` / ``web_fetch`` / ``answer``; the LangChain and LlamaIndex ``perplexed_search`` /
``perplexed_fetch`` / ``perplexed_answer``, side by side), its description, its arguments (the portable JSON
schema a model is shown, and the words of what each argument allows), the text a model reads back
(:func:`format_hits`), and the texts of the errors a model gets for its arguments (an unknown or misspelt
argument names the closest one; a missing or bad one says what is allowed). The MCP server
(:mod:`perplexed.mcp_server`) and the adapters (``langchain_perplexed``, ``llama_index_perplexed``) build their
tools from here, so the three surfaces show the same description and the same argument schema and answer the
same mistake in the same words.

Pure: no I/O, no framework import.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from perplexed._errors import InvalidRequest
from perplexed._models import Hit
from perplexed.citations import format_footnotes
from perplexed.policy._keywords import suggestion
from perplexed.policy._optionspec import option
from perplexed.tools._schema import portable_schema

__all__ = [
    "ANSWER",
    "NO_RESULTS",
    "TOOLS",
    "WEB_FETCH",
    "WEB_SEARCH",
    "AgentTool",
    "ToolArgument",
    "format_answer",
    "format_hits",
    "narrowed",
    "tool_named",
]

#: What a tool returns when the search found nothing.
NO_RESULTS = "No results."
#: Characters of each hit's snippet in the text a model reads (the MCP server's structured hits keep more).
SNIPPET_CHARS = 400
MAX_TOOL_RESULTS = 20
MAX_QUERY_CHARS = 4000
RECENCY = option("recency").choices  # the option's own choices (perplexed.policy._optionspec)

Kind = Literal["text", "int", "domains", "choice"]


@dataclass(frozen=True)
class ToolArgument:
    """One argument of a tool: its JSON schema (``schema``, with its description), whether it is required,
    and ``allowed``: the words of what it takes, used in every error about it."""

    name: str
    kind: Kind
    description: str
    allowed: str
    required: bool = False
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()

    @property
    def schema(self) -> dict[str, Any]:
        """The argument's JSON schema (portable: typed, no ``null``)."""
        out: dict[str, Any]
        if self.kind == "text":
            out = {"type": "string"}
        elif self.kind == "int":
            out = {"type": "integer"}
            if self.minimum is not None:
                out["minimum"] = self.minimum
            if self.maximum is not None:
                out["maximum"] = self.maximum
        elif self.kind == "domains":
            out = {"type": "array", "items": {"type": "string"}}
        else:
            out = {"type": "string", "enum": list(self.choices)}
        out["description"] = self.description
        return out

    @property
    def python_type(self) -> Any:
        """The argument's Python type, for the adapters' typed signatures (optional ones ``X | None``)."""
        base: Any = {"text": str, "int": int, "domains": list[str]}.get(self.kind)
        if self.kind == "choice":
            base = Literal[self.choices]
        return base if self.required else base | None

    def problem(self, value: Any) -> InvalidRequest:
        """The error for a value this argument does not take: ``NAME must be ALLOWED; got VALUE``."""
        return InvalidRequest(f"{self.name} must be {self.allowed}; got {value!r}", param=self.name)

    def parse(self, value: Any) -> Any:
        """The value as the core takes it (lenient in what it accepts: numbers sent as strings, lists sent as
        JSON strings or comma-separated), or :class:`~perplexed.InvalidRequest` saying what is allowed.
        ``None`` (and an empty list or string, for an optional argument) means "left out"."""
        if self.kind == "text":
            if not isinstance(value, str) or not value.strip() or len(value.strip()) > MAX_QUERY_CHARS:
                raise self.problem(value)
            return value
        if value is None or (not self.required and (value == "" or value == [])):
            return None
        if self.kind == "int":
            return self._number(value)
        if self.kind == "domains":
            return self._domains(value)
        if isinstance(value, str) and value.strip().lower() in self.choices:
            return value.strip().lower()
        raise self.problem(value)

    def _number(self, value: Any) -> int:
        number: Any = value
        if isinstance(value, str):
            try:
                number = float(value.strip()) if any(c in value for c in ".eE") else int(value.strip())
            except ValueError:
                raise self.problem(value) from None
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise self.problem(value)
        if isinstance(number, float):
            if not math.isfinite(number) or number != int(number):
                raise self.problem(value)
            number = int(number)
        if (self.minimum is not None and number < self.minimum) or (self.maximum is not None and number > self.maximum):
            raise self.problem(number)
        return int(number)

    def _domains(self, value: Any) -> list[str] | None:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                try:
                    value = json.loads(text)
                except ValueError:
                    raise self.problem(value) from None
            else:
                value = [part for part in (p.strip() for p in text.split(",")) if part]
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.problem(value)
        return [item for item in value if item.strip()] or None


@dataclass(frozen=True)
class AgentTool:
    """One agent tool: its MCP name, its adapters' name, title, description and arguments."""

    key: Literal["search", "fetch", "answer"]
    mcp_name: str
    name: str
    title: str
    description: str
    arguments: tuple[ToolArgument, ...]

    @property
    def argument_names(self) -> tuple[str, ...]:
        return tuple(argument.name for argument in self.arguments)

    def argument(self, name: str) -> ToolArgument:
        for argument in self.arguments:
            if argument.name == name:
                return argument
        raise KeyError(name)

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments, as every surface shows it (a fresh copy)."""
        schema = {
            "type": "object",
            "properties": {argument.name: argument.schema for argument in self.arguments},
            "required": [argument.name for argument in self.arguments if argument.required],
            "additionalProperties": False,
        }
        return portable_schema(copy.deepcopy(schema))

    def parse(self, given: Mapping[str, Any], tool_name: str | None = None) -> dict[str, Any]:
        """A model's arguments, checked and converted: ``{name: value}`` for the arguments it gave (left-out
        optional ones are absent). An unknown or misspelt name, a missing required argument or a bad value is
        an :class:`~perplexed.InvalidRequest` whose message is the text the model reads
        and is the same on every surface (an unknown name: "unknown argument 'qury': did you mean 'query'?");
        ``tool_name`` is the name the model called the tool by, said when a required argument is missing
        (default: the adapters' name)."""
        shown = tool_name or self.name
        names = self.argument_names
        for key in given:
            if key not in names:
                near = suggestion(str(key), names)
                hint = f": did you mean {near!r}?" if near is not None else ""
                raise _for_model(f"unknown argument {str(key)!r}{hint} (the arguments are {', '.join(names)})",
                                 param=str(key))
        out: dict[str, Any] = {}
        for argument in self.arguments:
            if argument.name not in given or given[argument.name] is None:
                if argument.required:
                    raise _for_model(f"{shown} needs the argument {argument.name!r}: {argument.name} must be "
                                     f"{argument.allowed}", param=argument.name)
                continue
            try:
                value = argument.parse(given[argument.name])
            except InvalidRequest as exc:
                raise _for_model(str(exc), param=argument.name) from None
            if value is not None:
                out[argument.name] = value
        return out

    def retry_text(self, exc: InvalidRequest) -> str:
        """The text of a tool that frames a bad or missing value with what to do ("Invalid arguments: ... Call
        the tool again with allowed values.", LangChain's); an unknown name's text is the same everywhere."""
        if exc.param not in self.argument_names:
            return str(exc)
        return f"Invalid arguments: {exc}. Call the tool again with allowed values."

    def allowed(self, param: str | None) -> str | None:
        """The words of what argument ``param`` takes (None when it is not one of this tool's)."""
        for argument in self.arguments:
            if argument.name == param:
                return argument.allowed
        return None


def narrowed(settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The search options a model's checked ``arguments`` set over a tool's own ``settings``: the tool's domain
    settings are a policy the model can narrow but never widen (its ``exclude_domains`` always apply, merged
    with the model's; when it has ``include_domains`` the model's are ignored); ``max_results`` and ``recency``
    are the model's to choose. Only the options to change are returned."""
    out: dict[str, Any] = {}
    if arguments.get("max_results") is not None:
        out["max_results"] = arguments["max_results"]
    if arguments.get("include_domains") and not settings.get("include_domains"):
        out["include_domains"] = list(arguments["include_domains"])
    if arguments.get("exclude_domains"):
        out["exclude_domains"] = list(dict.fromkeys([*(settings.get("exclude_domains") or ()),
                                                     *arguments["exclude_domains"]]))
    if arguments.get("recency") is not None:
        out["recency"] = arguments["recency"]
    return out


def _for_model(problem: str, *, param: str) -> InvalidRequest:
    """The error a model reads for its own mistake, the same text on every surface."""
    return InvalidRequest(problem, param=param)


def format_hits(hits: Sequence[Hit], snippet_chars: int = SNIPPET_CHARS) -> str:
    """What the search tool returns to a model: per hit ``[n] title — url`` and its snippet (the hit's content
    when it has no snippet, whitespace folded, cut at ``snippet_chars``), blank-line separated;
    ``"No results."`` when there are none."""
    if not hits:
        return NO_RESULTS
    blocks = []
    for hit in hits:
        line = format_footnotes([hit], numbers=[hit.id])  # "[n] title — url", the core's format
        snippet = _shorten(hit.snippet or hit.content or "", snippet_chars)
        blocks.append(f"{line}\n{snippet}" if snippet else line)
    return "\n\n".join(blocks)


def format_answer(answer: Any) -> str:
    """What the answer tool returns to a model (an :class:`~perplexed.Answer`): the answer text with its ``[n]``
    markers, then ``Sources:`` and one ``[n] title — url`` line per source, numbered as the markers (with
    ``verify=True``, then the citation check: the sentences their sources do not support); the text alone (or
    ``"No results."``) when there are no sources."""
    sources = sorted(answer.sources, key=lambda hit: hit.id)
    if not sources:
        return str(answer.text) or NO_RESULTS
    text = f"{answer.text}\n\nSources:\n{format_footnotes(sources, numbers=[hit.id for hit in sources])}"
    if answer.verification is not None:
        text += f"\n\nCitation check:\n{answer.verification.report()}"
    return text


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# --- the declarations ---------------------------------------------------------------------------------------

_DOMAINS_ALLOWED = "a list of domain names such as ['nature.com', 'example.com/docs'] (an empty list of domains: no filter)"
_RESULTS_ALLOWED = f"a whole number from 1 to {MAX_TOOL_RESULTS}"


def _search_arguments(what: str) -> tuple[ToolArgument, ...]:
    """The narrowing arguments search and answer share (``what``: results, or sources)."""
    return (
        ToolArgument("max_results", "int", f"How many {what} to use, 1 to {MAX_TOOL_RESULTS} (default: the tool's "
                     "setting).", _RESULTS_ALLOWED, minimum=1, maximum=MAX_TOOL_RESULTS),
        ToolArgument("include_domains", "domains", f"Only use {what} from these domains, e.g. "
                     "['nature.com', 'arxiv.org'].", _DOMAINS_ALLOWED),
        ToolArgument("exclude_domains", "domains", f"Never use {what} from these domains, e.g. ['pinterest.com'].",
                     _DOMAINS_ALLOWED),
        ToolArgument("recency", "choice", f"Only {what} published within the last day, week, month or year.",
                     "one of 'day', 'week', 'month', 'year' (or left out)", choices=RECENCY),
    )


WEB_SEARCH = AgentTool(
    key="search",
    mcp_name="web_search",
    name="perplexed_search",
    title="Web search",
    description=(
        "Search the web through a chain of providers: free ones first, and the next one is tried when one fails "
        "or finds nothing, so a search often costs nothing. Returns numbered results, each as \"[n] title — url\" "
        "followed by a snippet; cite the results you use by their [n]. Use it for recent events, facts you are "
        "not sure of and anything that needs a source. Send a short, specific keyword query (2 to 10 words), one "
        f"topic per call. Optional: max_results (1 to {MAX_TOOL_RESULTS}), include_domains and exclude_domains "
        "(lists of domains), recency (day, week, month or year). Read a result's whole page with the "
        "page-reading tool."
    ),
    arguments=(
        ToolArgument("query", "text", "The search query: a few specific keywords, e.g. 'EU AI Act general-purpose "
                     "AI obligations'.", "a non-empty string (at most 4000 characters)", required=True),
        *_search_arguments("results"),
    ),
)

WEB_FETCH = AgentTool(
    key="fetch",
    mcp_name="web_fetch",
    name="perplexed_fetch",
    title="Read a web page",
    description=(
        "Read a web page (http or https): returns its title, URL and main content as Markdown, through a chain "
        "of extractors (a direct fetch first, which is free; paid services only when configured). Long pages "
        "come in slices: when the content is cut, the reply ends with the start_index to pass to read the next "
        "slice. Private and internal addresses are refused. Use it on URLs from search results or the user to "
        "read the full text before answering."
    ),
    arguments=(
        ToolArgument("url", "text", "The page's http(s) URL, e.g. 'https://example.com/article' (a search "
                     "result's url).", "a non-empty string, an http or https URL", required=True),
        ToolArgument("max_chars", "int", "How many characters of content to return, 100 to 100000 (default: the "
                     "tool's setting).", "a whole number from 100 to 100000", minimum=100, maximum=100_000),
        ToolArgument("start_index", "int", "Where the content starts: 0 for the beginning, or the start_index a "
                     "cut reply gave, to read the next slice.", "a whole number, 0 or more (the start_index a "
                     "previous reply gave)", minimum=0),
    ),
)

ANSWER = AgentTool(
    key="answer",
    mcp_name="answer",
    name="perplexed_answer",
    title="Answer with cited sources",
    description=(
        "Answer a question from current web sources: searches the web through the provider chain, then writes "
        "a short answer with the Perplexity Agent API. Returns the answer with [n] citation markers, then the "
        "numbered sources (\"[n] title — url\") they refer to; keep the [n] citations when you quote it. Use it "
        "for factual questions that need an up-to-date, sourced answer, asked in plain words. Costs the search "
        "plus the Agent API call (usually a few cents)."
    ),
    arguments=(
        ToolArgument("query", "text", "The query: the question to answer, in plain words, e.g. 'What are "
                     "typical residential zoning setbacks?'.", "a non-empty string (at most 4000 characters)", required=True),
        *_search_arguments("sources"),
    ),
)

#: Every agent tool, by its key.
TOOLS: dict[str, AgentTool] = {tool.key: tool for tool in (WEB_SEARCH, WEB_FETCH, ANSWER)}


def tool_named(name: str) -> AgentTool:
    """The tool an MCP or adapter name (``web_search``, ``perplexed_search``, ...) declares."""
    for tool in TOOLS.values():
        if name in (tool.mcp_name, tool.name):
            return tool
    raise KeyError(name)
