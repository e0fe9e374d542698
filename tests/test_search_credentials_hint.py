"""``api_key=`` / ``base_url=`` beside a query (as a provider's "pass api_key=..." error suggests) says where
they go: the provider's spec or its variable, naming the chain member that takes one."""

from __future__ import annotations

from typing import Any

import perplexed
import pytest
from perplexed import InvalidRequest


@pytest.mark.parametrize(
    ("provider", "given", "spec", "variable"),
    [
        ("tavily", {"api_key": "tvly-secret-123"}, "provider={'name': 'tavily', 'api_key': ...}", "TAVILY_API_KEY"),
        (["local", "searxng"], {"base_url": "http://127.0.0.1:1"}, "provider={'name': 'searxng', 'base_url': ...}",
         "SEARXNG_URL"),
        (["local", "exa"], {"api_key": "exa-secret-123"}, "provider={'name': 'exa', 'api_key': ...}", "EXA_API_KEY"),
    ],
)
def test_a_credential_beside_the_query_says_where_it_goes(provider: Any, given: dict[str, str], spec: str,
                                                            variable: str) -> None:
    for call in (perplexed.search, perplexed.answer):
        with pytest.raises(InvalidRequest) as info:
            call("q", provider=provider, **given)
        assert spec in str(info.value) and f"set {variable}" in str(info.value)
        assert "secret-123" not in str(info.value)  # the value given is never echoed


def test_a_chain_where_no_member_takes_one_keeps_the_plain_message() -> None:
    with pytest.raises(InvalidRequest, match="nor one of local's own options"):
        perplexed.search("q", provider="local", api_key="k")


def test_the_spec_the_hint_shows_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEARXNG_URL", raising=False)
    with pytest.raises(perplexed.UpstreamError) as info:  # reached the URL given in the spec (nothing listens)
        perplexed.search("q", provider={"name": "searxng", "base_url": "http://127.0.0.1:9"})
    assert "needs a base_url" not in str(info.value)
