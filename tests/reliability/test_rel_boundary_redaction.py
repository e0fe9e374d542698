"""Issue 12 sections 3 and 4 (search side): redaction gaps and undocumented exceptions.

- a key echoed by an upstream at the 300-character cut is redacted (redact first, then cut; a piece of 8 or
  more characters of a configured key is redacted on its own);
- ``httpcore.*`` DEBUG records (response headers: ``WWW-Authenticate``, a ``Location`` with ``user:key@`` or
  ``?key=``) reach a handler on the ROOT logger redacted, like ``httpx`` and ``perplexed`` records;
- Firecrawl's ``warning`` (``Attempt.detail``) is redacted in the result, its repr and JSON, and events;
- keys are checked: a bad key in code is a ConfigError at construction, one from the environment a ``config``
  attempt; neither message holds the key (a trailing no-break space raised ``UnicodeEncodeError`` whose repr
  held it);
- ``api_key=123`` / a list and ``base_url=123`` are ConfigErrors naming the argument (not AttributeError);
  port 99999 is a ``connection`` attempt (not ``unexpected`` with an ERROR traceback); ``Local(time_limit=
  "abc")`` is a ConfigError; a non-finite cost or price is refused, so ``result.cost`` stays finite.
"""

from __future__ import annotations

import json
import logging
import math
import traceback
from collections.abc import Iterator
from typing import Any

import perplexed
import pytest
from perplexed import ConfigError, InvalidRequest, ProviderAnswer, UpstreamError, telemetry
from perplexed.providers import FunctionProvider, get
from testkit.loopback import Json, Request, Status, serve

# shapeless (no vendor prefix): only the "configured secret" mechanism can catch these
KEY = "Zk7Qw2Lp9Vx4Rt8Nm3Bc6Hy1Jd5Fg0Ws2Ae5Ui"  # 39 characters, like the one seen cut
ENV_KEY = "Pq4Xz8Mn2Kw6Tr0Vb3Ld7Hs5Jc9Gf1Yt"


def _pieces(key: str, size: int = 6) -> list[str]:
    return [key[i : i + size] for i in range(len(key) - size + 1)]


def assert_no_piece(text: object, key: str = KEY, size: int = 6) -> None:
    """No run of ``size`` characters of ``key`` appears in ``text``."""
    text = str(text)
    for piece in _pieces(key, size):
        assert piece not in text, f"a piece of the key ({piece!r}) leaked: ...{text[max(0, text.find(piece) - 60):text.find(piece) + 40]!r}"


@pytest.fixture
def root_records() -> Iterator[list[str]]:
    """Everything a handler on the ROOT logger formats, at DEBUG, httpx/httpcore included."""
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(self.format(record))

    handler = Collect(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    names = ("httpx", "httpcore", "perplexed")
    levels = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.DEBUG)
    try:
        yield seen
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        for n, level in levels.items():
            logging.getLogger(n).setLevel(level)


@pytest.fixture
def events() -> Iterator[list[Any]]:
    seen: list[Any] = []
    handle = telemetry.attach(lambda *event: seen.append(event))  # type: ignore[arg-type]
    yield seen
    telemetry.detach(handle)


def _error_texts(err: BaseException) -> list[str]:
    return [str(err), repr(err), repr(err.args), "".join(traceback.format_exception(err))]


# --- redact first, then cut ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kept", [3, 8, 20, 36])
def test_a_key_echoed_at_the_cut_is_redacted_whole(
    kept: int, root_records: list[str], events: list[Any]
) -> None:
    """The upstream's message is cut at 300 characters; the key sits where a cut-first leaves ``kept`` of its
    characters (36 of 39 was seen: not redacted, as no longer equal to the configured key)."""
    pad = "x" * (300 - min(kept, len(KEY)))
    body = json.dumps({"error": {"message": pad + KEY + " is not a valid key"}})
    with serve({"*": Status(401, body, None, "application/json")}) as server:
        spec = {"name": "exa", "base_url": server.url, "api_key": KEY}
        with pytest.raises(UpstreamError) as info:
            perplexed.search("cut", provider=[spec])
    err = info.value
    attempt = err.attempts[0]
    assert attempt.reason == "auth"
    for text in [*_error_texts(err), attempt.error, attempt.model_dump_json(), *root_records, *map(repr, events)]:
        assert_no_piece(text)


