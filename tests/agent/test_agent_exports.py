"""perplexed.agent exports what docs/agent-api.md (the README's Agent API section) documents, nothing else."""

from __future__ import annotations

import re
import types
from pathlib import Path

import perplexed
import perplexed.agent as agent
import pytest

DOC = (Path(__file__).resolve().parents[2] / "docs" / "agent-api.md").read_text()
SECTION = re.search(r"<!-- section:agent -->(.*?)<!-- /section:agent -->", DOC, re.S).group(1)  # type: ignore[union-attr]
DOCUMENTED = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", SECTION))

INTERNALS = [
    "backoff_delay",
    "retry_delay",
    "should_retry",
    "parse_retry_after",
    "error_from_response",
    "raise_for_status",
    "default_timeout",
    "build_request",
    "SSEDecoder",
    "ServerSentEvent",
    "StreamAssembler",
    "parse_event",
    "parse_output_item",
    "CreateParams",
    "RequestParams",
    "PRESET_TIMEOUTS",
    "DEFAULT_BASE_URL",
    "to_mdy",
]


def test_every_export_is_documented() -> None:
    assert sorted(set(agent.__all__) - DOCUMENTED) == []


def test_the_public_names_are_exactly_all() -> None:
    public = {
        n for n, v in vars(agent).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public == set(agent.__all__)


def test_internals_are_not_exported_but_stay_importable_privately() -> None:
    for name in INTERNALS:
        assert not hasattr(agent, name), name
    from perplexed.agent._outcome import (  # private: checks internals stay importable but unexported
        error_from_response,
        raise_for_status,
    )
    from perplexed.agent._policy import (  # private: checks internals stay importable but unexported
        backoff_delay,
        retry_delay,
        should_retry,
    )
    from perplexed.agent._request import build_request  # private: internals stay importable, unexported
    from perplexed.agent._response import StreamAssembler  # private: internals stay importable, unexported
    from perplexed.agent.sse import SSEDecoder  # private: checks internals stay importable but unexported

    assert all(
        (error_from_response, raise_for_status, backoff_delay, retry_delay, should_retry, build_request)
    )
    assert StreamAssembler and SSEDecoder


def test_errors_are_the_ones_of_perplexed() -> None:
    for name in agent.__all__:
        if name.endswith("Error"):
            if name in perplexed.__all__:
                assert getattr(perplexed, name) is getattr(agent, name), name
            else:  # moved out of the top level (issue 41): the old name still works, and warns
                with pytest.deprecated_call(match=f"perplexed.agent.{name}"):
                    assert getattr(perplexed, name) is getattr(agent, name), name
            assert getattr(agent, name).__module__ == "perplexed._errors", name


def test_every_agent_exception_class_lives_in_errors() -> None:
    import importlib
    import inspect
    import pkgutil

    for info in pkgutil.iter_modules(agent.__path__):
        module = importlib.import_module(f"perplexed.agent.{info.name}")  # private: walks every agent submodule for exception classes
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__.startswith("perplexed"):
                assert obj.__module__ == "perplexed._errors", f"{info.name}.{name} is defined in {obj.__module__}"
