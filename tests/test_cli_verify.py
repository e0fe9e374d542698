"""``perplexed answer --verify``: the sentences that are not supported, marked, then citation recall and precision;
``--json`` carries the verification; the exit code does not depend on the labels."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import perplexed
import pytest
from perplexed import Hit
from test_answer_fakes import response_json, sse_bytes, sse_events
from test_cli_answer import Run, agent_env, cli  # noqa: F401  (the cli fixture)
from testkit.loopback import Json, LoopbackServer, Raw, Request, serve

BAD_TEXT = (
    "A setback is the minimum distance between a building and a property line [1]. "
    "Front setbacks of 95 feet are required everywhere [1]. "
    "Every city bans fences taller than two metres [9]."
)


@pytest.fixture
def bad_agent() -> Iterator[LoopbackServer]:
    resp = response_json(BAD_TEXT, cost=0.0042)

    def reply(request: Request) -> Json | Raw:
        if request.json().get("stream"):
            return Raw(sse_bytes(sse_events(resp)), content_type="text/event-stream")
        return Json(resp)

    with serve({"/v1/agent": reply}) as server:
        yield server


@pytest.mark.parametrize("stream", [False, True])
def test_verify_prints_the_unsupported_sentences_then_recall_and_precision(
    cli: Callable[..., Run],  # noqa: F811
    bad_agent: LoopbackServer,
    stream: bool,
) -> None:
    args = ["answer", "zoning setbacks", "-p", "local", "--verify"] + (["--stream"] if stream else [])
    run = cli(*args, extra_env=agent_env(bad_agent))
    assert run.code == 0, run.err  # labels never change the exit code
    doc = cli(
        "answer", "zoning setbacks", "-p", "local", "--verify", "--json", extra_env=agent_env(bad_agent)
    ).json()
    expected = perplexed.verify(doc["text"], [Hit.model_validate(s) for s in doc["sources"]])
    assert doc["verification"] == expected.model_dump(mode="json")
    marked = [line for line in run.out.splitlines() if line.startswith("✗ [")]
    assert len(marked) == len(expected.unsupported) >= 2
    for line, check in zip(marked, expected.unsupported, strict=True):
        assert line.startswith(f"✗ [{check.label}] {check.text[:30]}")
    assert any("95 feet" in line for line in marked) and any("[9]" in line for line in marked)
    tail = [line for line in run.out.splitlines() if line.startswith("citation recall")]
    assert len(tail) == 1 and f"{expected.citation_recall:.2f}" in tail[0]
    assert run.out.index("Cost:") < run.out.index(marked[0])


def test_without_verify_nothing_is_checked(cli: Callable[..., Run], bad_agent: LoopbackServer) -> None:  # noqa: F811
    run = cli("answer", "zoning setbacks", "-p", "local", extra_env=agent_env(bad_agent))
    assert run.code == 0 and "citation recall" not in run.out and "✗" not in run.out
    doc = cli("answer", "zoning setbacks", "-p", "local", "--json", extra_env=agent_env(bad_agent)).json()
    assert "verification" not in doc
