"""Agent API response, output-item and stream-event models, and the stream assembler. No I/O.

Output items and events are dispatched on their raw ``type`` string. A type this module does not know is
kept as :class:`UnknownOutputItem` / :class:`UnknownEvent` with its ``type`` and the raw JSON: never
coerced into another class, never dropped. Known models allow extra fields (kept in ``model_extra``), so a
field the API adds later survives too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    SerializationInfo,
    ValidationError,
)

from perplexed._logs import get_logger

if TYPE_CHECKING:
    from perplexed.citations import Citations

__all__ = [
    "TERMINAL_EVENTS",
    "TERMINAL_STATUSES",
    "CancelResult",
    "Cost",
    "ErrorEvent",
    "ErrorInfo",
    "FetchUrlResultsItem",
    "FetchedContent",
    "FinanceResultsItem",
    "FunctionCallItem",
    "ImageResult",
    "ImageSearchResultsItem",
    "IncompleteDetails",
    "MessageItem",
    "OutputItem",
    "OutputItemAddedEvent",
    "OutputItemDoneEvent",
    "OutputText",
    "OutputTextDeltaEvent",
    "OutputTextDoneEvent",
    "PeopleSearchResultsItem",
    "ReasoningEvent",
    "Response",
    "ResponseCancelledEvent",
    "ResponseCompletedEvent",
    "ResponseCreatedEvent",
    "ResponseEvent",
    "ResponseFailedEvent",
    "ResponseInProgressEvent",
    "ResponseIncompleteEvent",
    "SearchResult",
    "SearchResultsItem",
    "StreamAssembler",
    "StreamEvent",
    "UnknownEvent",
    "UnknownOutputItem",
    "Usage",
    "parse_event",
    "parse_output_item",
]

logger = get_logger("perplexed.agent")

TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "incomplete"})
FAILED_STATUSES = frozenset({"failed", "cancelled", "incomplete"})
TERMINAL_EVENTS = frozenset(
    {
        "response.completed",
        "response.failed",
        "response.incomplete",
        "response.cancelled",
        "error",
        "response.error",
    }
)


def _dump(value: Any, info: SerializationInfo) -> Any:
    """Serialize models by their own class (union members are plain models, not a discriminated union)."""
    if isinstance(value, BaseModel):
        return value.model_dump(
            mode=info.mode,
            by_alias=bool(info.by_alias),
            exclude_none=info.exclude_none,
            exclude_unset=info.exclude_unset,
            exclude_defaults=info.exclude_defaults,
        )
    if isinstance(value, list):
        return [_dump(v, info) for v in value]
    return value


_AsOwnModel = PlainSerializer(_dump)


class _Wire(BaseModel):
    """Base of response models: extra fields allowed and kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --- usage and cost ----------------------------------------------------------------------------------


class Cost(_Wire):
    """``usage.cost``: what the request cost, as reported by the API (USD)."""

    currency: str = "USD"
    input_cost: float | None = None
    output_cost: float | None = None
    tool_calls_cost: float | None = None
    cache_read_cost: float | None = None
    cache_creation_cost: float | None = None
    total_cost: float | None = None
    tool_calls_cost_details: dict[str, Any] | None = None


class Usage(_Wire):
    """Token usage and cost (``tool_calls_details`` is keyed by billing name, e.g. ``search_web``)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    input_tokens_details: dict[str, Any] | None = None
    cost: Cost | None = None
    tool_calls_details: dict[str, Any] | None = None


class ErrorInfo(_Wire):
    """``response.error``: why a run failed (``code`` is a string here, unlike the HTTP envelope)."""

    message: str = ""
    code: str | int | None = None
    type: str | None = None
    param: str | None = None


class IncompleteDetails(_Wire):
    """``incomplete_details``: e.g. ``reason="max_output_tokens"``."""

    reason: str | None = None


# --- output items ------------------------------------------------------------------------------------


class SearchResult(_Wire):
    """One web source. ``id`` is what the answer's ``[n]`` markers refer to; dates are ``YYYY-MM-DD``."""

    id: int | None = None
    url: str = ""
    title: str = ""
    snippet: str = ""
    date: str | None = None
    last_updated: str | None = None
    source: str | None = None


