"""Recording the live exchanges: :class:`Recorder` (a transport that keeps each request and its response) and
the redacted vcrpy cassettes written from them (:func:`cassette_dict`, :func:`write_cassette`, and
:func:`record_exchanges` for ``perplexed doctor --live --record DIR``), in the format of ``cassettes/``.

Credential headers and cookies are dropped, and every known secret and key-shaped string is replaced in URLs,
bodies and headers."""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from perplexed._errors import redact
from perplexed.net._http import read_capped, ssl_context

__all__ = ["Exchange", "Recorder", "cassette_dict", "record_exchanges", "write_cassette"]


@dataclass
class Exchange:
    """One HTTP request and its response, as sent and received (before redaction)."""

    method: str
    url: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int
    reason: str
    response_headers: list[tuple[str, str]]
    response_body: bytes


class Recorder(httpx.AsyncBaseTransport):
    """Wraps a transport: reads each response whole (capped) and keeps the exchange."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None, max_body_bytes: int) -> None:
        self.owned = inner is None  # close only a transport made here, never a caller's
        self.inner = inner or httpx.AsyncHTTPTransport(verify=ssl_context())
        self.max_body_bytes = max_body_bytes
        self.exchanges: list[Exchange] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        response = await self.inner.handle_async_request(request)
        wrapped = httpx.Response(response.status_code, headers=response.headers, stream=response.stream)
        try:
            content = await read_capped(wrapped, self.max_body_bytes)
        finally:
            await wrapped.aclose()
        headers = [
            (k, v) for k, v in wrapped.headers.multi_items() if k.lower() not in ("content-encoding", "content-length")
        ]
        self.exchanges.append(
            Exchange(
                request.method,
                str(request.url),
                list(request.headers.multi_items()),
                body,
                wrapped.status_code,
                wrapped.reason_phrase,
                headers,
                content,
            )
        )
        return httpx.Response(
            wrapped.status_code, headers=headers, content=content, request=request, extensions=response.extensions
        )

    @property
    def last(self) -> Exchange | None:
        """The last exchange (the one a row is judged by), None when nothing was sent."""
        return self.exchanges[-1] if self.exchanges else None

    async def aclose(self) -> None:
        if self.owned:
            await self.inner.aclose()


#: request headers that carry credentials: never written
SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "x-subscription-token", "proxy-authorization", "cookie", "api-key"}
)
#: response headers never written (session cookies)
DROPPED_RESPONSE_HEADERS = frozenset({"set-cookie"})


def _headers(items: Iterable[tuple[str, str]], dropped: frozenset[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in items:
        name = key.lower()
        if name in dropped:
            continue
        out.setdefault(name, []).append(redact(value))
    return out


def cassette_dict(exchanges: Sequence[Exchange]) -> dict[str, Any]:
    """A vcrpy cassette (version 1, as under ``cassettes/``) of ``exchanges``, redacted: credential headers
    and cookies dropped, every known secret and key-shaped string replaced in URLs, bodies and headers."""
    interactions = []
    for ex in exchanges:
        interactions.append(
            {
                "request": {
                    "body": redact(ex.request_body.decode("utf-8", "replace")) if ex.request_body else "",
                    "headers": _headers(ex.request_headers, SECRET_HEADERS),
                    "method": ex.method,
                    "uri": redact(ex.url),
                },
                "response": {
                    "body": {"string": redact(ex.response_body.decode("utf-8", "replace"))},
                    "headers": _headers(ex.response_headers, DROPPED_RESPONSE_HEADERS),
                    "status": {"code": ex.status, "message": ex.reason},
                },
            }
        )
    return {"interactions": interactions, "version": 1}


def write_cassette(path: str | os.PathLike[str], exchanges: Sequence[Exchange]) -> Path:
    """Write ``exchanges`` as a redacted cassette at ``path`` (YAML with PyYAML installed, else JSON, which
    YAML readers such as vcrpy's accept too)."""
    doc = cassette_dict(exchanges)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:
        text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    else:
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    target.write_text(text, encoding="utf-8")
    return target


_RECORDED_MARK = "perplexed doctor --live --record"
_RECORDED_README = """# Recorded {name} cassettes

**Recorded** from the live API by `perplexed doctor --live --record` on {when} (host {host}).
Redacted before writing: credential headers ({headers}) and cookies are dropped, and every key perplexed
knows of or that looks like a key is replaced by `[REDACTED]` in URLs, bodies and headers. Replay them with
vcrpy (`record_mode="none"`), like the synthesized cassettes they can replace.

| cassette | HTTP |
|---|---|
{rows}
"""


def record_exchanges(folder: Path, name: str, exchanges: Sequence[Exchange], *, agent: bool) -> Path:
    """Write ``exchanges`` as ``folder/name/<ok|create_completed|HTTP status>.yaml`` and (re)write the folder's
    README listing its cassettes, unless that README was written by someone else."""
    status = exchanges[-1].status
    ok_name = "create_completed" if agent else "ok"
    stem = ok_name if 200 <= status < 300 else str(status)
    path = write_cassette(folder / name / f"{stem}.yaml", exchanges)
    rows = sorted(
        f"| `{p.name}` | {_cassette_status(p)} |" for p in path.parent.glob("*.yaml")
    )
    host = httpx.URL(exchanges[-1].url).host
    readme = path.parent / "README.md"
    if readme.exists() and _RECORDED_MARK not in readme.read_text(encoding="utf-8"):
        return path  # a README written by someone else (e.g. cassettes/recorded/searxng/): leave it alone
    readme.write_text(
        _RECORDED_README.format(
            name=name,
            when=datetime.now(UTC).strftime("%Y-%m-%d"),
            host=host,
            headers=", ".join(f"`{h}`" for h in sorted(SECRET_HEADERS)),
            rows="\n".join(rows),
        ),
        encoding="utf-8",
    )
    return path


def _cassette_status(path: Path) -> str:
    match = re.search(r"code:\s*(\d{3})|\"code\":\s*(\d{3})", path.read_text(encoding="utf-8"))
    return next((g for g in match.groups() if g), "?") if match else "?"
