"""What an Agent API exchange means: HTTP errors and failed runs as typed exceptions, bodies as responses.

Pure functions over status codes, headers, bodies and :class:`Response` objects (no I/O), shared by the
client and the stream engine.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

import httpx
from pydantic import ValidationError

from perplexed._errors import (
    APIError,
    APIStatusError,
    BadRequestError,
    ContentDecodingError,
    MalformedResponseError,
    ResponseBodyError,
    ResponseCancelledError,
    ResponseFailedError,
    ResponseIncompleteError,
)
from perplexed._models import Attempt, Outcome
from perplexed.agent._request import AgentRequest
from perplexed.agent._response import (
    FAILED_STATUSES,
    Response,
    ResponseCancelledEvent,
    ResponseCompletedEvent,
    ResponseFailedEvent,
    ResponseIncompleteEvent,
    StreamEvent,
)
from perplexed.net._http import redirect_origin
from perplexed.policy._failures import status_error
from perplexed.policy._wire import clip, parse_error_envelope, parse_retry_after, scrub

__all__ = [
    "body_error",
    "error_from_response",
    "explain_unknown_field",
    "not_json",
    "parse_json",
    "parse_response",
    "raise_for_status",
    "terminal_event_for",
]

#: how much of a body that is not JSON an error keeps (after redaction)
BODY_EXCERPT = 500


def error_from_response(
    status: int, body: bytes | str | Any, headers: Mapping[str, str] | None = None
) -> APIStatusError:
    """The typed exception for an HTTP error response.

    The body is read by :func:`perplexed.policy._wire.parse_error_envelope` (the ``{"error": {message, type, code,
    param}}`` envelope, FastAPI's ``{"detail": [...]}``, ...); the API's message becomes the exception
    message. Credentials are redacted before anything is cut: a body that is not JSON is kept as its first
    500 characters, after redaction.
    """
    envelope = parse_error_envelope(body)
    message = envelope.message
    payload = envelope.payload
    if not envelope.is_json and isinstance(payload, str):
        payload = clip(payload.strip(), BODY_EXCERPT)
        message = payload or None
    cls = status_error(status)  # the failure map: the same reading of a status as the search providers'
    return cls(
        message or f"HTTP {status}",
        status=status,
        type=envelope.type,
        code=envelope.code,
        param=envelope.param,
        retry_after=parse_retry_after(headers),
        body=payload,
    )


def not_json(status: int, body: bytes) -> MalformedResponseError:
    """The error for a success status whose body is not JSON (an excerpt of it kept: redacted, then cut)."""
    head = body[: BODY_EXCERPT * 4].decode("utf-8", "replace")  # enough for the excerpt after redaction
    return MalformedResponseError(
        f"the API answered HTTP {status} with a body that is not JSON",
        status=status,
        body=clip(head, BODY_EXCERPT),
    )


def parse_json(status: int, body: bytes) -> Any:
    """``body`` parsed as JSON, or :func:`not_json`'s error."""
    try:
        return json.loads(body)
    except ValueError:
        raise not_json(status, body) from None


def parse_response(data: Any) -> Response:
    """A parsed JSON body as a :class:`Response` (or an :class:`APIError` saying why it is not one)."""
    if not isinstance(data, dict):
        raise MalformedResponseError(
            "the API answered with something that is not a response object", status=200
        )
    missing = [name for name in ("id", "status") if not isinstance(data.get(name), str) or not data[name]]
    if missing:
        raise MalformedResponseError(
            f"the API answered with an object that is not a response (no {' and no '.join(missing)})",
            status=200,
            body=scrub({k: v for k, v in list(data.items())[:20] if k != "output"}),
        )
    try:
        return Response.model_validate(data)
    except ValidationError as exc:
        raise MalformedResponseError(
            f"could not parse the API's response: {exc.error_count()} errors", status=200
        ) from None


def failed_error(response: Response) -> ResponseFailedError:
    """The exception for a response whose status is ``failed``, ``cancelled`` or ``incomplete``."""
    rid = response.id or "?"
    info = response.error
    attempts = [
        Attempt(
            provider="perplexity-agent",
            outcome=Outcome.ERROR,
            cost=response.cost or 0.0,
            billable=True,
            error=response.status,
        )
    ]
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        return ResponseIncompleteError(
            f"response {rid} is incomplete: {reason or 'no reason given'}",
            response=response,
            reason=reason,
            status=200,
            attempts=attempts,
        )
    if response.status == "cancelled":
        return ResponseCancelledError(
            f"response {rid} was cancelled",
            response=response,
            reason="cancelled",
            status=200,
            type=info.type if info else None,
            code=info.code if info else None,
            attempts=attempts,
        )
    message = info.message if info and info.message else "no error message given"
    return ResponseFailedError(
        f"response {rid} failed: {message}",
        response=response,
        reason=str(info.code) if info and info.code is not None else (info.type if info else None),
        status=200,
        type=info.type if info else None,
        code=info.code if info else None,
        param=info.param if info else None,
        attempts=attempts,
    )


def raise_for_status(response: Response) -> Response:
    """Return ``response``, or raise :class:`ResponseFailedError` when its status is not success."""
    if response.status in FAILED_STATUSES:
        raise failed_error(response)
    return response


def terminal_event_for(response: Response) -> StreamEvent | None:
    """The terminal event matching a terminal response's status (``None`` while it is still running)."""
    if response.status == "completed":
        return ResponseCompletedEvent(response=response)
    if response.status == "incomplete":
        return ResponseIncompleteEvent(response=response)
    if response.status == "cancelled":
        return ResponseCancelledEvent(response=response)
    if response.status == "failed":
        return ResponseFailedEvent(response=response, error=response.error)
    return None


# the Agent API's strict decoder: ``invalid request body: json: unknown field "store"``
_UNKNOWN_FIELD = re.compile(r'unknown field\s*\\?"([^"\\]+)\\?"')


def explain_unknown_field(error: BadRequestError, request: AgentRequest) -> BadRequestError:
    """A 400 naming an unknown body field, with who sent that field (``error`` itself for any other 400).

    The note comes from ``request.sent_by`` (e.g. ``perplexed.answer(): grounding with a preset sends
    max_tool_calls=0``), else from where the field came from: ``extra_body`` or a request field. A new
    exception is returned (``error`` is left as it is); ``param`` names the field.
    """
    found = _UNKNOWN_FIELD.search(error.message)
    field = found.group(1) if found else (error.param if "unknown field" in error.message else None)
    if not field:
        return error
    note = (request.sent_by or {}).get(field)
    if note is None:
        if request.extra_body and field in request.extra_body:
            note = "extra_body"
        elif field in type(request).model_fields and getattr(request, field) is not None:
            value = json.dumps(request.to_body().get(field), default=str)
            note = f"the request field {field}={value}" if len(value) <= 40 else f"the request field {field}"
        else:
            return error
    return BadRequestError(
        f"{error.message} (sent by {note})",
        status=error.status,
        type=error.type,
        code=error.code,
        param=field,
        retry_after=error.retry_after,
        body=error.body,
        attempts=error.attempts,
    )


def with_note(error: APIError, note: str) -> APIError:
    """A copy of ``error`` whose message ends with ``note`` (the caught exception itself is left as it is)."""
    noted = copy.copy(error)
    noted.message = f"{error.message} ({note})"
    noted.args = (noted.message,)
    noted.__cause__ = error
    return noted


def redirect_error(response: httpx.Response) -> APIStatusError:
    """The error for a 3xx: redirects are never followed; the message names the target's origin only."""
    target = redirect_origin(response)
    where = f"to {target}" if target else "without a Location"
    return APIStatusError(
        f"the API answered HTTP {response.status_code}, redirecting {where}; perplexed does not follow "
        "redirects (the API key must not reach another origin): check base_url",
        status=response.status_code,
        reason="redirect",
    )


def body_error(exc: ResponseBodyError, response: httpx.Response) -> APIError:
    """The Agent API error for a body the HTTP layer refused: not the encoding it claims (a
    :class:`MalformedResponseError`), or larger than the cap once decoded (an :class:`APIError`)."""
    what = f"{response.request.method} {response.url.path}"
    if isinstance(exc, ContentDecodingError):
        encoding = response.headers.get("content-encoding", "")
        return MalformedResponseError(
            f"{what}: the body could not be decoded as its Content-Encoding {encoding!r} claims ({exc.message})",
            status=response.status_code,
        )
    return APIError(f"{what}: {exc.message}", status=response.status_code)
