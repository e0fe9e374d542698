"""State stores: where the chain remembers cached answers, cool-downs, rate windows and spend.

``MemoryStore()`` (the default, one process), ``SQLiteStore(path)`` (the processes of one machine), and a
Redis/Valkey store for fleets. Choose one with ``perplexed.configure(store=...)`` or ``PERPLEXED_STORE``:
a :class:`Store` instance, ``"memory"``, or a URL (``"sqlite:////var/lib/app/state.db"``: four slashes for
an absolute path, three for a relative one). See :mod:`perplexed.store._base` for the interface.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perplexed._errors import ConfigError, mask_url, register_url_secret
from perplexed.store._base import (
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
from perplexed.store.memory import MemoryStore

if TYPE_CHECKING:
    from perplexed.store.sqlite import SQLiteStore

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
        from perplexed.store.sqlite import SQLiteStore

        return SQLiteStore
    if name == "RedisStore":
        return importlib.import_module(f"{__name__}.redis").RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_scheme(scheme: str, factory: str | Callable[[str], Store]) -> None:
    """Make ``open_store`` understand URLs starting ``scheme://`` (``factory(url) -> Store``)."""
    _SCHEMES[scheme.lower()] = factory


def _sqlite_path(url: str) -> str:
    """The file of a ``sqlite://`` store URL (SQLAlchemy's convention: ``sqlite:///relative/path.db``,
    ``sqlite:////absolute/path.db``); ConfigError naming the problem for a URL that cannot hold shared state."""
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
    if path == ":memory:" or path.startswith("file:"):
        raise ConfigError(
            f"store URL {url!r} is an in-memory (or URI) SQLite database, which no other process sees: use "
            "'memory' for a per-process store, or a file path to share state"
        )
    if path.endswith(("/", os.sep)):
        raise ConfigError(f"store URL {url!r} names a directory, not a file: add a file name like 'state.db'")
    target = Path(path)
    if target.exists() and not target.is_file():
        kind = "a directory" if target.is_dir() else "not a regular file"
        raise ConfigError(f"store URL {url!r} names {kind} ({path}): name a database file like 'state.db'")
    if target.parent.exists() and not target.parent.is_dir():
        raise ConfigError(f"store URL {url!r}: {target.parent} is not a directory")
    return path


def open_store(spec: Any) -> Store:
    """A :class:`Store` from ``spec``: a Store instance (returned as is), ``"memory"`` (a fresh
    :class:`MemoryStore`), a ``sqlite:///...`` URL, or a URL of a registered scheme (``redis://...``).
    Anything else is a :class:`~perplexed.ConfigError`."""
    if isinstance(spec, Store):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        shown = mask_url(repr(spec))
        raise ConfigError(f"store must be a Store, 'memory' or a URL like 'sqlite:///state.db', got {shown}")
    register_url_secret(spec)
    try:
        return _open(spec.strip())
    except ConfigError as exc:  # never the URL's password in the message
        raise ConfigError(mask_url(str(exc))) from None
    except (ValueError, TypeError, OSError) as exc:  # a URL the backend cannot parse (a malformed host, ...)
        raise ConfigError(mask_url(f"store URL {spec.strip()!r} is not usable: {exc}")) from None


def _open(text: str) -> Store:
    if text.lower() == "memory":
        return MemoryStore()
    scheme, sep, _ = text.partition("://")
    scheme = scheme.lower()
    if sep and scheme == "sqlite":
        from perplexed.store.sqlite import SQLiteStore

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