class OutputText(_Wire):
    """An ``output_text`` content part of a message."""

    type: str = "output_text"
    text: str = ""
    annotations: list[dict[str, Any]] = Field(default_factory=list)


def _coerce_content(value: Any) -> list[OutputText | dict[str, Any]]:
    if value is None:
        return []
    out: list[OutputText | dict[str, Any]] = []
    for part in value:
        if isinstance(part, OutputText):
            out.append(part)
        elif isinstance(part, Mapping) and part.get("type", "output_text") == "output_text":
            out.append(OutputText.model_validate(part))
        else:
            out.append(dict(part) if isinstance(part, Mapping) else part)
    return out


class _Item(_Wire):
    type: str


class MessageItem(_Item):
    """A ``message`` output item: the answer. ``text`` joins its ``output_text`` parts."""

    type: Literal["message"] = "message"
    id: str | None = None
    role: str = "assistant"
    status: str | None = None
    content: Annotated[list[OutputText | dict[str, Any]], PlainValidator(_coerce_content), _AsOwnModel] = (
        Field(default_factory=list)
    )

    @property
    def text(self) -> str:
        """The concatenated text of the ``output_text`` parts."""
        return "".join(p.text for p in self.content if isinstance(p, OutputText))


class SearchResultsItem(_Item):
    """A ``search_results`` output item: the sources the answer's ``[n]`` markers cite."""

    type: Literal["search_results"] = "search_results"
    queries: list[str] | None = None
    results: list[SearchResult] = Field(default_factory=list)


class PeopleSearchResultsItem(_Item):
    """A ``people_search_results`` output item."""

    type: Literal["people_search_results"] = "people_search_results"
    queries: list[str] | None = None
    results: list[SearchResult] = Field(default_factory=list)


class FetchedContent(_Wire):
    """One fetched page."""

    url: str = ""
    title: str | None = None
    snippet: str | None = None


class FetchUrlResultsItem(_Item):
    """A ``fetch_url_results`` output item."""

    type: Literal["fetch_url_results"] = "fetch_url_results"
    contents: list[FetchedContent] = Field(default_factory=list)


class ImageResult(_Wire):
    """One image search hit."""

    image_url: str = ""
    origin_url: str | None = None
    title: str | None = None
    width: int | None = None
    height: int | None = None


class ImageSearchResultsItem(_Item):
    """An ``image_search_results`` output item."""

    type: Literal["image_search_results"] = "image_search_results"
    queries: list[str] | None = None
    results: list[ImageResult] = Field(default_factory=list)
    error: Any = None


class FinanceResultsItem(_Item):
    """A ``finance_results`` output item (its fields are kept as extras)."""

    type: Literal["finance_results"] = "finance_results"


class FunctionCallItem(_Item):
    """A ``function_call`` output item: run the function and send back a ``function_call_output``."""

    type: Literal["function_call"] = "function_call"
    id: str | None = None
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    status: str | None = None
    thought_signature: str | None = None

    def parsed_arguments(self) -> Any:
        """``arguments`` parsed as JSON."""
        return json.loads(self.arguments) if self.arguments else {}


class UnknownOutputItem(_Item):
    """An output item of a type this client does not model: ``type`` and the untouched JSON in ``raw``."""

    raw: dict[str, Any] = Field(default_factory=dict)


OutputItem = (
    MessageItem
    | SearchResultsItem
    | PeopleSearchResultsItem
    | FetchUrlResultsItem
    | ImageSearchResultsItem
    | FinanceResultsItem
    | FunctionCallItem
    | UnknownOutputItem
)

