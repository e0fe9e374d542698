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
from typing import Any, NamedTuple

from .._errors import InvalidRequest
from ._request import (
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


def from_sonar(*, preset_map: Mapping[str, str] | None = None, **kwargs: Any) -> SonarTranslation:
    """Translate Sonar ``/chat/completions`` keyword arguments into an Agent request plus warnings.

    ``preset_map`` overrides entries of :data:`DEFAULT_PRESET_MAP` (Sonar model → preset, or → model slug
    when the value contains ``/``).
    """
    mapping = {**DEFAULT_PRESET_MAP, **(preset_map or {})}
    warnings: list[MigrationWarning] = []
    out: dict[str, Any] = {}
    instructions: list[str] = []
    web: dict[str, Any] = {}
    want_web = False
    tools: list[Any] = []
    args = dict(kwargs)

    # model -> preset / model
    model = args.pop("model", None)
    if model is not None:
        target = mapping.get(model)
        if target is None:
            if "/" in str(model):
                out["model"] = model
            else:
                out["model"] = model
                warnings.append(
                    MigrationWarning(
                        "model", f"{model!r} is not a Sonar model this translator knows; sent as model as is"
                    )
                )
        elif "/" in target:
            out["model"] = target
            want_web = True
        else:
            out["preset"] = target

    # search_type fast / pro -> preset (top level or inside web_search_options)
    options = args.pop("web_search_options", None) or {}
    if not isinstance(options, Mapping):
        raise InvalidRequest("web_search_options must be an object", param="web_search_options")
    options = dict(options)
    search_type = args.pop("search_type", None) or options.pop("search_type", None)
    if search_type is not None:
        preset = SEARCH_TYPE_PRESETS.get(str(search_type))
        if preset is not None:
            out.pop("model", None)
            out["preset"] = preset
            warnings.append(MigrationWarning("search_type", f"{search_type!r} → preset {preset!r}"))
        else:
            warnings.append(
                MigrationWarning("search_type", f"{search_type!r} has no preset equivalent; dropped")
            )
    if "search_context_size" in options:
        web["search_context_size"] = options.pop("search_context_size")
        want_web = True
    if "user_location" in options:
        loc = options.pop("user_location")
        if loc is not None:
            web["user_location"] = loc
            want_web = True
    for key in list(options):
        reason = _DROPPED.get(key, "no Agent API equivalent")
        warnings.append(MigrationWarning(f"web_search_options.{key}", f"dropped: {reason}"))
        options.pop(key)

    # messages -> input; system messages -> instructions
    messages = args.pop("messages", None)
    if messages is not None:
        items: list[InputMessage] = []
        for msg in messages:
            if not isinstance(msg, Mapping):
                raise InvalidRequest("each message must be an object with role and content", param="messages")
            role = msg.get("role")
            if role == "system":
                instructions.append(_text_of(msg.get("content")))
                continue
            if role == "tool":
                raise InvalidRequest(
                    "tool messages need a call_id: send them as FunctionCallOutput items", param="messages"
                )
            items.append(InputMessage(role=role, content=_content(msg.get("content"), str(role))))
        if items:
            out["input"] = items
    if "input" in args:
        out["input"] = args.pop("input")

    # limits and generation options
    if "max_tokens" in args:
        out["max_output_tokens"] = args.pop("max_tokens")
    if "max_output_tokens" in args:
        out["max_output_tokens"] = args.pop("max_output_tokens")
    effort = args.pop("reasoning_effort", None)
    if effort is not None:
        out["reasoning"] = {"effort": effort}
    for key in _KEPT:
        if key in args:
            value = args.pop(key)
            if value is not None:
                out[key] = value

    # structured output
    fmt = args.pop("response_format", None)
    if fmt is not None:
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
            out["response_format"] = {"type": "json_schema", "json_schema": schema}
        elif kind in (None, "text"):
            warnings.append(MigrationWarning("response_format", f"type {kind!r} is the default; dropped"))
        else:
            raise InvalidRequest(f"response_format type {kind!r} is not supported", param="response_format")

    # search filters -> web_search tool
    for key in _FILTERS:
        if key in args:
            value = args.pop(key)
            if value is not None:
                web[key] = value
                want_web = True
    if "num_search_results" in args:
        value = args.pop("num_search_results")
        if value is not None:
            web["max_results"] = value
            want_web = True
            warnings.append(
                MigrationWarning("num_search_results", "→ web_search max_results (⚠ not in the SDK schema)")
            )
    if args.pop("enable_search_classifier", None):
        want_web = True
        warnings.append(
            MigrationWarning(
                "enable_search_classifier",
                "no classifier on the Agent API: a web_search tool is attached and the model decides",
            )
        )
    if args.pop("disable_search", None):
        out["max_tool_calls"] = 0
        warnings.append(
            MigrationWarning(
                "disable_search",
                "→ max_tool_calls=0; the preset's tools stay attached (tools=[] does not remove them), "
                "max_tool_calls=0 only stops every tool call (⚠ unverified field)",
            )
        )
    mode = args.pop("search_mode", None)
    if mode == "sec":
        tools.append(FinanceSearch())
        warnings.append(
            MigrationWarning(
                "search_mode", "'sec' → the finance_search tool (filings, financials, transcripts)"
            )
        )
    elif mode == "academic":
        warnings.append(
            MigrationWarning(
                "search_mode",
                "'academic' has no Agent equivalent; suggested pattern: WebSearch(search_domain_filter="
                f"{ACADEMIC_DOMAINS!r}) and instructions asking for peer-reviewed sources",
            )
        )
    elif mode not in (None, "web"):
        warnings.append(MigrationWarning("search_mode", f"{mode!r} has no Agent equivalent; dropped"))

    if args.pop("return_related_questions", None):
        instructions.append(RELATED_QUESTIONS_INSTRUCTION)
        warnings.append(
            MigrationWarning(
                "return_related_questions",
                "no related_questions field on the Agent API: an instruction asks for a 'Related questions:' "
                "section (or add a related_questions property to a json_schema response_format)",
            )
        )

    # function tools in chat-completions shape
    for tool in args.pop("tools", None) or []:
        if isinstance(tool, Mapping) and tool.get("type") == "function":
            tools.append(FunctionTool(**dict(tool)))
        else:
            tools.append(tool)

    for key in list(args):
        if key in _DROPPED:
            args.pop(key)
            warnings.append(MigrationWarning(key, f"dropped: {_DROPPED[key]}"))
    for key in list(args):
        args.pop(key)
        warnings.append(MigrationWarning(key, "dropped: not a Sonar field this translator knows"))

    if want_web or web:
        tools.insert(0, WebSearch(**web))
    if tools:
        out["tools"] = tools
    if instructions:
        out["instructions"] = "\n\n".join(i for i in instructions if i)
    return SonarTranslation(AgentRequest(**out), warnings)
