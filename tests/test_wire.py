"""perplexed.policy._wire, table-style: the one Retry-After parser and the one error-envelope parser of the library
(shared by the search providers and the Agent API client), clip() and check_key()."""

from __future__ import annotations

import email.utils
from typing import Any

import httpx
import pytest
from perplexed import ConfigError
from perplexed._errors import register_secret  # private: registers a made-up key to be redacted
from perplexed.policy._wire import (  # private: the one Retry-After and error-envelope parser, table-style
    ErrorEnvelope,
    check_key,
    clip,
    parse_error_envelope,
    parse_retry_after,
)

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        (None, None),
        ({"retry-after": "3"}, 3.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"RETRY-AFTER": " 7 "}, 7.0),
        ({"retry-after-ms": "250", "retry-after": "5"}, 0.25),  # ms wins
        ({"retry-after-ms": "junk", "retry-after": "2"}, 2.0),  # a bad ms falls back
        ({"retry-after-ms": "nan", "retry-after": "2"}, 2.0),
        ({"retry-after": "-4"}, 0.0),  # decided once: negative means "now"
        ({"retry-after-ms": "-100"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after": email.utils.formatdate(NOW + 7, usegmt=True)}, 7.0),
        ({"retry-after": email.utils.formatdate(NOW - 60, usegmt=True)}, 0.0),  # a past date: now
        (httpx.Headers({"Retry-After": "9"}), 9.0),
    ],
)
def test_parse_retry_after(headers: Any, expected: float | None) -> None:
    got = parse_retry_after(headers, now=NOW)
    assert got == (None if expected is None else pytest.approx(expected, abs=1e-6))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", ErrorEnvelope()),
        (b'{"error": {"message": "m", "type": "t", "code": 7, "param": "p"}}', ("m", "t", 7, "p")),
        (b'{"error": {"detail": "d", "code": "E1"}}', ("d", None, "E1", None)),
        (b'{"error": {"message": "m", "code": true}}', ("m", None, None, None)),  # a bool is no code
        (b'{"error": "plain"}', ("plain", None, None, None)),
        (b'{"detail": [{"loc": ["body", "input"], "msg": "field required"}]}',
         ("field required", "validation_error", None, "input")),
        (b'{"detail": "no credits"}', ("no credits", None, None, None)),
        (b'{"detail": {"error": "bad key"}}', ("bad key", None, None, None)),
        (b'{"message": "top-level"}', ("top-level", None, None, None)),
        (b'{"errors": [{"message": "a"}, "b"]}', ("a; b", None, None, None)),
        (b'{"something": "else"}', (None, None, None, None)),
        (b"<html>Bad Gateway</html>", ("<html>Bad Gateway</html>", None, None, None)),
        ('{"error": {"message": "from str"}}', ("from str", None, None, None)),
        ({"error": {"message": "parsed"}}, ("parsed", None, None, None)),
    ],
)
def test_parse_error_envelope(body: Any, expected: Any) -> None:
    envelope = parse_error_envelope(body)
    if isinstance(expected, ErrorEnvelope):
        assert envelope == expected
    else:
        assert (envelope.message, envelope.type, envelope.code, envelope.param) == expected


def test_the_envelope_is_redacted_and_huge_bodies_are_text() -> None:
    key = "Wv3Kp8Qz1Lm6Rt9Xc4Bn7Hj2"
    register_secret(key)
    envelope = parse_error_envelope(b'{"error": {"message": "bad key ' + key.encode() + b'"}}')
    assert envelope.message == "bad key [REDACTED]" and key not in repr(envelope.payload)
    big = b'{"error": {"message": "' + b"x" * 100_000 + b'"}}'
    envelope = parse_error_envelope(big)
    assert not envelope.is_json and envelope.message is not None and len(envelope.message) <= 64 * 1024


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [("short", 10, "short"), ("the quick brown", 9, "the quick"), ("", 5, "")],
)
def test_clip(text: str, limit: int, expected: str) -> None:
    assert clip(text, limit) == expected


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("abc-DEF_123.xyz", True),
        ("k" * 200, True),
        ("", False),
        (" lead", False),
        ("trail\u00a0", False),
        ("in side", False),
        ("tab\tkey", False),
        ("caf\u00e9", False),
        (123, False),
        (["a"], False),
        (None, False),
    ],
)
def test_check_key(value: Any, ok: bool) -> None:
    if ok:
        assert check_key(value, argument="api_key") == value
    else:
        with pytest.raises(ConfigError, match="api_key") as info:
            check_key(value, argument="api_key")
        if isinstance(value, str) and len(value) > 4:
            assert value.strip() not in str(info.value)
