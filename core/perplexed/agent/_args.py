"""Checks of the Agent client's arguments: each bad value is a :class:`perplexed.ConfigError` naming the
argument (never showing a key). Pure functions, no I/O."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import httpx
from pydantic import SecretStr

from perplexed._errors import ConfigError, register_secret
from perplexed.policy._wire import check_key as _wire_check_key

__all__ = ["check_base_url", "check_count", "check_headers", "check_key", "check_key_text", "check_seconds"]

DEFAULT_BASE_URL = "https://api.perplexity.ai"
ENV_BASE_URL = "PERPLEXITY_BASE_URL"


def check_seconds(value: object, name: str, *, zero_ok: bool = False) -> float | None:
    """``value`` as seconds: ``None``, or a positive (``zero_ok``: non-negative), finite number.

    Anything else (a string, a bool, ``inf``, ``nan``) is a :class:`perplexed.ConfigError` naming ``name``:
    an infinite timeout would be no bound at all.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number of seconds, not {type(value).__name__}")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero_ok):
        kind = "non-negative" if zero_ok else "positive"
        raise ConfigError(f"{name} must be a {kind}, finite number of seconds, got {value!r}")
    return seconds


def check_count(value: object, name: str) -> int:
    """``value`` as a count: an ``int`` >= 0 (not a bool, not a string), else a ConfigError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ConfigError(f"{name} must be >= 0, got {value}")
    return value


def check_headers(value: object, name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{name} must be a mapping of str to str")
    return dict(value)


def check_key(value: object) -> SecretStr | None:
    """``api_key=`` as a SecretStr (``None``/empty: read the environment at the first call)."""
    if value is None or (isinstance(value, str | SecretStr) and not str(_plain(value))):
        return None
    if isinstance(value, str | SecretStr):
        register_secret(_plain(value))  # before the check: its message must not show any piece of it
    return SecretStr(_wire_check_key(value, argument="api_key"))


def check_key_text(key: str, source: str) -> None:
    """A key read from ``source`` (e.g. an environment variable): a ConfigError naming it when unusable."""
    _wire_check_key(key, argument=source)


def _plain(value: str | SecretStr) -> str:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def check_base_url(value: object) -> str:
    """``base_url=`` (or ``$PERPLEXITY_BASE_URL``) as ``scheme://host[:port][/path]`` without a trailing slash."""
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"base_url must be a str, not {type(value).__name__}")
    url = (value or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL).strip().rstrip("/")
    if url.endswith("/v1"):  # an OpenAI-style base URL
        url = url[:-3]
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"base_url must be an http(s) URL, got {url!r}")
    try:
        parsed = httpx.URL(url)
        port = parsed.port
    except (httpx.InvalidURL, ValueError) as exc:
        raise ConfigError(f"base_url is not a valid URL ({exc}): {url!r}") from None
    if not parsed.host:
        raise ConfigError(f"base_url has no host: {url!r}")
    if port is not None and not 0 < port < 65536:
        raise ConfigError(f"base_url has an invalid port {port} (1-65535): {url!r}")
    return url
