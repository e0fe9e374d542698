"""perplexed.citations: markers, spans, mapping by id, unmatched markers, helpers; generic over sources."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from perplexed import Hit
from perplexed.agent import SearchResult
from perplexed.citations import (  # private: the citation parser, documented in prose only, is tested directly
    Citations,
    cited_sources,
    find_markers,
    format_footnotes,
    parse_citations,
    renumber,
)


def sr(n: int) -> SearchResult:
    return SearchResult(id=n, url=f"https://s{n}.example", title=f"Source {n}", snippet="")


SOURCES = [sr(1), sr(2), sr(3), sr(4)]


def test_marker_forms_and_spans():
    text = "A [1]. B [1][2]. C [1, 3]. D [2-4]. E [2\u20133]."
    markers = find_markers(text)
    assert [m.numbers for m in markers] == [(1,), (1,), (2,), (1, 3), (2, 3, 4), (2, 3)]
    for m in markers:
        assert text[m.start : m.end] == m.text
    assert [m.text for m in markers] == ["[1]", "[1]", "[2]", "[1, 3]", "[2-4]", "[2\u20133]"]


def test_not_markers():
    for text in ["[0]", "[3-1]", "[1-500]", "[a]", "[]", "[1,]", "x[ 1 ,, 2]", "[-1]"]:
        assert find_markers(text) == [], text


def test_mapping_by_id_not_position():
    sources = [sr(3), sr(1)]  # order differs from ids
    cites = parse_citations("x [1] y [3]", sources)
    assert [(c.number, c.url) for c in cites] == [(1, "https://s1.example"), (3, "https://s3.example")]


def test_citation_spans_point_at_marker():
    text = "Claim one [2]. Claim two [1, 2]."
    cites = parse_citations(text, SOURCES)
    assert [(c.number, text[c.start : c.end]) for c in cites] == [(2, "[2]"), (1, "[1, 2]"), (2, "[1, 2]")]


def test_unmatched_reported_never_linked():
    cites = parse_citations("a [1] b [7] c [2, 8]", SOURCES)
    assert [c.number for c in cites] == [1, 2]
    assert [c.number for c in cites.unmatched] == [7, 8]
    assert all(c.source is None and c.url is None for c in cites.unmatched)
    assert cites.unmatched_numbers == [7, 8]
    assert cites.numbers == [1, 7, 2, 8]


def test_sources_in_order_of_first_use():
    cites = parse_citations("x [3] y [1][3] z [2-3]", SOURCES)
    assert [s.id for s in cites.sources] == [3, 1, 2]
    assert [s.id for s in cited_sources("x [3] y [1][3] z [2-3]", SOURCES)] == [3, 1, 2]


def test_renumber():
    text, sources = renumber("x [3] y [1][3] z [2-3] w [9].", SOURCES)
    assert text == "x [1] y [2][1] z [3, 1] w."
    assert [s.id for s in sources] == [3, 1, 2]
    kept, _ = renumber("a [9] b [2]", SOURCES, unmatched="keep")
    assert kept == "a [9] b [1]"
    marked, _ = renumber("a [9] b [2]", SOURCES, unmatched="mark")
    assert marked == "a [?] b [1]"


def test_footnotes_and_render():
    cites = parse_citations(
        "Fact [2]. Other [4].", [sr(2), SearchResult(id=4, url="https://q.example", title='Say "hi"')]
    )
    assert cites.footnotes() == '[1] Source 2 — https://s2.example\n[2] Say "hi" — https://q.example'
    assert cites.footnotes(renumbered=False).splitlines()[0].startswith("[2] Source 2")
    assert cites.footnotes(style="markdown").splitlines() == [
        '[1]: <https://s2.example> "Source 2"',
        '[2]: <https://q.example> "Say \\"hi\\""',
    ]
    assert cites.render() == (
        'Fact [1]. Other [2].\n\n[1] Source 2 — https://s2.example\n[2] Say "hi" — https://q.example'
    )
    assert parse_citations("no markers", SOURCES).render() == "no markers"
    assert format_footnotes([sr(1)]) == "[1] Source 1 — https://s1.example"


def test_generic_over_hits_and_any_source():
    hits = [Hit(id=1, url="https://h1", title="H1"), Hit(id=2, url="https://h2", title="H2")]
    cites: Citations[Hit] = parse_citations("see [2] and [1]", hits)
    assert [c.source.title for c in cites if c.source] == ["H2", "H1"]

    @dataclass
    class Doc:
        id: int
        url: str
        title: str

    assert [d.url for d in cited_sources("[1]", [Doc(1, "u", "t")])] == ["u"]


def test_duplicate_ids_first_wins_and_missing_ids_ignored():
    sources = [SearchResult(id=1, url="first"), SearchResult(id=1, url="second"), SearchResult(url="no-id")]
    assert [c.url for c in parse_citations("[1]", sources)] == ["first"]


def test_sequence_protocol():
    cites = parse_citations("[1] [2]", SOURCES)
    assert len(cites) == 2 and cites[0].number == 1 and [c.number for c in cites[:1]] == [1]
    assert bool(parse_citations("[9]", SOURCES)) is False


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(alphabet="[]0123456789,- \u2013abc\n", max_size=80))
def test_fuzz_spans_are_exact_and_renumber_is_stable(text):
    cites = parse_citations(text, SOURCES)
    for m in cites.markers:
        assert text[m.start : m.end] == m.text
        assert all(n >= 1 for n in m.numbers)
    new_text, sources = cites.renumber()
    again = parse_citations(
        new_text, [SearchResult(id=i, url=s.url, title=s.title) for i, s in enumerate(sources, 1)]
    )
    assert not again.unmatched
    assert [s.url for s in again.sources] == [s.url for s in sources]