_ITEM_TYPES: dict[str, type[_Item]] = {
    "message": MessageItem,
    "search_results": SearchResultsItem,
    "people_search_results": PeopleSearchResultsItem,
    "fetch_url_results": FetchUrlResultsItem,
    "image_search_results": ImageSearchResultsItem,
    "finance_results": FinanceResultsItem,
    "function_call": FunctionCallItem,
}


def parse_output_item(value: Any) -> OutputItem:
    """Dispatch one output item on its raw ``type``; unknown types (and unparseable ones) are kept raw."""
    if isinstance(value, _Item):
        return value  # type: ignore[return-value]
    if not isinstance(value, Mapping):
        return UnknownOutputItem(type=type(value).__name__, raw={"value": value})
    kind = value.get("type")
    cls = _ITEM_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is not None:
        try:
            return cls.model_validate(value)  # type: ignore[return-value]
        except ValidationError as exc:
            logger.debug("output item of type %r kept raw: %s", kind, exc)
    return UnknownOutputItem(type=str(kind) if kind is not None else "", raw=dict(value))


def _coerce_items(value: Any) -> list[OutputItem]:
    if value is None:
        return []
    return [parse_output_item(v) for v in value]


# --- the response ------------------------------------------------------------------------------------


class Response(_Wire):
    """An Agent API response (``object: "response"``).

    ``output_text``, ``search_results``, ``citations`` and ``cost`` are computed from ``output`` and
    ``usage``; they are not wire fields.
    """

    id: str = ""
    object: str = "response"
    created_at: int | None = None
    completed_at: int | None = None
    model: str | None = None
    status: str | None = None
    output: Annotated[list[OutputItem], PlainValidator(_coerce_items), _AsOwnModel] = Field(
        default_factory=list
    )
    usage: Usage | None = None
    error: ErrorInfo | None = None
    incomplete_details: IncompleteDetails | None = None
    background: bool | None = None
    store: bool | None = None
    effort: str | None = None
    preset: str | None = None
    previous_response_id: str | None = None

    @property
    def output_text(self) -> str:
        """Every ``message`` item's ``output_text``, concatenated (with its inline ``[n]`` markers)."""
        return "".join(item.text for item in self.output if isinstance(item, MessageItem))

    @property
    def search_results(self) -> list[SearchResult]:
        """Every result of every ``search_results`` item, flattened, in order."""
        return [r for item in self.output if isinstance(item, SearchResultsItem) for r in item.results]

    @property
    def citations(self) -> Citations[SearchResult]:
        """The ``[n]`` markers of :attr:`output_text` resolved to :attr:`search_results` by ``id``."""
        from perplexed.citations import parse_citations

        return parse_citations(self.output_text, self.search_results)

    @property
    def cost(self) -> float | None:
        """``usage.cost.total_cost`` in USD, when the API reported it."""
        if self.usage is None or self.usage.cost is None:
            return None
        return self.usage.cost.total_cost

    @property
    def function_calls(self) -> list[FunctionCallItem]:
        """The ``function_call`` items the model made."""
        return [item for item in self.output if isinstance(item, FunctionCallItem)]

    @property
    def is_terminal(self) -> bool:
        """True when ``status`` is ``completed``, ``failed``, ``cancelled`` or ``incomplete``."""
        return self.status in TERMINAL_STATUSES


class CancelResult(_Wire):
    """What ``cancel`` returns: ``{"response_id": ..., "status": "cancelling"}`` (not yet terminal)."""

    response_id: str = ""
    status: str = ""


# --- stream events -----------------------------------------------------------------------------------


class ResponseEvent(_Wire):
    """Base of stream events: ``type`` and ``sequence_number`` (the resume cursor)."""

    type: str
    sequence_number: int | None = None


class ResponseCreatedEvent(ResponseEvent):
    """``response.created``: the initial snapshot."""

    type: Literal["response.created"] = "response.created"
    response: Response | None = None


class ResponseInProgressEvent(ResponseEvent):
    """``response.in_progress``."""

    type: Literal["response.in_progress"] = "response.in_progress"
    response: Response | None = None


