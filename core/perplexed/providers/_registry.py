"""The provider registry (name -> class, provider modules imported on first use) and the resolution of
provider specs into providers. Re-exported by :mod:`perplexed.providers`; its helpers (``_credentials``,
``_table``) import it from here, so the package's ``__init__`` is imported by nobody below it."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._errors import ConfigError
from .._keywords import suggestion
from .._settings import default_chain, default_chain_origin
from ._base import FunctionProvider, Provider

__all__ = ["available", "get", "masked", "register", "resolve", "unregister"]

# registry name -> "module:Class" (imported lazily) or a class registered at run time
_REGISTRY: dict[str, str | type[Provider]] = {
    "local": "local:Local",
    "searxng": "searxng:SearXNG",
    "ceramic": "ceramic:Ceramic",
    "firecrawl": "firecrawl:Firecrawl",
    "perplexity": "perplexity:PerplexitySearch",
    "tavily": "tavily:Tavily",
    "exa": "exa:Exa",
    "brave": "brave:Brave",
    "linkup": "linkup:Linkup",
}
_CLASS_NAMES = {v.split(":")[1]: k for k, v in _REGISTRY.items() if isinstance(v, str)}


def register(name: str, cls: type[Provider]) -> None:
    """Register a provider class under ``name`` so specs can use it."""
    if not (isinstance(cls, type) and issubclass(cls, Provider)):
        raise ConfigError(f"cannot register {cls!r}: not a Provider subclass")
    _REGISTRY[name] = cls


def unregister(name: str) -> None:
    """Remove a provider registered with :func:`register` (unknown names are ignored)."""
    _REGISTRY.pop(name, None)


def available() -> list[str]:
    """Registered provider names, in registration order."""
    return list(_REGISTRY)


def _unknown_provider(name: str) -> ConfigError:
    """The error for a provider name nobody registered: the closest registered one (``"Tavily"`` → did you
    mean ``'tavily'``?), then the list."""
    near = suggestion(name, _REGISTRY)
    hint = f": did you mean {near!r}?" if near is not None else ""
    return ConfigError(f"unknown provider {name!r}{hint} (known providers: {', '.join(sorted(_REGISTRY))})")


def get(name: str) -> type[Provider]:
    """The provider class registered as ``name``; ConfigError for an unknown name."""
    entry = _REGISTRY.get(name)
    if entry is None:
        raise _unknown_provider(name)
    if isinstance(entry, str):
        module_name, cls_name = entry.split(":")
        module = importlib.import_module(f"{__package__}.{module_name}")
        entry = _REGISTRY[name] = getattr(module, cls_name)
    return entry


def _one(spec: Any) -> Provider:
    if isinstance(spec, Provider):
        return spec
    if isinstance(spec, str):
        name = spec.strip()
        if not name:
            raise ConfigError("empty provider name")
        return get(name)()
    if isinstance(spec, Mapping):
        options = dict(spec)
        # {"name": "searxng", ...}; or {"provider": "searxng", "name": "label", ...} to label the attempts
        name = options.pop("provider", None) if "provider" in options else options.pop("name", None)
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(
                f"a provider dict needs a 'name' naming a registered provider: {masked(spec)}"
            )
        cls = get(name.strip())
        try:
            return cls(**options)
        except TypeError as exc:
            raise ConfigError(f"bad options for provider {name!r}: {exc}") from None
    adapter = getattr(spec, "__perplexed_provider__", None)
    if callable(adapter):
        provider = adapter()
        if isinstance(provider, Provider):
            return provider
    if callable(spec):
        fn: Callable[..., Any] = spec
        return FunctionProvider(fn)
    raise ConfigError(
        f"not a provider spec: {spec!r} (use a name, a dict with 'name', a Provider, a function, or a list)"
    )


_SECRET_KEY = re.compile(r"(?i)key|token|secret|password|passwd|auth|credential")


def masked(spec: Mapping[Any, Any]) -> str:
    """A dict spec's repr for error messages, with credential-looking values masked."""
    items = ", ".join(
        f"{k!r}: {'***' if _SECRET_KEY.search(str(k)) else repr(v)}" for k, v in spec.items()
    )
    return "{" + items + "}"


def resolve(spec: Any) -> tuple[list[Provider], bool]:
    """Turn a spec into providers. Returns ``(providers, is_chain)``; a list spec is a chain even of one."""
    if spec is None:
        spec, origin = default_chain(), default_chain_origin()
        if origin is not None:  # a bad value must say where it came from
            try:
                return resolve(spec)
            except ConfigError as exc:
                raise ConfigError(f"{exc} (from the {origin} environment variable)") from None
    if isinstance(spec, str) and "," in spec:
        spec = [s for s in spec.split(",") if s.strip()]
    if isinstance(spec, Sequence) and not isinstance(spec, str | bytes):
        items = list(spec)
        if not items:
            raise ConfigError("the provider chain is empty: name at least one provider")
        return [_one(item) for item in items], True
    return [_one(spec)], False
