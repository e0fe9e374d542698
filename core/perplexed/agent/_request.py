"""Agent API request models, their validation, and the wire body they build. No I/O.

The Agent API is strict: an unknown field anywhere in the body is a 400. So :meth:`AgentRequest.to_body`
sends only fields it knows, and only those that are set (not ``None``); fields this module does not type
(the ⚠ ones of the reference: ``metadata``, ``parallel_tool_calls``, ``truncation``, ``stream_options``,
``step_budget_reminder``, ...) go through ``extra_body``, merged
last at the top level. Tools and input items may also be given as plain dicts: a dict of a known ``type``
is validated through its model, one of an unknown ``type`` is sent verbatim.

Every validation failure raises :class:`perplexed.InvalidRequest` (with ``param`` naming the field) before
anything is sent.

The tool models live in ``_request_tools``, the input items in ``_request_input``, the model base in
``_request_base``; every name is importable from here too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal, TypedDict

from pydantic import (
    BaseModel,
    Field,
    PlainValidator,
    field_validator,
    model_validator,
)

from perplexed._errors import InvalidRequest
from perplexed.agent._request_base import MAX_DOMAIN_FILTER as MAX_DOMAIN_FILTER
from perplexed.agent._request_base import MAX_DOMAIN_LENGTH as MAX_DOMAIN_LENGTH
from perplexed.agent._request_base import MAX_IMAGE_URL_LENGTH as MAX_IMAGE_URL_LENGTH
from perplexed.agent._request_base import REASONING_EFFORTS, _Model
from perplexed.agent._request_base import RESERVED_FUNCTION_NAMES as RESERVED_FUNCTION_NAMES
from perplexed.agent._request_base import invalid_request as invalid_request
from perplexed.agent._request_input import _ITEM_TYPES as _ITEM_TYPES
from perplexed.agent._request_input import _PART_TYPES as _PART_TYPES
from perplexed.agent._request_input import Content as Content
from perplexed.agent._request_input import ContentPart as ContentPart
from perplexed.agent._request_input import (
    FunctionCallInput,
    FunctionCallOutput,
    InputFile,
    InputImage,
    InputItem,
    InputMessage,
    InputText,
    _coerce_input,
)
from perplexed.agent._request_input import _coerce_item as _coerce_item
from perplexed.agent._request_input import _coerce_part as _coerce_part
from perplexed.agent._request_input import _coerce_parts as _coerce_parts
from perplexed.agent._request_input import _wire_content as _wire_content
from perplexed.agent._request_tools import _FILTER_FIELDS as _FILTER_FIELDS
from perplexed.agent._request_tools import _FN_NAME as _FN_NAME
from perplexed.agent._request_tools import _ISO as _ISO
from perplexed.agent._request_tools import _MDY as _MDY
from perplexed.agent._request_tools import _TOOL_TYPES as _TOOL_TYPES
from perplexed.agent._request_tools import DateFilter as DateFilter
from perplexed.agent._request_tools import (
    FetchUrl,
    FinanceSearch,
    FunctionTool,
    ImageSearch,
    McpTool,
    PeopleSearch,
    Sandbox,
    Tool,
    UserLocation,
    WebSearch,
    _coerce_tool,
    to_mdy,
)
from perplexed.agent._request_tools import ImageSearchFilters as ImageSearchFilters
from perplexed.agent._request_tools import _check_domain as _check_domain
from perplexed.agent._request_tools import _mdy_to_date as _mdy_to_date
from perplexed.agent._request_tools import _ToolBase as _ToolBase
from perplexed.agent._request_tools import check_domain_filter as check_domain_filter

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
