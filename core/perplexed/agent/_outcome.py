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

from .._errors import (
    APIError,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    MalformedResponseError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ResponseCancelledError,
    ResponseFailedError,
    ResponseIncompleteError,
    ServerError,
    redact,
)
from .._models import Attempt, Outcome
from ._policy import parse_retry_after
from ._request import AgentRequest
from ._response import (
    FAILED_STATUSES,
    Response,
    ResponseCancelledEvent,
    ResponseCompletedEvent,
    ResponseFailedEvent,
    ResponseIncompleteEvent,
    StreamEvent,
)

__all__ = [
    "error_from_response",
    "explain_unknown_field",
    "not_json",
    "parse_json",
    "parse_response",
    "raise_for_status",
    "scrub",
    "terminal_event_for",
]

#: how much of a body that is not JSON an error keeps (after redaction)
BODY_EXCERPT = 500


def scrub(value: Any) -> Any:
    """``value`` with every string in it redacted (credentials echoed by an upstream)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    return value


_STATUS_ERRORS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: BadRequestError,
    429: RateLimitError,
}


def error_from_response(
    status: int, body: bytes | str | Any, headers: Mapping[str, str] | None = None
) -> APIStatusError:
    """The typed exception for an HTTP error response.

    Reads the ``{"error": {message, type, code, param}}`` envelope (and FastAPI's ``{"detail": [...]}``);
    the API's message is kept as the exception message (credentials scrubbed).
    """
    payload: Any = body
    if isinstance(body, bytes | str):
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    message: str | None = None
    etype: str | None = None
    code: str | int | None = None
    param: str | None = None
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict):
            message = _str_or_none(err.get("message"))
            etype = _str_or_none(err.get("type"))
            raw_code = err.get("code")
            code = raw_code if isinstance(raw_code, int | str) and not isinstance(raw_code, bool) else None
            param = _str_or_none(err.get("param"))
        elif isinstance(err, str):
            message = err
        elif isinstance(payload.get("detail"), list):
            details = [d for d in payload["detail"] if isinstance(d, dict)]
            message = "; ".join(str(d.get("msg", "")) for d in details) or None
            if details and isinstance(details[0].get("loc"), list) and details[0]["loc"]:
                param = str(details[0]["loc"][-1])
            etype = "validation_error"
        elif isinstance(payload.get("detail"), str):
            message = payload["detail"]
        elif isinstance(payload.get("message"), str):
            message = payload["message"]
    elif isinstance(payload, str) and payload.strip():
        payload = redact(payload.strip())[:BODY_EXCERPT]  # redact first, then cut (a cut key is not matched)
        message = payload
    if not message:
        message = f"HTTP {status}"
    cls = _STATUS_ERRORS.get(status) or (ServerError if status >= 500 else APIStatusError)
    return cls(
        message,
        status=status,
        type=etype,
        code=code,
        param=param,
        retry_after=parse_retry_after(headers),
        body=scrub(payload),
    )


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def not_json(status: int, body: bytes) -> MalformedResponseError:
    """The error for a success status whose body is not JSON (an excerpt of it kept: redacted, then cut)."""
    head = body[: BODY_EXCERPT * 4].decode("utf-8", "replace")  # enough for the excerpt after redaction
    return MalformedResponseError(
        f"the API answered HTTP {status} with a body that is not JSON",
        status=status,
        body=redact(head)[:BODY_EXCERPT],
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
    target = _origin(response)
    where = f"to {target}" if target else "without a Location"
    return APIStatusError(
        f"the API answered HTTP {response.status_code}, redirecting {where}; perplexed does not follow "
        "redirects (the API key must not reach another origin): check base_url",
        status=response.status_code,
        reason="redirect",
    )


def _origin(response: httpx.Response) -> str | None:
    """``scheme://host:port`` of a redirect's target (never its path or query)."""
    location = response.headers.get("location")
    if not location:
        return None
    try:
        url = response.url.join(location)
        scheme, host = url.scheme, url.host
        port = url.port or {"http": 80, "https": 443}.get(scheme)
    except (httpx.InvalidURL, ValueError):
        return "an unparseable location"
    if not scheme or not host:
        return "an unparseable location"
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"
