"""Issue 9, secrets: no planted key appears in any log line (DEBUG), exception message, repr, traceback,
attempt, result, telemetry event or cassette produced by representative failing and succeeding paths.

Conftest-free: this module plants its own keys (``api_key=`` and environment variables), points every paid
provider and the Agent API client at loopback servers that ECHO the credentials back (in JSON error bodies,
HTML, malformed JSON, 200 bodies), captures everything at DEBUG, then scans. Keys are planted in two shapes:
provider-shaped (``tvly-…``, caught by the key pattern) and shapeless (caught only because perplexed
remembers the secrets it was given).
"""

from __future__ import annotations

import json
import logging
import re
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import PerplexedError, telemetry
from perplexed.providers import get
from testkit.loopback import Html, Json, LoopbackServer, Raw, Request, Status, searxng_json, serve

REPO = Path(__file__).resolve().parents[2]

#: provider name -> (planted key, env var). Shapeless keys are only redacted because they were registered.
PLANTED: dict[str, tuple[str, str]] = {
    "tavily": ("tvly-PLANTEDtavilyKEY0123456789", "TAVILY_API_KEY"),
    "exa": ("PLANTEDexaKEYshapeless9f8e7d6c", "EXA_API_KEY"),
    "brave": ("PLANTEDbraveKEY5a4b3c2d1e0f", "BRAVE_API_KEY"),
    "ceramic": ("PLANTEDceramicKEY77aa88bb99cc", "CERAMIC_API_KEY"),
    "firecrawl": ("fc-PLANTEDfirecrawlKEY00112233", "FIRECRAWL_API_KEY"),
    "linkup": ("PLANTEDlinkupKEYdeadbeef4242", "LINKUP_API_KEY"),
    "perplexity": ("pplx-PLANTEDsearchKEY13572468", "PERPLEXITY_API_KEY"),
}
AGENT_KEY = "PLANTEDagentKEYshapeless24680ace"
ENV_ONLY_KEY = "PLANTEDenvOnlyKEYqwerty135790"  # planted in the environment only, never passed in code
ALL_KEYS = [k for k, _ in PLANTED.values()] + [AGENT_KEY, ENV_ONLY_KEY]


def _credentials(request: Request) -> str:
    """Everything in a request that could carry a key."""
    parts = [
        v for k, v in request.headers.items() if k in ("authorization", "x-api-key", "x-subscription-token")
    ]
    parts += [f"{k}={v}" for k, vs in request.query.items() for v in vs]
    return " ".join(parts)


def _echo(kind: str) -> Any:
    """A handler that answers with the request's credentials echoed back, in the shape ``kind``."""

    def handler(request: Request) -> Any:
        creds = _credentials(request)
        if kind == "401":
            return Json({"error": {"message": f"invalid api key: {creds}", "type": "auth", "code": 401}}, 401)
        if kind == "500":
            return Status(500, f"internal error while checking {creds}")
        if kind == "html":
            return Html(f"<html><body>Key {creds} is blocked</body></html>")
        if kind == "malformed":
            return Raw(f'{{"error": "{creds}'.encode())
        if kind == "429":
            return Json({"error": f"rate limited for key {creds}"}, 429, headers={"Retry-After": "3"})
        # a 200 whose body carries the key in an unexpected place (a provider reflecting the request)
        body = searxng_json(1)
        body["echo"] = creds
        return Json(body)

    return handler


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))  # includes a formatted traceback when exc_info is set


@pytest.fixture
def capture() -> Iterator[Capture]:
    handler = Capture()
    root = logging.getLogger()
    old = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def _texts(value: Any) -> list[str]:
    """Every rendering of a value a user could see: str, repr, a traceback with its causes, JSON dumps."""
    out = [str(value), repr(value)]
    if isinstance(value, BaseException):
        out.append("".join(traceback.format_exception(value)))
        cause: BaseException | None = value
        while cause is not None:
            out += [str(cause), repr(cause)]
            cause = cause.__cause__ or cause.__context__
    if isinstance(value, PerplexedError):
        out += [repr(a) for a in value.attempts]
        for attr in ("body", "response"):
            if getattr(value, attr, None) is not None:
                out.append(repr(getattr(value, attr)))
    if hasattr(value, "model_dump_json"):
        out.append(value.model_dump_json())
    return out


def _scan(texts: list[str], where: str) -> None:
    for text in texts:
        for key in ALL_KEYS:
            assert key not in text, (
                f"planted key leaked in {where}: ...{text[max(0, text.find(key) - 80) :][:200]}"
            )


