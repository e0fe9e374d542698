"""The ``local`` provider: ranking, snippets, safe queries, and its place in a chain (sync and async)."""

from __future__ import annotations

import asyncio
import os
import shutil
from datetime import date, datetime
from pathlib import Path
from urllib.parse import unquote, urlsplit

import perplexed
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from perplexed import ConfigError, Outcome, ProviderError, Result, SearchOptions, UpstreamError, telemetry
from perplexed.index import (  # private: query interruption and FTS syntax
    INDEX_ENV,
    Interrupt,
    fts_query,
    query_index,
)
from perplexed.providers import Local, get
from perplexed.providers.local import build_index

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "corpus"


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus, indexed once for the module (read-only in these tests)."""
    root = tmp_path_factory.mktemp("local")
    shutil.copytree(SAMPLE, root / "corpus")
    report = build_index([root / "corpus"], root / "index.sqlite3")
    assert report.errors == []
    return root / "index.sqlite3"


@pytest.fixture
def local(sample_index: Path) -> Local:
    return Local(index=sample_index)


def names(result: Result) -> list[str]:
    return [Path(unquote(urlsplit(h.url).path)).name for h in result.hits]


def never_called(query: str, options: SearchOptions) -> list[dict[str, str]]:
    raise AssertionError("the chain must stop at the first provider that answers")


def web_fallback(query: str, options: SearchOptions) -> list[dict[str, str]]:
    return [{"url": "https://example.org/fallback", "title": "Fallback hit", "snippet": query}]


# --- registry -------------------------------------------------------------------------------------------


def test_local_is_registered_and_free(sample_index: Path) -> None:
    assert get("local") is Local
    assert perplexed.providers.Local is Local
    provider = Local(index=sample_index)
    assert provider.price() == 0.0 and not provider.paid
    assert provider.configured
    assert not Local(index=sample_index.parent / "absent.sqlite3").configured
    assert "absent.sqlite3" in repr(Local(index=sample_index.parent / "absent.sqlite3"))


# --- ranking and hits ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("zoning setbacks", "zoning-setbacks.md"),
        ("zoning variance hardship", "variances.rst"),
        ("HTTP client timeouts", "http-client-timeouts.md"),
        ("exponential backoff jitter", "retries-and-backoff.rst"),
        ("BM25", "bm25-ranking.html"),
        ("sight triangle fence height", "fences-and-hedges.txt"),
        ("chunk overlap", "chunking-strategies.rst"),
        ("reciprocal rank fusion", "embeddings-vs-keywords.html"),
    ],
)
def test_the_best_matching_document_comes_first(local: Local, query: str, best: str) -> None:
    result = perplexed.search(query, provider=local)
    assert names(result)[0] == best
    scores = [h.score for h in result.hits]
    assert all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_hits_carry_title_file_url_snippet_and_content(local: Local) -> None:
    result = perplexed.search("corner lot sight triangle", provider=local, max_results=3)
    assert result.provider == "local"
    assert [h.id for h in result.hits] == list(range(1, len(result.hits) + 1))
    top = result.hits[0]
    assert top.title
    assert top.url.startswith("file://")
    assert Path(unquote(urlsplit(top.url).path)).is_file()
    assert top.provider == "local"
    assert top.content and "corner" in top.content.lower()
    assert isinstance(top.published, date)
    for hit in result.hits:
        assert hit.snippet
        assert any(word in hit.snippet.lower() for word in ("corner", "sight", "triangle", "lot"))
        assert len(hit.snippet) < 400  # a snippet, not the document


def test_stemming_matches_other_word_forms(local: Local) -> None:
    result = perplexed.search("setback", provider=local)
    assert "zoning-setbacks.md" in names(result)
    assert any("setbacks" in h.snippet.lower() for h in result.hits)


def test_a_quoted_phrase_is_searched_as_a_phrase(local: Local) -> None:
    result = perplexed.search('"keep-alive expiry"', provider=local)
    assert names(result) == ["connection-pooling.html"]


def test_max_results_caps_the_hits(local: Local) -> None:
    assert len(perplexed.search("the zoning code", provider=local, max_results=2).hits) == 2


def test_costs_nothing(local: Local) -> None:
    result = perplexed.search("zoning", provider=local)
    assert result.cost == 0.0
    assert [(a.provider, a.outcome, a.cost, a.billable) for a in result.attempts] == [
        ("local", Outcome.OK, 0.0, False)
    ]


def test_no_match_is_an_empty_answer_not_an_error(local: Local) -> None:
    result = perplexed.search("quantum chromodynamics", provider=local)
    assert result.hits == []
    assert result.attempts[0].outcome is Outcome.EMPTY


# --- query sanitising ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        '"', '""', '"unbalanced quote', "NEAR(zoning setbacks", "zoning*", "^zoning", "title:zoning",
        "zoning AND OR NOT", "- -zoning", "(((", "a) OR (b", "{title body}: zoning", "'; DROP TABLE docs; --",
        "\\", "zoning + setbacks", "🏠 setbacks", "HTTP/2", "x-ratelimit-reset", "NOT", "AND", ":", "*",
    ],
)
def test_punctuation_and_fts5_syntax_in_queries_never_raise(local: Local, query: str) -> None:
    result = perplexed.search(query, provider=local)
    assert result.attempts[0].outcome in (Outcome.OK, Outcome.EMPTY)
    assert result.attempts[0].error is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=80))
def test_any_text_is_a_safe_query(sample_index: Path, text: str) -> None:
    rows = query_index(sample_index, text, limit=3)
    assert len(rows) <= 3


def test_fts_query_quotes_terms_and_drops_common_words() -> None:
    assert fts_query("how far back must a house be") == '"far" OR "back" OR "house"'
    assert fts_query("the") == '"the"'  # nothing but common words: keep them
    assert fts_query('HTTP/2 "corner lot" NEAR(x') == '"HTTP 2" OR "corner lot" OR "NEAR x"'
    assert fts_query("zoning Zoning ZONING") == '"zoning"'
    assert fts_query("?! ... --") is None


# --- in a chain, sync and async --------------------------------------------------------------------------


def test_local_first_in_a_sync_chain_answers_and_stops_the_chain(
    sample_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(INDEX_ENV, str(sample_index))
    result = perplexed.search("zoning setbacks", provider=["local", never_called])
    assert result.provider == "local"
    assert names(result)[0] == "zoning-setbacks.md"
    assert [a.provider for a in result.attempts] == ["local"]


async def test_local_first_in_an_async_chain(sample_index: Path) -> None:
    result = await perplexed.asearch(
        "zoning setbacks", provider=[{"name": "local", "index": str(sample_index)}, never_called]
    )
    assert result.provider == "local"
    assert names(result)[0] == "zoning-setbacks.md"
    assert result.cost == 0.0


def test_the_chain_moves_on_when_local_finds_nothing(local: Local) -> None:
    result = perplexed.search("quantum chromodynamics", provider=[local, web_fallback])
    assert result.provider == "web_fallback"
    assert [(a.provider, a.outcome) for a in result.attempts] == [
        ("local", Outcome.EMPTY), ("web_fallback", Outcome.OK)
    ]


async def test_the_chain_moves_on_when_there_is_no_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INDEX_ENV, str(tmp_path / "never-built.sqlite3"))
    result = await perplexed.asearch("zoning", provider=["local", web_fallback])
    assert result.provider == "web_fallback"
    first = result.attempts[0]
    assert (first.provider, first.outcome, first.reason) == ("local", Outcome.ERROR, "config")
    assert first.error is not None and "perplexed index PATH" in first.error


def test_a_missing_index_alone_fails_the_search_with_the_config_error_as_cause(tmp_path: Path) -> None:
    with pytest.raises(UpstreamError) as info:
        perplexed.search("zoning", provider=[Local(index=tmp_path / "absent.sqlite3")])
    assert info.value.reason == "all_providers_failed"
    assert isinstance(info.value.__cause__, ConfigError)
    assert "perplexed index PATH" in str(info.value.__cause__)


def test_an_absent_or_empty_index_is_a_config_error_when_called_directly(tmp_path: Path) -> None:
    options = SearchOptions.build()
    with pytest.raises(ConfigError, match="run `perplexed index PATH`"):
        Local(index=tmp_path / "absent.sqlite3").search("zoning", options)
    (tmp_path / "empty").mkdir()
    build_index([tmp_path / "empty"], tmp_path / "empty.sqlite3")
    with pytest.raises(ConfigError, match="no documents"):
        Local(index=tmp_path / "empty.sqlite3").search("zoning", options)


def test_a_folder_given_as_the_index_is_a_clear_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder"):
        Local(index=tmp_path).search("zoning", SearchOptions.build())


async def test_many_concurrent_searches_each_use_their_own_connection(local: Local) -> None:
    queries = ["zoning", "timeouts", "BM25", "jitter", "chunking", "citations", "fences", "ADU"] * 3
    results = await asyncio.gather(*(perplexed.asearch(q, provider=local) for q in queries))
    assert all(r.hits for r in results)
    assert names(results[1])[0] == "http-client-timeouts.md"


def test_sync_and_async_calls_give_the_same_hits(local: Local) -> None:
    options = SearchOptions.build(max_results=5)
    sync = local.search("retry after header", options)
    async_ = asyncio.run(local.asearch("retry after header", options))
    assert [h.url for h in sync.hits] == [h.url for h in async_.hits]


def test_each_attempt_is_an_event(local: Local) -> None:
    events: list[tuple[tuple[str, ...], dict[str, object], dict[str, object]]] = []
    handle = telemetry.attach(lambda e, m, md: events.append((e, m, md)))
    try:
        perplexed.search("zoning", provider=[local])
    finally:
        telemetry.detach(handle)
    attempts = [e for e in events if e[0] == ("perplexed", "search", "attempt")]
    assert len(attempts) == 1
    _, measurements, metadata = attempts[0]
    assert metadata["provider"] == "local" and metadata["outcome"] == "ok"
    assert measurements["cost"] == 0.0


# --- options ---------------------------------------------------------------------------------------------


def test_published_dates_filter_on_modification_time(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    old, new = folder / "old.md", folder / "new.md"
    old.write_text("# Old\n\nwombat facts\n", encoding="utf-8")
    new.write_text("# New\n\nwombat news\n", encoding="utf-8")
    when = datetime(2001, 6, 1, 12).timestamp()
    os.utime(old, (when, when))
    build_index([folder], tmp_path / "i.sqlite3")
    provider = Local(index=tmp_path / "i.sqlite3")
    both = perplexed.search("wombat", provider=provider)
    assert sorted(names(both)) == ["new.md", "old.md"]
    assert names(perplexed.search("wombat", provider=provider, published_before="2001-12-31")) == ["old.md"]
    assert names(perplexed.search("wombat", provider=provider, published_after="2002-01-01")) == ["new.md"]
    assert names(perplexed.search("wombat", provider=provider, recency="year")) == ["new.md"]
    old_hit = next(h for h in both.hits if h.url.endswith("old.md"))
    assert old_hit.published is not None and old_hit.published.year == 2001


def test_content_can_be_left_out(sample_index: Path) -> None:
    hits = perplexed.search("zoning", provider=Local(index=sample_index, content_chars=0)).hits
    assert hits and all(h.content is None for h in hits)
    short = perplexed.search("zoning", provider=Local(index=sample_index, content_chars=50)).hits
    assert all(h.content is not None and len(h.content) <= 50 for h in short)


def test_bad_constructor_options_are_config_errors(sample_index: Path) -> None:
    with pytest.raises(ConfigError):
        Local(index=sample_index, content_chars=-1)
    with pytest.raises(ConfigError):
        Local(index=sample_index, snippet_tokens=0)


# --- limits and cancellation -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big")
    (root / "docs").mkdir()
    for i in range(200):
        # distinct contents (a search returns one hit per content hash)
        words = f"document{i} " + " ".join(f"term{j % 89} alpha beta gamma topic{i % 7}" for j in range(150))
        (root / "docs" / f"doc{i}.txt").write_text(words, encoding="utf-8")
    build_index([root / "docs"], root / "big.sqlite3")
    return root / "big.sqlite3"


def test_a_query_over_its_own_time_limit_is_stopped(big_index: Path) -> None:
    provider = Local(index=big_index, time_limit=0.0)
    with pytest.raises(ProviderError) as info:
        provider.search("term1 term2 alpha beta gamma", SearchOptions.build())
    assert info.value.reason == "timeout"
    # ...and in a chain it is an error attempt, and the next provider answers
    result = perplexed.search("term1 alpha", provider=[provider, web_fallback])
    assert result.attempts[0].reason == "timeout"
    assert result.provider == "web_fallback"


def test_a_cancelled_query_is_interrupted(big_index: Path) -> None:
    interrupt = Interrupt()
    interrupt.cancel()
    with pytest.raises(InterruptedError):
        query_index(big_index, "term1 alpha", interrupt=interrupt)
    assert len(query_index(big_index, "term1 alpha", interrupt=Interrupt())) == 10


async def test_the_chain_budget_cancels_a_slow_local_search(big_index: Path) -> None:
    # a 5-term query over 200 long documents takes tens of milliseconds; the budget is 1 ms
    async def instant(query: str, options: SearchOptions) -> list[dict[str, str]]:
        return web_fallback(query, options)  # never yields to the loop, so 1 ms is enough

    result = await perplexed.asearch(
        "term1 term2 term3 alpha beta", provider=[Local(index=big_index), instant], provider_timeout_ms=1
    )
    assert [(a.provider, a.outcome) for a in result.attempts] == [
        ("local", Outcome.TIMEOUT), ("instant", Outcome.OK)
    ]
    # the interrupted query released the index: a normal search right after works
    again = await perplexed.asearch("term1 alpha", provider=Local(index=big_index))
    assert len(again.hits) == 10
