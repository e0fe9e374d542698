"""``perplexed doctor``: is the configuration usable, and do the live APIs still answer what the parsers expect?

Two halves:

* **Offline** (:func:`diagnose` / :func:`adiagnose`, free): which providers have keys (format only; a key is
  never printed), whether SearXNG answers, the local index's integrity, the state store if one is configured,
  and the chain that would run. :attr:`Diagnosis.exit_code` is 1 when something the configured chain needs is
  missing, malformed or unreachable, else 0.
* **Live** (:func:`check_live` / :func:`acheck_live`, paid): one cheap real query per provider, checked against
  :data:`SHAPES` (the fields each parser relies on: present, of the right JSON type; fields nobody knows are
  listed but are not drift), the reported or billed cost against the price table, and timed. Each row is
  ``ok``, ``drift`` or ``error``. :func:`estimate` gives the expected cost first. With ``record=DIR`` the
  exchanges are written as redacted vcrpy cassettes (:func:`write_cassette`), the format of ``cassettes/``.

The checks themselves (:func:`check_key_format`, :func:`check_shape`, :func:`compare_cost`) are pure functions
over plain data, so they are tested as tables.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from . import _portal
from ._errors import ConfigError, PerplexedError, ProviderError, redact
from ._http import read_capped, ssl_context
from ._options import SearchOptions
from .providers import CallableProvider, Provider, available, get
from .providers._table import WEB_PROVIDERS

__all__ = [
    "AGENT_ESTIMATE_USD",
    "LIVE_MAX_RESULTS",
    "LIVE_QUERY",
    "SHAPES",
    "Check",
    "CostField",
    "Diagnosis",
    "Exchange",
    "Field",
    "LiveReport",
    "LiveRow",
    "Shape",
    "ShapeCheck",
    "acheck_live",
    "adiagnose",
    "check_key_format",
    "check_live",
    "check_shape",
    "compare_cost",
    "diagnose",
    "estimate",
    "live_targets",
    "write_cassette",
]

# --- statuses ------------------------------------------------------------------------------------------

OK, WARN, MISSING, ERROR, INFO = "ok", "warn", "missing", "error", "info"
DRIFT = "drift"
#: statuses of an offline check that fail ``perplexed doctor`` when the chain needs the thing checked
FAILING = frozenset({MISSING, ERROR})

#: the query and size of the live check: common words (every provider has hits), few results (cheapest)
LIVE_QUERY = "python programming language"
LIVE_MAX_RESULTS = 3
#: estimated USD of one Agent API call with the cheapest preset ("fast": a small model, at most one search)
AGENT_ESTIMATE_USD = 0.01
AGENT_PRESET = "fast"
AGENT_INPUT = "In one word: what is the capital of France?"
#: the label the Agent API's spend is recorded under (as answer() does)
AGENT_SPEND_LABEL = "perplexity-agent"
#: seconds allowed to each live call and to the offline SearXNG probe
LIVE_TIMEOUT_S = 60.0
#: the chain's default per-provider timeout: a live call slower than this is noted
DEFAULT_PROVIDER_TIMEOUT_MS = 15000
PROBE_TIMEOUT_S = 5.0


# --- key formats (declarative) --------------------------------------------------------------------------

#: provider -> (regular expression a well-formed key matches, how it looks, for the message). A key that
#: does not match is a warning (the vendor may have changed its format), never printed.
KEY_FORMATS: dict[str, tuple[str, str]] = {
    "perplexity": (r"pplx-[A-Za-z0-9]{16,}", "pplx-…"),
    "tavily": (r"tvly-[A-Za-z0-9_-]{16,}", "tvly-…"),
    "firecrawl": (r"fc-[A-Za-z0-9]{16,}", "fc-…"),
    "exa": (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "a UUID"),
    "linkup": (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "a UUID"),
    "brave": (r"[A-Za-z0-9_-]{20,64}", "20-64 letters and digits"),
}
_MIN_KEY_CHARS = 8


def check_key_format(provider: str, key: str | None) -> tuple[str, str]:
    """``(status, message)`` for a key's format: ``missing``, ``error`` (it cannot work as sent: blank,
    whitespace or quotes inside, a ``Bearer`` prefix, too short), ``warn`` (not the vendor's usual shape) or
    ``ok``. The message describes the key (length, expected shape), never its value."""
    if key is None or not key.strip():
        return MISSING, "no key"
    if key != key.strip():
        return ERROR, "the key has leading or trailing whitespace"
    if key[:1] in "\"'" or key[-1:] in "\"'":
        return ERROR, "the key is wrapped in quotes"
    if key.lower().startswith("bearer "):
        return ERROR, "the key starts with 'Bearer ' (set the key alone)"
    if any(c.isspace() for c in key):
        return ERROR, "the key contains whitespace"
    if not key.isascii() or not key.isprintable():
        return ERROR, "the key contains characters an HTTP header cannot carry"
    if len(key) < _MIN_KEY_CHARS:
        return ERROR, f"the key is only {len(key)} characters long"
    expected = KEY_FORMATS.get(provider)
    if expected is not None and re.fullmatch(expected[0], key) is None:
        return WARN, f"{len(key)} characters, not shaped like a {provider} key ({expected[1]})"
    return OK, f"set ({len(key)} characters)"


# --- response shapes (declarative) --------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """A field the parser relies on. ``path`` is dotted (``costDollars.total``), relative to the response
    for :attr:`Shape.top` and to each hit for :attr:`Shape.item`. ``types`` are JSON types joined by ``|``:
    ``str``, ``num``, ``int``, ``bool``, ``list``, ``dict``, ``null``. ``level``: ``required`` (must be
    there: in every hit for item fields), ``expected`` (item fields: in at least one hit, so a renamed field
    is caught; top fields: as required) or ``optional`` (only its type is checked when present)."""

    path: str
    types: str
    level: str = "required"


@dataclass(frozen=True)
class CostField:
    """Where a provider reports what a call cost, and in which unit (``usd`` or ``credits``, converted with
    the provider's ``usd_per_credit``)."""

    path: str
    unit: str = "usd"


@dataclass(frozen=True)
class Shape:
    """What one provider's parser relies on: the hit list (``items``, a dotted path), the fields of the
    response (``top``) and of each hit (``item``), the keys known per object (``known``: ``""`` is the
    response, ``"a.b"`` a nested object, ``"a.b[]"`` each element of a list; keys outside are listed as new)
    and the reported cost (``cost``)."""

    items: str
    top: tuple[Field, ...]
    item: tuple[Field, ...]
    known: Mapping[str, frozenset[str]]
    cost: CostField | None = None


def _keys(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: provider -> what its parser relies on (from the parsers in perplexed.providers and agent._response)
SHAPES: dict[str, Shape] = {
    "searxng": Shape(
        items="results",
        top=(
            Field("results", "list"),
            Field("unresponsive_engines", "list", "optional"),
            Field("answers", "list", "optional"),
            Field("infoboxes", "list", "optional"),
            Field("number_of_results", "num", "optional"),
        ),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("content", "str|null", "optional"),  # legacy (engine-built) results may leave it out
            Field("publishedDate", "str|null", "optional"),
            Field("pubdate", "str|null", "optional"),
            Field("score", "num", "optional"),
        ),
        known={
            "": _keys("query number_of_results results answers corrections infoboxes suggestions unresponsive_engines"),
            "results[]": _keys(
                "url title content publishedDate pubdate score engine engines positions category thumbnail "
                "img_src parsed_url template iframe_src priority author metadata length views thumbnail_src "
                "open_group close_group address"
            ),
        },
    ),
    "ceramic": Shape(
        items="result.results",
        top=(Field("result", "dict"), Field("result.results", "list")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("description", "str|null", "expected"),
            Field("score", "num|null", "optional"),
        ),
        known={
            "": _keys("requestId result"),
            "result": _keys("results totalResults searchMetadata"),
            "result.results[]": _keys("title url description score"),
        },
    ),
    "firecrawl": Shape(
        items="data.web",
        top=(
            Field("success", "bool"),
            Field("data", "dict"),
            Field("data.web", "list"),
            Field("data.news", "list", "optional"),
            Field("creditsUsed", "num", "optional"),  # a self-hosted instance may not report it
            Field("warning", "str|null", "optional"),
        ),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("description", "str|null", "expected"),
            Field("markdown", "str|null", "optional"),
            Field("metadata", "dict", "optional"),
        ),
        known={
            "": _keys("success data warning id creditsUsed"),
            "data": _keys("web news images"),
            "data.web[]": _keys(
                "url title description position category markdown metadata html rawHtml links screenshot summary"
            ),
        },
        cost=CostField("creditsUsed", "credits"),
    ),
    "perplexity": Shape(
        items="results",
        top=(Field("results", "list"), Field("id", "str", "optional")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("snippet", "str|null", "expected"),
            Field("date", "str|null", "expected"),
            Field("last_updated", "str|null", "expected"),
        ),
        known={"": _keys("id results server_time"), "results[]": _keys("title url snippet date last_updated")},
    ),
    "tavily": Shape(
        items="results",
        top=(Field("results", "list"), Field("usage", "dict"), Field("usage.credits", "num")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("content", "str|null", "expected"),
            Field("raw_content", "str|null", "optional"),
            Field("published_date", "str|null", "optional"),
            Field("score", "num", "optional"),
        ),
        known={
            "": _keys(
                "query answer images follow_up_questions results response_time usage request_id auto_parameters"
            ),
            "results[]": _keys("title url content score raw_content favicon published_date images"),
        },
        cost=CostField("usage.credits", "credits"),
    ),
    "exa": Shape(
        items="results",
        top=(Field("results", "list"), Field("costDollars", "dict"), Field("costDollars.total", "num")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("text", "str", "expected"),  # asked for by default (contents.text)
            Field("highlights", "list", "expected"),  # asked for by default (contents.highlights)
            Field("publishedDate", "str|null", "optional"),
            Field("summary", "str", "optional"),
            Field("score", "num", "optional"),
            Field("author", "str|null", "optional"),
        ),
        known={
            "": _keys("requestId resolvedSearchType searchType results costDollars searchTime context autoDate"),
            "results[]": _keys(
                "id url title score publishedDate author image favicon text highlights highlightScores summary "
                "subpages extras"
            ),
        },
        cost=CostField("costDollars.total", "usd"),
    ),
    "brave": Shape(
        items="web.results",
        top=(Field("web", "dict"), Field("web.results", "list")),
        item=(
            Field("url", "str"),
            Field("title", "str|null", "expected"),
            Field("description", "str|null", "expected"),
            Field("page_age", "str|null", "optional"),
            Field("page_fetched", "str|null", "optional"),
            Field("age", "str|null", "optional"),
        ),
        known={
            "": _keys("type query web news videos mixed faq infobox discussions locations summarizer rich"),
            "web": _keys("type results family_friendly"),
            "web.results[]": _keys(
                "type subtype title url description page_age page_fetched age language profile meta_url "
                "extra_snippets thumbnail is_source_local is_source_both family_friendly is_live deep_results "
                "cluster cluster_type content_type article video location faq schemas product recipe review "
                "book creative_work music_recording movie software rating qa"
            ),
        },
    ),
    "linkup": Shape(
        items="results",
        top=(Field("results", "list"),),
        item=(
            Field("url", "str"),
            Field("name", "str|null", "expected"),
            Field("content", "str|null", "expected"),
            Field("type", "str", "optional"),
        ),
        known={"": _keys("results"), "results[]": _keys("type name url content favicon")},
    ),
    "agent": Shape(
        items="output",
        top=(
            Field("id", "str"),
            Field("status", "str"),
            Field("output", "list"),
            Field("model", "str|null", "optional"),
            Field("usage", "dict"),
            Field("usage.cost", "dict"),
            Field("usage.cost.total_cost", "num"),
        ),
        item=(Field("type", "str"),),
        known={
            "": _keys(
                "id object created_at completed_at model status output usage error incomplete_details background "
                "store effort preset previous_response_id instructions max_output_tokens max_steps reasoning "
                "tools tool_choice metadata temperature top_p text truncation parallel_tool_calls "
                "max_tool_calls user service_tier prompt_cache_key"
            ),
            "usage": _keys(
                "input_tokens output_tokens total_tokens input_tokens_details output_tokens_details cost "
                "tool_calls_details"
            ),
            "usage.cost": _keys(
                "currency input_cost output_cost tool_calls_cost cache_read_cost cache_creation_cost total_cost "
                "tool_calls_cost_details"
            ),
            "output[]": _keys(
                "type id status role content results queries name arguments call_id summary code language"
            ),
        },
        cost=CostField("usage.cost.total_cost", "usd"),
    ),
}


@dataclass(frozen=True)
class ShapeCheck:
    """What :func:`check_shape` found: ``missing`` fields (absent, or renamed), fields of the ``wrong_type``
    (``"path: got, expected"``), ``unknown`` new fields (not drift), and how many hits were looked at."""

    missing: tuple[str, ...] = ()
    wrong_type: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    items: int = 0

    @property
    def drift(self) -> bool:
        """Whether a field the parser relies on is missing, renamed or of another type."""
        return bool(self.missing or self.wrong_type)


_MISSING = object()


def _get(data: Any, path: str) -> Any:
    value = data
    for part in path.split(".") if path else ():
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "num"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return type(value).__name__


def _type_ok(value: Any, types: str) -> bool:
    kind = _json_type(value)
    allowed = set(types.split("|"))
    return kind in allowed or (kind == "int" and "num" in allowed)


def check_shape(shape: Shape, data: Any) -> ShapeCheck:
    """Check a parsed JSON body against ``shape`` (pure)."""
    if not isinstance(data, dict):
        return ShapeCheck(missing=(f"(the body is a JSON {_json_type(data)}, not an object)",))
    missing: list[str] = []
    wrong: list[str] = []
    for spec in shape.top:
        value = _get(data, spec.path)
        if value is _MISSING:
            if spec.level != "optional":
                missing.append(spec.path)
        elif not _type_ok(value, spec.types):
            wrong.append(f"{spec.path}: {_json_type(value)}, expected {spec.types}")
    listed = _get(data, shape.items)
    items = [i for i in listed if isinstance(i, dict)] if isinstance(listed, list) else []
    for spec in shape.item:
        name = f"{shape.items}[].{spec.path}"
        values = [v for i in items if (v := _get(i, spec.path)) is not _MISSING]
        if spec.level == "required" and len(values) < len(items):
            missing.append(f"{name} (in {len(items) - len(values)} of {len(items)} hits)")
        elif spec.level == "expected" and items and not values:
            missing.append(name)
        bad = next((v for v in values if not _type_ok(v, spec.types)), _MISSING)
        if bad is not _MISSING:
            wrong.append(f"{name}: {_json_type(bad)}, expected {spec.types}")
    unknown: set[str] = set()
    for path, known in shape.known.items():
        if path.endswith("[]"):
            elements = _get(data, path[:-2])
            objects = [o for o in elements if isinstance(o, dict)] if isinstance(elements, list) else []
        else:
            obj = _get(data, path)
            objects = [obj] if isinstance(obj, dict) else []
        for obj in objects:
            unknown.update(f"{path}.{key}" if path else key for key in obj if key not in known)
    return ShapeCheck(tuple(missing), tuple(wrong), tuple(sorted(unknown)), len(items))


def compare_cost(reported: float | None, table: float | None, *, tolerance: float = 0.01) -> tuple[str, str]:
    """``(status, note)``: ``drift`` when a reported cost differs from the price table by more than
    ``tolerance`` (relative; at least a hundredth of a cent), else ``ok``. Nothing to compare is ``ok``."""
    if reported is None and table is None:
        return OK, "no cost reported and no price table"
    if reported is None:
        return OK, f"not reported; price table ${table:.4f}"
    if table is None:
        return OK, f"reported ${reported:.4f} (no price table)"
    if abs(reported - table) <= max(1e-4, tolerance * table):
        return OK, f"reported ${reported:.4f} = price table ${table:.4f}"
    return DRIFT, f"reported ${reported:.4f}, price table ${table:.4f}"


def reported_cost(shape: Shape, data: Any, usd_per_credit: float | None = None) -> float | None:
    """The cost a response reports under ``shape.cost`` in USD (credits converted), or None."""
    if shape.cost is None:
        return None
    value = _get(data, shape.cost.path)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if shape.cost.unit == "credits":
        return None if usd_per_credit is None else float(value) * usd_per_credit
    return float(value)


# --- offline checks ---------------------------------------------------------------------------------------


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
        return {"name": self.name, "status": self.status, "detail": self.detail, "needed": self.needed}


@dataclass(frozen=True)
class Diagnosis:
    """The offline report: the chain (``chain_source`` says where it came from) and the checks."""

    chain: tuple[str, ...]
    chain_source: str
    checks: tuple[Check, ...]

    @property
    def problems(self) -> list[Check]:
        """The checks that fail the exit code: needed and missing or in error."""
        return [c for c in self.checks if c.needed and c.status in FAILING]

    @property
    def exit_code(self) -> int:
        return 1 if self.problems else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "chain": list(self.chain),
            "chain_source": self.chain_source,
            "ok": not self.problems,
            "checks": [c.to_dict() for c in self.checks],
        }


