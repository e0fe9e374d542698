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
  exchanges are written as redacted vcrpy cassettes, the format of ``cassettes/``.

The checks themselves (``_checks``: the key format, a response's shape, the cost) are pure functions over plain
data, so they are tested as tables.

The package, one concern a module: ``_shapes`` (what each vendor's keys and responses look like, as data),
``_checks`` (the pure checks), ``_offline`` (the diagnosis), ``_live`` (the probes), ``_cassettes`` (recording)
and ``_report`` (the command and its tables / JSON). The public surface is what is importable from here (and
documented in docs/doctor.md); the rest is the package's own.
"""

from __future__ import annotations

from perplexed.doctor._live import LiveReport, LiveRow, acheck_live, check_live, estimate
from perplexed.doctor._offline import Check, Diagnosis, adiagnose, diagnose
from perplexed.doctor._shapes import SHAPES

__all__ = [
    "SHAPES",
    "Check",
    "Diagnosis",
    "LiveReport",
    "LiveRow",
    "acheck_live",
    "adiagnose",
    "check_live",
    "diagnose",
    "estimate",
]
