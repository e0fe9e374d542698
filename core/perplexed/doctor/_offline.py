"""The offline diagnosis (free; :func:`diagnose` / :func:`adiagnose`): which providers have keys (format only;
a key is never printed), whether SearXNG answers, the local index's integrity, the state store if one is
configured, the chain that would run and the price overrides. :attr:`Diagnosis.exit_code` is 1 when something
the configured chain needs is missing, malformed or unreachable, else 0."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from perplexed._errors import (
    ConfigError,
    PerplexedError,
    ResponseBodyError,
    install_hint,
    redact,
    register_url_secret,
)
from perplexed.doctor._checks import (
    ERROR,
    FAILING,
    INFO,
    MISSING,
    OK,
    WARN,
    check_key_format,
    check_shape,
)
from perplexed.doctor._shapes import SHAPES
from perplexed.net import _portal
from perplexed.net._http import get_client, read_capped, redirect_origin
from perplexed.providers import CallableProvider, Provider, available, get
from perplexed.providers._table import WEB_PROVIDERS

__all__ = ["Check", "Diagnosis", "Member", "adiagnose", "diagnose", "split_names"]

#: seconds allowed to the offline SearXNG probe
PROBE_TIMEOUT_S = 5.0
PROBE_MAX_BYTES = 1024 * 1024  # a probe answer is small; anything bigger is not a SearXNG answer


@dataclass(frozen=True)
class Check:
    """One offline check: ``name`` (``key:tavily``, ``searxng``, ``index``, ``store``, ``chain``), ``status``
    (``ok``, ``warn``, ``missing``, ``error``, ``info``), ``detail`` (never a secret) and whether the
    configured chain ``needed`` it (a needed ``missing``/``error`` makes the exit code 1)."""

    name: str
    status: str
    detail: str
    needed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Member:
    """One member of the chain: whether it ``can_run`` now (what the offline checks can tell), ``detail``
    (why, never a secret) and ``fix``, what to do when it cannot (None when it can)."""

    name: str
    can_run: bool
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Diagnosis:
    """The offline report: the chain (``chain_source`` says where it came from), the checks, and per member of
    the chain whether it can run now. Ready (:attr:`exit_code` 0) when no needed check fails and at least one
    member can answer now."""

    chain: tuple[str, ...]
    chain_source: str
    checks: tuple[Check, ...]
    members: tuple[Member, ...] = ()
    index: dict[str, str] | None = None

    @property
    def problems(self) -> list[Check]:
        """The checks that fail the exit code: needed and missing or in error."""
        return [c for c in self.checks if c.needed and c.status in FAILING]

    @property
    def ready(self) -> bool:
        """No needed check fails and at least one member of the chain can answer now."""
        return not self.problems and any(m.can_run for m in self.members)

    @property
    def exit_code(self) -> int:
        return 0 if self.ready else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "chain": list(self.chain),
            "chain_source": self.chain_source,
            "ok": self.ready,
            "ready": self.ready,
            "members": [m.to_dict() for m in self.members],
            "index": self.index,
            "checks": [c.to_dict() for c in self.checks],
        }


# --- the chain ---------------------------------------------------------------------------------------------


def split_names(text: str) -> list[str]:
    """The provider names of a comma-separated chain (``--provider A,B``), blanks dropped."""
    return [p.strip() for p in text.split(",") if p.strip()]


def _chain_spec(provider: str | None) -> tuple[list[str], str, dict[str, Provider], list[str]]:
    """The chain to check (registry names), where it came from, the configured Provider objects by name, and
    the labels of configured members the doctor cannot check offline (functions, unregistered classes)."""
    from perplexed.policy import _settings

    if provider is not None:
        names, source = split_names(provider), "--provider"
        if not names:
            raise ConfigError("--provider names no provider")
        return names, source, {}, []
    overrides: dict[str, Any] = getattr(_settings, "_overrides", {})
    if "provider" in overrides:
        spec = overrides["provider"]
        items = spec.split(",") if isinstance(spec, str) else spec if isinstance(spec, list | tuple) else [spec]
        instances = {
            i.name: i for i in items if isinstance(i, Provider) and _spec_name(i) is not None
        }
        opaque = [_opaque_label(i) for i in items if _spec_name(i) is None]
        return [n for n in (_spec_name(i) for i in items) if n], "configure()", instances, opaque
    if os.environ.get("PERPLEXED_PROVIDER", "").strip():
        return list(_settings.default_chain()), "PERPLEXED_PROVIDER", {}, []
    return list(_settings.default_chain()), "default", {}, []


def _opaque_label(item: Any) -> str:
    label = getattr(item, "label", None) or getattr(item, "name", None) or getattr(item, "__name__", None)
    return str(label) if label else type(item).__name__


def _spec_name(item: Any) -> str | None:
    """The registry name of one configured chain member; None for a function or an unregistered class (they
    have nothing for the doctor to check offline)."""
    if isinstance(item, str):
        return item.strip() or None
    if isinstance(item, Mapping):
        name = item.get("provider", item.get("name"))
        return name.strip() if isinstance(name, str) else None
    if isinstance(item, Provider) and item.name in available() and not isinstance(item, CallableProvider):
        return item.name
    return None


def _chain_check(chain: Sequence[str], known: set[str], source: str, explicit: bool) -> Check:
    unknown = [n for n in chain if n not in known]
    if unknown:
        return Check("chain", ERROR, f"unknown provider(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}", True)
    return Check("chain", OK if explicit else INFO, f"{' → '.join(chain)} (from {source})")


# --- keys ----------------------------------------------------------------------------------------------------


def _key_value(cls: type[Provider]) -> str | None:
    """The raw key of a provider class from its environment variable (checked, never shown)."""
    if not cls.env_key:
        return None
    value = os.environ.get(cls.env_key)
    return value if value is not None and value != "" else None


def _key_check(name: str, cls: type[Provider], needed: bool, instance: Provider | None = None) -> Check:
    if instance is not None:  # a configured Provider object: its own key (constructor, else environment)
        try:
            value: str | None = instance.api_key()
        except ConfigError:
            value = None
        source = f"{instance.label}'s api_key"
    else:
        value, source = _key_value(cls), str(cls.env_key)
    status, message = check_key_format(name, value)
    if status == MISSING:
        message = f"{cls.env_key} is not set"
        if name == "firecrawl":
            try:
                instance = instance or cls()
                if getattr(instance, "self_hosted", False):
                    return Check(f"key:{name}", OK, f"self-hosted at {instance.base_url}: no key needed", needed)
            except ConfigError:
                pass
    else:
        message = f"{source}: {message}"
    if status == OK and instance is None and cls.env_base_url and os.environ.get(cls.env_base_url, "").strip():
        message += f"; base URL from {cls.env_base_url}"
    return Check(f"key:{name}", status, message, needed)


def _agent_key_check() -> Check:
    """The Agent API's key (answer()): informative only, no chain needs it."""
    status, message = check_key_format("perplexity", _key_value(get("perplexity")))
    return Check(
        "key:agent", INFO if status == MISSING else status, f"PERPLEXITY_API_KEY (Agent API, answer()): {message}"
    )