def _chain_spec(provider: str | None) -> tuple[list[str], str, dict[str, Provider]]:
    """The chain to check (registry names), where it came from, and the configured Provider objects by name."""
    from . import _settings

    if provider is not None:
        names, source = [p.strip() for p in provider.split(",") if p.strip()], "--provider"
        if not names:
            raise ConfigError("--provider names no provider")
        return names, source, {}
    overrides: dict[str, Any] = getattr(_settings, "_overrides", {})
    if "provider" in overrides:
        spec = overrides["provider"]
        items = spec.split(",") if isinstance(spec, str) else spec if isinstance(spec, list | tuple) else [spec]
        instances = {
            i.name: i for i in items if isinstance(i, Provider) and _spec_name(i) is not None
        }
        return [n for n in (_spec_name(i) for i in items) if n], "configure()", instances
    if os.environ.get("PERPLEXED_PROVIDER", "").strip():
        return list(_settings.default_chain()), "PERPLEXED_PROVIDER", {}
    return list(_settings.default_chain()), "default", {}


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


async def _probe_searxng(base_url: str, transport: httpx.AsyncBaseTransport | None) -> tuple[str, str]:
    """GET /search?format=json on the instance: ok, or why it cannot serve the chain."""
    url = base_url.rstrip("/") + "/search"
    params = {"q": "perplexed doctor", "format": "json"}
    kwargs: dict[str, Any] = {"timeout": PROBE_TIMEOUT_S, "follow_redirects": True}
    kwargs["transport"] = transport or httpx.AsyncHTTPTransport(verify=ssl_context())
    started = time.monotonic()
    try:
        async with httpx.AsyncClient(**kwargs) as client:
            response = await client.get(url, params=params)
    except httpx.HTTPError as exc:
        return ERROR, f"unreachable at {base_url} ({type(exc).__name__})"
    ms = int((time.monotonic() - started) * 1000)
    if response.status_code == 403:
        return ERROR, f"{base_url} answers 403 to format=json: enable json in settings.yml search.formats"
    if response.status_code != 200:
        return ERROR, f"{base_url} answers HTTP {response.status_code}"
    try:
        data = response.json()
    except ValueError:
        return ERROR, f"{base_url} did not answer JSON"
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return ERROR, f"{base_url} answers JSON without a 'results' list"
    found = check_shape(SHAPES["searxng"], data)
    drift = f"; unexpected shape: {', '.join(found.missing + found.wrong_type)}" if found.drift else ""
    engines = data.get("unresponsive_engines") or []
    note = f"; {len(engines)} engine(s) did not answer" if isinstance(engines, list) and engines else ""
    return WARN if drift else OK, f"answers at {base_url} ({ms} ms, {found.items} hits){note}{drift}"


