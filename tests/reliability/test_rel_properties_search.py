"""Issue 9, property-based tests on the public search inputs: queries, option values, provider specs and
provider response bodies raise only documented exceptions (:class:`perplexed.PerplexedError` subclasses).

No network: calls go through ``httpx.MockTransport`` (a provider's ``transport=``) or function providers;
provider parsers are driven sans-io with arbitrary JSON and arbitrary bytes.
"""

from __future__ import annotations

import asyncio
import json
import unicodedata
from datetime import date, datetime
from typing import Any

import httpx
import perplexed
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from perplexed import InvalidRequest, Outcome, PerplexedError, ProviderError, Result, UpstreamError
from perplexed.engine.chain import prepare  # private: argument validation without a search, property-tested
from perplexed.providers import available, get

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

# --- strategies ---------------------------------------------------------------------------------------------

#: text from every corner: control characters, surrogates excluded (not encodable), other scripts, emoji
any_text = st.text(st.characters(codec=None, exclude_categories=["Cs"]), max_size=60)
scripts = st.sampled_from(
    ["zoning 規制 setbacks", "تنظيم المناطق", "зонирование", "🏠🏗️", "\u200b\u200d", "a\u0301"]
)
queries = st.one_of(
    any_text,
    scripts,
    st.text(st.sampled_from("\x00\x01\x7f\t\n\r \u0085\u2028"), max_size=20),  # control/space only
    st.builds(lambda c, n: c * n, st.sampled_from(["a", "é", "字", " ", "\x00"]), st.integers(3990, 4010)),
    st.builds(lambda n: "x" * n, st.integers(100_000, 200_000)),  # huge
    st.none(),
    st.integers(),
    st.binary(max_size=20),
    st.lists(st.text(max_size=5), max_size=3),
)

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), any_text
)
json_values = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(any_text, children, max_size=5)
    ),
    max_leaves=25,
)
option_values = st.one_of(
    json_values,
    st.dates(),
    st.datetimes(),
    st.sampled_from(
        ["day", "week", "month", "year", "off", "moderate", "strict", "en", "en-US", "all", "auto"]
    ),
    st.sampled_from(
        ["example.com", "*.example.com", "example.com/blog", "https://www.example.com/", "bad domain"]
    ),
    st.lists(st.sampled_from(["example.com", "", "a b", "ex*ample.org", "https://x.org/p"]), max_size=4),
    st.sampled_from([float("nan"), float("inf"), -1, 0, 10**12, True, False]),
)
OPTION_NAMES = [
    "max_results",
    "include_domains",
    "exclude_domains",
    "recency",
    "published_after",
    "published_before",
    "language",
    "country",
    "safe_search",
    "provider_timeout_ms",
    "deadline_ms",
    "fallback_on",
]


def _fn_provider(query: str, options: Any) -> list[dict[str, str]]:
    return [{"url": "https://example.com/a", "title": "A"}]


provider_names = st.sampled_from(
    [*available(), "nope", "", " ", "searxng,", ",", "searxng,,tavily", "SEARXNG"]
)
provider_specs = st.recursive(
    st.one_of(
        provider_names,
        st.dictionaries(
            st.sampled_from(["name", "provider", "base_url", "api_key", "cost", "max_results", "bogus"]),
            option_values,
            max_size=4,
        ),
        st.builds(lambda n: {"name": n, "base_url": "http://127.0.0.1:9"}, provider_names),
        st.just(_fn_provider),
        st.integers(),
        st.floats(),
        st.binary(max_size=5),
    ),
    lambda children: st.lists(children, max_size=3),
    max_leaves=6,
)


# --- queries, options, specs --------------------------------------------------------------------------------


@SETTINGS
@given(query=queries)
def test_any_query_is_accepted_or_rejected_as_invalid_request(query: Any) -> None:
    try:
        search = prepare(query, _fn_provider)
    except InvalidRequest as exc:
        assert exc.param == "query"
        return
    assert isinstance(search.query, str) and search.query == search.query.strip()
    assert 0 < len(search.query) <= 4000
    assert not any(unicodedata.category(ch) == "Cc" for ch in search.query)  # control characters cleaned


@SETTINGS
@given(query=st.one_of(any_text, scripts).filter(lambda q: q.strip()))
def test_accepted_queries_reach_the_provider_intact_through_search(query: str) -> None:
    seen: list[str] = []

    def spy(q: str, options: Any) -> list[dict[str, str]]:
        seen.append(q)
        return [{"url": "https://example.com/x"}]

    try:
        result = perplexed.search(query, spy)
    except InvalidRequest:
        return
    assert isinstance(result, Result) and seen == [result.query]


@SETTINGS
@given(options=st.dictionaries(st.sampled_from(OPTION_NAMES), option_values, max_size=4))
def test_any_option_values_raise_only_documented_errors(options: dict[str, Any]) -> None:
    try:
        prepare("zoning", _fn_provider, **options)
    except PerplexedError as exc:
        assert isinstance(exc, InvalidRequest | perplexed.ConfigError), type(exc)


@SETTINGS
@given(spec=provider_specs)
def test_any_provider_spec_raises_only_documented_errors(spec: Any) -> None:
    try:
        prepared = prepare("zoning", spec)
    except PerplexedError:
        return
    assert prepared.providers