# --- SearXNG -------------------------------------------------------------------------------------------------


async def _probe_searxng(base_url: str, transport: httpx.AsyncBaseTransport | None) -> tuple[str, str]:
    """GET /search?format=json on the instance: ok, or why it cannot serve the chain.

    Through the shared client, like a search: no redirect is followed (one is reported with its origin) and the
    body is read within a cap on decoded bytes, so a hostile "SearXNG" cannot inflate a bomb here either.
    """
    url = base_url.rstrip("/") + "/search"
    params = {"q": "perplexed doctor", "format": "json"}
    started = time.monotonic()
    try:
        client = get_client(transport)
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            response = await client.send(client.build_request("GET", url, params=params), stream=True)
            try:
                target = redirect_origin(response)
                if target is not None:
                    return ERROR, f"{base_url} redirects to {target} (not followed)"
                body = await read_capped(response, PROBE_MAX_BYTES)
            finally:
                await response.aclose()
    except (httpx.HTTPError, TimeoutError) as exc:
        return ERROR, f"unreachable at {base_url} ({type(exc).__name__})"
    except ResponseBodyError as exc:
        return ERROR, f"{base_url} sent an unreadable body ({exc})"
    ms = int((time.monotonic() - started) * 1000)
    if response.status_code == 403:
        return ERROR, f"{base_url} answers 403 to format=json: enable json in settings.yml search.formats"
    if response.status_code != 200:
        return ERROR, f"{base_url} answers HTTP {response.status_code}"
    try:
        data = json.loads(body)
    except ValueError:
        return ERROR, f"{base_url} did not answer JSON"
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return ERROR, f"{base_url} answers JSON without a 'results' list"
    found = check_shape(SHAPES["searxng"], data)
    drift = f"; unexpected shape: {', '.join(found.missing + found.wrong_type)}" if found.drift else ""
    engines = data.get("unresponsive_engines") or []
    note = f"; {len(engines)} engine(s) did not answer" if isinstance(engines, list) and engines else ""
    return WARN if drift else OK, f"answers at {base_url} ({ms} ms, {found.items} hits){note}{drift}"


