"""Fetch providers, registered by name: ``http`` (the page itself, free), ``jina``, ``exa``, ``tavily``, ``firecrawl``.

A fetch-provider spec is a registered name, a dict (``{"name": "firecrawl", "api_key": ..., "base_url": ...}``), a
:class:`FetchProvider` instance, a function ``fn(url, options)`` (sync or async), or a list of these (a chain,
free first). The default chain is ``["http"]``. Provider modules are imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._errors import ConfigError
from .._keywords import suggestion
from ._base import FetchAnswer, FetchOptions, FetchProvider, FunctionFetcher, page_failure, status_reason

__all__ = [
    "DEFAULT_CHAIN",
    "FetchAnswer",
    "FetchOptions",
    "FetchProvider",
    "FunctionFetcher",
    "available",
    "get",
    "page_failure",
    "register",
    "resolve",
    "status_reason",
]

DEFAULT_CHAIN = ("http",)

_REGISTRY: dict[str, str | type[FetchProvider]] = {
    "http": "http:Http",
    "jina": "jina:Jina",
    "exa": "exa:ExaContents",
    "tavily": "tavily:TavilyExtract",
    "firecrawl": "firecrawl:FirecrawlScrape",
}


def register(name: str, cls: type[FetchProvider]) -> None:
    """Register a fetch-provider class under ``name``."""
    if not (isinstance(cls, type) and issubclass(cls, FetchProvider)):
        raise ConfigError(f"cannot register {cls!r}: not a FetchProvider subclass")
    _REGISTRY[name] = cls


def available() -> list[str]:
    """Registered fetch-provider names."""
    return list(_REGISTRY)


def get(name: str) -> type[FetchProvider]:
    """The fetch-provider class registered as ``name``; ConfigError for an unknown name."""
    entry = _REGISTRY.get(name)
    if entry is None:
        near = suggestion(name, _REGISTRY)
        hint = f": did you mean {near!r}?" if near is not None else ""
        raise ConfigError(f"unknown fetch provider {name!r}{hint} (known fetch providers: {', '.join(_REGISTRY)})")
    if isinstance(entry, str):
        module_name, cls_name = entry.split(":")
        module = importlib.import_module(f"{__name__}.{module_name}")
        entry = _REGISTRY[name] = getattr(module, cls_name)
    return entry


def _one(spec: Any) -> FetchProvider:
    if isinstance(spec, FetchProvider):
        return spec
    if isinstance(spec, str):
        name = spec.strip()
        if not name:
            raise ConfigError("empty fetch provider name")
        return get(name)()
    if isinstance(spec, Mapping):
        options = dict(spec)
        name = options.pop("provider", None) if "provider" in options else options.pop("name", None)
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("a fetch provider dict needs a 'name' naming a registered fetch provider "
                              f"({', '.join(_REGISTRY)})")
        cls = get(name.strip())
        try:
            return cls(**options)
        except TypeError as exc:
            raise ConfigError(f"bad options for fetch provider {name!r}: {exc}") from None
    if callable(spec) and not isinstance(spec, type):
        fn: Callable[..., Any] = spec
        return FunctionFetcher(fn)
    raise ConfigError(
        f"not a fetch provider spec: {spec!r} (use a name, a dict with 'name', a FetchProvider, a function, or a list)"
    )


def resolve(spec: Any) -> tuple[list[FetchProvider], bool]:
    """Turn a spec into fetch providers: ``(providers, is_chain)``; None is the default chain ``["http"]``."""
    if spec is None:
        return [_one(name) for name in DEFAULT_CHAIN], True
    if isinstance(spec, str) and "," in spec:
        spec = [s for s in spec.split(",") if s.strip()]
    if isinstance(spec, Sequence) and not isinstance(spec, str | bytes):
        items = list(spec)
        if not items:
            raise ConfigError("the fetch provider chain is empty: name at least one fetch provider")
        return [_one(item) for item in items], True
    return [_one(spec)], False
