"""Pure grounding helpers: source packing under a character budget, the prompt, the search-off policy."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st
from perplexed import Hit, InvalidRequest, SearchOptions
from perplexed.grounding._grounding import (  # private: the pure grounding helpers are the unit under test
    AGENT_PROVIDER,
    SEARCH_OFF,
    TRUNCATION_MARK,
    build_input,
    first_by_id,
    format_sources,
    pack_sources,
    search_off,
    web_search_tool,
)


def _hit(n: int, text: str = "", *, content: str | None = None, url: str | None = None) -> Hit:
    return Hit(id=n, title=f"Title {n}", url=url or f"https://example.org/{n}", snippet=text, content=content)


# --- pack_sources -------------------------------------------------------------------------------------------


def test_pack_under_budget_keeps_everything_and_numbers_from_one() -> None:
    hits = [_hit(7, "alpha"), _hit(9, "beta")]
    packed = pack_sources(hits, 1000)
    assert [h.id for h in packed] == [1, 2]
    assert [h.snippet for h in packed] == ["alpha", "beta"]
    assert hits[0].id == 7  # inputs untouched


def test_pack_cuts_the_longest_first_and_drops_nothing() -> None:
    short = _hit(1, "short snippet")
    page = _hit(2, "s", content="word " * 20_000)  # a markdown page of 100k characters
    medium = _hit(3, "m", content="x" * 3000)
    packed = pack_sources([short, page, medium], 10_000)
    assert [h.id for h in packed] == [1, 2, 3]
    assert packed[0].text == "short snippet"  # short text keeps every character
    assert packed[2].text == "x" * 3000  # under the common cap: untouched
    assert packed[1].text.endswith(TRUNCATION_MARK.strip())
    assert packed[1].snippet == "s"  # content was cut, the snippet is kept
    assert sum(len(h.text) for h in packed) <= 10_000


def test_pack_two_long_pages_share_the_budget() -> None:
    a = _hit(1, content="a" * 50_000)
    b = _hit(2, content="b" * 80_000)
    packed = pack_sources([a, b], 24_000)
    lengths = [len(h.text) for h in packed]
    assert sum(lengths) <= 24_000
    assert abs(lengths[0] - lengths[1]) <= 1  # both cut to the same cap
    assert packed[0].text.startswith("aaa") and packed[1].text.startswith("bbb")


def test_pack_none_disables_the_cap_and_bad_values_are_invalid() -> None:
    big = _hit(1, content="z" * 100_000)
    assert pack_sources([big], None)[0].text == big.text
    with pytest.raises(InvalidRequest) as info:
        pack_sources([big], -1)
    assert info.value.param == "max_source_chars"


def test_pack_zero_budget_keeps_titles_and_urls() -> None:
    packed = pack_sources([_hit(1, "abc"), _hit(2, "def")], 0)
    assert [h.text for h in packed] == ["", ""]
    assert "[1] Title 1" in format_sources(packed) and "https://example.org/2" in format_sources(packed)


@given(
    st.lists(st.text(alphabet="ab c\n", max_size=400), min_size=1, max_size=12),
    st.integers(min_value=0, max_value=3000),
)
def test_pack_property_budget_order_and_prefixes(texts: list[str], budget: int) -> None:
    hits = [_hit(i, content=t or None, url=f"https://e.org/{i}") for i, t in enumerate(texts, start=1)]
    packed = pack_sources(hits, budget)
    assert [h.id for h in packed] == list(range(1, len(hits) + 1))
    assert [h.url for h in packed] == [h.url for h in hits]
    total = sum(len(h.text) for h in hits)
    assert sum(len(h.text) for h in packed) <= max(budget, 0) or total <= budget
    for before, after in zip(hits, packed, strict=True):
        if after.text != before.text:  # a cut text is a prefix of the original (plus the mark)
            assert before.text.startswith(after.text.removesuffix(TRUNCATION_MARK))
            assert len(after.text) < len(before.text)
    # the longest are cut first: an untouched text is never longer than a cut one
    cut = [len(b.text) for b, a in zip(hits, packed, strict=True) if a.text != b.text]
    kept = [len(b.text) for b, a in zip(hits, packed, strict=True) if a.text == b.text]
    if cut and kept:
        assert max(kept) <= min(cut)


# --- prompt -------------------------------------------------------------------------------------------------


def test_build_input_numbers_sources_then_the_question() -> None:
    hits = pack_sources(
        [
            Hit(title="Zoning", url="https://a.example/z", snippet="Setbacks are 20 ft.", published=date(2025, 3, 1)),
            Hit(title="", url="https://b.example/", snippet="Side yards 5 ft."),
        ]
    )
    text = build_input("What are typical zoning setbacks?", hits)
    assert text.index("[1] Zoning") < text.index("[2] https://b.example/") < text.index("Question:")
    assert "URL: https://a.example/z" in text and "Published: 2025-03-01" in text
    assert text.rstrip().endswith("Question: What are typical zoning setbacks?")


def test_build_input_without_sources() -> None:
    assert "No sources" in build_input("q?", [])


# --- search-off policy ------------------------------------------------------------------------------------


def test_search_off_preset_effort_profile_send_max_tool_calls_zero() -> None:
    assert search_off({"preset": "fast"}) == {"max_tool_calls": 0}
    assert search_off({"effort": "low"}) == {"max_tool_calls": 0}
    assert search_off({"profile": {"type": "custom", "id": "p"}}) == {"max_tool_calls": 0}
    assert search_off({"model": "openai/gpt-5.1", "preset": "fast"}) == {"max_tool_calls": 0}


def test_search_off_bare_model_sends_nothing() -> None:
    assert search_off({"model": "openai/gpt-5.1"}) == {}
    assert search_off({"models": ["a/b", "c/d"]}) == {}


def test_search_off_refuses_search_tools() -> None:
    with pytest.raises(InvalidRequest) as info:
        search_off({"model": "m/x", "tools": [{"type": "web_search"}]})
    assert info.value.param == "tools" and AGENT_PROVIDER in str(info.value)


def test_search_off_policy_is_one_editable_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SEARCH_OFF, "model", {"tool_choice": "none"})
    assert search_off({"model": "m/x"}) == {"tool_choice": "none"}


# --- web_search filters ------------------------------------------------------------------------------------


def test_web_search_tool_maps_chain_filters() -> None:
    opts = SearchOptions.build(
        max_results=8,
        include_domains=["nature.com"],
        exclude_domains=["reddit.com"],
        published_after="2025-01-01",
        published_before=date(2025, 3, 31),
        country="us",
        language="en",
    )
    tool = web_search_tool(opts)
    assert tool["type"] == "web_search"
    assert tool["max_results"] == 8
    assert tool["filters"]["search_domain_filter"] == ["nature.com", "-reddit.com"]
    assert tool["filters"]["search_after_date_filter"] == date(2025, 1, 1)
    assert tool["user_location"] == {"country": "US"}
    assert "language" not in str(tool)


def test_web_search_tool_defaults_send_a_bare_tool() -> None:
    assert web_search_tool(SearchOptions.build()) == {"type": "web_search"}
    assert web_search_tool(SearchOptions.build(recency="week"))["filters"] == {"search_recency_filter": "week"}
    assert web_search_tool(SearchOptions.build(max_results=100))["max_results"] == 50


def test_first_by_id_keeps_the_first_result() -> None:
    a, b, a2 = _hit(1, "first"), _hit(2, "two"), _hit(1, "again")
    assert [h.snippet for h in first_by_id([a, b, a2])] == ["first", "two"]
