"""One argument behaviour for fetching, as for searching (issue 26, point 4): a misspelt keyword or fetch
provider name, in the core and in both adapters, names the closest valid one, by meaning and case."""

from __future__ import annotations

from typing import Any

import perplexed
import pytest
from perplexed import ConfigError, InvalidRequest, integration

URL = "https://example.com/"


@pytest.mark.parametrize(
    ("given", "closest"),
    [({"providers": "http"}, "provider"), ({"maxchars": 10}, "max_chars"), ({"Max_Chars": 10}, "max_chars")],
)
def test_core_fetch_option_typos(given: dict[str, Any], closest: str) -> None:
    with pytest.raises(InvalidRequest, match=f"did you mean '{closest}'"):
        integration.prepare_fetch(URL, **given)


@pytest.mark.parametrize(("given", "closest"), [("Http", "http"), (["http", "Jina"], "jina"), ("jinna", "jina")])
def test_core_fetch_provider_in_another_case(given: Any, closest: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown fetch provider .*did you mean '{closest}'.*known fetch providers"):
        integration.prepare_fetch(URL, given)


def test_an_unknown_fetch_provider_with_nothing_close_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        integration.prepare_fetch(URL, "zzzz")
    assert "did you mean" not in str(info.value) and "known fetch providers: http" in str(info.value)


@pytest.mark.parametrize(
    ("given", "closest"),
    [({"providers": "http"}, "provider"), ({"max_char": 10}, "max_chars"), ({"provider": "Http"}, "http")],
)
def test_langchain_fetch_tool_typos_are_validation_errors_naming_the_closest(
    given: dict[str, Any], closest: str
) -> None:
    pytest.importorskip("langchain_core")
    from langchain_perplexed import PerplexedFetchTool
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=f"did you mean '{closest}'"):
        PerplexedFetchTool(**given)
    assert PerplexedFetchTool(max_chars=10, name="read").max_chars == 10  # fields still accepted


@pytest.mark.parametrize(("given", "closest"), [({"providers": "http"}, "provider"), ({"provider": "Http"}, "http")])
def test_loader_and_reader_typos(given: dict[str, Any], closest: str) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_perplexed import PerplexedLoader
    from llama_index_perplexed import PerplexedReader

    with pytest.raises((InvalidRequest, ConfigError), match=f"did you mean '{closest}'"):
        PerplexedLoader([URL], **given)
    with pytest.raises((InvalidRequest, ConfigError), match=f"did you mean '{closest}'"):
        PerplexedReader(**given)


@pytest.mark.parametrize("module", ["protego", "trafilatura"])
def test_without_the_fetch_extra_the_error_says_to_install_it(
    module: str, monkeypatch: pytest.MonkeyPatch, loopback: Any
) -> None:
    """robots.txt (protego) and extraction (trafilatura) both come with the fetch extra: without either, the
    attempt's error names the extra to install, not an unexpected ModuleNotFoundError."""
    from pages import article_html
    from perplexed import UpstreamError
    from testkit.loopback import Html, Status

    loopback.route("/article", Html(article_html()))
    loopback.route("/robots.txt", Status(404, b"", content_type="text/plain"))
    monkeypatch.setitem(__import__("sys").modules, module, None)
    with pytest.raises(UpstreamError) as info:
        perplexed.fetch(loopback.url_for("/article"), allow_private=["127.0.0.0/8"])
    assert "pip install 'perplexed-search[fetch]'" in str(info.value)
    assert "unexpected" not in str(info.value)


@pytest.mark.parametrize(
    ("provider", "given", "words"),
    [("jina", {"api_key": "jina-secret-1"}, "provider={'name': 'jina', 'api_key': ...}, or set JINA_API_KEY"),
     (["http", "jina"], {"base_url": "http://127.0.0.1:1"}, "provider={'name': 'jina', 'base_url': ...}")],
)
def test_a_credential_beside_the_url_says_where_it_goes(provider: Any, given: dict[str, str], words: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        integration.prepare_fetch(URL, provider, **given)
    assert words in str(info.value) and "secret-1" not in str(info.value)


@pytest.mark.parametrize("module", ["protego", "trafilatura", "lxml_html_clean"])
def test_in_a_chain_a_member_without_its_package_is_a_config_error_before_any_call(
    module: str, monkeypatch: pytest.MonkeyPatch, loopback: Any
) -> None:
    """Issue 39, #7: in ``["http", "jina"]`` a missing fetch extra used to fail every ``http`` attempt and
    silently move the work to the paid Jina reader. It is a ConfigError at validation, naming the extra, and
    nothing is fetched."""
    from testkit.loopback import Json

    loopback.route("/", Json({"data": {"content": "paid", "title": "t"}}))
    monkeypatch.setitem(__import__("sys").modules, module, None)
    with pytest.raises(ConfigError) as info:
        perplexed.fetch("https://example.com/", provider=["http", {"name": "jina", "base_url": loopback.url,
                                                                  "api_key": "jina-test-key-1234"}])
    assert "pip install 'perplexed-search[fetch]'" in str(info.value) and module in str(info.value)
    assert loopback.requests == []  # the paid member was never called
