"""Agent API input items (messages with their content parts, function calls and their outputs) and the
coercion of ``input`` given as a string, dicts or models. No I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, PlainValidator, field_validator

from perplexed._errors import InvalidRequest
from perplexed.agent._request_base import MAX_IMAGE_URL_LENGTH, _Model

__all__ = [
    "Content",
    "ContentPart",
    "FunctionCallInput",
    "FunctionCallOutput",
    "InputFile",
    "InputImage",
    "InputItem",
    "InputMessage",
    "InputText",
]


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