async def _searxng_check(
    in_chain: bool, explicit: bool, instance: Provider | None, transport: httpx.AsyncBaseTransport | None
) -> Check:
    """SearXNG has no key: its URL (the configured instance's, else ``SEARXNG_URL``) is probed instead."""
    base = os.environ.get("SEARXNG_URL", "").strip()
    if instance is not None:
        try:
            base = instance.base_url
        except ConfigError:
            base = ""
    if not base:
        return Check("searxng", MISSING if in_chain else INFO, "SEARXNG_URL is not set", in_chain and explicit)
    register_url_secret(base)
    status, message = await _probe_searxng(base, transport)
    return Check("searxng", status, redact(message), in_chain)


async def _provider_checks(
    chain: Sequence[str],
    known: set[str],
    instances: Mapping[str, Provider],
    explicit: bool,
    transport: httpx.AsyncBaseTransport | None,
) -> list[Check]:
    """One check per web provider and per other (plug-in) provider of the chain: its key, or SearXNG's URL."""
    checks: list[Check] = []
    for name in [*WEB_PROVIDERS, *(n for n in chain if n in known and n not in WEB_PROVIDERS and n != "local")]:
        in_chain = name in chain
        try:
            cls = get(name)
        except Exception as exc:  # a broken plug-in must not hide the other checks
            checks.append(Check(f"key:{name}", ERROR, f"cannot load provider {name!r}: {type(exc).__name__}", in_chain))
            continue
        if name == "searxng":
            checks.append(await _searxng_check(in_chain, explicit, instances.get("searxng"), transport))
            continue
        if not cls.env_key:
            continue
        check = _key_check(name, cls, in_chain, instances.get(name))
        if not in_chain and check.status == MISSING:
            check = Check(check.name, INFO, check.detail)
        elif in_chain and not explicit and check.status == MISSING:
            check = Check(check.name, check.status, check.detail, False)
        checks.append(check)
    return checks


# --- the local index, the store, the prices ------------------------------------------------------------------


def _check_index(needed: bool, index: str | os.PathLike[str] | None = None) -> Check:
    """The local index in use (``index``, else the one :func:`perplexed.providers.local.locate_index` finds):
    missing, empty (not ready: a search would fail), damaged, or how many documents it holds."""
    from perplexed.index import check_index, locate_index
    from perplexed.index._location import index_option

    path = locate_index(index).path
    run = f"run `perplexed index FOLDER{index_option(path)}`"
    try:
        result = check_index(path)
    except Exception as exc:  # a checker bug must not hide the other checks
        return Check("index", ERROR, f"index check failed: {type(exc).__name__}: {exc}", needed)
    if not result.exists:
        return Check("index", MISSING, f"no index at {path}: {run}", needed)
    if not result.ok:
        problem = result.problem or "the index is not usable"
        where = "" if str(path) in problem else f"{path}: "
        return Check("index", ERROR, where + problem + (f"; {result.remedy}" if result.remedy else ""), needed)
    if not result.documents:
        return Check("index", MISSING, f"no documents in {path}: {run}", needed)
    return Check("index", OK, f"{result.documents} documents in {path}", needed)