def test_a_piece_of_a_key_is_redacted_anywhere() -> None:
    from perplexed._errors import (  # private: key fragments are redacted, tested directly
        redact,
        register_secret,
    )

    register_secret(KEY)
    assert redact(f"the key ends {KEY[-9:]}.") == "the key ends [REDACTED]."
    assert redact(f"({KEY[10:18]})") == "([REDACTED])"
    assert redact(f"mid {KEY[3:30]} end") == "mid [REDACTED] end"
    assert redact(f"short {KEY[:7]} stays") == f"short {KEY[:7]} stays"  # 7 characters: too common to tell


def test_clip_redacts_before_it_cuts() -> None:
    from perplexed._errors import register_secret  # private: a registered secret must vanish from errors
    from perplexed.policy._wire import clip  # private: clipping must redact before it cuts

    register_secret(KEY)
    text = "y" * 290 + KEY
    assert clip(text, 300) == "y" * 290 + "[REDACTED]"
    assert clip(text, 295) == "y" * 290 + "[REDA"


# --- loggers: httpcore and all children, as the root logger sees them --------------------------------------


def test_httpcore_records_reach_the_root_logger_redacted(root_records: list[str]) -> None:
    headers = {
        "WWW-Authenticate": f'Bearer realm="api", error="invalid_token", key="{KEY}"',
        "Location": f"http://user:{KEY}@127.0.0.1:9/login?key={KEY}",
        "X-Echo": KEY[4:30],
    }
    with serve({"*": Status(401, b'{"error": "no"}', headers, "application/json")}) as server:
        spec = {"name": "exa", "base_url": server.url, "api_key": KEY}
        with pytest.raises(UpstreamError):
            perplexed.search("headers", provider=[spec])
    names = {line.split(" ", 1)[0] for line in root_records}
    assert any(n.startswith("httpcore.") for n in names), names  # the child loggers did log
    for line in root_records:
        assert_no_piece(line)


# --- Attempt.detail from an upstream (Firecrawl's warning) --------------------------------------------------


def test_firecrawl_warning_is_redacted_everywhere(events: list[Any], root_records: list[str]) -> None:
    answer = {
        "success": True,
        "warning": f"Your key {KEY} is close to its credit limit",
        "data": {"web": [{"url": "https://example.org/a", "title": "A", "description": "a"}]},
    }
    with serve({"*": Json(answer)}) as server:
        spec = {"name": "firecrawl", "base_url": server.url, "api_key": KEY}
        result = perplexed.search("warning", provider=[spec])
    detail = result.attempts[0].detail or ""
    assert "[REDACTED]" in detail and "credit limit" in detail
    for text in [detail, repr(result), result.model_dump_json(), *map(repr, events), *root_records]:
        assert_no_piece(text)


