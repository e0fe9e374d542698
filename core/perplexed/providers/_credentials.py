"""Keys like the peers: ``api_key=`` / ``base_url=`` beside ``provider=`` on a component, checked when the
component is built (langchain-tavily's ``TavilySearch`` fails at construction when its key is missing).

:func:`with_credentials` is what the framework adapters' search components call at construction:

- ``api_key``/``base_url`` go into the spec of the one provider ``provider`` names (a name, a dict, or a
  one-item list); with a chain, no provider, or a Provider object they are a :class:`~perplexed.ConfigError`
  saying where the key goes instead;
- a single provider that needs a key and has none (argument, spec or environment) is a ``ConfigError``
  naming the environment variable to set (a missing URL is left to the call, as before);
- a chain whose members cannot all run (no key, no URL) gives one warning naming them and what each needs
  when one of them stands before every member that can run (each call would start with a failed attempt) or
  none can run; the chain keeps them (each is a free ``config`` error attempt) and the others run. A fallback
  that cannot run behind a member that can (``["local", "searxng"]`` without ``SEARXNG_URL``) is only logged
  (INFO): the first member answers, and the attempt says why if the fallback is ever reached. The warning
  points at the caller's line (the first frame outside perplexed, its adapters, pydantic and the frameworks).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import SecretStr

from perplexed._errors import ConfigError
from perplexed._logs import get_logger
from perplexed.providers._base import CallableProvider, Provider
from perplexed.providers._registry import masked, resolve

__all__ = ["describe", "missing_setup", "with_credentials"]

logger = get_logger("perplexed.providers")

#: frames from these packages are the library's, not the user's (warnings point past them)
_LIBRARY_PACKAGES = ("perplexed", "langchain_perplexed", "llama_index_perplexed", "pydantic", "langchain_core",
                     "langchain", "llama_index", "typing_extensions")


def _library_frame(filename: str) -> bool:
    parts = filename.replace("\\", "/").split("/")
    return any(part in _LIBRARY_PACKAGES for part in parts[:-1]) or filename.startswith("<frozen")


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` in the caller of this function that names the user's line."""
    frame = sys._getframe(2)  # the caller of the function that asks
    level = 2
    while frame is not None and _library_frame(os.path.normcase(frame.f_code.co_filename)):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _fold(spec: Any, api_key: str | SecretStr | None, base_url: str | None, owner: str) -> Any:
    creds: dict[str, Any] = {}
    if api_key is not None:
        creds["api_key"] = api_key
    if base_url is not None:
        creds["base_url"] = base_url
    if not creds:
        return spec
    given = " and ".join(f"{k}=" for k in creds)
    if isinstance(spec, Sequence) and not isinstance(spec, str | bytes) and len(spec) == 1:
        return [_fold(spec[0], api_key, base_url, owner)]
    if isinstance(spec, str) and spec.strip() and "," not in spec:
        return {"name": spec.strip(), **creds}
    if isinstance(spec, Mapping):
        for key, value in creds.items():
            if spec.get(key) is not None and spec.get(key) != value:
                raise ConfigError(f"{owner}: {key} given both as {key}= and in the provider dict; pass one")
        return {**spec, **creds}
    if spec is None or isinstance(spec, str | Sequence):
        what = "the default chain" if spec is None else "a chain"
        raise ConfigError(
            f"{owner}: {given} needs provider= naming one provider, not {what}; for a chain, give each member "
            "its own, e.g. provider=['searxng', {'name': 'tavily', 'api_key': ...}]"
        )
    raise ConfigError(
        f"{owner}: {given} needs provider= naming one provider (a name or a dict); a "
        f"{type(spec).__name__} carries its own key: pass it there"
    )


def missing_setup(provider: Provider) -> tuple[str, str] | None:
    """What keeps ``provider`` from running: ``("key" | "url", message as the provider words it)``, or None."""
    if isinstance(provider, CallableProvider):
        return None
    try:
        _ = provider.base_url
    except ConfigError as exc:
        return "url", str(exc)
    if provider.env_key:
        try:
            provider.api_key()
        except ConfigError as exc:
            return "key", str(exc)
    return None


def with_credentials(
    spec: Any, *, api_key: str | SecretStr | None = None, base_url: str | None = None, owner: str = "provider"
) -> Any:
    """``spec`` with ``api_key``/``base_url`` folded into its one provider, checked as the module docstring
    says (``owner`` names the component in messages). Returns the spec to use."""
    spec = _fold(spec, api_key, base_url, owner)
    members, is_chain = resolve(spec)
    problems = [found for p in members if (found := missing_setup(p)) is not None]
    if not problems:
        return spec
    if not is_chain:
        kind, why = problems[0]
        if kind == "key":  # a URL may still come from the environment at call time, as today
            raise ConfigError(f"{owner}: {why}")
        return spec
    listed = "; ".join(why for _, why in problems)
    running = len(members) - len(problems)
    message = (f"{owner}: {len(problems)} of {len(members)} chain members cannot run ({listed}); "
               + (f"the other {running} will run" if running else "no member can run until this is fixed"))
    if missing_setup(members[0]) is None:  # the first member runs: the others are fallbacks, maybe never needed
        logger.info("%s", message)
        return spec
    warnings.warn(message, UserWarning, stacklevel=user_stacklevel())
    return spec


def describe(spec: Any) -> str:
    """A provider spec as a short, safe string for reprs: names, dicts with credential values masked,
    Provider objects by their own repr (which never shows a key), functions by name; a chain joined by
    ``" → "``. ``None`` is ``"default"``."""
    if spec is None:
        return "default"
    if isinstance(spec, str):
        return spec
    if isinstance(spec, Mapping):
        return masked(spec)
    if isinstance(spec, Sequence):
        return " → ".join(describe(item) for item in spec)
    if isinstance(spec, Provider):
        return repr(spec)
    return str(getattr(spec, "__name__", type(spec).__name__))
