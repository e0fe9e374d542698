"""Write the synthesized Agent API cassettes of this folder (vcrpy YAML).

These cassettes were NOT recorded: every request and response here is built from the shapes documented in
the Agent API reference (docs.perplexity.ai, the official SDK's models, Perplexity's migration notes), as
summarised in shared/reference/agent-api.md. Values are illustrative. Re-run to regenerate:

    .venv/bin/python cassettes/synthesized/agent/build_cassettes.py

No credentials: requests carry no Authorization header (tests use the fake key "pplx-test-not-a-real-key"
and filter the header anyway).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
BASE = "https://api.perplexity.ai/v1/agent"
JSON_HEADERS = {"Content-Type": ["application/json"]}
SSE_HEADERS = {"Content-Type": ["text/event-stream; charset=utf-8"], "Cache-Control": ["no-cache"]}


def _req(method: str, uri: str, body: Any = None) -> dict[str, Any]:
    return {
        "method": method,
        "uri": uri,
        "body": None if body is None else json.dumps(body, separators=(",", ":")),
        "headers": {"Content-Type": ["application/json"]} if body is not None else {},
    }


def _resp(
    status: int, body: Any, headers: dict[str, list[str]] | None = None, message: str = "OK"
) -> dict[str, Any]:
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
    return {
        "status": {"code": status, "message": message},
        "headers": headers or JSON_HEADERS,
        "body": {"string": text},
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (SSE transcripts) as literal blocks, so the cassettes read like the wire."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def write(name: str, interactions: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    data = {"interactions": [{"request": q, "response": r} for q, r in interactions], "version": 1}
    (HERE / f"{name}.yaml").write_text(
        yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=4096)
    )


def sse(events: list[dict[str, Any]], *, event_lines: bool = False, extras: bool = False) -> str:
    """An SSE body: one ``data:`` frame per event (optionally with ``event:`` lines, comments, keep-alives)."""
    out: list[str] = []
    if extras:
        out.append(": stream opened\n\n")
    for i, event in enumerate(events):
        frame = ""
        if event_lines:
            frame += f"event: {event['type']}\n"
        frame += "data: " + json.dumps(event, separators=(",", ":")) + "\n\n"
        out.append(frame)
        if extras and i % 3 == 1:
            out.append(": keep-alive\n\n\n")
    return "".join(out)


# --- shared shapes -----------------------------------------------------------------------------------

SEARCH_RESULTS = [
    {
        "id": 1,
        "url": "https://digital-strategy.ec.europa.eu/en/policies/regulatory-framework-ai",
        "title": "AI Act | Shaping Europe's digital future",
        "snippet": "The AI Act is the first-ever legal framework on AI...",
        "date": "2026-02-10",
        "last_updated": "2026-03-01",
        "source": "web",
    },
    {
        "id": 2,
        "url": "https://artificialintelligenceact.eu/implementation-timeline/",
        "title": "Implementation Timeline | EU Artificial Intelligence Act",
        "snippet": "General-purpose AI obligations apply from 2 August 2025...",
        "date": "2026-01-20",
        "last_updated": None,
        "source": "web",
    },
    {
        "id": 3,
        "url": "https://www.europarl.europa.eu/topics/en/article/20230601STO93804/eu-ai-act",
        "title": "EU AI Act: first regulation on artificial intelligence",
        "snippet": "Parliament's priority is to make sure that AI systems used in the EU are safe...",
        "date": None,
        "last_updated": None,
        "source": "web",
    },
]
ANSWER = (
    "The EU AI Act's obligations for general-purpose AI models now apply [1][2]. "
    "The Commission also published guidance on prohibited practices [1, 3], "
    "and a digital omnibus proposes delays to high-risk rules [4]."
)
USAGE = {
    "input_tokens": 1234,
    "output_tokens": 456,
    "total_tokens": 1690,
    "input_tokens_details": {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
    "cost": {
        "currency": "USD",
        "input_cost": 0.0015,
        "output_cost": 0.0046,
        "tool_calls_cost": 0.005,
        "total_cost": 0.0111,
    },
    "tool_calls_details": {"search_web": {"invocation": 1, "cost_usd": 0.005}},
}


def response(rid: str, status: str, *, output: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": rid,
        "object": "response",
        "created_at": 1767225600,
        "model": "openai/gpt-5.1",
        "status": status,
        "background": False,
        "store": True,
        "preset": "fast",
        "output": output if output is not None else [],
        "error": None,
    }
    body.update(extra)
    return body


def full_output() -> list[dict[str, Any]]:
    return [
        {"type": "search_results", "queries": ["EU AI Act changes"], "results": []},
        {"type": "search_results", "queries": ["EU AI Act 2026"], "results": SEARCH_RESULTS[:2]},
        {"type": "search_results", "queries": ["AI Act prohibited practices"], "results": SEARCH_RESULTS[2:]},
        {
            "type": "sandbox_results",
            "call_id": "call_9",
            "code": "print(1)",
            "language": "python",
            "status": "completed",
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
        },
    ]


def stream_events(rid: str, *, reasoning: bool = False, terminal: str = "completed") -> list[dict[str, Any]]:
    seq = 0

    def ev(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal seq
        out = {"type": kind, "sequence_number": seq, **fields}
        seq += 1
        return out

    events = [
        ev("response.created", response=response(rid, "in_progress")),
        ev("response.in_progress", response=response(rid, "in_progress")),
    ]
    if reasoning:
        events += [
            ev("response.reasoning.started", thought="Looking for recent changes."),
            ev("response.reasoning.search_queries", queries=["EU AI Act 2026"], thought="Searching."),
            ev("response.reasoning.search_results", results=SEARCH_RESULTS, thought="Found sources."),
            ev("response.reasoning.fetch_url_queries", urls=[SEARCH_RESULTS[0]["url"]]),
            ev(
                "response.reasoning.fetch_url_results",
                contents=[{"url": SEARCH_RESULTS[0]["url"], "title": "AI Act", "snippet": "..."}],
            ),
            ev("response.reasoning.stopped", thought="Writing the answer."),
        ]
    events.append(
        ev(
            "response.output_item.added",
            output_index=0,
            item={"type": "search_results", "queries": ["EU AI Act 2026"], "results": SEARCH_RESULTS},
        )
    )
    events.append(
        ev(
            "response.output_item.done",
            output_index=0,
            item={"type": "search_results", "queries": ["EU AI Act 2026"], "results": SEARCH_RESULTS},
        )
    )
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
    events.append(ev("response.output_item.added", output_index=1, item=message))
    pieces = [
        "The EU AI Act's ",
        "obligations for general-purpose AI ",
        "models now apply [1][2]. ",
        "Ünïcödé ✓",
    ]
    text = "".join(pieces)
    for piece in pieces:
        events.append(
            ev("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0, delta=piece)
        )
    if terminal == "failed":
        events.append(
            ev(
                "response.failed",
                error={"message": "upstream model error", "code": "internal_error", "type": "server_error"},
                response=response(
                    rid, "failed", error={"message": "upstream model error", "code": "internal_error"}
                ),
            )
        )
        return events
    if terminal == "incomplete":
        partial = {**message, "status": "incomplete", "content": [{"type": "output_text", "text": text}]}
        events.append(
            ev(
                "response.incomplete",
                response=response(
                    rid,
                    "incomplete",
                    output=[partial],
                    incomplete_details={"reason": "max_output_tokens"},
                    usage=USAGE,
                ),
            )
        )
        return events
    if terminal == "error":
        events.append(
            ev(
                "error",
                error={
                    "message": "stream interrupted upstream",
                    "code": "stream_error",
                    "type": "server_error",
                },
            )
        )
        return events
    events.append(
        ev("response.output_text.done", item_id="msg_1", output_index=1, content_index=0, text=text)
    )
    done = {
        **message,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    events.append(ev("response.output_item.done", output_index=1, item=done))
    final_output = [
        {"type": "search_results", "queries": ["EU AI Act 2026"], "results": SEARCH_RESULTS},
        done,
    ]
    events.append(
        ev("response.completed", response=response(rid, "completed", output=final_output, usage=USAGE))
    )
    return events


def main() -> None:
    create_body = {
        "input": "What changed in the EU AI Act?",
        "preset": "fast",
        "instructions": "Cite sources.",
        "tools": [
            {
                "type": "web_search",
                "filters": {"search_domain_filter": ["europa.eu"], "search_recency_filter": "month"},
            }
        ],
    }
    write(
        "create_completed",
        [
            (
                _req("POST", BASE, create_body),
                _resp(200, response("resp_abc", "completed", output=full_output(), usage=USAGE)),
            )
        ],
    )
    write(
        "create_incomplete",
        [
            (
                _req(
                    "POST", BASE, {"input": "Write a long essay", "preset": "fast", "max_output_tokens": 16}
                ),
                _resp(
                    200,
                    response(
                        "resp_inc",
                        "incomplete",
                        output=[
                            {
                                "type": "message",
                                "id": "msg_1",
                                "role": "assistant",
                                "status": "incomplete",
                                "content": [{"type": "output_text", "text": "The history of"}],
                            }
                        ],
                        incomplete_details={"reason": "max_output_tokens"},
                        usage=USAGE,
                    ),
                ),
            )
        ],
    )
    write(
        "create_failed",
        [
            (
                _req("POST", BASE, {"input": "x", "preset": "fast"}),
                _resp(
                    200,
                    response(
                        "resp_fail",
                        "failed",
                        error={
                            "message": "upstream_structured_output_failed",
                            "code": "upstream_structured_output_failed",
                            "type": "server_error",
                        },
                    ),
                ),
            )
        ],
    )
    stream_body = {"input": "Explain quantum computing", "preset": "fast", "stream": True}
    write(
        "stream_normal",
        [(_req("POST", BASE, stream_body), _resp(200, sse(stream_events("resp_s1")), SSE_HEADERS))],
    )
    write(
        "stream_reasoning",
        [
            (
                _req("POST", BASE, stream_body),
                _resp(200, sse(stream_events("resp_s2", reasoning=True)), SSE_HEADERS),
            )
        ],
    )
    write(
        "stream_failed",
        [
            (
                _req("POST", BASE, stream_body),
                _resp(200, sse(stream_events("resp_s3", terminal="failed")), SSE_HEADERS),
            )
        ],
    )
    write(
        "stream_incomplete",
        [
            (
                _req("POST", BASE, stream_body),
                _resp(200, sse(stream_events("resp_s4", terminal="incomplete")), SSE_HEADERS),
            )
        ],
    )
    write(
        "stream_error_event",
        [
            (
                _req("POST", BASE, stream_body),
                _resp(200, sse(stream_events("resp_s5", terminal="error")), SSE_HEADERS),
            )
        ],
    )
    unknown = stream_events("resp_s6")
    unknown.insert(3, {"type": "response.future_feature", "sequence_number": 2, "payload": {"x": 1}})
    unknown.insert(
        4,
        {
            "type": "response.output_item.added",
            "sequence_number": 2,
            "output_index": 5,
            "item": {"type": "hologram_results", "frames": 3},
        },
    )
    write("stream_unknown_event", [(_req("POST", BASE, stream_body), _resp(200, sse(unknown), SSE_HEADERS))])
    write(
        "stream_event_lines",
        [
            (
                _req("POST", BASE, stream_body),
                _resp(
                    200,
                    sse(stream_events("resp_s7", reasoning=True), event_lines=True, extras=True),
                    SSE_HEADERS,
                ),
            )
        ],
    )
    bg_body = {"input": "Deep dive on solid-state batteries", "preset": "high", "background": True}
    bg_queued = response("resp_bg", "queued", background=True, preset="high")
    bg_running = response("resp_bg", "in_progress", background=True, preset="high")
    bg_done = response(
        "resp_bg", "completed", background=True, preset="high", output=full_output(), usage=USAGE
    )
    write(
        "background_lifecycle",
        [
            (_req("POST", BASE, bg_body), _resp(200, bg_queued)),
            (_req("GET", f"{BASE}/resp_bg"), _resp(200, bg_queued)),
            (_req("GET", f"{BASE}/resp_bg"), _resp(200, bg_running)),
            (_req("GET", f"{BASE}/resp_bg"), _resp(200, bg_done)),
        ],
    )
    bg_cancelled = response(
        "resp_bg2",
        "cancelled",
        background=True,
        preset="high",
        error={"message": "The response was cancelled.", "code": "cancelled"},
    )
    write(
        "background_cancel",
        [
            (_req("POST", BASE, bg_body), _resp(200, {**bg_queued, "id": "resp_bg2"})),
            (
                _req("POST", f"{BASE}/resp_bg2/cancel"),
                _resp(200, {"response_id": "resp_bg2", "status": "cancelling"}),
            ),
            (_req("GET", f"{BASE}/resp_bg2"), _resp(200, {**bg_running, "id": "resp_bg2"})),
            (_req("GET", f"{BASE}/resp_bg2"), _resp(200, bg_cancelled)),
            (
                _req("POST", f"{BASE}/resp_bg2/cancel"),
                _resp(
                    400,
                    {
                        "error": {
                            "message": "response resp_bg2 is already terminal (cancelled)",
                            "type": "invalid_request",
                            "code": 400,
                        }
                    },
                    message="Bad Request",
                ),
            ),
        ],
    )
    limited = {
        "error": {
            "message": "Rate limit exceeded. Please retry after 1 second.",
            "type": "request_rate_limit_exceeded",
            "code": 429,
        }
    }
    write(
        "rate_limited_then_ok",
        [
            (
                _req("POST", BASE, create_body),
                _resp(
                    429,
                    limited,
                    {
                        "Content-Type": ["application/json"],
                        "Retry-After": ["1"],
                        "retry-after-ms": ["20"],
                        "X-RateLimit-Limit-Requests": ["50"],
                        "X-RateLimit-Remaining-Requests": ["0"],
                    },
                    message="Too Many Requests",
                ),
            ),
            (
                _req("POST", BASE, create_body),
                _resp(200, response("resp_after_429", "completed", output=full_output(), usage=USAGE)),
            ),
        ],
    )
    write(
        "bad_request_unknown_field",
        [
            (
                _req("POST", BASE, {"input": "x", "preset": "fast", "foo": 1}),
                _resp(
                    400,
                    {
                        "error": {
                            "message": 'invalid request body: json: unknown field "foo"',
                            "type": "invalid_request",
                            "code": 400,
                            "param": "foo",
                        }
                    },
                    message="Bad Request",
                ),
            )
        ],
    )


if __name__ == "__main__":
    main()
