"""Governance identities and keys, hashed (never a key in the clear): :func:`provider_identity` names a provider
across processes, :func:`cache_identity` names its cached answers. Re-exported by ``_governance``."""

from __future__ import annotations

import hashlib
import inspect
import secrets
import threading
import weakref
from typing import TYPE_CHECKING

from perplexed._errors import ConfigError
from perplexed.providers._base import CallableProvider, FunctionProvider

if TYPE_CHECKING:
    from perplexed.providers import Provider

__all__ = ["cache_identity", "provider_identity"]


# -- identities and keys (hashed; never a key in the clear) ---------------------------------------------------


def _digest(*parts: str) -> str:
    return hashlib.blake2b("\0".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _remembered(provider: Provider, parts: tuple[str, ...]) -> str:
    """``_digest(*parts)``, kept on the provider with the parts it hashed (the parts are read every time: a
    changed label or URL is another identity; only the hash is saved)."""
    cached = provider.__dict__.get("_gov_identity_of")
    if cached is not None and cached[0] == parts:
        return cached[1]  # type: ignore[no-any-return]
    identity = _digest(*parts)
    provider.__dict__["_gov_identity_of"] = (parts, identity)
    return identity


def provider_identity(provider: Provider) -> str:
    """A stable hash naming ``provider`` across processes: registry name, base URL and a hash of its key
    (HTTP providers); label and the function's qualified name (function providers)."""
    if isinstance(provider, FunctionProvider):
        fn = provider._fn
        qual = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"
        return _remembered(provider, ("fn", provider.label, qual))
    if isinstance(provider, CallableProvider):
        cls = type(provider)
        return _remembered(provider, ("callable", provider.name, provider.label, f"{cls.__module__}.{cls.__qualname__}",
                                      str(getattr(provider, "_base_url", "") or ""),
                                      str(getattr(provider, "path", "") or "")))
    return _http_identity(provider)


def _http_identity(provider: Provider) -> str:
    """:func:`provider_identity` of a provider that is no :class:`CallableProvider` (an HTTP API)."""
    try:
        base_url = provider.base_url
    except ConfigError:
        base_url = ""
    key = ""
    if provider.env_key:
        try:
            key = provider.api_key()
        except ConfigError:
            key = ""
    cached = provider.__dict__.get("_gov_identity")
    key_check = hash(key)  # the process's salted hash: tells a changed key, keeps no key
    if cached is not None and cached[0] == base_url and cached[1] == key_check:
        return cached[2]  # type: ignore[no-any-return]
    key_hash = hashlib.sha256(key.encode()).hexdigest() if key else ""
    identity = _digest("http", provider.name, base_url, key_hash)
    provider.__dict__["_gov_identity"] = (base_url, key_check, identity)
    return identity


_PROCESS = secrets.token_hex(8)  # object tokens of this process never meet another process's in a shared store
_tokens: dict[int, str] = {}
_kept: list[object] = []  # objects that cannot be weakly referenced: kept alive, so their id is never reused
_tokens_lock = threading.Lock()


def _object_token(obj: object) -> str:
    """A token naming ``obj`` itself (not its class, name or value) for as long as it lives in this process.
    A bound method is named by its object and its function (``x.search`` makes a new method object on each
    access: two wrappers of it still share)."""
    if inspect.ismethod(obj):
        return f"{_object_token(obj.__self__)}.{_object_token(obj.__func__)}"
    key = id(obj)
    with _tokens_lock:
        token = _tokens.get(key)
        if token is None:
            token = _tokens[key] = f"{_PROCESS}:{secrets.token_hex(8)}"
            try:  # forget the token when the object dies (before its id can be reused)
                weakref.finalize(obj, _tokens.pop, key, None)
            except TypeError:
                _kept.append(obj)
    return token


def cache_identity(provider: Provider) -> str:
    """The identity that names ``provider``'s cached answers; never shared by a label or a class alone.

    With ``cache_key`` set: the label and that key (the user's promise that the answers are interchangeable,
    shared across processes). A function, callable or retriever provider: the object doing the work (the wrapped
    function, the callable or retriever instance), in this process. An HTTP provider: :func:`provider_identity`
    (registry name, base URL and a hash of its key).
    """
    explicit = getattr(provider, "cache_key", None)
    if explicit is not None:
        return _digest("cache_key", provider.label, explicit)
    if isinstance(provider, CallableProvider):
        cached = provider.__dict__.get("_gov_cache_identity")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        identity = _digest("object", provider.name, provider.label, _object_token(provider._cache_subject))
        provider.__dict__["_gov_cache_identity"] = identity
        return identity
    return _http_identity(provider)  # provider_identity(provider): not a CallableProvider (tested above)

