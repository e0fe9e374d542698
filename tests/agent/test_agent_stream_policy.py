"""The stream engine's one decision, "the stream dropped: resume, poll, or raise?", as a table."""

from __future__ import annotations

import pytest
from perplexed.agent._stream import (  # private: the stream drop policy is a pure state table
    Decision,
    Step,
    after_drop,
)

BASE = {
    "background": True,
    "response_id": "resp_1",
    "cursor": 7,
    "failures": 0,
    "max_resumes": 5,
    "remaining": 60.0,
    "cursor_rejected": False,
    "jitter": 0.0,
}

CASES = [
    # (changes to BASE, expected decision)
    ({}, Decision(Step.RESUME, 0.0)),  # progress was made: reconnect at once
    ({"failures": 1}, Decision(Step.RESUME, 0.5)),  # no progress: back off
    ({"failures": 2}, Decision(Step.RESUME, 1.0)),
    ({"failures": 3, "jitter": 1.0}, Decision(Step.RESUME, 1.5)),
    ({"failures": 5}, Decision(Step.RESUME, 8.0)),  # capped backoff, still within max_resumes
    ({"failures": 6}, Decision(Step.POLL, why="reconnections exhausted")),
    ({"max_resumes": 0, "failures": 1}, Decision(Step.POLL, why="reconnections exhausted")),
    ({"cursor_rejected": True}, Decision(Step.POLL, why="cursor rejected")),
    ({"cursor_rejected": True, "failures": 99}, Decision(Step.POLL, why="cursor rejected")),
    ({"background": False}, Decision(Step.RAISE, why="foreground")),
    ({"background": False, "cursor_rejected": True}, Decision(Step.RAISE, why="foreground")),
    ({"response_id": None}, Decision(Step.RAISE, why="nothing to resume from")),
    ({"cursor": None}, Decision(Step.RAISE, why="nothing to resume from")),
    ({"failures": 1, "remaining": 0.4}, Decision(Step.OVERDUE, 0.5)),  # the backoff does not fit
    ({"failures": 1, "remaining": 0.5}, Decision(Step.OVERDUE, 0.5)),
    ({"failures": 1, "remaining": 0.51}, Decision(Step.RESUME, 0.5)),
    ({"remaining": 0.0}, Decision(Step.OVERDUE, 0.0)),  # deadline already reached
    ({"failures": 6, "remaining": 0.0}, Decision(Step.POLL, why="reconnections exhausted")),
]


@pytest.mark.parametrize(("changes", "expected"), CASES)
def test_after_drop(changes: dict[str, object], expected: Decision) -> None:
    assert after_drop(**{**BASE, **changes}) == expected  # type: ignore[arg-type]


def test_jitter_shortens_the_backoff_by_at_most_a_quarter() -> None:
    delays = {after_drop(**{**BASE, "failures": 2, "jitter": None}).delay for _ in range(200)}  # type: ignore[arg-type]
    assert all(0.75 <= d <= 1.0 for d in delays) and len(delays) > 1
