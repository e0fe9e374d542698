"""A fetch's arguments checked into a :class:`FetchPlan` (:func:`prepare_fetch`): the URL, the fetch chain and its
options, before any call. Apart from :mod:`perplexed.operations._fetch` (which re-exports every name here, the
same objects) because validating imports no HTTP client: ``perplexed mcp`` checks its ``web_fetch`` settings at
start-up without loading httpx (issue 35: cold start); the first fetch loads it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perplexed._errors import InvalidRequest
from perplexed.fetchers import FetchOptions, FetchProvider, resolve
from perplexed.net._ssrf import check_literal, normalise_url, parse_allow_private, split_url
from perplexed.policy._keywords import credential_hint, unknown_keyword
from perplexed.policy._options import FETCH_CHAIN_NAMES as _FETCH_CHAIN_NAMES
from perplexed.policy._options import FETCH_OPTION_NAMES as _FETCH_OPTION_NAMES
from perplexed.policy._options import ChainOptions, check_fetch_options
from perplexed.providers import Provider

__all__ = [
    "DEFAULT_FALLBACK_ON",
    "FETCH_CHAIN_NAMES",
    "FETCH_OPTION_NAMES",
    "MAX_URL_CHARS",
    "FetchPlan",
    "build_options",
    "chain_has_local",
    "clean_url",
    "parse_fallback_on",
    "prepare_fetch",
    "without_local",
]

#: options of a fetch (they reach the providers): declared in perplexed.policy._optionspec
FETCH_OPTION_NAMES = _FETCH_OPTION_NAMES
#: options of how the fetch chain runs: declared in perplexed.policy._optionspec
FETCH_CHAIN_NAMES = _FETCH_CHAIN_NAMES
DEFAULT_FALLBACK_ON: frozenset[str] = frozenset({"error", "empty", "insufficient"})
_FALLBACK_VALUES = ("error", "empty", "insufficient", "timeout")
MAX_URL_CHARS = 8192


class FetchPlan:
    """A validated fetch: URL, providers, fetch options, chain options (built by :func:`prepare_fetch`)."""

    __slots__ = ("chain", "is_chain", "local", "options", "providers", "url")

    def __init__(self, url: str, providers: list[FetchProvider], is_chain: bool, options: FetchOptions,
                 chain: ChainOptions, local: bool = True) -> None:
        self.url = url
        self.providers = providers
        self.is_chain = is_chain
        self.options = options
        self.chain = chain
        #: whether ``file://`` URLs are answered (from the local index): the default chain, or one naming local
        self.local = local


def without_local(provider: Any) -> tuple[Any, bool]:
    """A fetch chain spec without its ``"local"`` entries, and whether it answers ``file://`` URLs from the local
    index: the default chain (None) does, a chain does when it names ``local`` (``["local", "http"]``)."""
    if provider is None:
        return None, True
    if isinstance(provider, str):
        names = [n.strip() for n in provider.split(",") if n.strip()]
        if "local" not in names:
            return provider, False
        return [n for n in names if n != "local"], True
    if isinstance(provider, Sequence) and not isinstance(provider, bytes):
        items = list(provider)
        if not any(isinstance(i, str) and i.strip() == "local" for i in items):
            return provider, False
        return [i for i in items if not (isinstance(i, str) and i.strip() == "local")], True
    return provider, False


def chain_has_local(spec: Any) -> bool:
    """Whether a search chain spec has the ``local`` provider (a name, a dict naming it, or its instance)."""
    items = spec.split(",") if isinstance(spec, str) else spec if isinstance(spec, Sequence) else [spec]
    for item in items:
        if isinstance(item, str) and item.strip() == "local":
            return True
        if isinstance(item, Mapping) and str(item.get("name", item.get("provider", ""))).strip() == "local":
            return True
        if isinstance(item, Provider) and type(item).name == "local":
            return True
    return False


def _check_local(url: str, local: bool, providers: Sequence[FetchProvider], param: str = "url") -> None:
    """``file://`` only where the chain has the local provider; a web URL only where it has a web provider."""
    if url[:7].lower() == "file://":
        if not local:
            raise InvalidRequest(
                f"{param} is a file:// URL, and this fetch chain has no local provider: file:// URLs of indexed "
                'documents are answered only by a chain that names "local" (or the default chain)', param=param)
    elif not providers:
        raise InvalidRequest(f"{param} is a web URL, and this fetch chain only has the local provider "
                             "(it answers file:// URLs of indexed documents)", param=param)