@SETTINGS
@given(
    spec=provider_specs, options=st.dictionaries(st.sampled_from(OPTION_NAMES[:9]), option_values, max_size=2)
)
def test_calls_with_any_spec_and_options_raise_only_documented_errors(
    spec: Any, options: dict[str, Any]
) -> None:
    """Through the engine: every provider here points at a closed port or is a function."""
    try:
        perplexed.search("zoning", spec, provider_timeout_ms=2_000, deadline_ms=4_000, **options)
    except PerplexedError:
        pass


# --- provider bodies: sans-io parsers and the engine --------------------------------------------------------

PAID_OR_FREE = [n for n in available() if n != "local"]


def _provider(name: str, transport: httpx.AsyncBaseTransport | None = None) -> Any:
    return get(name)(base_url="http://provider.test", api_key="k-test-not-a-real-key", transport=transport)


def _parse(name: str, status: int, content: bytes, content_type: str) -> Any:
    """Drive a provider's flow sans-io: build its request, answer every request it sends with this body."""
    provider = _provider(name)
    options = prepare("zoning", provider).options
    flow = provider.flow("zoning", options)
    request = next(flow)
    for _ in range(5):  # multi-step providers
        response = httpx.Response(
            status, content=content, headers={"content-type": content_type}, request=request
        )
        try:
            request = flow.send(response)
        except StopIteration as stop:
            return stop.value
    return None


@SETTINGS
@given(
    name=st.sampled_from(PAID_OR_FREE),
    body=json_values,
    status=st.sampled_from([200, 200, 200, 201, 400, 429, 500]),
)
def test_provider_parsers_classify_any_json(name: str, body: Any, status: int) -> None:
    content = json.dumps(body, allow_nan=True).encode()
    try:
        answer = _parse(name, status, content, "application/json")
    except ProviderError as exc:
        assert exc.reason in {
            "auth",
            "payment",
            "rate_limited",
            "bad_request",
            "not_found",
            "upstream",
            "malformed",
            "soft_failure",
            "body_too_large",
            "connection",
            "config",
        }, exc.reason
        return
    if answer is not None:
        assert all(isinstance(h.url, str) for h in answer.hits)


@st.composite
def provider_shaped(draw: st.DrawFn) -> Any:
    """JSON close to what providers really send: a results/data/web list of hit-ish objects, odd values."""
    hit = st.dictionaries(
        st.sampled_from(
            [
                "url",
                "link",
                "title",
                "content",
                "snippet",
                "description",
                "publishedDate",
                "published_date",
                "date",
                "score",
                "metadata",
                "markdown",
                "age",
                "name",
            ]
        ),
        json_values,
        max_size=6,
    )
    hits = st.lists(hit, max_size=4)
    key = draw(st.sampled_from(["results", "data", "web", "organic", "hits", "sources"]))
    inner = draw(st.one_of(hits, st.fixed_dictionaries({"web": hits, "news": hits}), json_values))
    extra = draw(
        st.dictionaries(
            st.sampled_from(
                ["usage", "success", "error", "creditsUsed", "costDollars", "unresponsive_engines", "warning"]
            ),
            json_values,
            max_size=3,
        )
    )
    return {key: inner, **extra}


@SETTINGS
@given(name=st.sampled_from(PAID_OR_FREE), body=provider_shaped())
def test_provider_parsers_classify_provider_shaped_json(name: str, body: Any) -> None:
    try:
        _parse(name, 200, json.dumps(body, allow_nan=True).encode(), "application/json")
    except ProviderError:
        pass


@SETTINGS
@given(
    name=st.sampled_from(PAID_OR_FREE),
    content=st.one_of(
        st.binary(max_size=200), st.sampled_from([b"", b"<html>", b"\xff\xfe{", b"null", b"[]", b'"x"'])
    ),
    content_type=st.sampled_from(
        ["application/json", "text/html", "text/plain", "", "application/json; charset=latin-1"]
    ),
    status=st.integers(100, 599),
)
def test_provider_parsers_classify_any_bytes_and_status(
    name: str, content: bytes, content_type: str, status: int
) -> None:
    try:
        _parse(name, status, content, content_type)
    except ProviderError:
        pass


@SETTINGS
@given(name=st.sampled_from(PAID_OR_FREE), body=st.one_of(json_values, provider_shaped()))
def test_the_engine_never_sees_an_unexpected_provider_error(name: str, body: Any) -> None:
    """Through asearch with a MockTransport: every body ends as ok, empty or a classified error — a parser
    crash would surface as reason ``unexpected``."""
    content = json.dumps(body, allow_nan=True).encode()
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, content=content, headers={"content-type": "application/json"})
    )

    async def go() -> None:
        try:
            result = await perplexed.asearch("zoning", _provider(name, transport), provider_timeout_ms=5_000)
            attempts = result.attempts
        except UpstreamError as exc:
            attempts = exc.attempts
        (attempt,) = attempts
        assert attempt.reason != "unexpected", attempt.error
        assert attempt.outcome in (Outcome.OK, Outcome.EMPTY, Outcome.ERROR)

    asyncio.run(go())


def test_strategies_cover_the_edge_cases() -> None:
    """The strategies above do produce the inputs the issue names (not a vacuous search space)."""
    assert prepare("a" * 4000, _fn_provider).query == "a" * 4000
    with pytest.raises(InvalidRequest):
        prepare("a" * 4001, _fn_provider)
    with pytest.raises(InvalidRequest):
        prepare("\x00\x01 \t", _fn_provider)
    assert prepare("zoning\x00setbacks", _fn_provider).query == "zoning setbacks"
    with pytest.raises(InvalidRequest):
        prepare("q", _fn_provider, published_after=date(2024, 2, 1), published_before=datetime(2024, 1, 1))
