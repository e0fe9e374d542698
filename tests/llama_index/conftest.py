"""Fixtures for the LlamaIndex adapter tests: instrumentation recorders and fake chain members."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from llama_agent import agent_api  # noqa: F401  (the loopback Agent API fixture, used by name)
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler


class Recorder(BaseEventHandler):
    """Records every LlamaIndex instrumentation event it is given (from any thread)."""

    events: list[BaseEvent] = []

    @classmethod
    def class_name(cls) -> str:
        return "Recorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        with _LOCK:
            self.events.append(event)

    def of(self, cls: type) -> list[Any]:
        """The recorded events of class ``cls``, in order."""
        with _LOCK:
            return [e for e in self.events if isinstance(e, cls)]


_LOCK = threading.Lock()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """An event handler on LlamaIndex's root dispatcher, removed after the test."""
    handler = Recorder(events=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        yield handler
    finally:
        root.event_handlers = [h for h in root.event_handlers if h is not handler]


@pytest.fixture
def spans() -> Iterator[SimpleSpanHandler]:
    """A span handler on LlamaIndex's root dispatcher, removed after the test."""
    handler = SimpleSpanHandler()
    root = get_dispatcher()
    root.add_span_handler(handler)
    try:
        yield handler
    finally:
        root.span_handlers = [h for h in root.span_handlers if h is not handler]

