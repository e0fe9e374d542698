"""Credentials never appear in a repr, a log line, an attempt's error, an event, a span or an exception
message, also when an upstream echoes the key back in its error body."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator
from typing import Any, ClassVar

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from perplexed import ConfigError, Hit, Outcome, ProviderAnswer, SearchOptions, UpstreamError, telemetry
from perplexed.providers import FunctionProvider, Provider, register, unregister
from testkit.loopback import Json, LoopbackServer, Request, SearchAPI, Status

# no well-known key prefix: only the "known secrets" mechanism can catch these
SECRET = "zq9Secret4242XYZ"
ENV_SECRET = "envKey77Unlikely0Value"
# shaped like a vendor key (sk-...): caught by pattern even though never registered
SHAPED = "sk-live1234567890abcdefXYZ"
ALL_SECRETS = (SECRET, ENV_SECRET, SHAPED)


class KeyedSearch(Provider):
    """A provider that sends its key in two headers and the query string."""

    name = "keyed"
    env_key = "KEYED_TEST_API_KEY"
    env_base_url = "KEYED_TEST_URL"
    native_options: ClassVar[frozenset[str]] = frozenset()

    def build_request(self, query: str, options: SearchOptions) -> httpx.Request:
        key = self.api_key()
        return httpx.Request(
            "GET",
            f"{self.base_url}/search",
            params={"q": query, "key": key},
            headers=self.headers(Authorization=f"Bearer {key}", **{"X-API-Key": key}),
        )

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        data = self.json_object(response)
        return ProviderAnswer(hits=[Hit(url=r["url"]) for r in data.get("results", [])])


@pytest.fixture(autouse=True)
def _keyed_provider() -> Any:
    """Register the test provider for this module's tests only (other tests list the registry)."""
    register("keyed", KeyedSearch)
    yield
    unregister("keyed")


def echo_key(status: int, shape: str) -> Any:
    """A handler answering ``status`` with the request's key echoed in the error body."""

    def handler(request: Request) -> Status:
        key = request.headers.get("x-api-key", "")
        if shape == "json":
            return Status(status, f'{{"error": {{"message": "Invalid API key: {key}"}}}}', content_type="application/json")
        if shape == "detail":
            return Status(status, f'{{"detail": "key {key} has no credits"}}', content_type="application/json")
        return Status(status, f"upstream rejected Authorization: Bearer {key} (key={key})")

    return handler


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG):
        yield caplog


@pytest.fixture
def events() -> Iterator[list[Any]]:
    seen: list[Any] = []
    handle = telemetry.attach(lambda *event: seen.append(event))  # type: ignore[arg-type]
    yield seen
    telemetry.detach(handle)


_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    if not getattr(_EXPORTER, "_perplexed_installed", False):
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        _EXPORTER._perplexed_installed = True  # type: ignore[attr-defined]
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def assert_clean(*texts: object) -> None:
    for text in texts:
        for secret in ALL_SECRETS:
            assert secret not in str(text), f"credential leaked: {text!r}"


def everything_logged(caplog: pytest.LogCaptureFixture) -> str:
    parts = []
    for record in caplog.records:
        parts.append(record.getMessage())
        if record.exc_info:
            parts.append("".join(traceback.format_exception(*record.exc_info)))
        if record.exc_text:
            parts.append(record.exc_text)
    return "\n".join(parts)


def error_texts(err: BaseException) -> list[str]:
    """Everything an exception shows: str, repr, args, the full formatted traceback with its cause chain."""
    return [str(err), repr(err), repr(err.args), "".join(traceback.format_exception(err))]


