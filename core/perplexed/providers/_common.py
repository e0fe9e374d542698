"""Small helpers shared by the HTTP providers: option mapping (dates, codes), text clean-up, numbers.

Nothing here does I/O; every function is pure and tested through the providers that use it.
"""

from __future__ import annotations

import html
import json
import math
import re
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from perplexed.policy._options import SearchOptions

if TYPE_CHECKING:  # annotations only: the local provider uses these helpers and never imports httpx
    import httpx

__all__ = [
    "RECENCY_DAYS",
    "as_float",
    "as_str",
    "body_retry_after",
    "country_code",
    "date_window",
    "language_code",
    "merged_extra",
    "strip_tags",
    "today",
]

#: how far back each ``recency`` value reaches, for APIs that only take date bounds
RECENCY_DAYS = {"day": 1, "week": 7, "month": 31, "year": 366}

_TAG = re.compile(r"<[^>]{0,200}>")


def today() -> date:
    """Today's date in UTC (the reference point of ``recency``)."""
    return datetime.now(UTC).date()


def date_window(options: SearchOptions) -> tuple[date | None, date | None]:
    """``(after, before)`` from ``published_after`` / ``published_before`` and ``recency`` combined.

    ``recency`` becomes a lower bound (today minus a day/week/month/year); with ``published_after`` too, the
    later of the two bounds wins, so both constraints hold.
    """
    after = options.published_after
    if options.recency:
        start = today() - timedelta(days=RECENCY_DAYS[options.recency])
        after = start if after is None else max(after, start)
    return after, options.published_before


def country_code(value: str | None) -> str | None:
    """An ISO 3166-1 alpha-2 code (upper case) from ``"us"``, ``"US"`` or ``"en-US"``; None otherwise."""
    if not value or value.lower() in ("all", "auto"):
        return None
    parts = re.split(r"[-_]", value)
    for part in reversed(parts):
        if len(part) == 2 and part.isalpha():
            return part.upper()
    return None


def language_code(value: str | None) -> str | None:
    """An ISO 639-1 language code (lower case) from ``"en"`` or ``"en-US"``; None for ``all``/``auto``."""
    if not value or value.lower() in ("all", "auto"):
        return None
    primary = re.split(r"[-_]", value)[0].lower()
    return primary if primary.isalpha() and 2 <= len(primary) <= 3 else None


def merged_extra(defaults: dict[str, Any], options: SearchOptions) -> dict[str, Any]:
    """Provider options: constructor defaults, overridden by per-call extras (non-None values only)."""
    merged = {k: v for k, v in defaults.items() if v is not None}
    merged.update({k: v for k, v in options.extra.items() if v is not None})
    return merged


def strip_tags(text: str) -> str:
    """Drop HTML tags (e.g. Brave's ``<strong>`` highlighting) and unescape entities."""
    return html.unescape(_TAG.sub("", text)).strip()


def as_float(value: Any) -> float | None:
    """A finite float from an int/float (not bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number == number and number not in (float("inf"), float("-inf")) else None


def as_str(value: Any) -> str:
    """A string field: the value when it is a string, else empty."""
    return value if isinstance(value, str) else ""


def body_retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait from a JSON error body's ``retry_after_seconds`` / ``retry_after`` (top level or
    nested one level, e.g. under ``error`` or ``detail``), for APIs that put it there instead of a header."""
    try:
        data = json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        return None
    candidates: list[Any] = [data]
    if isinstance(data, dict):
        candidates.extend(v for v in data.values() if isinstance(v, dict))
    for obj in candidates:
        if not isinstance(obj, dict):
            continue
        for key in ("retry_after_seconds", "retryAfterSeconds", "retry_after"):
            value = obj.get(key)
            if isinstance(value, str):
                try:
                    value = float(value)
                except ValueError:
                    continue
            number = as_float(value)
            if number is not None and math.isfinite(number) and number >= 0:
                return number
    return None
