"""Turning free text into a safe FTS5 query: :func:`fts_query` (quoted terms, phrases, stopwords, CJK runs)."""

from __future__ import annotations

import re

from perplexed.extract._cjk import CJK_RUN

_WORD = re.compile(r"\w+")
_QUOTED = re.compile(r'"([^"]*)"')
_MAX_TERMS = 64
_CJK_COLUMNS = "{cjk_title cjk_body}"
#: common English words left out of free-text queries (unless the query has nothing else)
STOPWORDS = frozenset(
    """a about after all also am an and any are as at be been but by can could did do does for from had has
    have how i if in into is it its me may must my no not of on or our should so than that the their them then there these
    they this those to was we were what when where which while who whom why will with would you your""".split()
)


def bigrams(run: str) -> list[str]:
    """A CJK run as overlapping bigrams (a single character: itself)."""
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _cjk_expr(grams: list[str]) -> str:
    return f'{_CJK_COLUMNS} : "{" ".join(grams)}"'


def _split_cjk(words: list[str]) -> tuple[list[str], list[str]]:
    """(the words' non-CJK parts, their CJK runs)."""
    plain: list[str] = []
    runs: list[str] = []
    for word in words:
        pos = 0
        for run in CJK_RUN.finditer(word):
            if run.start() > pos:
                plain.append(word[pos : run.start()])
            runs.append(run.group())
            pos = run.end()
        if pos < len(word):
            plain.append(word[pos:])
    return plain, runs


def _terms_of(words: list[str], phrase: bool, terms: list[tuple[str, str, bool]]) -> None:
    """Append the terms of one chunk (or quoted phrase) of the query to ``terms``."""
    if not any(CJK_RUN.search(w) for w in words):
        joined = " ".join(words)
        terms.append((f'"{joined}"', joined.lower(), not phrase and " " not in joined and joined.lower() in STOPWORDS))
        return
    plain, runs = _split_cjk(words)
    if plain:
        _terms_of(plain, phrase, terms)
    for run in runs:  # any substring: a phrase of overlapping bigrams (a single character: itself)
        terms.append((_cjk_expr(bigrams(run)), run, False))
        if len(run) > 2 and not phrase:  # a longer run also ranks documents holding parts of it
            for gram in dict.fromkeys(bigrams(run)):
                terms.append((_cjk_expr([gram]), gram, False))


def _query_terms(text: str) -> list[tuple[str, str, bool]]:
    """(FTS5 expression, dedupe key, droppable stopword) for each term of a free-text query."""
    terms: list[tuple[str, str, bool]] = []
    for i, part in enumerate(_QUOTED.split(text.replace("\u201c", '"').replace("\u201d", '"'))):
        chunks = [part] if i % 2 else part.split()  # inside quotes: one phrase
        for chunk in chunks:
            words = _WORD.findall(chunk)
            if words:
                _terms_of(words, bool(i % 2), terms)
    return terms


def fts_query(text: str) -> str | None:
    """A safe FTS5 MATCH expression for free text, or None when the text has no searchable words.

    Each whitespace-separated chunk becomes a quoted term (``HTTP/2`` -> ``"HTTP 2"``, a phrase), text in
    double quotes stays a phrase, common English words are left out, and terms are joined with ``OR`` so that
    BM25 ranks the documents matching the most (and rarest) terms first. A run of Chinese, Japanese or Korean
    characters matches as a substring (a phrase of its overlapping bigrams in the CJK columns; one character
    matches itself), and a longer run also matches documents holding some of its bigrams, ranked lower.
    Only quoted words reach FTS5, so no input can raise a syntax error.
    """
    terms = _query_terms(text)
    kept = [t for t in terms if not t[2]] or terms
    unique: dict[str, str] = {}
    for expr, key, _ in kept:
        unique.setdefault(key.lower(), expr)
    if not unique:
        return None
    return " OR ".join(list(unique.values())[:_MAX_TERMS])


def query_runs(text: str) -> list[str]:
    """The CJK runs of a query, longest first (to find and mark them in a snippet)."""
    runs = dict.fromkeys(m.group() for m in CJK_RUN.finditer(text))
    return sorted(runs, key=len, reverse=True)
