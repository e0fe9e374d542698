"""What an HTTP upstream says, read once for the whole library: ``Retry-After`` and the JSON error envelope.

Search providers and the Agent API client both read these; each used to have its own parser, and the two
disagreed (a negative ``Retry-After`` was 0 for one and "absent" for the other). Everything here is pure: no
I/O, no logging, and every string handed back that came from an upstream is redacted first (then cut, by
:func:`clip`, never the other way round: a cut made first can leave most of an echoed key behind).
"""

from __future__ import annotations

import email.utils
import json
import math
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import TYPE_CHECKING, Any

from perplexed._errors import ConfigError, redact

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_ENVELOPE_BYTES", "ErrorEnvelope", "check_key", "clip", "parse_error_envelope", "parse_retry_after", "scrub"]


# --- Retry-After -------------------------------------------------------------------------------------------


def _header(headers: Mapping[str, str] | httpx.Headers, name: str) -> str | None:
    if sys.modules.get("httpx") is not None:  # httpx.Headers exist only once httpx is imported
        import httpx

        if isinstance(headers, httpx.Headers):
            found: str | None = headers.get(name)
            return found
    value = headers.get(name)
    if value is None:
        for key, item in headers.items():
            if str(key).lower() == name:
                return str(item)
        return None
    return str(value)


def _seconds(raw: str, scale: float) -> float | None:
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return max(0.0, value / scale)


def parse_retry_after(
    headers: Mapping[str, str] | httpx.Headers | None, *, now: float | None = None
) -> float | None:
    """Seconds to wait as the server asked: ``retry-after-ms`` (preferred) or ``Retry-After``.

    ``Retry-After`` is a number of seconds or an HTTP date (``now``, epoch seconds, is the reference; default
    the current time). Decided once for the library: a negative number or a date in the past means "now"
    (``0.0``); an absent, unparseable or non-finite value is ``None``.
    """
    if not headers:
        return None
    raw_ms = _header(headers, "retry-after-ms")
    if raw_ms is not None:
        seconds = _seconds(raw_ms, 1000.0)
        if seconds is not None:
            return seconds
    raw = _header(headers, "retry-after")
    if raw is None or not raw.strip():
        return None
    seconds = _seconds(raw, 1.0)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:  # pragma: no cover - older Pythons returned None instead of raising
        return None
    if when.tzinfo is None:  # an HTTP date is GMT
        when = when.replace(tzinfo=UTC)
    reference = time.time() if now is None else now
    return max(0.0, when.timestamp() - reference)


# --- the error envelope ------------------------------------------------------------------------------------


#: an error body larger than this is not parsed as JSON: its first this many bytes are its (text) message
MAX_ENVELOPE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class ErrorEnvelope:
    """An error body, read: the upstream's ``message`` (redacted, not cut: cut it with :func:`clip`), and the
    ``type``, ``code`` and ``param`` it reported; ``payload`` is the parsed JSON (strings redacted), or the
    redacted body text when it is not JSON (``None`` for an empty body); ``is_json`` says which."""

    message: str | None = None
    type: str | None = None
    code: str | int | None = None
    param: str | None = None
    payload: Any = None
    is_json: bool = False