@pytest.mark.parametrize(("status", "shape"), [(401, "json"), (402, "detail"), (500, "text"), (403, "text")])
async def test_a_key_echoed_by_the_upstream_never_leaks(
    api: SearchAPI,
    loopback: LoopbackServer,
    logs: pytest.LogCaptureFixture,
    events: list[Any],
    spans: InMemorySpanExporter,
    status: int,
    shape: str,
) -> None:
    loopback.route("/search", echo_key(status, shape))
    provider = KeyedSearch(base_url=loopback.url, api_key=SECRET)

    with pytest.raises(UpstreamError) as info:
        await api("zoning", provider)

    err = info.value
    assert loopback.requests[0].headers["x-api-key"] == SECRET  # the key was really sent and echoed
    (attempt,) = err.attempts
    assert attempt.outcome is Outcome.ERROR
    assert attempt.error is not None and "[REDACTED]" in attempt.error
    assert_clean(attempt.error, attempt, repr(err.attempts), *error_texts(err))
    assert err.__cause__ is not None
    assert_clean(*error_texts(err.__cause__))
    assert_clean(everything_logged(logs))
    assert_clean(events)
    assert_clean([s.attributes for s in spans.get_finished_spans()])
    assert_clean(repr(provider), str(provider))


async def test_a_key_from_the_environment_is_redacted_too(
    api: SearchAPI, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch, logs: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("KEYED_TEST_API_KEY", ENV_SECRET)
    monkeypatch.setenv("KEYED_TEST_URL", loopback.url)
    loopback.route("/search", echo_key(401, "json"))

    with pytest.raises(UpstreamError) as info:
        await api("zoning", "keyed")

    assert loopback.requests[0].headers["x-api-key"] == ENV_SECRET
    assert_clean(*error_texts(info.value), info.value.attempts, everything_logged(logs))
    assert_clean(repr(KeyedSearch()))
    assert "api_key=set" in repr(KeyedSearch())


async def test_a_key_in_a_dict_spec_is_redacted_and_masked(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/search", echo_key(401, "text"))

    with pytest.raises(UpstreamError) as info:
        await api("zoning", {"name": "keyed", "base_url": loopback.url, "api_key": SECRET})
    assert_clean(*error_texts(info.value))

    with pytest.raises(ConfigError) as bad:  # no name: the message shows the dict, with the key masked
        await api("zoning", {"base_url": loopback.url, "api_key": "anotherSecretValue99", "token": "tok-zzzzzz"})
    assert "anotherSecretValue99" not in str(bad.value) and "tok-zzzzzz" not in str(bad.value)
    assert "'api_key': ***" in str(bad.value)


async def test_a_successful_chain_after_a_leaky_failure_carries_no_key(
    api: SearchAPI, loopback: LoopbackServer
) -> None:
    loopback.route("/bad/search", echo_key(401, "json"))
    loopback.route("/good/search", Json({"results": [{"url": "https://ok.example/"}]}))

    result = await api(
        "zoning",
        [KeyedSearch(base_url=f"{loopback.url}/bad", api_key=SECRET), KeyedSearch(base_url=f"{loopback.url}/good", api_key=SECRET)],
    )

    assert result.attempts[1].outcome is Outcome.OK
    assert_clean(repr(result), result.model_dump_json(), result.attempts[0].error)


async def test_a_vendor_shaped_key_in_an_unexpected_exception_is_redacted(
    api: SearchAPI, logs: pytest.LogCaptureFixture, events: list[Any], spans: InMemorySpanExporter
) -> None:
    def leaky(query: str, options: SearchOptions) -> list[dict[str, str]]:
        raise RuntimeError(f"client misconfigured with {SHAPED}")

    with pytest.raises(UpstreamError) as info:
        await api("zoning", FunctionProvider(leaky))

    err = info.value
    assert err.attempts[0].reason == "unexpected"
    assert "RuntimeError" in (err.attempts[0].error or "")
    assert_clean(*error_texts(err), err.attempts, events, everything_logged(logs))
    assert_clean([s.attributes for s in spans.get_finished_spans()])
    assert "provider leaky raised unexpectedly" in everything_logged(logs)  # logged, with its traceback


async def test_a_registered_key_in_a_provider_error_message_is_redacted(api: SearchAPI) -> None:
    KeyedSearch(api_key=SECRET)  # constructing a provider with a key registers it for redaction

    def fails(query: str, options: SearchOptions) -> list[dict[str, str]]:
        raise ValueError(f"bad key {SECRET}")

    with pytest.raises(UpstreamError) as info:
        await api("zoning", FunctionProvider(fails))

    assert_clean(*error_texts(info.value))
    assert "[REDACTED]" in (info.value.attempts[0].error or "")