# --- keys are checked ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", [KEY + "\u00a0", "\u00a0" + KEY, KEY[:10] + " " + KEY[10:], KEY + "\n", KEY[:10] + "\u2013" + KEY[10:]]
)
@pytest.mark.parametrize("name", ["exa", "brave", "tavily"])
def test_a_bad_key_in_code_is_a_config_error_at_construction(name: str, bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        get(name)(api_key=bad)
    assert "api_key" in str(info.value)
    for text in _error_texts(info.value):
        assert_no_piece(text)
    with pytest.raises(ConfigError) as via_spec:  # a dict spec reaches the same check
        perplexed.search("x", provider=[{"name": name, "api_key": bad, "base_url": "http://127.0.0.1:9"}])
    for text in _error_texts(via_spec.value):
        assert_no_piece(text)


@pytest.mark.parametrize("bad", [ENV_KEY[:12] + " " + ENV_KEY[12:], ENV_KEY[:12] + "\u00e9" + ENV_KEY[12:]])
def test_a_bad_key_from_the_environment_is_a_config_attempt(
    bad: str, monkeypatch: pytest.MonkeyPatch, root_records: list[str]
) -> None:
    monkeypatch.setenv("EXA_API_KEY", bad)
    with serve({"*": Json({"results": []})}) as server:
        provider = get("exa")(base_url=server.url)  # construction does not read the environment
        with pytest.raises(UpstreamError) as info:
            perplexed.search("env", provider=[provider])
        assert server.requests == []
    attempt = info.value.attempts[0]
    assert attempt.outcome.value == "error" and attempt.reason == "config"
    assert "EXA_API_KEY" in (attempt.error or "")
    for text in [*_error_texts(info.value), attempt.error, *root_records]:
        assert_no_piece(text, ENV_KEY)


@pytest.mark.parametrize("value", [123, ["k1", "k2"], b"bytes-key-0123456789", 1.5])
def test_api_key_of_the_wrong_type_is_a_config_error_naming_it(value: Any) -> None:
    with pytest.raises(ConfigError, match="api_key"):
        perplexed.search("x", provider=[{"name": "exa", "api_key": value, "base_url": "http://127.0.0.1:9"}])


@pytest.mark.parametrize("value", [123, ["http://a"], b"http://127.0.0.1"])
def test_base_url_of_the_wrong_type_is_a_config_error_naming_it(value: Any) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        perplexed.search("x", provider=[{"name": "searxng", "base_url": value}])


# --- failures are typed ------------------------------------------------------------------------------------


def test_an_impossible_port_is_a_connection_attempt_without_an_error_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with serve({"*": Json({"results": [{"url": "https://ok.example/", "title": "ok"}]})}) as good:
        chain = [{"name": "searxng", "base_url": "http://127.0.0.1:99999"}, {"name": "searxng", "base_url": good.url}]
        with caplog.at_level(logging.DEBUG):
            result = perplexed.search("port", provider=chain)
    first = result.attempts[0]
    assert first.outcome.value == "error" and first.reason == "connection", first
    assert "99999" in (first.error or "")
    assert len(result.hits) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("value", ["abc", float("nan"), float("inf"), -1, True, None])
def test_local_time_limit_is_validated(value: Any) -> None:
    with pytest.raises(ConfigError, match="time_limit"):
        perplexed.providers.Local(time_limit=value)


@pytest.mark.parametrize("cost", [float("nan"), float("inf"), -0.01])
def test_a_non_finite_cost_is_refused(cost: float) -> None:
    with pytest.raises(ConfigError, match="cost"):
        get("searxng")(base_url="http://127.0.0.1:9", cost=cost)
    with pytest.raises(ConfigError, match="cost"):
        FunctionProvider(lambda q, o: [], cost=cost)
    with pytest.raises(ConfigError, match="price"):
        perplexed.configure(prices={"searxng": cost})


def test_a_non_finite_price_in_the_environment_is_a_config_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERPLEXED_PRICE_NANNY", "nan")
    provider = FunctionProvider(lambda q, o: [{"url": "https://a.example/"}], name="nanny")
    with pytest.raises(UpstreamError) as info:
        perplexed.search("price", provider=[provider])
    assert info.value.attempts[0].reason == "config"
    assert math.isfinite(info.value.cost)


@pytest.mark.parametrize("reported", [float("nan"), float("inf")])
def test_a_provider_reporting_a_non_finite_cost_keeps_result_cost_finite(reported: float) -> None:
    bad = FunctionProvider(lambda q, o: ProviderAnswer(hits=[], cost=reported), name="bad_cost")
    good = FunctionProvider(lambda q, o: [{"url": "https://b.example/"}], name="good", cost=0.001)
    result = perplexed.search("cost", provider=[bad, good])
    assert result.attempts[0].reason == "malformed" and result.attempts[0].cost == 0.0
    assert math.isfinite(result.cost) and result.cost == pytest.approx(0.001)


@pytest.mark.parametrize(
    "options",
    [
        {"deadline_ms": float("inf")},
        {"deadline_ms": float("nan")},
        {"provider_timeout_ms": float("nan")},
        {"provider_timeout_ms": float("inf")},
    ],
)
def test_non_finite_timeouts_and_deadlines_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises((InvalidRequest, ConfigError)):
        perplexed.search("x", provider=[FunctionProvider(lambda q, o: [])], **options)


def test_a_non_finite_chain_option_never_reaches_the_provider() -> None:
    calls: list[str] = []

    def fn(q: str, o: Any) -> list[Any]:
        calls.append(q)
        return []

    with pytest.raises((InvalidRequest, ConfigError)):
        perplexed.search("x", provider=[FunctionProvider(fn)], deadline_ms=float("nan"))
    assert calls == []


def test_the_request_itself_still_carries_the_key() -> None:
    """Redaction is about what leaves the library towards the caller: the request still carries the key."""
    seen: list[Request] = []

    def record(request: Request) -> Json:
        seen.append(request)
        return Json({"results": []})

    with serve({"*": record}) as server:
        perplexed.search("x", provider=[{"name": "exa", "base_url": server.url, "api_key": KEY}])
    assert seen[0].headers["x-api-key"] == KEY


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/\x01", "http://127.0.0.1:9/" + "a" * 70_000])
def test_a_url_httpx_refuses_is_a_config_attempt(url: str, caplog: pytest.LogCaptureFixture) -> None:
    """httpx.InvalidURL is no httpx.HTTPError: it was an ``unexpected`` attempt with an ERROR traceback."""
    with caplog.at_level(logging.DEBUG), pytest.raises(UpstreamError) as info:
        perplexed.search("bad url", provider=[{"name": "searxng", "base_url": url}])
    assert info.value.attempts[0].reason == "config"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
