"""Write the synthesized Agent API cassettes of the grounded-answer tests (run from the repository root).

    .venv/bin/python cassettes/synthesized/answer/synthesize.py

Nothing here talks to the network. Response shapes follow the project's Agent API reference
(``../shared/reference/agent-api.md``, beside the repository: §3.4 response, §4.2/§4.3 stream events, §8.1 error envelope);
values are illustrative. Request bodies are what perplexed sends for the fixed query and hits below (built
with ``perplexed._grounding``), so a cassette played with body matching also checks the request.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "core"))

from perplexed import Hit  # noqa: E402
from perplexed._grounding import (  # noqa: E402
    AGENT_CITATION_INSTRUCTION,
    CITATION_INSTRUCTION,
    build_input,
    pack_sources,
)

URL = "https://api.perplexity.ai/v1/agent"
QUERY = "What are typical zoning setbacks?"
HITS = [
    Hit(
        title="Zoning setbacks explained",
        url="https://docs.example.org/zoning-setbacks",
        snippet="A setback is the minimum distance between a building and the property line.",
    ),
    Hit(
        title="Residential zoning setback requirements",
        url="https://docs.example.org/residential-setbacks",
        snippet="Front setbacks of 20 to 25 feet and side setbacks of 5 to 10 feet are typical.",
    ),
]
MODEL = "xai/grok-4-1-fast-non-reasoning"
TEXT = (
    "A setback is the minimum distance between a building and the property line [1]. "
    "Residential front setbacks are typically 20 to 25 feet and side setbacks 5 to 10 feet [2]."
)
AGENT_TEXT = "Front setbacks of 20 to 25 feet are common [1][2], though cities differ [3]."
AGENT_RESULTS = [
    {
        "id": 1,
        "url": "https://planning.example.gov/setbacks",
        "title": "Setback standards",
        "snippet": "Minimum front setback: 20 feet.",
        "date": "2026-02-11",
        "last_updated": "2026-02-12",
        "source": "web",
    },
    {
        "id": 2,
        "url": "https://zoning.example.com/residential",
        "title": "Residential zoning guide",
        "snippet": "Front yards of 20-25 ft.",
        "date": None,
        "last_updated": None,
        "source": "web",
    },
]


def grounded_body(*, stream: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "input": build_input(QUERY, pack_sources(HITS)),
        "preset": "fast",
        "instructions": CITATION_INSTRUCTION,
        "max_tool_calls": 0,
    }
    if stream:
        body["stream"] = True
    return body


def agent_body() -> dict[str, Any]:
    return {
        "input": QUERY,
        "preset": "fast",
        "instructions": AGENT_CITATION_INSTRUCTION,
        "tools": [{"type": "web_search", "filters": {"search_recency_filter": "year"}, "max_results": 5}],
    }


def response(text: str, *, rid: str, cost: dict[str, Any], status: str = "completed", results: list[Any] | None = None,
             error: dict[str, Any] | None = None, tool_calls: int = 0) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if results is not None:
        output.append({"type": "search_results", "queries": ["typical zoning setbacks"], "results": []})
        output.append({"type": "search_results", "queries": ["residential setback feet"], "results": results})
    if text:
        output.append({
            "type": "message",
            "id": "msg_" + rid[5:],
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        })
    usage: dict[str, Any] = {
        "input_tokens": 412,
        "output_tokens": 58,
        "total_tokens": 470,
        "input_tokens_details": {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
        "cost": {"currency": "USD", **cost},
    }
    if tool_calls:
        usage["tool_calls_details"] = {"search_web": {"invocation": tool_calls, "cost_usd": cost.get("tool_calls_cost", 0)}}
    return {
        "id": rid,
        "object": "response",
        "created_at": 1767225600,
        "completed_at": 1767225603,
        "model": MODEL,
        "status": status,
        "background": False,
        "store": True,
        "preset": "fast",
        "output": output,
        "usage": usage,
        "error": error,
    }


def sse(resp: dict[str, Any], deltas: list[str]) -> str:
    snapshot = {**resp, "status": "in_progress", "output": [], "usage": None, "completed_at": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": snapshot},
        {"type": "response.in_progress", "response": snapshot},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}},
    ]
    events += [
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": d}
        for d in deltas
    ]
    events += [
        {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0,
         "text": "".join(deltas)},
        {"type": "response.output_item.done", "output_index": 0, "item": resp["output"][-1]},
        {"type": "response.completed", "response": resp},
    ]
    return "".join(f"data: {json.dumps({**e, 'sequence_number': n})}\n\n" for n, e in enumerate(events))


def interaction(body: dict[str, Any], code: int, message: str, payload: str, content_type: str,
                headers: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {
        "request": {
            "body": json.dumps(body),
            "headers": {"content-type": ["application/json"]},
            "method": "POST",
            "uri": URL,
        },
        "response": {
            "body": {"string": payload},
            "headers": {"content-type": [content_type], **(headers or {})},
            "status": {"code": code, "message": message},
        },
    }


def write(name: str, *interactions: dict[str, Any]) -> None:
    path = HERE / name
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}, sort_keys=False, width=110))
    print("wrote", path.relative_to(ROOT))


def main() -> None:
    cost = {"input_cost": 0.00008, "output_cost": 0.00003, "total_cost": 0.00011}
    ok = response(TEXT, rid="resp_ans_ok", cost=cost)
    write("grounded_ok.yaml", interaction(grounded_body(), 200, "OK", json.dumps(ok), "application/json"))

    streamed = response(TEXT, rid="resp_ans_stream", cost=cost)
    deltas = [TEXT[i : i + 11] for i in range(0, len(TEXT), 11)]
    write("grounded_stream.yaml", interaction(grounded_body(stream=True), 200, "OK", sse(streamed, deltas), "text/event-stream"))

    envelope = {"error": {"message": "Rate limit exceeded", "type": "request_rate_limit_exceeded", "code": 429}}
    write(
        "grounded_429.yaml",
        interaction(grounded_body(), 429, "Too Many Requests", json.dumps(envelope), "application/json",
                    {"retry-after": ["2"]}),
    )

    failed = response("", rid="resp_ans_failed", status="failed",
                      cost={"input_cost": 0.00008, "output_cost": 0.0, "total_cost": 0.00008},
                      error={"message": "The model failed to produce a response", "code": "internal_error",
                             "type": "internal_error"})
    write("grounded_failed.yaml", interaction(grounded_body(), 200, "OK", json.dumps(failed), "application/json"))

    agent_cost = {"input_cost": 0.0002, "output_cost": 0.0001, "tool_calls_cost": 0.005, "total_cost": 0.0053}
    searched = response(AGENT_TEXT, rid="resp_ans_agent", cost=agent_cost, results=AGENT_RESULTS, tool_calls=1)
    write("agent_search.yaml", interaction(agent_body(), 200, "OK", json.dumps(searched), "application/json"))


if __name__ == "__main__":
    main()
