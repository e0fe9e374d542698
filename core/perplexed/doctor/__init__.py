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

The package, one concern a module: ``_shapes`` (what each vendor's keys and responses look like, as data),
``_checks`` (the pure checks), ``_offline`` (the diagnosis), ``_live`` (the probes), ``_cassettes`` (recording)
and ``_report`` (the command and its tables / JSON). Everything public is importable from here.
"""

from __future__ import annotations

from ._cassettes import DROPPED_RESPONSE_HEADERS, SECRET_HEADERS, Exchange, cassette_dict, write_cassette
from ._checks import (
    DRIFT,
    ERROR,
    FAILING,
    INFO,
    MISSING,
    OK,
    WARN,
    ShapeCheck,
    check_key_format,
    check_shape,
    compare_cost,
    reported_cost,
)
from ._live import (
    AGENT_ESTIMATE_USD,
    AGENT_INPUT,
    AGENT_PRESET,
    AGENT_SPEND_LABEL,
    DEFAULT_PROVIDER_TIMEOUT_MS,
    LIVE_MAX_RESULTS,
    LIVE_QUERY,
    LIVE_TIMEOUT_S,
    LiveReport,
    LiveRow,
    acheck_live,
    check_live,
    estimate,
    live_options,
    live_targets,
)
from ._offline import PROBE_TIMEOUT_S, Check, Diagnosis, adiagnose, diagnose
from ._report import command
from ._shapes import KEY_FORMATS, SHAPES, CostField, Field, Shape

__all__ = [
    "AGENT_ESTIMATE_USD",
    "AGENT_INPUT",
    "AGENT_PRESET",
    "AGENT_SPEND_LABEL",
    "DEFAULT_PROVIDER_TIMEOUT_MS",
    "DRIFT",
    "DROPPED_RESPONSE_HEADERS",
    "ERROR",
    "FAILING",
    "INFO",
    "KEY_FORMATS",
    "LIVE_MAX_RESULTS",
    "LIVE_QUERY",
    "LIVE_TIMEOUT_S",
    "MISSING",
    "OK",
    "PROBE_TIMEOUT_S",
    "SECRET_HEADERS",
    "SHAPES",
    "WARN",
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
    "cassette_dict",
    "check_key_format",
    "check_live",
    "check_shape",
    "command",
    "compare_cost",
    "diagnose",
    "estimate",
    "live_options",
    "live_targets",
    "reported_cost",
    "write_cassette",
]