def _index_check(chain: Sequence[str], explicit: bool, index: str | os.PathLike[str] | None = None) -> Check:
    """:func:`_check_index`, where a missing index fails only a chain configured with ``local``."""
    check = _check_index("local" in chain, index)
    if check.status == MISSING and not (explicit and "local" in chain):
        return Check("index", INFO if "local" not in chain else MISSING, check.detail, False)
    return check


# --- the members ------------------------------------------------------------------------------------------------


def _fix(check: Check, name: str) -> str:
    """What to do about a member's failing check, in the words a user acts on."""
    if check.name == "index" and check.status == MISSING:
        return check.detail[check.detail.rindex(": run ") + 2:] if ": run " in check.detail else check.detail
    if check.name == "searxng" and check.status == MISSING:
        return "set SEARXNG_URL to your SearXNG instance's URL (with JSON output enabled)"
    if check.status == MISSING and check.detail.endswith(" is not set"):
        return "set " + check.detail.removesuffix(" is not set")
    return check.detail


def _members(chain: Sequence[str], known: set[str], checks: Sequence[Check], opaque: Sequence[str]) -> list[Member]:
    """Per member of the chain, from the checks: can it answer now, and if not, what to do."""
    by_name = {c.name: c for c in checks}
    out: list[Member] = []
    for name in chain:
        if name not in known:
            out.append(Member(name, False, "not a registered provider", "use one of `perplexed providers`"))
            continue
        price = by_name.get(f"price:{name}")
        if price is not None and price.status in FAILING:
            out.append(Member(name, False, price.detail, price.detail))
            continue
        check = by_name.get("index" if name == "local" else "searxng" if name == "searxng" else f"key:{name}")
        if check is None:  # a plug-in without a key to check: nothing stops it offline
            out.append(Member(name, True, "no key or URL to check offline"))
        elif check.status in (OK, WARN):
            out.append(Member(name, True, check.detail))
        else:
            out.append(Member(name, False, check.detail, _fix(check, name)))
    out.extend(Member(label, True, "a function or custom provider: nothing to check offline") for label in opaque)
    return out


def _store_spec() -> Any:
    """The configured store: ``configure(store=...)``'s (a Store), else ``PERPLEXED_STORE`` (a spec), else None."""
    governance = sys.modules.get("perplexed.engine._governance")
    configured = getattr(getattr(governance, "_settings", None), "store", None)
    if configured is not None:
        return configured
    return os.environ.get("PERPLEXED_STORE", "").strip() or None


async def _check_store() -> Check | None:
    """The state store, when one is configured (``configure(store=...)`` or ``PERPLEXED_STORE``): open it and
    make one cheap read. A store failure never fails a search, but a broken configured store is reported."""
    spec = _store_spec()
    if spec is None:
        return None
    try:
        store_module = importlib.import_module("perplexed.store")
    except ImportError:  # pragma: no cover - the store package is part of perplexed
        return Check("store", INFO, "a store is configured but this perplexed has no store support")
    if isinstance(spec, str):
        register_url_secret(spec)
    shown = redact(spec if isinstance(spec, str) else repr(spec))
    owned = not isinstance(spec, store_module.Store)
    try:
        store = store_module.open_store(spec)
    except PerplexedError as exc:
        return Check("store", ERROR, redact(f"cannot open store {shown}: {exc}"), True)
    try:
        started = time.monotonic()
        await store.check()  # a write and a read of the store itself (never a degraded in-process fallback)
        ms = int((time.monotonic() - started) * 1000)
    except Exception as exc:  # any backend error: report it, never raise
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return Check("store", ERROR, redact(f"store {shown} fails a write and read check: {why}"), True)
    finally:
        if owned:
            try:
                await store.aclose()
            except Exception:  # closing a store we only probed: nothing to report
                pass
    return Check("store", OK, f"{shown} answers a write and a read ({ms} ms)", True)


