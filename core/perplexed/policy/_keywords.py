"""Which keyword arguments a call knows, and the "did you mean ...?" error for the ones it does not.

A keyword given to :func:`perplexed.search`, :func:`perplexed.answer` (or an adapter) is known when it is a
common search option, a chain option (budgets, governance, strategy: :data:`~perplexed.policy._options.
CHAIN_OPTION_NAMES`), or an option a chain member declares as its own (``extra_options`` of the provider
class, e.g. SearXNG's ``engines``). A chain with a member that declares nothing (a plain function, a
retriever wrapped by ``as_provider``, a third-party provider class) accepts any keyword, since that member
may read it. Pure functions, no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from perplexed._errors import InvalidRequest
from perplexed.policy._options import CHAIN_OPTION_NAMES, COMMON_OPTIONS, SearchOptions

__all__ = ["check_names", "check_search_options", "credential_hint", "declared_options", "suggestion",
           "unknown_keyword"]


def declared_options(providers: Sequence[Any]) -> set[str] | None:
    """The provider-specific options the chain members declare; ``None`` when one declares nothing (so
    any keyword may be its own)."""
    names: set[str] = set()
    for provider in providers:
        declared = getattr(type(provider), "extra_options", None)
        if declared is None:
            return None
        names.update(declared)
    return names


#: Keywords that configure one provider (its spec's), not a search: named as such when given to a search.
CREDENTIALS = {"api_key": "env_key", "base_url": "env_base_url"}  # -> the provider class's variable

#: Other frameworks' words for a count of results, suggested as ``max_results`` (or an adapter's own word).
COUNT_WORDS = frozenset(
    {"k", "top_k", "topk", "n", "num", "num_results", "n_results", "limit", "count", "size", "results",
     "similarity_top_k", "max_result", "maxresults", "max_hits", "num_hits"}
)


def suggestion(name: str, candidates: Iterable[str]) -> str | None:
    """The valid name closest to ``name`` (a typo, a plural, another framework's word), or None."""
    pool = sorted(set(candidates))
    lowered = name.lower()
    if lowered in COUNT_WORDS:
        for count in ("max_results", "k", "similarity_top_k"):
            if count in pool and count != lowered:
                return count
    plain = lowered.replace("-", "_")
    for candidate in pool:  # same word in another case or with dashes
        if candidate.lower().replace("-", "_") == plain:
            return candidate
    for candidate in pool:  # the same word in the singular or the plural (``providers`` → ``provider``)
        other = candidate.lower().replace("-", "_")
        if plain in (other + "s", other + "es") or other in (plain + "s", plain + "es"):
            return candidate
    close = difflib.get_close_matches(lowered, pool, n=1, cutoff=0.6)
    if close:
        return close[0]
    # a known word inside it (``top_k`` / ``num_results`` → ``max_results``, ``recency_filter`` → ``recency``)
    parts = [p for p in lowered.replace("-", "_").split("_") if len(p) > 2]
    for part in parts:
        for candidate in pool:
            if part in candidate.split("_"):
                return candidate
    return None


def credential_hint(name: str, providers: Sequence[Any]) -> str | None:
    """Where ``api_key``/``base_url`` given beside a query or URL go (a provider's "pass api_key=..." error
    sends users there): the spec of the first chain member that reads one, or its variable; None otherwise."""
    attribute = CREDENTIALS.get(name)
    taking = [p for p in providers if attribute and getattr(type(p), attribute, None)]
    if attribute is None or not taking:
        return None
    member = type(taking[0])
    return (f"a provider's {name} goes in its spec: provider={{'name': {member.name!r}, {name!r}: ...}}, "
            f"or set {getattr(member, attribute)}")


def unknown_keyword(name: str, candidates: Iterable[str], *, what: str = "option", hint: str = "") -> InvalidRequest:
    """``InvalidRequest`` for an unknown keyword, naming the closest valid one when there is one."""
    near = suggestion(name, candidates)
    message = f"unknown {what} {name!r}"
    if near is not None:
        message += f": did you mean {near!r}?"
    if hint:
        message += f" ({hint})"
    return InvalidRequest(message, param=name)


def check_search_options(
    options: SearchOptions,
    providers: Sequence[Any],
    *,
    also: Iterable[str] = (),
    mode: str | None = None,
) -> None:
    """Raise :class:`~perplexed.InvalidRequest` for a keyword in ``options.extra`` no chain member declares.

    ``also`` are other names valid where the call was made (``answer()``'s own arguments, an adapter's
    ``k``), offered as suggestions. ``mode`` names a grounding mode without a chain (``perplexity-agent``).
    """
    if not options.extra:
        return
    declared = declared_options(providers)
    if declared is None:
        return
    for name in options.extra:
        if name in declared:
            continue
        labels = ", ".join(getattr(p, "label", type(p).__name__) for p in providers)
        hint = f"{mode} takes no provider-specific options" if mode else (
            f"not a search or chain option, nor one of {labels}'s own options" if labels else ""
        )
        hint = (None if mode else credential_hint(name, providers)) or hint
        pool = ["provider", *COMMON_OPTIONS, *CHAIN_OPTION_NAMES, *declared, *also]
        raise unknown_keyword(name, pool, hint=hint)


def check_names(given: Mapping[str, Any] | Iterable[str], known: Iterable[str], *, what: str = "argument") -> None:
    """Raise for the first name of ``given`` not in ``known`` (an adapter's fixed set of call arguments)."""
    pool = list(known)
    valid = set(pool)
    for name in given:
        if name not in valid:
            raise unknown_keyword(name, pool, what=what)