class OutputItemAddedEvent(ResponseEvent):
    """``response.output_item.added``: a new output item at ``output_index``."""

    type: Literal["response.output_item.added"] = "response.output_item.added"
    output_index: int = 0
    item: Annotated[OutputItem, PlainValidator(parse_output_item), _AsOwnModel] | None = None


class OutputItemDoneEvent(ResponseEvent):
    """``response.output_item.done``: the final state of the item at ``output_index``."""

    type: Literal["response.output_item.done"] = "response.output_item.done"
    output_index: int = 0
    item: Annotated[OutputItem, PlainValidator(parse_output_item), _AsOwnModel] | None = None


class OutputTextDeltaEvent(ResponseEvent):
    """``response.output_text.delta``: a piece of answer text."""

    type: Literal["response.output_text.delta"] = "response.output_text.delta"
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    delta: str = ""


class OutputTextDoneEvent(ResponseEvent):
    """``response.output_text.done``: the full text of one content part."""

    type: Literal["response.output_text.done"] = "response.output_text.done"
    item_id: str | None = None
    output_index: int = 0
    content_index: int = 0
    text: str = ""


class ReasoningEvent(ResponseEvent):
    """A ``response.reasoning.*`` progress event (started, search_queries, search_results, fetch_url_*,
    image_search_*, stopped). ``queries``, ``results``, ``urls``, ``contents``, ``thought`` when sent."""

    thought: str | None = None
    queries: list[str] | None = None
    results: list[dict[str, Any]] | None = None
    urls: list[str] | None = None
    contents: list[dict[str, Any]] | None = None
    usage: Usage | None = None

    @property
    def search_results(self) -> list[SearchResult]:
        """``results`` as :class:`SearchResult` (for ``response.reasoning.search_results``)."""
        return [SearchResult.model_validate(r) for r in self.results or ()]


class SkillLoadedEvent(ResponseEvent):
    """``response.skill.loaded``."""

    type: Literal["response.skill.loaded"] = "response.skill.loaded"
    name: str | None = None


class ResponseCompletedEvent(ResponseEvent):
    """``response.completed`` (terminal): the full response, usually with ``usage``."""

    type: Literal["response.completed"] = "response.completed"
    response: Response | None = None


class ResponseFailedEvent(ResponseEvent):
    """``response.failed`` (terminal)."""

    type: Literal["response.failed"] = "response.failed"
    response: Response | None = None
    error: ErrorInfo | None = None


class ResponseIncompleteEvent(ResponseEvent):
    """``response.incomplete`` (terminal): ``response.incomplete_details.reason`` says why."""

    type: Literal["response.incomplete"] = "response.incomplete"
    response: Response | None = None


class ResponseCancelledEvent(ResponseEvent):
    """``response.cancelled`` (terminal)."""

    type: Literal["response.cancelled"] = "response.cancelled"
    response: Response | None = None


class ErrorEvent(ResponseEvent):
    """A bare ``error`` event (transport-level failure; terminal), also ``response.error``.

    The details come nested under ``error`` or flat; :attr:`info` reads either."""

    type: Literal["error", "response.error"] = "error"
    error: ErrorInfo | None = None
    message: str | None = None
    code: str | int | None = None
    param: str | None = None

    @property
    def info(self) -> ErrorInfo:
        """The error details, whether sent nested under ``error`` or flat."""
        if self.error is not None:
            return self.error
        return ErrorInfo(message=self.message or "", code=self.code, param=self.param)


class UnknownEvent(ResponseEvent):
    """An event of a type this client does not model: its ``type`` and the untouched JSON in ``raw``."""

    raw: dict[str, Any] = Field(default_factory=dict)


