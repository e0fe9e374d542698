"""State stores: where the chain remembers cached answers, cool-downs, rate windows and spend.

``MemoryStore()`` (the default, one process), ``SQLiteStore(path)`` (the processes of one machine), and a
Redis/Valkey store for fleets. Choose one with ``perplexed.configure(store=...)`` or ``PERPLEXED_STORE``:
a :class:`Store` instance, ``"memory"``, or a URL (``"sqlite:////var/lib/app/state.db"``: four slashes for
an absolute path, three for a relative one). See :mod:`perplexed.store._base` for the interface.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from ._base import (
    Admission,
    CachedAnswer,
    Decision,
    ProviderState,
    Record,
    Store,
    Verdict,
    decode_answer,
    encode_answer,
)
from .memory import MemoryStore

if TYPE_CHECKING:
    from .sqlite import SQLiteStore

__all__ = [
    "Admission",
    "CachedAnswer",
    "Decision",
    "MemoryStore",
    "ProviderState",
    "Record",
    "RedisStore",
    "SQLiteStore",
    "Store",
    "Verdict",
    "decode_answer",
    "encode_answer",
    "open_store",
    "register_scheme",
]

# URL scheme -> factory(url) or "module:function" imported on first use (e.g. the Redis store's)
_SCHEMES: dict[str, str | Callable[[str], Store]] = {
    "redis": "perplexed.store.redis:RedisStore",
    "rediss": "perplexed.store.redis:RedisStore",
    "unix": "perplexed.store.redis:RedisStore",
}


def __getattr__(name: str) -> Any:
    # the Redis store needs the optional redis extra: import it only when asked for
    if name == "SQLiteStore":  # sqlite3 is imported only when a SQLite store is wanted
        from .sqlite import SQLiteStore

        return SQLiteStore
    if name == "RedisStore":
        return importlib.import_module(f"{__name__}.redis").RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_scheme(scheme: str, factory: str | Callable[[str], Store]) -> None:
    """Make ``open_store`` understand URLs starting ``scheme://`` (``factory(url) -> Store``)."""
    _SCHEMES[scheme.lower()] = factory


def _sqlite_path(url: str) -> str:
    # SQLAlchemy's convention: sqlite:///relative/path.db, sqlite:////absolute/path.db
    rest = url[len("sqlite://"):]
    if not rest.startswith("/") or rest == "/":
        raise ConfigError(
            f"store URL {url!r} names no file: use 'sqlite:///relative.db' or 'sqlite:////absolute/path.db'"
        )
    path = rest[1:]
    if "?" in path:
        path = path.split("?", 1)[0]
    if not path:
        raise ConfigError(f"store URL {url!r} names no file")
    return path


def open_store(spec: Any) -> Store:
    """A :class:`Store` from ``spec``: a Store instance (returned as is), ``"memory"`` (a fresh
    :class:`MemoryStore`), a ``sqlite:///...`` URL, or a URL of a registered scheme (``redis://...``).
    Anything else is a :class:`~perplexed.ConfigError`."""
    if isinstance(spec, Store):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"store must be a Store, 'memory' or a URL like 'sqlite:///state.db', got {spec!r}")
    text = spec.strip()
    if text.lower() == "memory":
        return MemoryStore()
    scheme, sep, _ = text.partition("://")
    scheme = scheme.lower()
    if sep and scheme == "sqlite":
        from .sqlite import SQLiteStore

        return SQLiteStore(_sqlite_path(text))
    factory = _SCHEMES.get(scheme) if sep else None
    if factory is None:
        raise ConfigError(
            f"unknown store {text!r}: use 'memory', 'sqlite:///relative.db', 'sqlite:////absolute/path.db'"
            + (" or a registered scheme (" + ", ".join(sorted(_SCHEMES)) + ")" if _SCHEMES else "")
        )
    if isinstance(factory, str):
        module_name, _, attr = factory.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:  # the redis module is not there (not installed)
            raise ConfigError(f"store {scheme}:// is not available here ({exc})") from None
    assert callable(factory)
    store = factory(text)
    if not isinstance(store, Store):
        raise ConfigError(f"the {scheme}:// factory did not return a Store")
    return store