def _check_index(needed: bool) -> Check:
    """The local index: the index helper's ``check_index`` when there is one, else a PRAGMA quick_check."""
    from . import _index

    checker = getattr(_index, "check_index", None)
    if checker is not None:
        try:
            result = checker(None)
        except Exception as exc:  # a checker bug must not hide the other checks
            return Check("index", ERROR, f"index check failed: {type(exc).__name__}: {exc}", needed)
        path = getattr(result, "path", "?")
        if not getattr(result, "exists", True):
            return Check("index", MISSING, f"no index at {path}: run `perplexed index PATH`", needed)
        if getattr(result, "ok", False):
            docs = getattr(result, "documents", None)
            return Check("index", OK, f"{docs} documents in {path}", needed)
        problem = getattr(result, "problem", None) or "the index is not usable"
        remedy = getattr(result, "remedy", None)
        return Check("index", ERROR, problem + (f"; {remedy}" if remedy else ""), needed)
    path = _index.default_index_path()
    if not path.exists():
        return Check("index", MISSING, f"no index at {path}: run `perplexed index PATH`", needed)
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            conn.close()
        stats = _index.index_stats(path)
    except (sqlite3.Error, ConfigError) as exc:
        return Check("index", ERROR, f"{path} is not a usable index ({exc}); rebuild it with `perplexed index`", needed)
    if verdict != "ok":
        return Check("index", ERROR, f"{path} fails PRAGMA quick_check ({verdict}); rebuild it", needed)
    return Check("index", OK, f"{stats.documents} documents in {path}", needed)


