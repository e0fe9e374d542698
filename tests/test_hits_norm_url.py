"""``_hits._norm_url``'s hand-split fast path (plain ASCII ``http(s)://`` URLs) gives the same key as the
general path through ``urllib.parse.urlsplit`` (``_norm_url_split``), for generated URLs."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from perplexed.engine._hits import (  # private: the URL key's fast path equals its general path
    _norm_url,
    _norm_url_split,
)

_HOST_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-."
_PATH_CHARS = _HOST_CHARS + "/_~%!$&'()*+,;=:@"
_ANY_ASCII = "".join(chr(c) for c in range(32, 127))

hosts = st.one_of(
    st.text(_HOST_CHARS, min_size=1, max_size=20),
    st.sampled_from(["www.example.com", "WWW.Example.COM", "example.com", "a.b.c.example.org", "localhost"]),
)
ports = st.one_of(st.just(""), st.sampled_from([":80", ":443", ":8080", ":0", ":", ":99999"]))
userinfo = st.one_of(st.just(""), st.sampled_from(["user@", "user:pass@", "@", "a@b@"]))
paths = st.one_of(st.just(""), st.text(_PATH_CHARS, max_size=30).map(lambda p: "/" + p))
queries = st.one_of(st.just(""), st.text(_PATH_CHARS + "?/", max_size=20).map(lambda q: "?" + q))
fragments = st.one_of(st.just(""), st.text(_PATH_CHARS + "?#/", max_size=10).map(lambda f: "#" + f))


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["http://", "https://"]), userinfo, hosts, ports, paths, queries, fragments)
@example("https://", "", "www.example.com", ":443", "/a/", "", "")
@example("http://", "u:p@", "Example.com", ":80", "", "?q=1", "#x")
@example("https://", "", "a", "", "", "?", "#")
@example("https://", "", "a", "", "/?x", "", "")
def test_fast_path_agrees_with_urlsplit(
    scheme: str, user: str, host: str, port: str, path: str, query: str, fragment: str
) -> None:
    url = scheme + user + host + port + path + query + fragment
    assert _norm_url.__wrapped__(url) == _norm_url_split(url.strip())


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["http://", "https://", "HTTP://", "ftp://", ""]), st.text(_ANY_ASCII, max_size=40))
def test_any_printable_ascii_url_agrees_with_urlsplit(scheme: str, rest: str) -> None:
    url = scheme + rest
    assert _norm_url.__wrapped__(url) == _norm_url_split(url.strip())
