"""Issue 12, Agent API client: redirects are never followed, arguments are checked (typed errors naming the
argument), undocumented exceptions never escape, error bodies are redacted before they are cut.

Each test here failed on the code before its fix (raw httpx / TypeError / ExceptionGroup / UnicodeEncodeError
escaping, redirects followed with the key, a ``{}`` accepted as a Response, a key cut before redaction).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import math
import time
from typing import Any

import httpx
import pytest
from perplexed import APIError, ConfigError, InvalidRequest, PerplexedError
from perplexed.agent import AgentClient, APIStatusError, AsyncAgentClient, MalformedResponseError
from testkit.loopback import Json, Raw, Status, serve

KEY = "pplx-hardening-test-key-0123456789abcdef"
DONE = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}],
}


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _mock(handler: Any, **kwargs: Any) -> AgentClient:
    return AgentClient(
        api_key=KEY,
        base_url="https://api.test",
        transport=httpx.MockTransport(handler),
        max_retries=0,
        **kwargs,
    )


# --- section 4: arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [123, ["pplx-a", "pplx-b"], 1.5, b"pplx-bytes-key", {"k": "v"}])
def test_api_key_of_the_wrong_type_is_a_config_error(key: object) -> None:
    with pytest.raises(ConfigError, match="api_key"):
        AgentClient(api_key=key)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="api_key"):
        AsyncAgentClient(api_key=key)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad", ["pplx-abcdefgh12345678\u00a0", "pplx-abc defgh12345678", "pplx-ключ-12345678"]
)
def test_a_key_that_cannot_be_sent_is_a_config_error_that_does_not_show_it(bad: str) -> None:
    with pytest.raises(ConfigError, match="api_key") as info:
        AgentClient(api_key=bad)
    assert bad not in str(info.value) and bad not in repr(info.value) and "12345678" not in str(info.value)


def test_a_bad_key_from_the_environment_fails_at_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = "pplx-from-env-12345678\u00a0x"
    monkeypatch.setenv("PERPLEXITY_API_KEY", bad)
    calls: list[httpx.Request] = []
    client = AgentClient(base_url="https://api.test", transport=httpx.MockTransport(calls.append))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="PERPLEXITY_API_KEY") as info:
        client.create(preset="fast", input="q")
    assert "from-env" not in str(info.value) and not calls


@pytest.mark.parametrize("url", [123, 1.0, ["https://api.test"], b"https://api.test"])
def test_base_url_of_the_wrong_type_is_a_config_error(url: object) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        AgentClient(api_key=KEY, base_url=url)  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://127.0.0.1:0", "http://[::1", "https://"])
def test_an_impossible_base_url_is_a_config_error_not_an_exception_group(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        AgentClient(api_key=KEY, base_url=url)
    monkeypatch.setenv("PERPLEXITY_BASE_URL", url)
    with pytest.raises(ConfigError, match="base_url"):
        AgentClient(api_key=KEY)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"timeout": "10"}, "timeout"),
        ({"timeout": math.inf}, "timeout"),
        ({"timeout": math.nan}, "timeout"),
        ({"timeout": -1}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"stream_timeout": math.inf}, "stream_timeout"),
        ({"stream_timeout": "5"}, "stream_timeout"),
        ({"max_retries": "2"}, "max_retries"),
        ({"max_retries": 2.0}, "max_retries"),
        ({"max_retries": -1}, "max_retries"),
        ({"connect_timeout": math.nan}, "connect_timeout"),
        ({"max_retry_after": math.inf}, "max_retry_after"),
        ({"max_stream_resumes": "5"}, "max_stream_resumes"),
        ({"api_path": 5}, "api_path"),
        ({"default_headers": {"x": 1}}, "default_headers"),
        ({"transport": object()}, "transport"),
    ],
)
def test_client_arguments_are_checked(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        AgentClient(api_key=KEY, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"timeout": "1"}, "timeout"),
        ({"timeout": math.inf}, "timeout"),
        ({"timeout": math.nan}, "timeout"),
        ({"stream_timeout": math.nan}, "stream_timeout"),
        ({"extra_headers": ["x"]}, "extra_headers"),
    ],
)
@pytest.mark.parametrize("call", ["create", "stream"])
def test_call_arguments_are_checked_before_sending(kwargs: dict[str, Any], name: str, call: str) -> None:
    calls: list[httpx.Request] = []
    client = _mock(lambda r: calls.append(r) or httpx.Response(200, json=DONE))
    with pytest.raises(ConfigError, match=name):
        if call == "create":
            client.create(preset="fast", input="q", **kwargs)
        else:
            client.stream(preset="fast", input="q", **kwargs)
    assert not calls


@pytest.mark.parametrize("method", ["retrieve", "cancel", "wait"])
@pytest.mark.parametrize("value", ["1", math.nan, math.inf, -1.0])
def test_control_call_timeouts_are_checked(method: str, value: object) -> None:
    calls: list[httpx.Request] = []
    client = _mock(lambda r: calls.append(r) or httpx.Response(200, json=DONE))
    start = time.monotonic()
    with pytest.raises(ConfigError, match="timeout"):
        getattr(client, method)("resp_1", timeout=value)
    assert time.monotonic() - start < 5 and not calls  # wait(timeout=nan) used to poll for 30 s


def test_wait_poll_intervals_are_checked() -> None:
    client = _mock(lambda r: httpx.Response(200, json=DONE))
    with pytest.raises(ConfigError, match="poll_interval"):
        client.wait("resp_1", poll_interval=math.nan)
    with pytest.raises(ConfigError, match="max_poll_interval"):
        client.wait("resp_1", max_poll_interval="10")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"input": "\ud800"}, "input"),
        ({"input": "q", "instructions": "a \udfff b"}, "instructions"),
        ({"input": "q", "extra_body": {"metadata": {"x": math.nan}}}, "metadata"),
    ],
)
@pytest.mark.parametrize("call", ["create", "stream"])
def test_a_body_that_cannot_be_encoded_is_an_invalid_request(
    fields: dict[str, Any], param: str, call: str
) -> None:
    calls: list[httpx.Request] = []
    client = _mock(lambda r: calls.append(r) or httpx.Response(200, json=DONE))
    with pytest.raises(InvalidRequest) as info:
        getattr(client, call)(preset="fast", **fields)
    assert info.value.param == param and not calls


@pytest.mark.parametrize("body", [{}, {"object": "response"}, {"id": "resp_1"}, {"status": "completed"}, []])
def test_a_200_that_is_not_a_response_is_a_malformed_response_error(body: Any) -> None:
    client = _mock(lambda r: httpx.Response(200, json=body))
    with pytest.raises(MalformedResponseError):
        client.create(preset="fast", input="q")
    with pytest.raises(MalformedResponseError):
        client.retrieve("resp_1")


def test_a_body_that_is_not_json_is_a_malformed_response_error() -> None:
    client = _mock(lambda r: httpx.Response(200, content=b"<html>portal</html>"))
    with pytest.raises(MalformedResponseError) as info:
        client.create(preset="fast", input="q")
    assert isinstance(info.value, APIError) and info.value.body == "<html>portal</html>"


# --- raw httpx errors never escape -------------------------------------------------------------------------

NOT_GZIP = b"this is not gzip at all" * 10


@pytest.mark.parametrize("call", ["create", "stream", "retrieve", "wait"])
def test_a_body_claiming_gzip_that_is_not_is_a_documented_error(call: str) -> None:
    ctype = "text/event-stream" if call == "stream" else "application/json"
    with serve() as api:
        api.route("*", Status(200, NOT_GZIP, headers={"Content-Encoding": "gzip"}, content_type=ctype))
        client = AgentClient(api_key=KEY, base_url=api.url, max_retries=0, timeout=5)
        with pytest.raises(MalformedResponseError, match="Content-Encoding"):
            if call == "create":
                client.create(preset="fast", input="q")
            elif call == "stream":
                list(client.stream(preset="fast", input="q"))
            else:
                getattr(client, call)("resp_1")


def test_real_gzip_still_works() -> None:
    body = gzip.compress(json.dumps(DONE).encode())
    with serve() as api:
        api.route(
            "*", Status(200, body, headers={"Content-Encoding": "gzip"}, content_type="application/json")
        )
        assert AgentClient(api_key=KEY, base_url=api.url).create(preset="fast", input="q").output_text == "hi"


# --- section 2: redirects -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("call", ["create", "stream", "retrieve", "wait", "cancel", "resume"])
def test_a_redirect_is_never_followed_and_names_only_the_target_origin(status: int, call: str) -> None:
    with serve() as other, serve() as api:
        other.route("*", Json(DONE))
        target = other.url + "/steal/path?key=secret-query"
        api.route("*", Status(status, b"", headers={"Location": target}))
        client = AgentClient(api_key=KEY, base_url=api.url, max_retries=2, timeout=5)
        with pytest.raises(APIStatusError) as info:
            if call == "create":
                client.create(preset="fast", input="q")
            elif call == "stream":
                list(client.stream(preset="fast", input="q"))
            elif call == "resume":
                list(client.resume("resp_1", starting_after=3))
            else:
                getattr(client, call)("resp_1")
        err = info.value
        assert err.reason == "redirect" and err.status == status
        port = httpx.URL(other.url).port
        assert f"http://127.0.0.1:{port}" in str(err)
        assert "steal" not in str(err) and "secret-query" not in str(err)
        assert other.requests == []  # the other origin never saw the request (nor the key)
        assert len(api.requests) == 1  # a redirect is not retried


def test_a_redirect_loop_is_one_redirect_error_not_too_many_redirects() -> None:
    with serve() as api:
        api.route("*", Status(302, b"", headers={"Location": "/v1/agent"}))
        with pytest.raises(APIStatusError) as info:
            AgentClient(api_key=KEY, base_url=api.url, max_retries=0).create(preset="fast", input="q")
    assert info.value.reason == "redirect" and f"{api.url}" in str(info.value)


def test_an_http_client_that_follows_redirects_is_not_followed_either() -> None:
    hits: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        hits.append(str(request.url))
        if request.url.host == "api.test":
            return httpx.Response(307, headers={"location": "https://evil.test:8443/x?k=1"})
        return httpx.Response(200, json=DONE)

    async def main() -> APIStatusError:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler), follow_redirects=True) as http:
            client = AsyncAgentClient(api_key=KEY, base_url="https://api.test", http_client=http)
            with pytest.raises(APIStatusError) as info:
                await client.create(preset="fast", input="q")
            return info.value

    err = asyncio.run(main())
    assert err.reason == "redirect" and "https://evil.test:8443" in str(err) and "k=1" not in str(err)
    assert hits == ["https://api.test/v1/agent"]


def test_reason_defaults_to_none_on_api_errors() -> None:
    client = _mock(lambda r: httpx.Response(503, json={"error": {"message": "down"}}))
    with pytest.raises(APIStatusError) as info:
        client.create(preset="fast", input="q")
    assert info.value.reason is None


# --- section 3: redact first, then cut ----------------------------------------------------------------------


@pytest.mark.parametrize("offset", [470, 480, 490, 495, 499])
def test_an_echoed_key_at_the_cut_is_redacted_before_the_cut(offset: int) -> None:
    key = "Zq7" + "x9K2mP4vR8sT1wY6" * 2  # no recognisable prefix: only the registered secret matches
    text = "e" * offset + key + " tail"

    client = AgentClient(  # the client's own key, echoed back by the API: registered as a secret by the client
        api_key=key,
        base_url="https://api.test",
        transport=httpx.MockTransport(
            lambda r: httpx.Response(500, content=text.encode(), headers={"content-type": "text/plain"})
        ),
        max_retries=0,
    )
    with pytest.raises(APIError) as info:
        client.create(preset="fast", input="q")
    err = info.value
    for where in (str(err), repr(err), str(err.body)):
        for i in range(len(key) - 7):
            assert key[i : i + 8] not in where, (where[-80:], key[i : i + 8])


# --- a caught exception is not edited in place; close() releases streams ----------------------------------


def test_the_timeout_note_goes_on_a_copy() -> None:
    from perplexed.agent._outcome import (  # private: error mapping of hostile bodies, tested without I/O
        error_from_response,
        with_note,
    )

    original = error_from_response(503, b'{"error": {"message": "busy"}}')
    noted = with_note(original, "retrying it ran past the 1s timeout")
    assert str(original) == "busy" and original.args == ("busy",)
    assert str(noted) == "busy (retrying it ran past the 1s timeout)" and type(noted) is type(original)
    assert noted.status == 503 and noted.__cause__ is original


def test_close_releases_the_streams_still_open() -> None:
    events = [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {"id": "resp_1", "status": "in_progress"},
        },
        {"type": "response.output_text.delta", "sequence_number": 1, "delta": "a", "output_index": 0},
    ]
    with serve() as api:
        # two events, then the server holds the connection open (no terminal event): a stream left open
        api.route("*", Raw(_sse(events) + b": keep-alive\n\n" * 2, content_type="text/event-stream"))
        with AgentClient(api_key=KEY, base_url=api.url, timeout=30) as client:
            stream = client.stream(preset="fast", input="q")
            first = next(stream)
            assert first.type == "response.created"
        # leaving the with block closed the stream: iteration is over, no error
        assert list(stream) == []


def test_errors_are_documented_perplexed_errors() -> None:
    assert issubclass(MalformedResponseError, APIError) and issubclass(MalformedResponseError, PerplexedError)


def test_accept_encoding_names_only_bounded_decoders_even_with_a_callers_http_client() -> None:
    from perplexed.net._decode import accept_encoding  # private: which encodings this install can decode

    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["accept-encoding"])
        return httpx.Response(200, json=DONE)

    async def main() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            await AsyncAgentClient(api_key=KEY, base_url="https://api.test", http_client=http).create(
                preset="fast", input="q"
            )

    asyncio.run(main())
    assert seen == [accept_encoding()] and "identity" not in seen[0]


def test_aclose_while_another_task_reads_a_stream_does_not_raise() -> None:
    from testkit.loopback import Drip

    events = [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {"id": "resp_1", "status": "in_progress"},
        },
        {"type": "response.completed", "sequence_number": 1, "response": DONE},
    ]

    async def main() -> list[str]:
        with serve() as api:
            api.route("*", Drip(_sse(events), interval=0.2, content_type="text/event-stream"))
            client = AsyncAgentClient(api_key=KEY, base_url=api.url, timeout=10)
            stream = client.stream(preset="fast", input="q")
            seen: list[str] = []

            async def read() -> None:
                async for event in stream:
                    seen.append(event.type)

            reader = asyncio.create_task(read())
            await asyncio.sleep(0.3)  # the reader is inside the stream, waiting for bytes
            await client.aclose()  # must not raise "asynchronous generator is already running"
            await asyncio.wait_for(reader, 10)
            return seen

    assert asyncio.run(main())[-1] == "response.completed"