@pytest.fixture
def events() -> Iterator[list[str]]:
    seen: list[str] = []
    handle = telemetry.attach(lambda e, m, md: seen.append(repr((e, m, md))))
    try:
        yield seen
    finally:
        telemetry.detach(handle)


KINDS = ("401", "500", "html", "malformed", "429", "200")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_paid_providers_never_leak_their_keys(
    kind: str, mode: str, capture: Capture, events: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    collected: list[str] = []
    with serve({"*": _echo(kind)}) as echo:
        for name, (key, env) in PLANTED.items():
            cls = get(name)
            # half the providers get the key in code, half from the environment
            if name in ("tavily", "brave", "firecrawl", "perplexity"):
                provider = cls(base_url=echo.url, api_key=key)
            else:
                monkeypatch.setenv(env, key)
                provider = cls(base_url=echo.url)
            collected += _texts(provider)
            spec = [provider, {"name": "searxng", "base_url": echo.url}]
            try:
                if mode == "sync":
                    outcome: Any = perplexed.search("zoning setbacks", spec, provider_timeout_ms=5_000)
                else:
                    outcome = await perplexed.asearch("zoning setbacks", spec, provider_timeout_ms=5_000)
            except PerplexedError as exc:
                outcome = exc
            collected += _texts(outcome)
        assert echo.requests, "the providers were not called"
        # the keys really were sent (and echoed): the scan below is not vacuous
        sent = " ".join(_credentials(r) for r in echo.requests)
        assert sum(k in sent for k in ALL_KEYS) >= 5
    _scan(collected, f"exceptions/results ({kind}, {mode})")
    _scan(capture.lines, f"DEBUG logs ({kind}, {mode})")
    _scan(events, f"telemetry events ({kind}, {mode})")
    assert capture.lines, "nothing was logged at DEBUG: the log scan would be vacuous"


async def test_callable_provider_errors_carrying_a_key_are_redacted(capture: Capture) -> None:
    key = PLANTED["exa"][0]
    perplexed.providers.get("exa")(api_key=key)  # perplexed was given this key: it must never repeat it

    def leaky(query: str, options: Any) -> list[Any]:
        raise RuntimeError(f"upstream said: bad token {key} for {query}")

    async def leaky_async(query: str, options: Any) -> list[Any]:
        raise ValueError(f"Authorization: Bearer {key}")

    collected: list[str] = []
    for fn in (leaky, leaky_async):
        with pytest.raises(PerplexedError) as info:
            await perplexed.asearch("q", [fn])
        collected += _texts(info.value)
    _scan(collected, "callable provider errors")
    _scan(capture.lines, "DEBUG logs of callable provider errors")


async def test_missing_and_bad_configuration_errors_name_the_variable_not_the_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", ENV_ONLY_KEY)
    collected: list[str] = []
    with serve({"*": _echo("401")}) as echo:
        provider = get("tavily")(base_url=echo.url)  # key from the environment only
        collected += _texts(provider)
        with pytest.raises(PerplexedError) as info:
            await perplexed.asearch("q", provider)
        collected += _texts(info.value)
        assert ENV_ONLY_KEY in _credentials(echo.requests[-1])  # it was sent, and echoed back
    monkeypatch.delenv("TAVILY_API_KEY")
    with pytest.raises(PerplexedError) as missing:
        await perplexed.asearch("q", get("tavily")(base_url="http://127.0.0.1:9"))
    assert "TAVILY_API_KEY" in str(missing.value)
    _scan(collected + _texts(missing.value), "configuration errors")


@pytest.mark.parametrize("kind", ["401", "500", "html", "malformed", "429"])
async def test_agent_api_errors_never_leak_the_key(
    kind: str, capture: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perplexed.agent import AgentClient, AsyncAgentClient

    collected: list[str] = []
    with serve({"*": _echo(kind)}) as echo:
        clients: list[Any] = [AsyncAgentClient(api_key=AGENT_KEY, base_url=echo.url, max_retries=0)]
        monkeypatch.setenv("PERPLEXITY_API_KEY", AGENT_KEY)
        clients.append(AsyncAgentClient(base_url=echo.url, max_retries=0))
        for client in clients:
            collected += _texts(client)
            for call in ("create", "stream"):
                try:
                    if call == "create":
                        await client.create(preset="fast", input="hi", timeout=5)
                    else:
                        async with client.stream(preset="fast", input="hi", timeout=5) as stream:
                            async for _ in stream:
                                pass
                except PerplexedError as exc:
                    collected += _texts(exc)
        sync = AgentClient(api_key=AGENT_KEY, base_url=echo.url, max_retries=0)
        try:
            sync.create(preset="fast", input="hi")
        except PerplexedError as exc:
            collected += _texts(exc)
        assert AGENT_KEY in " ".join(_credentials(r) for r in echo.requests)
    _scan(collected, f"Agent API errors ({kind})")
    _scan(capture.lines, f"DEBUG logs of Agent API errors ({kind})")


# --- cassettes -----------------------------------------------------------------------------------------

#: a credential-shaped token: provider prefixes, bearer tokens, key headers with a long value
_KEY_SHAPED = re.compile(
    r"(?i)\b(?:pplx|tvly|fc|sk|exa|lk)-[A-Za-z0-9_\-]{12,}"
    r"|bearer\s+[A-Za-z0-9._\-]{12,}"
    r"|(?:x-api-key|x-subscription-token|api[_-]?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9._\-]{16,}"
)
#: placeholders that are allowed to look like keys
_PLACEHOLDER = re.compile(r"(?i)redacted|not-a-real|test-key|fake|dummy|example|placeholder|xxxx")


def _cassette_files() -> list[Path]:
    root = REPO / "cassettes"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_cassettes_hold_no_key_shaped_string_and_no_planted_key() -> None:
    files = _cassette_files()
    assert files, "no cassettes found: the scan would be vacuous"
    problems = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for key in ALL_KEYS:
            if key in text:
                problems.append(f"{path.relative_to(REPO)}: planted key")
        for match in _KEY_SHAPED.finditer(text):
            if not _PLACEHOLDER.search(match.group(0)):
                problems.append(f"{path.relative_to(REPO)}: key-shaped {match.group(0)[:12]}…")
    assert problems == []


def test_the_cassette_scan_catches_a_real_looking_key(tmp_path: Path) -> None:
    """The pattern is not vacuous: it flags what a leaked cassette would hold, and spares placeholders."""
    leaked = [
        "Authorization: Bearer 9f8e7d6c5b4a39281706abcdef",
        "x-api-key: 0123456789abcdef0123",
        '"api_key": "s3cr3tVALUEthatISlong"',
        "pplx-AbCdEf0123456789xyz",
    ]
    for text in leaked:
        match = _KEY_SHAPED.search(text)
        assert match and not _PLACEHOLDER.search(match.group(0)), text
    for text in ("Authorization: Bearer [REDACTED]", "pplx-test-not-a-real-key"):
        match = _KEY_SHAPED.search(text)
        assert match is None or _PLACEHOLDER.search(match.group(0)), text


def test_no_cassette_was_recorded_with_a_real_environment_key() -> None:
    import os

    real = [v for k, v in os.environ.items() if k.endswith("_API_KEY") and len(v) >= 12]
    for path in _cassette_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for value in real:
            assert value not in text, f"{path}: holds the value of an *_API_KEY environment variable"


@pytest.mark.parametrize("kind", ["200", "401", "html"])
def test_cassettes_recorded_by_the_doctor_hold_no_key(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``perplexed doctor --live --record`` against servers that echo the credentials back (in bodies): the
    cassettes it writes pass the same scan as the committed ones (planted keys and key-shaped strings)."""
    from perplexed.cli import main  # private: runs the CLI entry point in-process

    with serve({"*": _echo(kind)}) as echo:
        for key, var in PLANTED.values():
            monkeypatch.setenv(var, key)
        for var in ("CERAMIC_BASE_URL", "FIRECRAWL_API_URL", "PERPLEXITY_BASE_URL", "SEARXNG_URL"):
            monkeypatch.setenv(var, echo.url)
        monkeypatch.delenv("PERPLEXED_STORE", raising=False)
        code = main(["doctor", "--live", "--yes", "--agent", "ceramic", "firecrawl", "perplexity",
                     "--record", str(tmp_path), "--json"])
        out, err = capsys.readouterr()
        assert code == 1  # the echo server's answers are not what the parsers expect: drift or error rows
        sent = " ".join(_credentials(r) for r in echo.requests)
        assert sum(k in sent for k, _ in PLANTED.values()) >= 3  # the keys really went out (and came back)
    files = sorted(p for p in tmp_path.rglob("*.yaml"))
    assert len(files) == 4, files  # ceramic, firecrawl, perplexity, agent
    problems = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        problems += [f"{path.name}: planted key" for key in ALL_KEYS if key in text]
        problems += [
            f"{path.name}: key-shaped {m.group(0)[:12]}…"
            for m in _KEY_SHAPED.finditer(text)
            if not _PLACEHOLDER.search(m.group(0))
        ]
    assert problems == []
    _scan([out, err], f"doctor output ({kind})")


_ = json  # json bodies are built by loopback.Json
_ = LoopbackServer
