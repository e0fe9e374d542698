"""Fake chain members for the LlamaIndex adapter tests (plain functions: perplexed wraps them)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from perplexed import Hit, ProviderError, SearchOptions

WEB_HITS = [
    {"url": "https://web.example/a", "title": "Web A", "snippet": "alpha snippet", "content": "alpha full text"},
    {"url": "https://web.example/b", "title": "Web B", "snippet": "beta snippet"},
    {"url": "https://web.example/c", "title": "Web C", "snippet": "gamma snippet", "published": "2024-05-01"},
]


def web(query: str, options: SearchOptions) -> list[dict[str, Any]]:
    """A fake web provider (a plain function: perplexed wraps it as a FunctionProvider)."""
    return [dict(h) for h in WEB_HITS]


async def aweb(query: str, options: SearchOptions) -> list[Hit]:
    """The same fake web provider, async."""
    return [Hit(**h) for h in WEB_HITS]


def broken(query: str, options: SearchOptions) -> list[Hit]:
    """A provider that always fails with a classified error."""
    raise ProviderError("upstream", "HTTP 503 service unavailable", provider="broken", status=503)


def nothing(query: str, options: SearchOptions) -> list[Hit]:
    """A provider that always answers empty."""
    return []


async def slow_web(query: str, options: SearchOptions) -> list[Hit]:
    """The fake web provider, answering after 0.3 s of (non-blocking) waiting."""
    await asyncio.sleep(0.3)
    return [Hit(**h) for h in WEB_HITS]


class LoopbackSearch:
    """A stdlib HTTP server on 127.0.0.1 speaking SearXNG's JSON API, answering after ``delay`` seconds."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                outer.requests += 1
                query = parse_qs(urlparse(self.path).query).get("q", [""])[0]
                time.sleep(outer.delay)
                body = json.dumps(
                    {
                        "query": query,
                        "results": [
                            {"url": f"https://loop.example/{i}", "title": f"Loop {i} {query}",
                             "content": f"loopback result {i}", "score": float(4 - i)}
                            for i in (1, 2, 3)
                        ],
                        "unresponsive_engines": [],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def provider(self) -> dict[str, Any]:
        """A perplexed provider spec pointing the SearXNG provider at this server."""
        return {"name": "searxng", "base_url": self.base_url}

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
