"""The base of the Agent API request models: limits the validators share, the model base class (unknown
fields refused, errors as :class:`perplexed.InvalidRequest`) and the conversion of pydantic's errors. No I/O."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from perplexed._errors import InvalidRequest

__all__ = [
    "MAX_DOMAIN_FILTER",
    "MAX_DOMAIN_LENGTH",
    "MAX_IMAGE_URL_LENGTH",
    "REASONING_EFFORTS",
    "RESERVED_FUNCTION_NAMES",
    "invalid_request",
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

