"""Chinese, Japanese and Korean substring search in the local index (issue 17): one- and two-character
queries, longer ones, ranked sensibly together with other languages."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import perplexed
import pytest
from perplexed.extract._doctext import cjk_terms  # private: the CJK term splitter, table-style
from perplexed.index import fts_query, query_index  # private: ranks and FTS syntax, below the provider
from perplexed.providers import Local
from perplexed.providers.local import build_index


@pytest.fixture
def index(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    files = {
        "companion.md": "# 伴生植物\n\n番茄和罗勒是很好的伴生植物。\n",
        "tomato-en.md": "# Tomatoes\n\nTomato plants like sun and basil nearby.\n",
        "tomato-both.md": "# 番茄 tomato\n\n番茄 (tomato) 需要阳光。番茄的果实是红色的。\n",
        "tokyo.md": "# 東京\n\n東京タワーは高いです。ひらがなとカタカナ。\n",
        "seoul.md": "# 서울\n\n서울에서 만나요. 한국어 문서입니다.\n",
        "python.md": "# Python编程入门\n\n学习Python编程很有趣。\n",
        "unrelated.md": "# 天气\n\n今天天气很好。\n",
    }
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    path = tmp_path / "index.db"
    report = build_index(docs, path)
    assert report.errors == [] and report.documents == len(files)
    return path


def names(index: Path, query: str) -> list[str]:
    return [Path(r.path).name for r in query_index(index, query)]


def test_the_issue_example_two_characters_find_the_document(index: Path) -> None:
    assert names(index, "番茄")[0] in {"companion.md", "tomato-both.md"}
    assert set(names(index, "番茄")) == {"companion.md", "tomato-both.md"}
    (row,) = [r for r in query_index(index, "罗勒") if r.path.endswith("companion.md")]
    assert "番茄和罗勒是很好的伴生植物" in row.snippet and "罗勒" in row.matches


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("罗", {"companion.md"}),  # one character
        ("勒是很好", {"companion.md"}),  # a substring crossing the "words"
        ("伴生植物", {"companion.md"}),
        ("タワー", {"tokyo.md"}),  # Katakana
        ("京タ", {"tokyo.md"}),  # Han + Katakana
        ("ひらがな", {"tokyo.md"}),
        ("서울", {"seoul.md"}),  # Hangul
        ("국어", {"seoul.md"}),
        ("编程", {"python.md"}),
        ("Python", {"python.md"}),  # Latin letters glued to Han
        ("天气", {"unrelated.md"}),
    ],
)
def test_any_substring_is_found(index: Path, query: str, expected: set[str]) -> None:
    found = names(index, query)
    assert set(found[: len(expected)]) == expected  # first; a longer query also finds partial matches, below
    if len(query) <= 2:
        assert set(found) == expected


def test_a_string_that_is_not_a_substring_is_not_found(index: Path) -> None:
    assert names(index, "茄罗") == []  # both characters occur, never next to each other
    assert names(index, '"番茄罗勒"') == []  # a quoted phrase must occur as it is


def test_a_longer_query_ranks_the_exact_substring_first_and_finds_partial_ones(index: Path) -> None:
    found = names(index, "番茄和罗勒")
    assert found[0] == "companion.md"
    assert "tomato-both.md" in found  # shares 番茄, ranked below
    assert names(index, "番茄的伴生植物")[0] == "companion.md"  # no exact substring: most bigrams wins


def test_mixed_languages_rank_together(index: Path) -> None:
    found = names(index, "番茄 tomato")
    assert found[0] == "tomato-both.md"  # matches both terms
    assert set(found) >= {"companion.md", "tomato-en.md", "tomato-both.md"}
    # more occurrences and a title match rank higher
    assert names(index, "番茄")[0] == "tomato-both.md"


def test_hits_in_a_chain_carry_a_cjk_snippet(index: Path) -> None:
    result = perplexed.search("伴生", provider=Local(index=index))
    assert result.hits[0].url.endswith("companion.md")
    assert "伴生" in result.hits[0].snippet and result.hits[0].raw["matches"] == ["伴生"]


def test_cjk_terms_are_bigrams_then_unigrams() -> None:
    assert cjk_terms("番茄和") == "番茄 茄和 番 茄 和"
    assert cjk_terms("Python编程!") == "Python 编程 编 程"
    assert cjk_terms("plain English text") == ""


@pytest.mark.parametrize(
    "text", ["番", "番茄", '"番茄" OR NEAR(', "番茄*", "{cjk_body}: 番", "東京タワー^2 - AND", "𠀀𠀁", "ー"]
)
def test_hostile_cjk_queries_never_raise(index: Path, text: str) -> None:
    assert fts_query(text) is not None
    query_index(index, text)


def test_fts5_agrees_that_the_bigram_phrase_is_a_substring_test(tmp_path: Path) -> None:
    with sqlite3.connect(":memory:") as conn:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(cjk_title, cjk_body)")
        conn.execute("INSERT INTO t VALUES ('', ?)", (cjk_terms("番茄和罗勒"),))
        match = fts_query("茄和罗")
        assert match is not None
        assert conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (match,)).fetchone()[0] == 1


def test_random_mixed_queries_never_raise_and_find_their_own_text(index: Path) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    alphabet = st.sampled_from(list('"*^:(){}[]-+ .,;\'\\\t\nANDORNOTNEAR/') + list("番茄和罗勒東京タワー서울aé𠀀ー"))

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.text(alphabet, min_size=1, max_size=30))
    def check(text: str) -> None:
        query_index(index, text, limit=3)

    check()
    # every two-character piece of a document's CJK text finds that document
    body = "番茄和罗勒是很好的伴生植物"
    for i in range(len(body) - 1):
        assert "companion.md" in names(index, body[i : i + 2]), body[i : i + 2]
