"""A loopback stand-in for the Perplexity Agent API, serving the synthesized cassettes' bodies.

``agent_stand_in_url`` (session fixture): the base URL to put in ``PERPLEXITY_BASE_URL``; a request asking for a
stream gets the streamed cassette's SSE body, any other the completed response's JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.loopback import Raw, serve

AGENT_CASSETTES = Path(__file__).resolve().parents[2] / "cassettes" / "synthesized" / "agent"


def cassette_body(name: str) -> tuple[str, str]:
    """The first response body of a synthesized Agent API cassette, and its content type."""
    data: dict[str, Any] = yaml.safe_load((AGENT_CASSETTES / name).read_text())
    response = data["interactions"][0]["response"]
    return response["body"]["string"], response["headers"]["Content-Type"][0]


@pytest.fixture(scope="session")
def agent_stand_in_url() -> Iterator[str]:
    completed, completed_type = cassette_body("create_completed.yaml")
    streamed, streamed_type = cassette_body("stream_normal.yaml")

    def handle(request: Any) -> Raw:
        if b'"stream":true' in request.body.replace(b" ", b""):
            return Raw(streamed.encode(), content_type=streamed_type)
        return Raw(completed.encode(), content_type=completed_type)

    with serve() as server:
        server.route("/v1/agent", handle)
        server.route("/v1/responses", handle)
        yield server.url