def clean_url(url: object, param: str = "url") -> str:
    """A URL to fetch: a non-empty ``http(s)`` (or ``file://``) string; InvalidRequest naming ``param``."""
    if not isinstance(url, str):
        raise InvalidRequest(f"{param} must be a string URL, not {type(url).__name__}", param=param)
    cleaned = url.strip()
    if not cleaned:
        raise InvalidRequest(f"{param} is empty", param=param)
    if len(cleaned) > MAX_URL_CHARS:
        raise InvalidRequest(f"{param} is {len(cleaned)} characters long; the limit is {MAX_URL_CHARS}", param=param)
    if any(ch in cleaned for ch in "\r\n\t\x00"):
        raise InvalidRequest(f"{param} contains control characters", param=param)
    if cleaned[:7].lower() == "file://":
        return cleaned
    cleaned = normalise_url(cleaned, param)  # one URL, read one way: what is checked is what providers get
    split_url(cleaned, param)
    return cleaned


def build_options(values: dict[str, Any], providers: Sequence[FetchProvider] = ()) -> FetchOptions:
    """Validate fetch options (given by name; None keeps the default) into :class:`FetchOptions`."""
    values = {k: v for k, v in values.items() if v is not None}
    extra_names = {name for p in providers for name in type(p).fetch_options}
    extra = {k: values.pop(k) for k in list(values) if k in extra_names and k not in FETCH_OPTION_NAMES}
    check_fetch_options(values)  # the catalogue's checks and words (perplexed.policy._optionspec)
    values["allow_private"] = parse_allow_private(values.get("allow_private"))
    return FetchOptions(**values, extra=extra)


def parse_fallback_on(value: Any) -> frozenset[str]:
    if value is None:
        return DEFAULT_FALLBACK_ON
    items = [value] if isinstance(value, str) else value
    try:
        out = frozenset(str(getattr(i, "value", i)) for i in items)
    except TypeError:
        raise InvalidRequest("fallback_on must be a list of outcomes", param="fallback_on") from None
    bad = sorted(out - set(_FALLBACK_VALUES))
    if bad:
        raise InvalidRequest(
            f"invalid fallback_on value {bad[0]!r} (fallback_on takes {', '.join(map(repr, _FALLBACK_VALUES))})",
            param="fallback_on",
        )
    return out


def prepare_fetch(url: object, provider: Any = None, **options: Any) -> FetchPlan:
    """Validate everything :func:`fetch` needs before any call: the URL (a literal private address in any
    spelling is refused here), the provider spec, fetch and chain options. Unknown keywords are
    :class:`~perplexed.InvalidRequest` naming the closest valid one. Returns the plan (for adapters and
    services that check their settings once)."""
    cleaned = clean_url(url)
    provider, local = without_local(provider)
    providers, is_chain = resolve(provider) if provider != [] else ([], True)
    _check_local(cleaned, local, providers)
    extra_names = {name for p in providers for name in type(p).fetch_options}
    known = set(FETCH_OPTION_NAMES) | set(FETCH_CHAIN_NAMES) | extra_names
    for name in options:
        if name not in known:
            raise unknown_keyword(name, ["provider", *known], what="fetch option",
                                  hint=credential_hint(name, providers) or "")
    chain_kw = {k: options.pop(k) for k in FETCH_CHAIN_NAMES if k in options}
    chain_kw["fallback_on"] = parse_fallback_on(chain_kw.get("fallback_on"))
    chain = ChainOptions.build(**chain_kw)
    opts = build_options(options, providers)
    if cleaned[:7].lower() != "file://":  # a literal private address (any spelling) is refused now
        check_literal(cleaned, split_url(cleaned).hostname or "", opts.allow_private)
    return FetchPlan(cleaned, providers, is_chain, opts, chain, local)
