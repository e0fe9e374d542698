"""Hit normalisation, the same for every provider (pure): the de-duplication key of a URL, client-side domain
filters, merging duplicate URLs, capping and numbering, and reciprocal rank fusion of several providers' lists.

A duplicate (the same page under another URL spelling) fills the fields its first occurrence lacks:
:data:`FILLED_FIELDS`, in :func:`finalize_hits` and in :func:`fuse` alike.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from perplexed._models import Hit
from perplexed.policy._options import SearchOptions

__all__ = ["FILLED_FIELDS", "RRF_K", "WEB_SCHEMES", "finalize_hits", "fuse", "unsafe_url"]

WEB_SCHEMES = frozenset({"http", "https"})
"""The URL schemes a merged result holds (besides a provider's own, e.g. ``file://`` from ``local``)."""

_UNSAFE_CHARS = frozenset("\r\n\x00")
_SCRIPT_SCHEMES = ("javascript:", "vbscript:", "data:")


def unsafe_url(url: str) -> bool:
    """A URL no result ever holds, whatever the strategy: one holding CR, LF or NUL (header and log injection)
    or a script URL (``javascript:``, ``vbscript:``, ``data:``)."""
    if not _UNSAFE_CHARS.isdisjoint(url):
        return True
    head = url[:12].lstrip().lower()
    if head.startswith(_SCRIPT_SCHEMES):
        return True
    return head[:1] in ("j", "v", "d") and "".join(head.split()).startswith(_SCRIPT_SCHEMES)


def _scheme(url: str) -> str:
    """The URL's scheme, lower-cased, when it is written ``scheme://`` (else "")."""
    head, sep, _ = url.strip()[:40].partition("://")
    return head.lower() if sep and head.isascii() and head[:1].isalpha() else ""


_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


@functools.lru_cache(maxsize=1024)  # the same URLs come back search after search (urlsplit caches them too)
def _norm_url(url: str) -> str:
    """A key under which two URLs of the same page compare equal: no scheme, no ``www.``, no user info, no
    default port, no fragment, no trailing slash; host lower-cased. Never raises."""
    if url[:1].isspace() or url[-1:].isspace():
        url = url.strip()
    # Fast path for the usual ``http(s)://`` URL in plain ASCII: split it by hand exactly as urlsplit
    # would (netloc up to the first ``/?#``, then fragment, then query). Anything urlsplit treats specially
    # (tabs or newlines it removes, IPv6 brackets it checks, non-ASCII netlocs) takes the general path.
    if url.startswith("https://"):
        start, default_port = 8, ":443"
    elif url.startswith("http://"):
        start, default_port = 7, ":80"
    else:
        return _norm_url_split(url)
    if not url.isascii() or "\t" in url or "\n" in url or "\r" in url or "[" in url or "]" in url:
        return _norm_url_split(url)
    end = len(url)
    for delim in "/?#":
        pos = url.find(delim, start, end)
        if pos >= 0:
            end = pos
    host = url[start:end]
    rest = url[end:]
    if "#" in rest:
        rest = rest.partition("#")[0]
    path, _, query = rest.partition("?")
    if "@" in host:
        host = host.rpartition("@")[2]
    host = host.lower()
    if host.startswith("www."):
        host = host[4:]
    if ":" in host and host.endswith(default_port):
        host = host[: -len(default_port)]
    if path.endswith("/"):
        path = path.rstrip("/")
    key = host + (path or "/")
    return f"{key}?{query}" if query else key


def _norm_url_split(url: str) -> str:
    """:func:`_norm_url` for any URL, through ``urlsplit``."""
    try:
        parts = urlsplit(url)  # cached by urllib for repeated URLs
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = netloc.rpartition("@")[2]
    host = netloc.lower()
    if host.startswith("www."):
        host = host[4:]
    if ":" in host:
        default_port = _DEFAULT_PORTS.get(parts.scheme.lower())
        if default_port and host.endswith(default_port):
            host = host[: -len(default_port)]
    path = parts.path
    if path.endswith("/"):
        path = path.rstrip("/")
    key = host + (path or "/")
    query = parts.query
    return f"{key}?{query}" if query else key


def _domain_match(url: str, domains: list[str]) -> bool:
    """Whether ``url`` is on one of ``domains`` (``example.com`` also matches its subdomains; a domain with a
    path, ``example.com/blog``, matches that path and what is under it, segment-wise)."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower().removeprefix("www.")
    except ValueError:
        return False
    path = parts.path.strip("/")
    for d in domains:
        d_host, _, d_path = d.partition("/")
        d_host = d_host.removeprefix("*.")
        if host != d_host and not host.endswith("." + d_host):
            continue
        d_path = d_path.strip("/")
        if not d_path or path == d_path or path.startswith(d_path + "/"):
            return True
    return False


@functools.lru_cache(maxsize=1024)  # the same URLs come back search after search: one look-up a hit
def _hit_key(url: str) -> str | None:
    """The de-duplication key of a hit's URL (:func:`_norm_url`), or None for a URL no result holds (empty,
    blank, or :func:`unsafe_url`)."""
    if not url or url.isspace() or unsafe_url(url):
        return None
    return _norm_url(url)


def finalize_hits(hits: list[Hit], provider: str, options: SearchOptions) -> list[Hit]:
    """Apply client-side domain filters, merge duplicate URLs, cap at ``max_results``, number 1..n.

    The input hits are not modified: the result holds copies (with ``id`` and ``provider`` set).
    """
    return _finalize(hits, provider, options, owned=False)


def _finalize(hits: list[Hit], provider: str, options: SearchOptions, owned: bool) -> list[Hit]:
    """:func:`finalize_hits`; with ``owned=True`` the hits (fresh from a provider's parser) are numbered in
    place instead of copied."""
    include = options.include_domains
    exclude = options.exclude_domains
    merged: dict[str, Hit] = {}
    seen_key = merged.get
    for hit in hits:
        url = hit.url
        key = _hit_key(url)
        if key is None:
            continue
        if include and not _domain_match(url, include):
            continue
        if exclude and _domain_match(url, exclude):
            continue
        seen = seen_key(key)
        if seen is None:
            merged[key] = hit
            continue
        updates = {
            name: getattr(hit, name)
            for name in FILLED_FIELDS
            if not getattr(seen, name) and getattr(hit, name)
        }
        if updates:
            merged[key] = seen.model_copy(update=updates)
    out: list[Hit] = []
    limit = options.max_results
    n = 0
    for hit in merged.values():
        n += 1
        if n > limit:
            break
        fields = hit.__dict__
        if fields["id"] == n and fields["provider"]:
            out.append(hit)
        elif owned:  # fresh from the provider's parser: number in place (a copy costs ~4 us a hit)
            fields["id"] = n
            fields_set = hit.__pydantic_fields_set__
            fields_set.add("id")
            if not fields["provider"]:
                fields["provider"] = provider
                fields_set.add("provider")
            out.append(hit)
        else:
            out.append(hit.model_copy(update={"id": n, "provider": fields["provider"] or provider}))
    return out


FILLED_FIELDS = ("title", "snippet", "content", "published", "updated", "score")
"""The fields a duplicate hit fills when its first occurrence lacks them (in :func:`finalize_hits` and
:func:`fuse`; a fused hit's ``score`` is the fused score whatever the lists held)."""


# --- reciprocal rank fusion ---------------------------------------------------------------------------------

RRF_K = 60
"""The constant of reciprocal rank fusion: a hit at rank r in one provider's list scores 1 / (RRF_K + r)."""


@dataclass(slots=True)
class _Fused:
    """One page in a fusion: its score so far, its best rank, where it was first seen (list, position), the
    hit that gives its fields, every (provider, rank) that returned it, and the fields filled from others."""

    score: float
    best_rank: int
    first_list: int
    first_pos: int
    base: Hit
    sources: list[dict[str, Any]]
    fill: dict[str, Any] = field(default_factory=dict)

    def sort_key(self) -> tuple[float, int, int, int]:
        return (-self.score, self.best_rank, self.first_list, self.first_pos)


def fuse(
    ranked: Sequence[tuple[str, Sequence[Hit]]],
    limit: int,
    k: int = RRF_K,
    own_schemes: Mapping[str, frozenset[str]] | None = None,
) -> list[Hit]:
    """Reciprocal rank fusion of several providers' hit lists (given in chain order).

    A hit's score is the sum over the lists that hold it of ``1 / (k + rank)`` (rank = its 1-based position
    there). Hits are de-duplicated by normalised URL; the first list (in chain order) that holds a hit gives
    its fields, and empty fields are filled from the others. Ties are broken by the best rank, then chain
    order. The top ``limit`` hits come back as copies numbered from 1, with ``score`` the fused score (the
    providers' own scores are not comparable) and ``sources`` listing every ``{"provider": ..., "rank": ...}``
    that returned them (in chain order). The inputs are not modified.

    A merge mixes providers, so it trusts no hit for more than it brings: only ``http(s)`` URLs are kept (and
    the schemes a provider mints itself, ``own_schemes[label]``: ``file://`` from ``local``), never one holding
    CR, LF or NUL; the first list's URL is kept (a duplicate never changes it, nor its scheme); and a field
    filled from a duplicate is attributed to the provider it came from: its ``sources`` entry lists it under
    ``"filled"``.
    """
    entries: dict[str, _Fused] = {}
    for list_no, (provider, hits) in enumerate(ranked):
        seen: set[str] = set()
        allowed = WEB_SCHEMES | own_schemes.get(provider, frozenset()) if own_schemes else WEB_SCHEMES
        rank = 0
        for hit in hits:
            if _scheme(hit.url) not in allowed or unsafe_url(hit.url):
                continue  # not a web page (ftp:, a bare host, a script URL) or an injection: dropped
            rank += 1
            key = _norm_url(hit.url)
            if key in seen:  # a provider listing the same page twice: its best rank counts
                continue
            seen.add(key)
            entry = entries.get(key)
            if entry is None:
                entries[key] = _Fused(1.0 / (k + rank), rank, list_no, rank, hit, [{"provider": provider, "rank": rank}])
                continue
            entry.score += 1.0 / (k + rank)
            entry.best_rank = min(entry.best_rank, rank)
            source: dict[str, Any] = {"provider": provider, "rank": rank}
            entry.sources.append(source)
            base, fill = entry.base, entry.fill
            filled = [name for name in FILLED_FIELDS
                      if not getattr(base, name) and name not in fill and getattr(hit, name)]
            for name in filled:
                fill[name] = getattr(hit, name)
            filled = [name for name in filled if name != "score"]  # the fused score replaces every score
            if filled:
                source["filled"] = filled
    ordered = sorted(entries.values(), key=_Fused.sort_key)
    out: list[Hit] = []
    for n, entry in enumerate(ordered[:limit], start=1):
        base = entry.base
        out.append(base.model_copy(update={
            **entry.fill, "id": n, "score": round(entry.score, 6),
            "provider": base.provider or entry.sources[0]["provider"], "sources": list(entry.sources),
        }))
    return out