def _store_spec() -> Any:
    """The configured store: ``configure(store=...)``'s (a Store), else ``PERPLEXED_STORE`` (a spec), else None."""
    import sys

    governance = sys.modules.get(f"{__package__}._governance")
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
    shown = redact(spec if isinstance(spec, str) else type(spec).__name__)
    owned = not isinstance(spec, store_module.Store)
    try:
        store = store_module.open_store(spec)
    except PerplexedError as exc:
        return Check("store", ERROR, f"cannot open store {shown}: {exc}", True)
    try:
        started = time.monotonic()
        await store.spend(60.0)
        ms = int((time.monotonic() - started) * 1000)
    except Exception as exc:  # any backend error: report it, never raise
        return Check("store", ERROR, f"store {shown} does not answer: {type(exc).__name__}: {redact(str(exc))}", True)
    finally:
        if owned:
            try:
                await store.aclose()
            except Exception:  # closing a store we only probed: nothing to report
                pass
    return Check("store", OK, f"{shown} answers ({ms} ms)", True)


async def adiagnose(
    provider: str | None = None, *, searxng_transport: httpx.AsyncBaseTransport | None = None
) -> Diagnosis:
    """The offline checks (see the module docstring). ``provider`` is a comma-separated chain (as
    ``--provider``); default: ``configure(provider=...)``, else ``PERPLEXED_PROVIDER``, else the default
    chain. Members of an explicit chain are needed; members of the default chain only when configured."""
    chain, source, instances = _chain_spec(provider)
    explicit = source != "default"
    checks: list[Check] = []
    known = set(available())
    unknown = [n for n in chain if n not in known]
    if unknown:
        checks.append(
            Check("chain", ERROR, f"unknown provider(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}", True)
        )
    else:
        checks.append(Check("chain", OK if explicit else INFO, f"{' → '.join(chain)} (from {source})"))
    for name in [*WEB_PROVIDERS, *(n for n in chain if n in known and n not in WEB_PROVIDERS and n != "local")]:
        in_chain = name in chain
        try:
            cls = get(name)
        except Exception as exc:  # a broken plug-in must not hide the other checks
            checks.append(Check(f"key:{name}", ERROR, f"cannot load provider {name!r}: {type(exc).__name__}", in_chain))
            continue
        if name == "searxng":
            base = os.environ.get("SEARXNG_URL", "").strip()
            if "searxng" in instances:
                try:
                    base = instances["searxng"].base_url
                except ConfigError:
                    base = ""
            if not base:
                status = MISSING if in_chain else INFO
                checks.append(Check("searxng", status, "SEARXNG_URL is not set", in_chain and explicit))
            else:
                status, message = await _probe_searxng(base, searxng_transport)
                checks.append(Check("searxng", status, message, in_chain))
            continue
        if not cls.env_key:
            continue
        check = _key_check(name, cls, in_chain, instances.get(name))
        if not in_chain and check.status == MISSING:
            check = Check(check.name, INFO, check.detail)
        elif in_chain and not explicit and check.status == MISSING:
            check = Check(check.name, check.status, check.detail, False)
        checks.append(check)
    agent_key = _key_value(get("perplexity"))
    status, message = check_key_format("perplexity", agent_key)
    checks.append(
        Check("key:agent", INFO if status == MISSING else status, f"PERPLEXITY_API_KEY (Agent API, answer()): {message}")
    )
    index_check = _check_index("local" in chain)
    if index_check.status == MISSING and not (explicit and "local" in chain):
        index_check = Check("index", INFO if "local" not in chain else MISSING, index_check.detail, False)
    checks.append(index_check)
    store_check = await _check_store()
    checks.append(store_check or Check("store", INFO, "no state store configured (PERPLEXED_STORE): in memory"))
    checks.extend(_price_checks(chain))
    return Diagnosis(tuple(chain), source, tuple(checks))