StreamEvent = (
    ResponseCreatedEvent
    | ResponseInProgressEvent
    | OutputItemAddedEvent
    | OutputItemDoneEvent
    | OutputTextDeltaEvent
    | OutputTextDoneEvent
    | ReasoningEvent
    | SkillLoadedEvent
    | ResponseCompletedEvent
    | ResponseFailedEvent
    | ResponseIncompleteEvent
    | ResponseCancelledEvent
    | ErrorEvent
    | UnknownEvent
)

_EVENT_TYPES: dict[str, type[ResponseEvent]] = {
    "response.created": ResponseCreatedEvent,
    "response.in_progress": ResponseInProgressEvent,
    "response.output_item.added": OutputItemAddedEvent,
    "response.output_item.done": OutputItemDoneEvent,
    "response.output_text.delta": OutputTextDeltaEvent,
    "response.output_text.done": OutputTextDoneEvent,
    "response.skill.loaded": SkillLoadedEvent,
    "response.completed": ResponseCompletedEvent,
    "response.failed": ResponseFailedEvent,
    "response.incomplete": ResponseIncompleteEvent,
    "response.cancelled": ResponseCancelledEvent,
    "response.error": ErrorEvent,
    "error": ErrorEvent,
}
_REASONING_TYPES = frozenset(
    {
        "response.reasoning.started",
        "response.reasoning.search_queries",
        "response.reasoning.search_results",
        "response.reasoning.fetch_url_queries",
        "response.reasoning.fetch_url_results",
        "response.reasoning.image_search_queries",
        "response.reasoning.image_search_results",
        "response.reasoning.stopped",
    }
)


def parse_event(payload: Any, sse_event: str | None = None) -> StreamEvent:
    """Dispatch one decoded event payload on its raw ``type``.

    ``type`` comes from the JSON; when the JSON has none, the SSE ``event:`` name is used. Unknown types
    (and payloads that do not fit their model) become :class:`UnknownEvent` with the raw JSON.
    """
    if not isinstance(payload, Mapping):
        return UnknownEvent(type=sse_event or "", raw={"data": payload})
    kind = payload.get("type")
    if not isinstance(kind, str) or not kind:
        kind = sse_event or ""
        payload = {**payload, "type": kind}
    seq = payload.get("sequence_number")
    seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
    cls: type[ResponseEvent] | None = _EVENT_TYPES.get(kind)
    if cls is None and kind in _REASONING_TYPES:
        cls = ReasoningEvent
    if cls is not None:
        try:
            return cls.model_validate(payload)  # type: ignore[return-value]
        except ValidationError as exc:
            logger.debug("event of type %r kept raw: %s", kind, exc)
    return UnknownEvent(type=kind, sequence_number=seq, raw=dict(payload))


def is_terminal(event: StreamEvent) -> bool:
    """True for ``response.completed|failed|incomplete|cancelled`` and a bare ``error``."""
    return event.type in TERMINAL_EVENTS


# --- assembling the final response from a stream -----------------------------------------------------