#: the extras a user installs for a feature (the meta-extras ``all``, ``test``, ``docs``, ``bench`` are left out)
FEATURE_EXTRAS = ("cli", "fetch", "pdf", "mcp", "redis", "otel", "langchain", "llama-index", "agents")
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?[^;]*;\s*extra\s*==\s*['\"]([\w.-]+)['\"]")


def _extras_checks() -> list[Check]:
    """Which of perplexed's extras are installed, read from the installed package's own metadata (the extras
    declared in pyproject.toml, nothing listed twice): each is ``ok`` or ``info`` with the pip command."""
    from importlib import metadata

    try:
        requires = metadata.requires("perplexed-search") or []
    except metadata.PackageNotFoundError:  # run from a source tree without installing: nothing to read
        return [Check("extras", INFO, "perplexed-search is not installed as a package: extras unknown")]
    wanted: dict[str, list[str]] = {}
    for line in requires:
        match = _REQUIREMENT.match(line)
        if match is not None and match.group(2) in FEATURE_EXTRAS and match.group(1) != "perplexed-search":
            wanted.setdefault(match.group(2), []).append(match.group(1))
    checks = []
    for extra in FEATURE_EXTRAS:
        if extra not in wanted:
            continue
        missing = []
        for name in wanted[extra]:
            try:
                metadata.distribution(name)
            except metadata.PackageNotFoundError:
                missing.append(name)
        if missing:
            checks.append(Check(f"extra:{extra}", INFO, f"not installed ({', '.join(missing)} missing): "
                                                        f"{install_hint(extra)}"))
        else:
            checks.append(Check(f"extra:{extra}", OK, f"installed ({', '.join(wanted[extra])})"))
    return checks


def _price_checks(chain: Sequence[str]) -> list[Check]:
    """An unreadable ``PERPLEXED_PRICE_<NAME>`` fails every search that prices that provider."""
    from perplexed.policy._settings import price_override

    out = []
    for name in available():
        try:
            price_override(name)
        except ConfigError as exc:
            out.append(Check(f"price:{name}", ERROR, str(exc), name in chain))
    return out


# --- the diagnosis -------------------------------------------------------------------------------------------


async def adiagnose(
    provider: str | None = None,
    *,
    index: str | os.PathLike[str] | None = None,
    searxng_transport: httpx.AsyncBaseTransport | None = None,
) -> Diagnosis:
    """The offline checks (see the module docstring). ``provider`` is a comma-separated chain (as
    ``--provider``); default: ``configure(provider=...)``, else ``PERPLEXED_PROVIDER``, else the default
    chain. Members of an explicit chain are needed; members of the default chain only when configured.
    ``index``: the local index to check (as ``--index``), else the one a search would use. Ready only when
    at least one member of the chain can answer now."""
    from perplexed.index import locate_index

    chain, source, instances, opaque = _chain_spec(provider)
    explicit = source != "default"
    known = set(available())
    checks = [_chain_check(chain, known, source, explicit)]
    checks.extend(await _provider_checks(chain, known, instances, explicit, searxng_transport))
    checks.append(_agent_key_check())
    checks.append(_index_check(chain, explicit, index))
    store_check = await _check_store()
    checks.append(store_check or Check("store", INFO, "no state store configured (PERPLEXED_STORE): in memory"))
    checks.extend(_price_checks(chain))
    checks.extend(_extras_checks())
    members = _members(chain, known, checks, opaque)
    location = locate_index(index).to_dict()
    return Diagnosis(tuple(chain), source, tuple(checks), tuple(members), location)


def diagnose(provider: str | None = None, *, index: str | os.PathLike[str] | None = None) -> Diagnosis:
    """Sync :func:`adiagnose`."""
    return _portal.run(adiagnose, provider, index=index)