def parse_error_envelope(body: bytes | str | Any) -> ErrorEnvelope:
    """Read an HTTP error body into an :class:`ErrorEnvelope`.

    Shapes understood (the ones the search providers and the Perplexity APIs answer with):
    ``{"error": {"message"|"detail", "type", "code", "param"}}``, ``{"error": "text"}``, FastAPI's
    ``{"detail": [{"loc": [...], "msg": ...}]}`` (``type="validation_error"``, ``param`` = the last ``loc``),
    ``{"detail": "text"}`` or ``{"detail": {"message"|"error": ...}}``, ``{"message": "text"}`` and
    ``{"errors": [...]}``. A body that is not JSON gives its stripped text as the message. ``body`` may be
    the raw bytes or text, or an already parsed value.
    """
    payload: Any = body
    is_json = True
    if isinstance(body, str) and len(body) > MAX_ENVELOPE_BYTES:
        body = body.encode("utf-8", "replace")
    if isinstance(body, bytes | bytearray | memoryview) and len(body) > MAX_ENVELOPE_BYTES:
        text = redact(bytes(body[:MAX_ENVELOPE_BYTES]).decode("utf-8", "replace"))  # no error envelope is this big
        return ErrorEnvelope(message=text.strip() or None, payload=text, is_json=False)
    if isinstance(body, bytes | bytearray | memoryview):
        raw = bytes(body)
        try:
            payload = json.loads(raw) if raw.strip() else None
        except (ValueError, UnicodeDecodeError):
            payload, is_json = raw.decode("utf-8", "replace"), False
    elif isinstance(body, str):
        try:
            payload = json.loads(body) if body.strip() else None
        except ValueError:
            payload, is_json = body, False
    if payload is None:
        return ErrorEnvelope(is_json=False)
    if not is_json:
        text = redact(str(payload))
        return ErrorEnvelope(message=text.strip() or None, payload=text, is_json=False)
    payload = scrub(payload)
    message: str | None = None
    etype: str | None = None
    code: str | int | None = None
    param: str | None = None
    if isinstance(payload, dict):
        err = payload.get("error")
        detail = payload.get("detail")
        if isinstance(err, dict):
            message = _text(err.get("message")) or _text(err.get("detail"))
            etype = _text(err.get("type"))
            raw_code = err.get("code")
            code = raw_code if isinstance(raw_code, int | str) and not isinstance(raw_code, bool) else None
            param = _text(err.get("param"))
        elif isinstance(err, str) and err.strip():
            message = err
        elif isinstance(detail, list):
            items = [d for d in detail if isinstance(d, dict)]
            message = "; ".join(str(d.get("msg", "")) for d in items if d.get("msg") is not None) or None
            loc = items[0].get("loc") if items else None
            if isinstance(loc, list) and loc:
                param = str(loc[-1])
            etype = "validation_error"
        elif isinstance(detail, str) and detail.strip():
            message = detail
        elif isinstance(detail, dict):
            message = _text(detail.get("message")) or _text(detail.get("error"))
        elif isinstance(payload.get("message"), str) and payload["message"].strip():
            message = payload["message"]
        elif isinstance(payload.get("errors"), list):
            parts = [
                _text(e.get("message")) if isinstance(e, dict) else _text(e) for e in payload["errors"]
            ]
            message = "; ".join(p for p in parts if p) or None
        if etype is None:
            etype = _text(payload.get("type")) if isinstance(payload.get("type"), str) else None
    elif isinstance(payload, str) and payload.strip():
        message = payload.strip()
    return ErrorEnvelope(message=message, type=etype, code=code, param=param, payload=payload, is_json=True)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = str(value)
    return text if text.strip() else None


def scrub(value: Any) -> Any:
    """``value`` with every string in it (dict keys and values, list items) redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {scrub(k) if isinstance(k, str) else k: scrub(v) for k, v in value.items()}
    return value


#: characters past a cut that are still redacted with the text before it (a key straddling the cut is
#: redacted whole as long as it is shorter than this)
_CUT_MARGIN = 1024


def clip(text: str, limit: int) -> str:
    """``text`` redacted, then cut to at most ``limit`` characters (in that order)."""
    if len(text) > limit + _CUT_MARGIN:  # what lies beyond the margin cannot reach the kept part
        text = text[: limit + _CUT_MARGIN]
    text = redact(text)
    return text if len(text) <= limit else text[:limit]


# --- credentials -------------------------------------------------------------------------------------------


def check_key(value: object, *, argument: str) -> str:
    """``value`` as an API key that can be sent in an HTTP header, else a :class:`ConfigError` naming
    ``argument`` (and never the key: not even a part of it, nor an exception that holds it).

    A key is a non-empty string of printable ASCII with no whitespace. Anything else would fail later, deep
    in the HTTP stack, with an error whose text holds the key (``UnicodeEncodeError`` for a trailing
    no-break space, ``AttributeError`` for a number).
    """
    from pydantic import SecretStr

    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if not isinstance(value, str):
        raise ConfigError(
            f"{argument} must be a string (or a pydantic SecretStr), got {type(value).__name__}"
        )
    if not value:
        raise ConfigError(f"{argument} is empty")
    for position, char in enumerate(value):
        if not "!" <= char <= "~":
            what = "whitespace" if char.isspace() else "a character that is not printable ASCII"
            raise ConfigError(
                f"{argument} contains {what} (U+{ord(char):04X} at position {position} of {len(value)}): "
                "an API key is printable ASCII with no spaces; check for a stray space or a pasted quote"
            )
    return value
