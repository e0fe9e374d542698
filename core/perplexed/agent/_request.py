"""Agent API request models, their validation, and the wire body they build. No I/O.

The Agent API is strict: an unknown field anywhere in the body is a 400. So :meth:`AgentRequest.to_body`
sends only fields it knows, and only those that are set (not ``None``); fields this module does not type
(the ⚠ ones of the reference: ``metadata``, ``parallel_tool_calls``, ``truncation``, ``stream_options``,
``step_budget_reminder``, ...) go through ``extra_body``, merged
last at the top level. Tools and input items may also be given as plain dicts: a dict of a known ``type``
is validated through its model, one of an unknown ``type`` is sent verbatim.

Every validation failure raises :class:`perplexed.InvalidRequest` (with ``param`` naming the field) before
anything is sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Annotated, Any, ClassVar, Literal, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from .._errors import InvalidRequest, register_secret

__all__ = [
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
    "RequestParams",
    "Sandbox",
    "Tool",
    "UserLocation",
    "WebSearch",
    "build_request",
    "to_mdy",
]

RESERVED_FUNCTION_NAMES = frozenset(
    {
        "web_search",
        "search_web",
        "people_search",
        "search_people",
        "fetch_url",
        "finance_search",
        "sandbox",
        "image_search",
        "search_images",
    }
)
MAX_DOMAIN_FILTER = 20
MAX_DOMAIN_LENGTH = 253
MAX_IMAGE_URL_LENGTH = 2048
#: ``reasoning.effort`` values the API accepts (a live probe, 2026-08: ``none`` is rejected). Not the top-level
#: ``effort=`` (preset levels ``fast`` ... ``xhigh``), which is a different thing.
REASONING_EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")


def invalid_request(exc: ValidationError) -> InvalidRequest:
    """Turn a pydantic ``ValidationError`` into an :class:`InvalidRequest` naming the offending field."""
    parts: list[str] = []
    param: str | None = None
    for err in exc.errors(include_url=False, include_input=False):
        loc = ".".join(str(x) for x in err.get("loc", ()) if not str(x).startswith("function-"))
        cause = (err.get("ctx") or {}).get("error")
        msg = str(cause) if isinstance(cause, Exception) else str(err.get("msg", "invalid value"))
        where = loc
        if isinstance(cause, InvalidRequest) and cause.param:
            inner = cause.param
            # the inner error already names the full path (or its tail is this field): keep it as it is
            same = not loc or inner == loc or inner.endswith("." + loc) or inner.startswith(loc + ".")
            where = inner if same else f"{loc}.{inner}"
            if not loc:
                loc = inner
        parts.append(msg if not loc or msg.startswith((loc, where)) else f"{loc}: {msg}")
        if param is None and where:
            param = where
    return InvalidRequest("; ".join(parts), param=param)


class _Model(BaseModel):
    """Base of request models: unknown fields are refused, and errors are :class:`InvalidRequest`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise invalid_request(exc) from None

    def to_wire(self) -> dict[str, Any]:
        """The JSON object sent to the API: set, non-``None`` fields only."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- dates and filters --------------------------------------------------------------------------------

_MDY = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})")
_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")


def to_mdy(value: date | str) -> str:
    """A date as the API's request format ``MM/DD/YYYY``.

    Accepts a :class:`datetime.date` (or ``datetime``), ``"M/D/YYYY"`` / ``"MM/DD/YYYY"`` or ISO
    ``"YYYY-MM-DD"``; anything else, or an impossible date, is :class:`InvalidRequest`.
    """
    if isinstance(value, datetime):
        value = value.date()
    if isinstance(value, date):
        return f"{value.month:02d}/{value.day:02d}/{value.year:04d}"
    if isinstance(value, str):
        text = value.strip()
        try:
            if m := _MDY.fullmatch(text):
                return to_mdy(date(int(m.group(3)), int(m.group(1)), int(m.group(2))))
            if m := _ISO.fullmatch(text):
                return to_mdy(date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
        except ValueError:
            raise InvalidRequest(f"not a valid date: {value!r}") from None
    raise InvalidRequest(f"expected a date or an MM/DD/YYYY string, got {value!r}")


def _mdy_to_date(value: str) -> date:
    month, day, year = (int(x) for x in value.split("/"))
    return date(year, month, day)


def _check_domain(entry: str) -> str:
    if not isinstance(entry, str):
        raise InvalidRequest(f"search_domain_filter entries must be strings, got {entry!r}")
    text = entry.strip()
    if not text or text == "-":
        raise InvalidRequest("search_domain_filter entries must not be empty")
    if "://" in text or text.lower().startswith(("http:", "https:")):
        raise InvalidRequest(
            f"search_domain_filter entries take no scheme: use {text.split('://', 1)[-1]!r}, not {text!r}"
        )
    if len(text) > MAX_DOMAIN_LENGTH:
        raise InvalidRequest(f"search_domain_filter entry longer than {MAX_DOMAIN_LENGTH} characters")
    if any(c.isspace() for c in text):
        raise InvalidRequest(f"search_domain_filter entry contains whitespace: {text!r}")
    return text


def check_domain_filter(entries: Sequence[str] | None) -> list[str] | None:
    """Validate a ``search_domain_filter``: at most 20 scheme-less entries of at most 253 characters."""
    if entries is None:
        return None
    if isinstance(entries, str):
        entries = [entries]
    if len(entries) > MAX_DOMAIN_FILTER:
        raise InvalidRequest(
            f"search_domain_filter takes at most {MAX_DOMAIN_FILTER} entries, got {len(entries)}",
            param="search_domain_filter",
        )
    return [_check_domain(e) for e in entries]


DateFilter = date | str

_FILTER_FIELDS = (
    "search_domain_filter",
    "search_recency_filter",
    "search_after_date_filter",
    "search_before_date_filter",
    "last_updated_after_filter",
    "last_updated_before_filter",
)


# --- tools -------------------------------------------------------------------------------------------


class UserLocation(_Model):
    """Approximate user location for ``web_search`` (ISO 3166-1 alpha-2 ``country``)."""

    country: str | None = Field(default=None, min_length=2, max_length=2)
    region: str | None = None
    city: str | None = None
    latitude: float | None = Field(default=None, ge=-90, le=90)
    longitude: float | None = Field(default=None, ge=-180, le=180)


class _ToolBase(_Model):
    type: str


class WebSearch(_ToolBase):
    """The ``web_search`` tool with its filters.

    Filters are given flat (``WebSearch(search_recency_filter="month")``) and sent nested under
    ``filters``; a wire-shaped ``filters={...}`` mapping is accepted too. Dates accept
    :class:`datetime.date` objects and are sent as ``MM/DD/YYYY``. ``search_recency_filter`` cannot be
    combined with the published-date bounds (``search_after_date_filter``/``search_before_date_filter``).
    ``max_results`` (1..50) and ``search_type`` are ⚠ unverified fields: only sent when set.
    """

    type: Literal["web_search"] = "web_search"
    search_domain_filter: list[str] | None = None
    search_recency_filter: Literal["hour", "day", "week", "month", "year"] | None = None
    search_after_date_filter: DateFilter | None = None
    search_before_date_filter: DateFilter | None = None
    last_updated_after_filter: DateFilter | None = None
    last_updated_before_filter: DateFilter | None = None
    search_context_size: Literal["low", "medium", "high"] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_tokens_per_page: int | None = Field(default=None, ge=1)
    max_results: int | None = Field(default=None, ge=1, le=50)
    search_type: Literal["web", "fast"] | None = None
    user_location: UserLocation | None = None

    @model_validator(mode="before")
    @classmethod
    def _flatten_filters(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and isinstance(data.get("filters"), Mapping):
            data = dict(data)
            filters = dict(data.pop("filters"))
            for key, value in filters.items():
                if key in data and data[key] is not None and data[key] != value:
                    raise InvalidRequest(f"{key} given twice with different values", param=key)
                data[key] = value
        return data

    @field_validator("search_domain_filter", mode="before")
    @classmethod
    def _domains(cls, value: Any) -> Any:
        return check_domain_filter(value)

    @field_validator(
        "search_after_date_filter",
        "search_before_date_filter",
        "last_updated_after_filter",
        "last_updated_before_filter",
        mode="before",
    )
    @classmethod
    def _dates(cls, value: Any) -> Any:
        return None if value is None else to_mdy(value)

    @model_validator(mode="after")
    def _consistent(self) -> WebSearch:
        if self.search_recency_filter is not None and (
            self.search_after_date_filter is not None or self.search_before_date_filter is not None
        ):
            raise InvalidRequest(
                "search_recency_filter cannot be combined with search_after_date_filter/"
                "search_before_date_filter: use one or the other",
                param="search_recency_filter",
            )
        for lo, hi in (
            ("search_after_date_filter", "search_before_date_filter"),
            ("last_updated_after_filter", "last_updated_before_filter"),
        ):
            a, b = getattr(self, lo), getattr(self, hi)
            if isinstance(a, str) and isinstance(b, str) and _mdy_to_date(a) > _mdy_to_date(b):
                raise InvalidRequest(f"{lo} ({a}) is after {hi} ({b})", param=lo)
        return self

    @property
    def filters(self) -> dict[str, Any]:
        """The ``filters`` object as sent."""
        return {k: getattr(self, k) for k in _FILTER_FIELDS if getattr(self, k) is not None}

    def to_wire(self) -> dict[str, Any]:
        """The tool as sent: filters nested under ``filters`` (omitted when none are set)."""
        wire: dict[str, Any] = {"type": self.type}
        filters = self.filters
        if filters:
            wire["filters"] = filters
        for name in (
            "search_context_size",
            "max_tokens",
            "max_tokens_per_page",
            "max_results",
            "search_type",
        ):
            value = getattr(self, name)
            if value is not None:
                wire[name] = value
        if self.user_location is not None:
            wire["user_location"] = self.user_location.to_wire()
        return wire


class FetchUrl(_ToolBase):
    """The ``fetch_url`` tool (``max_urls`` 1..10, ``total_budget_tokens`` ≤ 120000)."""

    type: Literal["fetch_url"] = "fetch_url"
    max_urls: int | None = Field(default=None, ge=1, le=10)
    total_budget_tokens: int | None = Field(default=None, ge=1, le=120_000)


_FN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class FunctionTool(_ToolBase):
    """A client-side ``function`` tool (Responses style: ``name`` at the top level).

    ``parameters`` is a JSON Schema. The chat-completions shape ``{"type": "function", "function":
    {...}}`` is accepted and flattened. Names reserved by the API (``web_search``, ``fetch_url``, ...) are
    refused.
    """

    type: Literal["function"] = "function"
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _flatten_chat_shape(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and isinstance(data.get("function"), Mapping):
            data = {**{k: v for k, v in data.items() if k != "function"}, **data["function"]}
        return data

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _FN_NAME.fullmatch(value):
            raise InvalidRequest(f"function name must match [A-Za-z0-9_-]{{1,64}}, got {value!r}")
        if value in RESERVED_FUNCTION_NAMES:
            raise InvalidRequest(f"function name {value!r} is reserved by the Agent API")
        return value


class PeopleSearch(_ToolBase):
    """The ``people_search`` tool."""

    type: Literal["people_search"] = "people_search"


class FinanceSearch(_ToolBase):
    """The ``finance_search`` tool (quotes, financials, transcripts; replaces Sonar's ``search_mode="sec"``)."""

    type: Literal["finance_search"] = "finance_search"


class ImageSearchFilters(_Model):
    """Filters of the ``image_search`` tool."""

    domain_filter: list[str] | None = None
    format_filter: list[str] | None = None
    safe_search: bool | None = None


class ImageSearch(_ToolBase):
    """The ``image_search`` tool (⚠ SDK 0.46 only)."""

    type: Literal["image_search"] = "image_search"
    max_results: int | None = Field(default=None, ge=1)
    filters: ImageSearchFilters | None = None


class Sandbox(_ToolBase):
    """The ``sandbox`` code-execution tool (drops other native tools when combined)."""

    type: Literal["sandbox"] = "sandbox"


class McpTool(_ToolBase):
    """A remote MCP server (``server_label`` matches ``^[a-zA-Z0-9_-]{1,64}$``).

    ``authorization`` is a secret: kept as ``SecretStr`` and scrubbed from every error message.
    """

    type: Literal["mcp"] = "mcp"
    server_label: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    server_url: str
    allowed_tools: list[str] | None = None
    headers: dict[str, str] | None = None
    authorization: SecretStr | None = None

    @field_validator("authorization")
    @classmethod
    def _secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            register_secret(value.get_secret_value())
        return value

    def to_wire(self) -> dict[str, Any]:
        """The tool as sent (with the authorization value revealed)."""
        wire = self.model_dump(mode="json", exclude_none=True, exclude={"authorization"})
        if self.authorization is not None:
            wire["authorization"] = self.authorization.get_secret_value()
        return wire


Tool = WebSearch | FetchUrl | FunctionTool | PeopleSearch | FinanceSearch | ImageSearch | Sandbox | McpTool

_TOOL_TYPES: dict[str, type[_ToolBase]] = {
    "web_search": WebSearch,
    "fetch_url": FetchUrl,
    "function": FunctionTool,
    "people_search": PeopleSearch,
    "finance_search": FinanceSearch,
    "image_search": ImageSearch,
    "sandbox": Sandbox,
    "mcp": McpTool,
}


def _coerce_tool(value: Any) -> Tool | dict[str, Any]:
    if isinstance(value, _ToolBase):
        return value  # type: ignore[return-value]
    if isinstance(value, Mapping):
        cls = _TOOL_TYPES.get(str(value.get("type")))
        if cls is None:
            return dict(value)  # unknown tool type: sent verbatim
        return cls(**dict(value))  # type: ignore[return-value]
    raise InvalidRequest(f"a tool must be a tool model or a dict, got {type(value).__name__}")


# --- input items -------------------------------------------------------------------------------------


class InputText(_Model):
    """A text content part."""

    type: Literal["input_text"] = "input_text"
    text: str


class InputImage(_Model):
    """An image content part: an HTTPS URL or a ``data:`` URI of at most 2048 characters."""

    type: Literal["input_image"] = "input_image"
    image_url: str
    detail: Literal["low", "high", "auto"] | None = None

    @field_validator("image_url", mode="before")
    @classmethod
    def _url(cls, value: Any) -> Any:
        if isinstance(value, Mapping):  # chat-completions shape {"url": ...}
            value = value.get("url")
        if not isinstance(value, str):
            raise InvalidRequest("image_url must be a string")
        if not value.startswith(("https://", "http://", "data:")):
            raise InvalidRequest("image_url must be an HTTPS URL or a data: URI")
        if len(value) > MAX_IMAGE_URL_LENGTH:
            raise InvalidRequest(f"image_url longer than {MAX_IMAGE_URL_LENGTH} characters")
        return value


class InputFile(_Model):
    """A file content part (⚠ SDK only): ``file_url`` or base64 ``file_data``."""

    type: Literal["input_file"] = "input_file"
    file_url: str | None = None
    file_data: str | None = None
    filename: str | None = None


ContentPart = InputText | InputImage | InputFile

_PART_TYPES: dict[str, type[_Model]] = {
    "input_text": InputText,
    "input_image": InputImage,
    "input_file": InputFile,
}


def _coerce_part(value: Any) -> ContentPart | dict[str, Any]:
    if isinstance(value, InputText | InputImage | InputFile):
        return value
    if isinstance(value, str):
        return InputText(text=value)
    if isinstance(value, Mapping):
        cls = _PART_TYPES.get(str(value.get("type")))
        return dict(value) if cls is None else cls(**dict(value))  # type: ignore[return-value]
    raise InvalidRequest(f"a content part must be a model, a string or a dict, got {type(value).__name__}")


def _coerce_parts(value: Any) -> str | list[ContentPart | dict[str, Any]]:
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return [_coerce_part(v) for v in value]
    raise InvalidRequest("message content must be a string or a list of content parts")


Content = Annotated[str | list[ContentPart | dict[str, Any]], PlainValidator(_coerce_parts)]


class InputMessage(_Model):
    """A message input item: ``role`` plus string content or a list of content parts."""

    type: Literal["message"] | None = None
    role: Literal["user", "assistant", "system", "developer"]
    content: Content

    def to_wire(self) -> dict[str, Any]:
        """The item as sent."""
        wire: dict[str, Any] = {"role": self.role}
        if self.type is not None:
            wire["type"] = self.type
        wire["content"] = _wire_content(self.content)
        return wire


def _wire_content(content: str | list[ContentPart | dict[str, Any]]) -> Any:
    if isinstance(content, str):
        return content
    return [p if isinstance(p, dict) else p.to_wire() for p in content]


class FunctionCallInput(_Model):
    """Replays a ``function_call`` the model made (``arguments`` is a JSON string)."""

    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: str
    thought_signature: str | None = None


class FunctionCallOutput(_Model):
    """The result of a client-side function call (echo ``name``/``thought_signature`` when present)."""

    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: Content
    name: str | None = None
    thought_signature: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The item as sent."""
        wire = self.model_dump(mode="json", exclude_none=True, exclude={"output"})
        wire["output"] = _wire_content(self.output)
        return wire


InputItem = InputMessage | FunctionCallInput | FunctionCallOutput

_ITEM_TYPES: dict[str, type[_Model]] = {
    "message": InputMessage,
    "function_call": FunctionCallInput,
    "function_call_output": FunctionCallOutput,
}


def _coerce_item(value: Any) -> InputItem | dict[str, Any]:
    if isinstance(value, InputMessage | FunctionCallInput | FunctionCallOutput):
        return value
    if isinstance(value, BaseModel) and getattr(value, "type", None) == "function_call":
        # a function_call output item of a previous response: replay it as input
        return FunctionCallInput(
            call_id=value.call_id,  # type: ignore[attr-defined]
            name=value.name,  # type: ignore[attr-defined]
            arguments=value.arguments,  # type: ignore[attr-defined]
            thought_signature=getattr(value, "thought_signature", None),
        )
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind is None and "role" in value:
            kind = "message"
        cls = _ITEM_TYPES.get(str(kind))
        return dict(value) if cls is None else cls(**dict(value))  # type: ignore[return-value]
    raise InvalidRequest(f"an input item must be a model or a dict, got {type(value).__name__}")


def _coerce_input(value: Any) -> str | list[InputItem | dict[str, Any]]:
    if isinstance(value, str):
        if not value.strip():
            raise InvalidRequest("input must not be empty", param="input")
        return value
    if isinstance(value, Sequence | Mapping) and not isinstance(value, bytes):
        items = [value] if isinstance(value, Mapping) else list(value)
        if not items:
            raise InvalidRequest("input must not be empty", param="input")
        return [_coerce_item(v) for v in items]
    raise InvalidRequest("input must be a string or a list of input items", param="input")


InputValue = Annotated[str | list[InputItem | dict[str, Any]], PlainValidator(_coerce_input)]
ToolValue = Annotated[Tool | dict[str, Any], PlainValidator(_coerce_tool)]


# --- reasoning and response format -------------------------------------------------------------------


class Reasoning(_Model):
    """``reasoning`` options: ``effort``, one of ``minimal``, ``low``, ``medium``, ``high``, ``xhigh``, ``max``
    (what the API accepts; ``reasoning="low"`` is short for ``Reasoning(effort="low")``)."""

    effort: str

    @field_validator("effort")
    @classmethod
    def _effort(cls, value: str) -> str:
        if value not in REASONING_EFFORTS:
            raise InvalidRequest(
                f"reasoning.effort must be one of {', '.join(REASONING_EFFORTS)}, got {value!r}",
                param="reasoning.effort",
            )
        return value


class JsonSchema(_Model):
    """The ``json_schema`` object of a structured-output request."""

    name: str = Field(default="response", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    schema_: dict[str, Any] = Field(alias="schema")
    description: str | None = None
    strict: bool | None = None


class JsonSchemaFormat(_Model):
    """``response_format={"type": "json_schema", ...}``; the output is a JSON string in ``output_text``.

    A pydantic model class is accepted wherever a response format is (its JSON schema is used).
    """

    type: Literal["json_schema"] = "json_schema"
    json_schema: JsonSchema

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        if isinstance(data, type) and issubclass(data, BaseModel):
            return {
                "type": "json_schema",
                "json_schema": {"name": data.__name__, "schema": data.model_json_schema()},
            }
        if isinstance(data, Mapping):
            kind = data.get("type")
            if kind == "regex":
                raise InvalidRequest(
                    "response_format type 'regex' is not supported by the Agent API; use json_schema",
                    param="response_format",
                )
            if kind not in (None, "json_schema"):
                raise InvalidRequest(
                    f"response_format type {kind!r} is not supported by the Agent API; use json_schema",
                    param="response_format",
                )
        return data


def _coerce_format(value: Any) -> JsonSchemaFormat:
    if isinstance(value, JsonSchemaFormat):
        return value
    if isinstance(value, Mapping):
        return JsonSchemaFormat(**dict(value))
    return JsonSchemaFormat.model_validate(value)


def _coerce_reasoning(value: Any) -> Reasoning:
    if isinstance(value, Reasoning):
        return value
    if isinstance(value, str):
        return Reasoning(effort=value)
    if isinstance(value, Mapping):
        return Reasoning(**dict(value))
    raise InvalidRequest("reasoning must be a Reasoning, a mapping or an effort string", param="reasoning")


# --- the request -------------------------------------------------------------------------------------


class AgentRequest(_Model):
    """A ``POST /v1/agent`` request.

    At least one of ``preset``/``effort``/``model``/``models``/``profile`` selects what runs; ``input`` is a
    string or a list of input items (models or dicts). ``extra_body`` is merged into the body last and
    carries fields this client does not type (⚠ in the reference). See :meth:`to_body`.
    """

    input: InputValue
    preset: str | None = None
    effort: str | None = None
    model: str | None = None
    models: list[str] | None = Field(default=None, min_length=1, max_length=5)
    profile: dict[str, Any] | None = None
    instructions: str | None = None
    tools: list[ToolValue] | None = None
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    max_steps: int | None = Field(default=None, ge=1, le=100)
    max_tool_calls: int | None = Field(default=None, ge=0)
    reasoning: Annotated[Reasoning, PlainValidator(_coerce_reasoning)] | None = None
    response_format: Annotated[JsonSchemaFormat, PlainValidator(_coerce_format)] | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stream: bool | None = None
    background: bool | None = None
    store: bool | None = None
    previous_response_id: str | None = None
    language_preference: str | None = None
    skills: list[dict[str, Any]] | None = None
    prompt_cache_key: str | None = Field(default=None, min_length=1)
    service_tier: Literal["auto", "default", "flex", "priority", "fast"] | None = None
    extra_body: dict[str, Any] | None = None
    #: never sent: body field -> who sent it, quoted when the API rejects that field as unknown (a 400), e.g.
    #: ``{"max_tool_calls": "perplexed.answer(): grounding with a preset sends max_tool_calls=0"}``
    sent_by: dict[str, str] | None = None

    _NOT_SENT: ClassVar[frozenset[str]] = frozenset({"extra_body", "sent_by"})

    @model_validator(mode="after")
    def _consistent(self) -> AgentRequest:
        if not (self.preset or self.effort or self.model or self.models or self.profile):
            raise InvalidRequest(
                "choose what runs the request: preset/effort (e.g. preset='fast'), model or models",
                param="model",
            )
        slugs = [self.model or "", *(self.models or [])]
        if self.max_output_tokens is None and any(s.startswith("anthropic/") for s in slugs):
            raise InvalidRequest(
                "max_output_tokens is required for anthropic/* models", param="max_output_tokens"
            )
        if self.background and self.store is False:
            raise InvalidRequest(
                "background runs need store=True (a store=False response cannot be retrieved)", param="store"
            )
        return self

    def __getitem__(self, key: str) -> Any:
        """Read the wire body like a dict: ``request["tools"]`` is ``request.to_body()["tools"]``."""
        return self.to_body()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.to_body()

    def get(self, key: str, default: Any = None) -> Any:
        """``to_body().get(key, default)``."""
        return self.to_body().get(key, default)

    def to_body(self) -> dict[str, Any]:
        """The JSON body: known, set, non-``None`` fields, then ``extra_body`` merged at the top level."""
        body: dict[str, Any] = {}
        for name in type(self).model_fields:
            if name in self._NOT_SENT:
                continue
            value = getattr(self, name)
            if value is None:
                continue
            body[name] = _wire(value)
        if self.extra_body:
            body.update(self.extra_body)
        return body


def encode_body(request: AgentRequest) -> bytes:
    """The request's JSON body as UTF-8 bytes, or :class:`InvalidRequest` naming the field that cannot be sent
    (a lone surrogate such as ``"\\ud800"`` has no UTF-8 form; NaN and infinity have no JSON form)."""
    body = request.to_body()
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (UnicodeEncodeError, ValueError, TypeError) as exc:
        field = next((k for k, v in body.items() if not _encodable(v)), None)
        what = (
            type(exc).__name__ if not isinstance(exc, UnicodeEncodeError) else "a lone surrogate, not UTF-8"
        )
        raise InvalidRequest(
            f"{field or 'the request'} cannot be sent as JSON ({what})", param=field
        ) from None


def _encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError, TypeError):
        return False
    return True


def _wire(value: Any) -> Any:
    if isinstance(value, _Model):
        return value.to_wire()
    if isinstance(value, list):
        return [_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    return value


class RequestParams(TypedDict, total=False):
    """Keyword arguments of ``create``/``stream``: the fields of :class:`AgentRequest`."""

    input: str | Sequence[InputItem | Mapping[str, Any]]
    preset: str | None
    effort: str | None
    model: str | None
    models: Sequence[str] | None
    profile: Mapping[str, Any] | None
    instructions: str | None
    tools: Sequence[Tool | Mapping[str, Any]] | None
    tool_choice: str | Mapping[str, Any] | None
    max_output_tokens: int | None
    max_steps: int | None
    max_tool_calls: int | None
    reasoning: Reasoning | Mapping[str, Any] | str | None
    response_format: JsonSchemaFormat | Mapping[str, Any] | type[BaseModel] | None
    temperature: float | None
    top_p: float | None
    stream: bool | None
    background: bool | None
    store: bool | None
    previous_response_id: str | None
    language_preference: str | None
    skills: Sequence[Mapping[str, Any]] | None
    prompt_cache_key: str | None
    service_tier: Literal["auto", "default", "flex", "priority", "fast"] | None
    extra_body: Mapping[str, Any] | None
    sent_by: Mapping[str, str] | None


def build_request(
    request: AgentRequest | None = None, params: Mapping[str, Any] | None = None
) -> AgentRequest:
    """Validate ``params`` (over the set fields of ``request``, when given) into an :class:`AgentRequest`."""
    data: dict[str, Any] = {}
    if request is not None:
        data.update({name: getattr(request, name) for name in request.model_fields_set})
    if params:
        unknown = set(params) - set(AgentRequest.model_fields)
        if unknown:
            name = sorted(unknown)[0]
            raise InvalidRequest(
                f"unknown request field {name!r} (the Agent API rejects unknown fields; "
                "pass unverified fields through extra_body)",
                param=name,
            )
        data.update(params)
    if "extra_body" in data and data["extra_body"] is not None:
        data["extra_body"] = dict(data["extra_body"])
    if request is not None and request.sent_by and params and params.get("sent_by") is not None:
        data["sent_by"] = {**request.sent_by, **params["sent_by"]}
    elif data.get("sent_by") is not None:
        data["sent_by"] = dict(data["sent_by"])
    return AgentRequest(**data)
