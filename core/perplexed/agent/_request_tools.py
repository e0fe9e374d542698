"""Agent API tool models (``web_search`` with its filters and dates, ``fetch_url``, ``function``, ``mcp``, ...)
and the coercion of a tool given as a dict. No I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from perplexed._errors import InvalidRequest, register_secret
from perplexed.agent._request_base import (
    MAX_DOMAIN_FILTER,
    MAX_DOMAIN_LENGTH,
    RESERVED_FUNCTION_NAMES,
    _Model,
)

__all__ = [
    "DateFilter",
    "FetchUrl",
    "FinanceSearch",
    "FunctionTool",
    "ImageSearch",
    "ImageSearchFilters",
    "McpTool",
    "PeopleSearch",
    "Sandbox",
    "Tool",
    "UserLocation",
    "WebSearch",
    "check_domain_filter",
    "to_mdy",
]


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
