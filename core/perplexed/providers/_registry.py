"""The provider registry (name -> class, provider modules imported on first use; one registry for search and
fetch, each class declaring its ``operations``) and the resolution of provider specs into providers. Re-exported by :mod:`perplexed.providers`; its helpers (``_credentials``,
``_table``) import it from here, so the package's ``__init__`` is imported by nobody below it."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from perplexed._errors import ConfigError, install_hint
from perplexed.policy._keywords import suggestion
from perplexed.policy._settings import default_chain, default_chain_origin
from perplexed.providers._base import OPERATIONS, FunctionProvider, Operation, Provider
from perplexed.providers._fetching import FunctionFetcher

__all__ = [
    "DEFAULT_FETCH_CHAIN", "available", "check_operation", "get", "get_for", "masked", "register", "resolve",
    "unregister",
]

#: the fetch chain when none is given
DEFAULT_FETCH_CHAIN = ("http",)

# registry name -> "module:Class" (imported lazily) or a class registered at run time. ONE registry for every
# operation: each class declares what it can do (``Provider.operations``): search, fetch, or both.
_REGISTRY: dict[str, str | type[Provider]] = {
    "http": "http:Http",  # fetch only: the page itself
    "jina": "jina:Jina",  # fetch only: Jina Reader
    "local": "local:Local",
    "searxng": "searxng:SearXNG",
    "ceramic": "ceramic:Ceramic",
    "firecrawl": "firecrawl:Firecrawl",  # search and fetch (scrape)
    "perplexity": "perplexity:PerplexitySearch",
    "tavily": "tavily:Tavily",  # search and fetch (extract)
    "exa": "exa:Exa",  # search and fetch (contents)
    "brave": "brave:Brave",
    "linkup": "linkup:Linkup",
}
_CLASS_NAMES = {v.split(":")[1]: k for k, v in _REGISTRY.items() if isinstance(v, str)}
#: the earlier names of the fetch side of a vendor's class (``perplexed.fetchers``): the same class
_CLASS_NAMES.update({"TavilyExtract": "tavily", "ExaContents": "exa", "FirecrawlScrape": "firecrawl"})
#: what each operation is called in messages ("unknown fetch provider ...")
_WHAT: dict[Operation, str] = {"search": "provider", "fetch": "fetch provider"}
_VERB: dict[Operation, str] = {"search": "search", "fetch": "fetch pages"}


def register(name: str, cls: type[Provider]) -> None:
    """Register a provider class under ``name`` so specs can use it (for every operation it declares)."""
    if not (isinstance(cls, type) and issubclass(cls, Provider)):
        raise ConfigError(f"cannot register {cls!r}: not a Provider subclass")
    _REGISTRY[name] = cls


def unregister(name: str) -> None:
    """Remove a provider registered with :func:`register` (unknown names are ignored)."""
    _REGISTRY.pop(name, None)


def available(operation: Operation | None = "search") -> list[str]:
    """Registered provider names that can do ``operation`` (``"search"`` by default, ``"fetch"``; None: every
    registered name), in registration order."""
    if operation is None:
        return list(_REGISTRY)
    return [name for name in _REGISTRY if operation in get(name).operations]


def _unknown_provider(name: str, operation: Operation = "search") -> ConfigError:
    """The error for a provider name nobody registered: the closest registered one (``"Tavily"`` → did you
    mean ``'tavily'``?), then the list."""
    able = available(operation)
    near = suggestion(name, able)
    hint = f": did you mean {near!r}?" if near is not None else ""
    what = _WHAT[operation]
    known = ", ".join(able if operation == "fetch" else sorted(able))
    return ConfigError(f"unknown {what} {name!r}{hint} (known {what}s: {known})")


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


def get_for(name: str, operation: Operation) -> type[Provider]:
    """The class registered as ``name``, which must be able to do ``operation`` (ConfigError otherwise, naming
    the registered providers that can)."""
    if name not in _REGISTRY:
        raise _unknown_provider(name, operation)
    cls = get(name)
    check_operation(cls, operation, name)
    return cls


def missing_requirement(cls: type[Provider], operation: str) -> tuple[str, str] | None:
    """The first ``(module, extra)`` that ``cls`` needs for ``operation`` and that is not installed, else None.
    Looked up without importing anything (an imported module is found in ``sys.modules`` at once)."""
    for module, extra in cls.requires.get(operation, ()):
        if module in sys.modules:
            if sys.modules[module] is None:  # blocked
                return module, extra
            continue
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        if found is None:
            return module, extra
    return None


def check_operation(provider: Provider | type[Provider], operation: Operation, label: str | None = None) -> None:
    """ConfigError when ``provider`` (a class or an instance) does not declare ``operation``: names the operation,
    what the provider can do, and the registered providers that can do it."""
    declared = provider.operations
    if operation in declared:
        return
    if label is None:
        label = provider.label if isinstance(provider, Provider) else (provider.name or provider.__name__)
    can = " and ".join(_VERB[op] for op in OPERATIONS if op in declared) or "nothing"
    able = ", ".join(available(operation))
    raise ConfigError(
        f"provider {label!r} cannot {_VERB[operation]}: it can {can} only "
        f"(registered providers that can {_VERB[operation]}: {able})"
    )


def _one(spec: Any, operation: Operation = "search") -> Provider:
    what = _WHAT[operation]
    if isinstance(spec, Provider):
        check_operation(spec, operation)
        return spec
    if isinstance(spec, str):
        name = spec.strip()
        if not name:
            raise ConfigError(f"empty {what} name")
        return get_for(name, operation)()
    if isinstance(spec, Mapping):
        options = dict(spec)
        # {"name": "searxng", ...}; or {"provider": "searxng", "name": "label", ...} to label the attempts
        name = options.pop("provider", None) if "provider" in options else options.pop("name", None)
        if not isinstance(name, str) or not name.strip():
            if operation == "fetch":
                raise ConfigError(f"a fetch provider dict needs a 'name' naming a registered fetch provider "
                                  f"({', '.join(available('fetch'))})")
            raise ConfigError(
                f"a provider dict needs a 'name' naming a registered provider: {masked(spec)}"
            )
        cls = get_for(name.strip(), operation)
        try:
            return cls(**options)
        except TypeError as exc:
            raise ConfigError(f"bad options for {what} {name!r}: {exc}") from None
    if operation == "fetch":
        if callable(spec) and not isinstance(spec, type):
            return FunctionFetcher(spec)
        raise ConfigError(
            f"not a fetch provider spec: {spec!r} (use a name, a dict with 'name', a FetchProvider, a function, "
            "or a list)"
        )
    adapter = getattr(spec, "__perplexed_provider__", None)
    if callable(adapter):
        provider = adapter()
        if isinstance(provider, Provider):
            check_operation(provider, operation)
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


def resolve(spec: Any, operation: Operation = "search") -> tuple[list[Provider], bool]:
    """Turn a spec into providers able to do ``operation``. Returns ``(providers, is_chain)``; a list spec is a
    chain even of one. None is the default chain (``PERPLEXED_PROVIDER`` for a search, ``["http"]`` for a fetch).
    A provider that does not declare ``operation`` is a ConfigError here, before any call."""
    if type(spec) in _PLAIN_PROVIDERS:  # the common case first: a provider object (no ABC check each time)
        if operation not in spec.operations:
            check_operation(spec, operation)
        return [spec], False
    if spec is None:
        if operation == "fetch":
            return [_one(name, operation) for name in DEFAULT_FETCH_CHAIN], True
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
            if operation == "fetch":
                raise ConfigError("the fetch provider chain is empty: name at least one fetch provider")
            raise ConfigError("the provider chain is empty: name at least one provider")
        members = [_one(item, operation) for item in items]
        if len(members) > 1:
            check_packages(members, operation)
        return members, True
    if isinstance(spec, Provider) and len(_PLAIN_PROVIDERS) < 1024:
        _PLAIN_PROVIDERS.add(type(spec))  # a provider class that is no sequence (checked above)
    return [_one(spec, operation)], False


# provider classes seen in resolve() that are not sequences: their objects take the first branch
_PLAIN_PROVIDERS: set[type] = set()


def check_packages(members: Sequence[Provider], operation: Operation) -> None:
    """ConfigError when a member of a chain needs a package that is not installed (naming the extra): its
    attempt would fail on every call and silently hand its work to the next member, perhaps a paid one. (A
    provider alone still fails in its attempt, with the same words.)"""
    for member in members:
        missing = missing_requirement(type(member), operation)
        if missing is not None:
            module, extra = missing
            raise ConfigError(f"provider {member.label!r} needs the {extra} extra ({module} is not installed): "
                              f"{install_hint(extra)}; without it the chain would hand its work to the next "
                              "member on every call")
