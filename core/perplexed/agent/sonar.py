"""Translate a Sonar chat-completions request into an Agent API request.

>>> from perplexed.agent import from_sonar
>>> request, warnings = from_sonar(model="sonar-pro", messages=[...], search_recency_filter="week")
>>> client.create(request)

Every row of Perplexity's migration table is covered; what has no Agent equivalent is dropped with a
warning (a :class:`MigrationWarning`, a ``str`` naming the Sonar ``field``), and what cannot be translated
(``response_format`` regex, ``file_url``/``pdf_url``/``video_url`` content) raises
:class:`perplexed.PerplexedError` (:class:`perplexed.InvalidRequest`).

Model → preset follows the public migration guide: ``sonar``/``sonar-pro`` → ``fast``,
``sonar-reasoning``/``sonar-reasoning-pro`` → ``low``, ``sonar-deep-research`` → ``high``. Override it with
``preset_map=``; a value containing ``/`` is a model slug instead (it gets a ``web_search`` tool, since a
bare model does not search). Perplexity's migration skill suggests another mapping (``sonar`` →
``perplexity/sonar`` + web_search, ``sonar-pro`` → ``low``, ``sonar-deep-research`` → ``medium``): pass
:data:`SKILL_PRESET_MAP` to use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from perplexed._errors import InvalidRequest
from perplexed.agent._request import (
    AgentRequest,
    FinanceSearch,
    FunctionTool,
    InputImage,
    InputMessage,
    InputText,
    WebSearch,
)

__all__ = ["DEFAULT_PRESET_MAP", "SKILL_PRESET_MAP", "MigrationWarning", "SonarTranslation", "from_sonar"]

DEFAULT_PRESET_MAP: dict[str, str] = {
    "sonar": "fast",
    "sonar-pro": "fast",
    "sonar-reasoning": "low",
    "sonar-reasoning-pro": "low",
    "sonar-deep-research": "high",
}
SKILL_PRESET_MAP: dict[str, str] = {
    "sonar": "perplexity/sonar",
    "sonar-pro": "low",
    "sonar-reasoning": "low",
    "sonar-reasoning-pro": "low",
    "sonar-deep-research": "medium",
}
SEARCH_TYPE_PRESETS = {"fast": "fast", "pro": "low"}
RELATED_QUESTIONS_INSTRUCTION = (
    "After the answer, add a section titled 'Related questions:' listing three follow-up questions."
)
ACADEMIC_DOMAINS = [
    "arxiv.org",
    "scholar.google.com",
    "pubmed.ncbi.nlm.nih.gov",
    "nature.com",
    "sciencedirect.com",
]

_FILTERS = (
    "search_domain_filter",
    "search_recency_filter",
    "search_after_date_filter",
    "search_before_date_filter",
    "last_updated_after_filter",
    "last_updated_before_filter",
)
# Sonar fields with no Agent equivalent: dropped with a warning.
_DROPPED = {
    "return_images": "images are not returned by the Agent API",
    "images": "images are not returned by the Agent API",
    "return_videos": "videos are not returned by the Agent API",
    "videos": "videos are not returned by the Agent API",
    "image_domain_filter": "images are not returned by the Agent API",
    "image_format_filter": "images are not returned by the Agent API",
    "num_images": "images are not returned by the Agent API",
    "num_videos": "videos are not returned by the Agent API",
    "media_response": "media responses are not supported by the Agent API",
    "search_language_filter": "the Agent API has no language filter for search (use language_preference "
    "for the answer's language)",
    "stream_mode": "the Agent API has one stream format",
    "presence_penalty": "not supported by the Agent API",
    "frequency_penalty": "not supported by the Agent API",
    "stop": "not supported by the Agent API",
    "top_k": "not supported by the Agent API",
    "n": "not supported by the Agent API",
    "logprobs": "not supported by the Agent API",
    "top_logprobs": "not supported by the Agent API",
    "user": "not supported by the Agent API",
    "seed": "not supported by the Agent API",
    "safe_search": "not supported by the Agent API's web_search",
    "image_search_relevance_enhanced": "not supported by the Agent API",
}
_KEPT = ("temperature", "top_p", "stream", "tool_choice", "language_preference")


class MigrationWarning(str):
    """A warning about one Sonar field (a ``str``; ``field`` names the Sonar field)."""

    field: str

    def __new__(cls, field: str, message: str) -> MigrationWarning:
        obj = super().__new__(cls, f"{field}: {message}")
        obj.field = field
        return obj


class SonarTranslation(NamedTuple):
    """What :func:`from_sonar` returns: the Agent request and the warnings (unpacks as a pair)."""

    request: AgentRequest
    warnings: list[MigrationWarning]


def _content(content: Any, role: str) -> str | list[Any]:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence):
        raise InvalidRequest(f"unsupported message content: {type(content).__name__}", param="messages")
    parts: list[Any] = []
    for part in content:
        if isinstance(part, str):
            parts.append(InputText(text=part))
            continue
        if not isinstance(part, Mapping):
            raise InvalidRequest("message content parts must be objects", param="messages")
        kind = part.get("type")
        if kind in ("text", "input_text"):
            parts.append(InputText(text=str(part.get("text", ""))))
        elif kind in ("image_url", "input_image"):
            url = part.get("image_url")
            if isinstance(url, Mapping):
                url = url.get("url")
            parts.append(InputImage(image_url=url))
        elif kind in ("file_url", "pdf_url", "video_url"):
            raise InvalidRequest(
                f"{kind} content parts are not supported by the Agent API: extract the text and send it as "
                "input_text, or fetch it with the fetch_url tool",
                param=kind,
            )
        else:
            raise InvalidRequest(f"unsupported content part type {kind!r}", param="messages")
    if role == "assistant" and all(isinstance(p, InputText) for p in parts):
        return "".join(p.text for p in parts)
    return parts


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(
            str(p.get("text", "")) if isinstance(p, Mapping) else str(p)
            for p in content
            if not isinstance(p, Mapping) or p.get("type") in ("text", "input_text")
        )
    return ""


@dataclass
class _Draft:
    """The translation under way: what is left of the Sonar arguments, and the Agent request taking shape."""

    args: dict[str, Any]
    mapping: dict[str, str]
    out: dict[str, Any] = field(default_factory=dict)
    web: dict[str, Any] = field(default_factory=dict)  # web_search tool settings
    want_web: bool = False
    tools: list[Any] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    warnings: list[MigrationWarning] = field(default_factory=list)

    def warn(self, name: str, message: str) -> None:
        self.warnings.append(MigrationWarning(name, message))


def from_sonar(*, preset_map: Mapping[str, str] | None = None, **kwargs: Any) -> SonarTranslation:
    """Translate Sonar ``/chat/completions`` keyword arguments into an Agent request plus warnings.

    ``preset_map`` overrides entries of :data:`DEFAULT_PRESET_MAP` (Sonar model → preset, or → model slug
    when the value contains ``/``).
    """
    d = _Draft(args=dict(kwargs), mapping={**DEFAULT_PRESET_MAP, **(preset_map or {})})
    for step in (
        _model,
        _search_options,
        _messages,
        _generation,
        _response_format,
        _search_filters,
        _search_switches,
        _function_tools,
        _leftovers,
    ):
        step(d)
    if d.want_web or d.web:
        d.tools.insert(0, WebSearch(**d.web))
    if d.tools:
        d.out["tools"] = d.tools
    if d.instructions:
        d.out["instructions"] = "\n\n".join(i for i in d.instructions if i)
    return SonarTranslation(AgentRequest(**d.out), d.warnings)


def _model(d: _Draft) -> None:
    """``model`` → preset (or a model slug)."""
    model = d.args.pop("model", None)
    if model is None:
        return
    target = d.mapping.get(model)
    if target is None:
        d.out["model"] = model
        if "/" not in str(model):
            d.warn("model", f"{model!r} is not a Sonar model this translator knows; sent as model as is")
    elif "/" in target:
        d.out["model"] = target
        d.want_web = True
    else:
        d.out["preset"] = target


def _search_options(d: _Draft) -> None:
    """``search_type`` fast / pro → preset (top level or inside ``web_search_options``); the other options."""
    options = d.args.pop("web_search_options", None) or {}
    if not isinstance(options, Mapping):
        raise InvalidRequest("web_search_options must be an object", param="web_search_options")
    options = dict(options)
    search_type = d.args.pop("search_type", None) or options.pop("search_type", None)
    if search_type is not None:
        preset = SEARCH_TYPE_PRESETS.get(str(search_type))
        if preset is not None:
            d.out.pop("model", None)
            d.out["preset"] = preset
            d.warn("search_type", f"{search_type!r} → preset {preset!r}")
        else:
            d.warn("search_type", f"{search_type!r} has no preset equivalent; dropped")
    if "search_context_size" in options:
        d.web["search_context_size"] = options.pop("search_context_size")
        d.want_web = True
    if "user_location" in options:
        loc = options.pop("user_location")
        if loc is not None:
            d.web["user_location"] = loc
            d.want_web = True
    for key in list(options):
        d.warn(f"web_search_options.{key}", f"dropped: {_DROPPED.get(key, 'no Agent API equivalent')}")


def _messages(d: _Draft) -> None:
    """``messages`` → ``input``; system messages → ``instructions``."""
    messages = d.args.pop("messages", None)
    if messages is not None:
        items: list[InputMessage] = []
        for msg in messages:
            if not isinstance(msg, Mapping):
                raise InvalidRequest("each message must be an object with role and content", param="messages")
            role = msg.get("role")
            if role == "system":
                d.instructions.append(_text_of(msg.get("content")))
                continue
            if role == "tool":
                raise InvalidRequest(
                    "tool messages need a call_id: send them as FunctionCallOutput items", param="messages"
                )
            items.append(InputMessage(role=role, content=_content(msg.get("content"), str(role))))
        if items:
            d.out["input"] = items
    if "input" in d.args:
        d.out["input"] = d.args.pop("input")


def _generation(d: _Draft) -> None:
    """Limits and generation options."""
    if "max_tokens" in d.args:
        d.out["max_output_tokens"] = d.args.pop("max_tokens")
    if "max_output_tokens" in d.args:
        d.out["max_output_tokens"] = d.args.pop("max_output_tokens")
    effort = d.args.pop("reasoning_effort", None)
    if effort is not None:
        d.out["reasoning"] = {"effort": effort}
    for key in _KEPT:
        if key in d.args:
            value = d.args.pop(key)
            if value is not None:
                d.out[key] = value


def _response_format(d: _Draft) -> None:
    """Structured output: a ``json_schema`` is kept; ``regex`` cannot work."""
    fmt = d.args.pop("response_format", None)
    if fmt is None:
        return
    if not isinstance(fmt, Mapping):
        raise InvalidRequest("response_format must be an object", param="response_format")
    kind = fmt.get("type")
    if kind == "regex":
        raise InvalidRequest(
            "response_format type 'regex' is not supported by the Agent API: use a json_schema",
            param="response_format",
        )
    if kind == "json_schema":
        schema = dict(fmt.get("json_schema") or {})
        if "name" not in schema:
            schema["name"] = "response"
        d.out["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif kind in (None, "text"):
        d.warn("response_format", f"type {kind!r} is the default; dropped")
    else:
        raise InvalidRequest(f"response_format type {kind!r} is not supported", param="response_format")


def _search_filters(d: _Draft) -> None:
    """Search filters → the ``web_search`` tool."""
    for key in _FILTERS:
        if key in d.args:
            value = d.args.pop(key)
            if value is not None:
                d.web[key] = value
                d.want_web = True
    if "num_search_results" in d.args:
        value = d.args.pop("num_search_results")
        if value is not None:
            d.web["max_results"] = value
            d.want_web = True
            d.warn("num_search_results", "→ web_search max_results (⚠ not in the SDK schema)")


def _search_switches(d: _Draft) -> None:
    """The search classifier, ``disable_search``, ``search_mode`` and related questions."""
    if d.args.pop("enable_search_classifier", None):
        d.want_web = True
        d.warn(
            "enable_search_classifier",
            "no classifier on the Agent API: a web_search tool is attached and the model decides",
        )
    if d.args.pop("disable_search", None):
        d.out["max_tool_calls"] = 0
        d.warn(
            "disable_search",
            "→ max_tool_calls=0; the preset's tools stay attached (tools=[] does not remove them), "
            "max_tool_calls=0 only stops every tool call (⚠ unverified field)",
        )
    mode = d.args.pop("search_mode", None)
    if mode == "sec":
        d.tools.append(FinanceSearch())
        d.warn("search_mode", "'sec' → the finance_search tool (filings, financials, transcripts)")
    elif mode == "academic":
        d.warn(
            "search_mode",
            "'academic' has no Agent equivalent; suggested pattern: WebSearch(search_domain_filter="
            f"{ACADEMIC_DOMAINS!r}) and instructions asking for peer-reviewed sources",
        )
    elif mode not in (None, "web"):
        d.warn("search_mode", f"{mode!r} has no Agent equivalent; dropped")
    if d.args.pop("return_related_questions", None):
        d.instructions.append(RELATED_QUESTIONS_INSTRUCTION)
        d.warn(
            "return_related_questions",
            "no related_questions field on the Agent API: an instruction asks for a 'Related questions:' "
            "section (or add a related_questions property to a json_schema response_format)",
        )


def _function_tools(d: _Draft) -> None:
    """Function tools in the chat-completions shape."""
    for tool in d.args.pop("tools", None) or []:
        if isinstance(tool, Mapping) and tool.get("type") == "function":
            d.tools.append(FunctionTool(**dict(tool)))
        else:
            d.tools.append(tool)


def _leftovers(d: _Draft) -> None:
    """Whatever is left is dropped, with a warning each (known Sonar fields first)."""
    for key in [k for k in d.args if k in _DROPPED]:
        d.args.pop(key)
        d.warn(key, f"dropped: {_DROPPED[key]}")
    for key in list(d.args):
        d.args.pop(key)
        d.warn(key, "dropped: not a Sonar field this translator knows")