def _price_checks(chain: Sequence[str]) -> list[Check]:
    """An unreadable ``PERPLEXED_PRICE_<NAME>`` fails every search that prices that provider."""
    from ._settings import price_override

    out = []
    for name in available():
        try:
            price_override(name)
        except ConfigError as exc:
            out.append(Check(f"price:{name}", ERROR, str(exc), name in chain))
    return out


def diagnose(provider: str | None = None) -> Diagnosis:
    """Sync :func:`adiagnose`."""
    return _portal.run(adiagnose, provider)


# --- live checks -----------------------------------------------------------------------------------------


@dataclass
class Exchange:
    """One HTTP request and its response, as sent and received (before redaction)."""

    method: str
    url: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int
    reason: str
    response_headers: list[tuple[str, str]]
    response_body: bytes


class _Recorder(httpx.AsyncBaseTransport):
    """Wraps a transport: reads each response whole (capped) and keeps the exchange."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None, max_body_bytes: int) -> None:
        self.owned = inner is None  # close only a transport made here, never a caller's
        self.inner = inner or httpx.AsyncHTTPTransport(verify=ssl_context())
        self.max_body_bytes = max_body_bytes
        self.exchanges: list[Exchange] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        response = await self.inner.handle_async_request(request)
        wrapped = httpx.Response(response.status_code, headers=response.headers, stream=response.stream)
        try:
            content = await read_capped(wrapped, self.max_body_bytes)
        finally:
            await wrapped.aclose()
        headers = [
            (k, v) for k, v in wrapped.headers.multi_items() if k.lower() not in ("content-encoding", "content-length")
        ]
        self.exchanges.append(
            Exchange(
                request.method,
                str(request.url),
                list(request.headers.multi_items()),
                body,
                wrapped.status_code,
                wrapped.reason_phrase,
                headers,
                content,
            )
        )
        return httpx.Response(
            wrapped.status_code, headers=headers, content=content, request=request, extensions=response.extensions
        )

    async def aclose(self) -> None:
        if self.owned:
            await self.inner.aclose()


@dataclass
class LiveRow:
    """One live check: ``status`` ``ok`` / ``drift`` / ``error``, the HTTP ``http_status``, ``ms`` taken,
    ``hits`` parsed, the ``cost`` (reported or table) and ``table_cost``, what drifted (``missing``,
    ``wrong_type``, ``cost_note``), the ``unknown`` new fields, an ``error`` message and where the exchange was
    recorded (``cassette``)."""

    provider: str
    status: str
    http_status: int | None = None
    ms: int = 0
    hits: int = 0
    cost: float | None = None
    table_cost: float | None = None
    cost_note: str = ""
    missing: list[str] = field(default_factory=list)
    wrong_type: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    error: str | None = None
    cassette: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "status": self.status,
            "http_status": self.http_status,
            "ms": self.ms,
            "hits": self.hits,
            "cost": self.cost,
            "table_cost": self.table_cost,
            "cost_note": self.cost_note,
            "missing": self.missing,
            "wrong_type": self.wrong_type,
            "unknown": self.unknown,
            "error": self.error,
            "cassette": self.cassette,
        }


@dataclass
class LiveReport:
    """The live rows, the estimate made first and the cost of the calls actually made."""

    rows: list[LiveRow]
    estimated_cost: float

    @property
    def cost(self) -> float:
        return float(sum(r.cost or 0.0 for r in self.rows))

    @property
    def exit_code(self) -> int:
        return 0 if self.rows and all(r.status == OK for r in self.rows) else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimated_cost": self.estimated_cost,
            "cost": self.cost,
            "ok": self.exit_code == 0,
            "rows": [r.to_dict() for r in self.rows],
        }


def live_options() -> SearchOptions:
    """The options of the live query (few results: the cheapest call of each provider)."""
    return SearchOptions.build(max_results=LIVE_MAX_RESULTS)


def live_targets(names: Sequence[str] = ()) -> list[Provider]:
    """The providers a live check calls: ``names`` (ConfigError for an unknown one), else every configured
    web provider (free ones too: a configured SearXNG is checked)."""
    known = set(available())
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown provider {name!r}; known providers: {', '.join(sorted(known))}")
    if names:
        return [get(n)() for n in dict.fromkeys(names)]
    out = []
    for name in WEB_PROVIDERS:
        instance = get(name)()
        if instance.configured:
            out.append(instance)
    return out


def estimate(providers: Iterable[Provider], *, agent: bool = False) -> dict[str, float]:
    """Expected USD per check (provider label -> USD; ``agent`` for the Agent API), before anything is sent."""
    options = live_options()
    out: dict[str, float] = {}
    for provider in providers:
        try:
            out[provider.label] = float(provider.price(options))
        except PerplexedError:
            out[provider.label] = 0.0
    if agent:
        out["agent"] = AGENT_ESTIMATE_USD
    return out


def _usd_per_credit(provider: Provider, options: SearchOptions) -> float | None:
    method = getattr(provider, "usd_per_credit", None)
    if not callable(method):
        return None
    value = method(options)
    return float(value) if isinstance(value, int | float) else None


def _judge(
    row: LiveRow, shape: Shape | None, exchange: Exchange | None, failure: BaseException | None, table: float | None,
    usd_per_credit: float | None = None,
) -> LiveRow:
    """Fill ``row`` from what came back (shared by the provider and Agent API checks)."""
    if exchange is not None:
        row.http_status = exchange.status
    data: Any = None
    if exchange is not None and 200 <= exchange.status < 300:
        try:
            data = json.loads(exchange.response_body)
        except (ValueError, UnicodeDecodeError):
            data = None
    if shape is not None and data is not None:
        found = check_shape(shape, data)
        row.missing, row.wrong_type, row.unknown = list(found.missing), list(found.wrong_type), list(found.unknown)
        reported = reported_cost(shape, data, usd_per_credit)
        if reported is not None:
            row.cost = reported
    else:
        found = None
    row.table_cost = table
    if row.cost is None and failure is None:
        row.cost = table
    if failure is not None:
        row.error = redact(str(failure))
        row.status = DRIFT if found is not None and found.drift else ERROR
        return row
    if found is not None and found.drift:
        row.status = DRIFT
        return row
    reported = reported_cost(shape, data, usd_per_credit) if shape is not None and data is not None else None
    status, note = compare_cost(reported, table)
    row.cost_note = note
    row.status = status
    return row


async def _check_provider(provider: Provider, query: str, record: Path | None) -> LiveRow:
    options = live_options()
    row = LiveRow(provider=provider.label, status=ERROR)
    if isinstance(provider, CallableProvider):
        row.error = "not an HTTP API (nothing to check live; `perplexed doctor` checks it offline)"
        return row
    if not provider.configured:
        env = " or ".join(v for v in (provider.env_key, provider.env_base_url) if v)
        row.error = f"not configured (set {env})" if env else "not configured"
        return row
    recorder = _Recorder(provider.transport, provider.max_body_bytes)
    failure: BaseException | None = None
    answer = None
    started = time.monotonic()
    async with httpx.AsyncClient(transport=recorder, timeout=LIVE_TIMEOUT_S, follow_redirects=False) as client:
        flow = provider.flow(query, options)
        try:
            request = next(flow)
            while True:
                response = await client.send(request)
                try:
                    request = flow.send(response)
                except StopIteration as stop:
                    answer = stop.value
                    break
        except (PerplexedError, httpx.HTTPError) as exc:
            failure = exc
        except Exception as exc:  # a provider bug: a row, not a crash of the whole report
            failure = ProviderError("unexpected", f"{type(exc).__name__}: {exc}", provider=provider.label)
        finally:
            flow.close()
    row.ms = int((time.monotonic() - started) * 1000)
    if answer is not None:
        row.hits = len(answer.hits)
        if answer.cost is not None:
            row.cost = answer.cost
    if isinstance(failure, httpx.HTTPError):
        failure = ProviderError("network", f"{type(failure).__name__}: {failure}", provider=provider.label)
    exchange = recorder.exchanges[-1] if recorder.exchanges else None
    try:
        table: float | None = float(provider.price(options))
    except PerplexedError:
        table = None
    row = _judge(row, SHAPES.get(provider.name), exchange, failure, table, _usd_per_credit(provider, options))
    if row.status == OK and answer is not None and not answer.hits:
        row.cost_note += "; no hits, so the hit fields were not checked"
    if row.ms > DEFAULT_PROVIDER_TIMEOUT_MS:
        row.cost_note += f"; slower than the default provider timeout ({DEFAULT_PROVIDER_TIMEOUT_MS} ms)"
    if record is not None and recorder.exchanges:
        row.cassette = str(_record(record, provider.name, recorder.exchanges, agent=False))
    return row


async def _check_agent(record: Path | None, transport: httpx.AsyncBaseTransport | None) -> LiveRow:
    from .agent import AsyncAgentClient

    row = LiveRow(provider="agent", status=ERROR)
    recorder = _Recorder(transport, 8 * 1024 * 1024)
    failure: BaseException | None = None
    started = time.monotonic()
    try:
        async with httpx.AsyncClient(transport=recorder, timeout=LIVE_TIMEOUT_S) as http:
            client = AsyncAgentClient(http_client=http, max_retries=0, timeout=LIVE_TIMEOUT_S)
            response = await client.create(preset=AGENT_PRESET, input=AGENT_INPUT)
            row.cost = response.cost
    except (PerplexedError, httpx.HTTPError) as exc:
        failure = exc
    row.ms = int((time.monotonic() - started) * 1000)
    exchange = recorder.exchanges[-1] if recorder.exchanges else None
    row = _judge(row, SHAPES["agent"], exchange, failure, None)
    if not row.cost_note and row.status == OK:
        row.cost_note = f"reported ${row.cost or 0:.4f} (estimate ${AGENT_ESTIMATE_USD:.4f})"
    if record is not None and recorder.exchanges:
        row.cassette = str(_record(record, "agent", recorder.exchanges, agent=True))
    return row


async def acheck_live(
    providers: Sequence[Provider],
    *,
    agent: bool = False,
    record: str | os.PathLike[str] | None = None,
    query: str = LIVE_QUERY,
    agent_transport: httpx.AsyncBaseTransport | None = None,
) -> LiveReport:
    """One real query per provider (and the Agent API with ``agent=True``), one after the other; never raises
    for a provider's failure (its row says ``error``). ``record``: a folder for redacted cassettes. What the
    calls cost is recorded in the state store's spend (:func:`perplexed.spend`), as a search's would be."""
    from ._governance import arecord_spend

    folder = None if record is None else Path(record)
    rows = []
    for provider in providers:
        rows.append(await _check_provider(provider, query, folder))
        if rows[-1].http_status is not None:  # a call was made: its cost counts in perplexed.spend()
            await arecord_spend(provider.label, rows[-1].cost)
    if agent:
        rows.append(await _check_agent(folder, agent_transport))
        if rows[-1].http_status is not None:
            await arecord_spend(AGENT_SPEND_LABEL, rows[-1].cost)
    return LiveReport(rows, sum(estimate(providers, agent=agent).values()))


def check_live(
    providers: Sequence[Provider],
    *,
    agent: bool = False,
    record: str | os.PathLike[str] | None = None,
    query: str = LIVE_QUERY,
) -> LiveReport:
    """Sync :func:`acheck_live`."""
    return _portal.run(acheck_live, providers, agent=agent, record=record, query=query)


# --- cassettes -------------------------------------------------------------------------------------------

#: request headers that carry credentials: never written
SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "x-subscription-token", "proxy-authorization", "cookie", "api-key"}
)
#: response headers never written (session cookies)
DROPPED_RESPONSE_HEADERS = frozenset({"set-cookie"})


def _headers(items: Iterable[tuple[str, str]], dropped: frozenset[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in items:
        name = key.lower()
        if name in dropped:
            continue
        out.setdefault(name, []).append(redact(value))
    return out


def cassette_dict(exchanges: Sequence[Exchange]) -> dict[str, Any]:
    """A vcrpy cassette (version 1, as under ``cassettes/``) of ``exchanges``, redacted: credential headers
    and cookies dropped, every known secret and key-shaped string replaced in URLs, bodies and headers."""
    interactions = []
    for ex in exchanges:
        interactions.append(
            {
                "request": {
                    "body": redact(ex.request_body.decode("utf-8", "replace")) if ex.request_body else "",
                    "headers": _headers(ex.request_headers, SECRET_HEADERS),
                    "method": ex.method,
                    "uri": redact(ex.url),
                },
                "response": {
                    "body": {"string": redact(ex.response_body.decode("utf-8", "replace"))},
                    "headers": _headers(ex.response_headers, DROPPED_RESPONSE_HEADERS),
                    "status": {"code": ex.status, "message": ex.reason},
                },
            }
        )
    return {"interactions": interactions, "version": 1}


def write_cassette(path: str | os.PathLike[str], exchanges: Sequence[Exchange]) -> Path:
    """Write ``exchanges`` as a redacted cassette at ``path`` (YAML with PyYAML installed, else JSON, which
    YAML readers such as vcrpy's accept too)."""
    doc = cassette_dict(exchanges)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:
        text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    else:
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    target.write_text(text, encoding="utf-8")
    return target


_RECORDED_MARK = "perplexed doctor --live --record"
_RECORDED_README = """# Recorded {name} cassettes

**Recorded** from the live API by `perplexed doctor --live --record` on {when} (host {host}).
Redacted before writing: credential headers ({headers}) and cookies are dropped, and every key perplexed
knows of or that looks like a key is replaced by `[REDACTED]` in URLs, bodies and headers. Replay them with
vcrpy (`record_mode="none"`), like the synthesized cassettes they can replace.

| cassette | HTTP |
|---|---|
{rows}
"""


def _record(folder: Path, name: str, exchanges: Sequence[Exchange], *, agent: bool) -> Path:
    status = exchanges[-1].status
    ok_name = "create_completed" if agent else "ok"
    stem = ok_name if 200 <= status < 300 else str(status)
    path = write_cassette(folder / name / f"{stem}.yaml", exchanges)
    rows = sorted(
        f"| `{p.name}` | {_cassette_status(p)} |" for p in path.parent.glob("*.yaml")
    )
    host = httpx.URL(exchanges[-1].url).host
    readme = path.parent / "README.md"
    if readme.exists() and _RECORDED_MARK not in readme.read_text(encoding="utf-8"):
        return path  # a README written by someone else (e.g. cassettes/recorded/searxng/): leave it alone
    readme.write_text(
        _RECORDED_README.format(
            name=name,
            when=datetime.now(UTC).strftime("%Y-%m-%d"),
            host=host,
            headers=", ".join(f"`{h}`" for h in sorted(SECRET_HEADERS)),
            rows="\n".join(rows),
        ),
        encoding="utf-8",
    )
    return path


def _cassette_status(path: Path) -> str:
    match = re.search(r"code:\s*(\d{3})|\"code\":\s*(\d{3})", path.read_text(encoding="utf-8"))
    return next((g for g in match.groups() if g), "?") if match else "?"


# --- the command -----------------------------------------------------------------------------------------


def command(args: Any) -> int:
    """``perplexed doctor`` (argparse namespace from :mod:`perplexed.cli`): returns the exit code."""
    from .cli import UsageError

    names: list[str] = list(args.providers or [])
    if not args.live:
        if names or args.agent or args.record:
            raise UsageError("PROVIDER names, --agent and --record need --live (the offline chain is --provider)")
        diagnosis = diagnose(args.provider)
        if args.json:
            _print_json(diagnosis.to_dict())
        else:
            _print_diagnosis(diagnosis)
        return diagnosis.exit_code
    if not names and args.provider:  # --provider A,B with --live: check those
        names = [n.strip() for n in args.provider.split(",") if n.strip() and n.strip() != "local"]
    targets = [] if args.agent and not names else live_targets(names)
    if not targets and not args.agent:
        message = "no configured provider to check: set a provider's key (see `perplexed doctor`) or name one"
        if args.json:
            _print_json({"estimated_cost": 0.0, "estimate": {}, "sent": False, "rows": [], "error": message})
        else:
            _stderr(f"perplexed doctor: {message}")
        return 1
    costs = estimate(targets, agent=args.agent)
    total = sum(costs.values())
    if not args.json:
        parts = ", ".join(f"{k} ${v:.4f}" for k, v in costs.items())
        _stdout(f"Estimated cost: ${total:.4f} ({parts})")
    if not args.yes:
        if args.json:
            _print_json({"estimated_cost": total, "estimate": costs, "sent": False, "rows": []})
        _stderr("perplexed doctor: nothing was sent; add --yes to make these paid calls")
        return 2
    report = check_live(targets, agent=args.agent, record=args.record)
    if args.json:
        doc = report.to_dict()
        doc["estimate"] = costs
        doc["sent"] = True
        _print_json(doc)
    else:
        _print_live(report)
    return report.exit_code


def _stdout(text: str) -> None:
    import sys

    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _stderr(text: str) -> None:
    import sys

    sys.stderr.write(text + "\n")


def _print_json(doc: Any) -> None:
    _stdout(json.dumps(doc, ensure_ascii=False, indent=2))


_STYLE = {OK: "green", WARN: "yellow", MISSING: "red", ERROR: "red", INFO: "dim", DRIFT: "yellow"}


def _console() -> Any:
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(highlight=False, soft_wrap=False, width=200)
    return console


def _print_diagnosis(diagnosis: Diagnosis) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    out = _console()
    out.print(Text(f"Chain: {' → '.join(diagnosis.chain)} (from {diagnosis.chain_source})"))
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("Check", no_wrap=True, style="bold")
    table.add_column("Status", no_wrap=True)
    table.add_column("Needed", no_wrap=True)
    table.add_column("Detail", overflow="fold")
    for check in diagnosis.checks:
        table.add_row(
            check.name,
            Text(check.status, style=_STYLE.get(check.status, "")),
            "yes" if check.needed else "",
            Text(check.detail),
        )
    out.print(table)
    problems = diagnosis.problems
    if problems:
        out.print(Text(f"Not ready: {', '.join(c.name for c in problems)} (needed by the chain)", style="red"))
    else:
        out.print(Text("Ready: the chain has what it needs.", style="green"))


def _print_live(report: LiveReport) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    out = _console()
    table = Table(box=box.SIMPLE_HEAD)
    for name, justify in (("Provider", "left"), ("Status", "left"), ("HTTP", "right"), ("Time", "right"),
                          ("Hits", "right"), ("Cost", "right"), ("Notes", "left")):
        table.add_column(name, justify=justify, no_wrap=name != "Notes", overflow="fold")  # type: ignore[arg-type]
    for row in report.rows:
        notes = []
        if row.error:
            notes.append(row.error)
        if row.missing:
            notes.append("missing: " + ", ".join(row.missing))
        if row.wrong_type:
            notes.append("type changed: " + ", ".join(row.wrong_type))
        if row.cost_note:
            notes.append("cost " + row.cost_note)
        if row.unknown:
            notes.append("new fields: " + ", ".join(row.unknown))
        if row.cassette:
            notes.append("recorded " + row.cassette)
        table.add_row(
            row.provider,
            Text(row.status, style=_STYLE.get(row.status, "")),
            "" if row.http_status is None else str(row.http_status),
            f"{row.ms} ms",
            str(row.hits),
            "" if row.cost is None else f"${row.cost:.4f}",
            Text("; ".join(notes)),
        )
    out.print(table)
    out.print(Text(f"Total cost: ${report.cost:.4f} (estimated ${report.estimated_cost:.4f})"))