class StreamAssembler:
    """Builds the final :class:`Response` from stream events (pure: feed events, read :meth:`response`).

    The terminal event's ``response`` is authoritative when it carries output (the text and items
    gathered from earlier events are then released); otherwise the output is rebuilt from
    ``output_item.*`` and ``output_text.*`` events (and sources from ``response.reasoning.search_results``
    when no ``search_results`` item arrived).
    """

    def __init__(self) -> None:
        self.snapshot: Response | None = None
        self.terminal: StreamEvent | None = None
        self.last_sequence_number: int | None = None
        self._items: dict[int, OutputItem] = {}
        # the text of each (output_index, content_index), grown in place by each delta: one string, not a list
        # of pieces (joining pieces would hold the answer twice)
        self._text: dict[tuple[int, int], str] = {}
        self._reasoning_results: list[SearchResult] = []

    @property
    def response_id(self) -> str | None:
        """The response id, once ``response.created`` (or any event with a response) arrived."""
        return self.snapshot.id if self.snapshot is not None and self.snapshot.id else None

    def feed(self, event: StreamEvent) -> None:
        """Apply one event."""
        if event.sequence_number is not None:
            self.last_sequence_number = event.sequence_number
        response = getattr(event, "response", None)
        if isinstance(response, Response):
            self.snapshot = response if self.snapshot is None else _merge(self.snapshot, response)
        if isinstance(event, OutputItemAddedEvent | OutputItemDoneEvent) and event.item is not None:
            self._items[event.output_index] = event.item.model_copy(deep=True)
            if isinstance(event, OutputItemDoneEvent):
                self._drop_text(event.output_index)
        elif isinstance(event, OutputTextDeltaEvent):
            key = (event.output_index, event.content_index)
            text = self._text.pop(key, "")
            text += event.delta  # in place: ``text`` is the only reference
            self._text[key] = text
        elif isinstance(event, OutputTextDoneEvent):
            self._text[(event.output_index, event.content_index)] = event.text
        elif isinstance(event, ReasoningEvent) and event.type == "response.reasoning.search_results":
            self._reasoning_results.extend(event.search_results)
        if event.type in TERMINAL_EVENTS:
            self.terminal = event
            final = getattr(event, "response", None)
            if isinstance(final, Response) and final.output:
                # The terminal response is authoritative (:meth:`response` no longer reads the parts
                # rebuilt from item and text events): release them, not to hold the answer twice.
                self._items.clear()
                self._text.clear()
                self._reasoning_results.clear()

    def texts(self) -> list[str]:
        """The texts gathered from delta events so far (the very objects: no copies)."""
        return list(self._text.values())

    def _drop_text(self, output_index: int) -> None:
        item = self._items.get(output_index)
        if isinstance(item, MessageItem) and item.content:
            for key in [k for k in self._text if k[0] == output_index]:
                del self._text[key]

    def assembled_output(self) -> list[OutputItem]:
        """The output rebuilt from item and text events, in ``output_index`` order."""
        items = dict(self._items)
        for (index, part), text in self._text.items():
            item = items.get(index)
            if not isinstance(item, MessageItem):
                item = items[index] = MessageItem(status="in_progress")
            while len(item.content) <= part:
                item.content.append(OutputText())
            target = item.content[part]
            if isinstance(target, OutputText):
                target.text = text
        output = [items[i] for i in sorted(items)]
        if self._reasoning_results and not any(isinstance(i, SearchResultsItem) for i in output):
            output.insert(0, SearchResultsItem(results=list(self._reasoning_results)))
        return output

    def response(self) -> Response:
        """The final response (or the best view so far, when the stream has not ended)."""
        final = getattr(self.terminal, "response", None)
        base = self.snapshot if self.snapshot is not None else Response()
        if isinstance(final, Response):
            base = _merge(base, final)
        if not (isinstance(final, Response) and final.output):
            base = base.model_copy(update={"output": self.assembled_output()})
        if isinstance(self.terminal, ResponseFailedEvent):
            update: dict[str, Any] = {}
            if base.status in (None, "in_progress", "queued", "completed"):
                update["status"] = "failed"
            if base.error is None and self.terminal.error is not None:
                update["error"] = self.terminal.error
            if update:
                base = base.model_copy(update=update)
        elif isinstance(self.terminal, ResponseIncompleteEvent) and base.status != "incomplete":
            base = base.model_copy(update={"status": "incomplete"})
        elif isinstance(self.terminal, ResponseCancelledEvent) and base.status != "cancelled":
            base = base.model_copy(update={"status": "cancelled"})
        elif isinstance(self.terminal, ResponseCompletedEvent) and base.status not in TERMINAL_STATUSES:
            base = base.model_copy(update={"status": "completed"})
        return base


def _merge(old: Response, new: Response) -> Response:
    """``new`` over ``old``: fields ``new`` leaves unset or empty keep ``old``'s value."""
    update = {
        name: getattr(new, name) for name in new.model_fields_set if getattr(new, name) not in (None, [], "")
    }
    if new.model_extra:
        update.update(new.model_extra)
    return old.model_copy(update=update)
