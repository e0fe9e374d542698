"""``perplexed providers``: every registered provider (configured or not, price, environment, governance
state), then ``perplexity-agent``, the grounding mode of ``perplexed answer``. Split from :mod:`perplexed.cli`
(the console helpers are in :mod:`perplexed._cli_output`; rich is imported when the command runs)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from perplexed import providers
from perplexed._cli_options import configure_governance
from perplexed._cli_output import EXIT_OK
from perplexed._cli_output import consoles as _consoles
from perplexed._cli_output import escape as _escape
from perplexed._cli_output import money as _money
from perplexed._cli_output import print_json as _print_json
from perplexed._cli_output import use_cli_store as _use_cli_store
from perplexed._errors import ConfigError, PerplexedError, mask_url
from perplexed.agent._client import ENV_API_KEY
from perplexed.engine import _governance
from perplexed.index import INDEX_ENV, index_problem, index_stats, locate_index
from perplexed.net import _portal
from perplexed.policy._settings import default_chain

__all__ = ["command"]


def _provider_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in providers.available():
        row: dict[str, Any] = {"name": name, "configured": False, "price": None, "paid": None,
                               "env": [], "missing": [], "note": "", "rate_limit": None, "cooldown": "off",
                               "spend_today": 0.0}
        try:
            cls = providers.get(name)
            instance = cls()
        except Exception as exc:  # a broken plug-in must not hide the others
            row["note"] = f"unavailable: {type(exc).__name__}: {exc}"
            rows.append(row)
            continue
        env = [v for v in (cls.env_key, cls.env_base_url) if v]
        row["env"] = env
        row.update(_governance_row(instance))
        try:
            price = float(instance.price())
        except PerplexedError as exc:
            row["note"] = str(exc)
            price = None
        row["price"] = price
        row["paid"] = None if price is None else price > 0
        if name == "local":
            location = locate_index()
            path = location.path
            row["env"] = [INDEX_ENV]
            row["index"] = location.to_dict()
            try:
                stats = index_stats(path)
            except ConfigError as exc:
                row["note"] = index_problem(path) or str(exc)
                shown = "the index below" if path.exists() else "no index yet"
                row["_table_note"] = row["note"].replace(f"no local index at {path}", shown).replace(
                    str(path), "the index below")
            else:
                row["configured"] = stats.documents > 0
                row["note"] = f"{_count(stats.documents, 'document')} in {path}"
                row["_table_note"] = f"{_count(stats.documents, 'document')} in the index below"
            rows.append(row)
            continue
        row["configured"] = bool(instance.configured)
        missing = []
        if cls.env_key and not os.environ.get(cls.env_key, "").strip():
            missing.append(cls.env_key)
        if cls.env_base_url and not cls.default_base_url and not os.environ.get(cls.env_base_url, "").strip():
            missing.append(cls.env_base_url)
        row["missing"] = missing if not row["configured"] else []
        if row["configured"]:
            try:
                row["note"] = f"url {mask_url(instance.base_url)}" if cls.env_base_url else ""  # no password
            except ConfigError:
                row["note"] = ""
        elif missing:
            row["note"] = "set " + " and ".join(missing)
        rows.append(row)
    rows.append(_agent_row())
    return rows


def _agent_row() -> dict[str, Any]:
    """``perplexity-agent``: not a search provider but a grounding mode of ``perplexed answer``."""
    ENV_BASE_URL = "PERPLEXITY_BASE_URL"
    configured = bool(os.environ.get(ENV_API_KEY, "").strip())
    note = "answers only (perplexed answer --provider perplexity-agent): the Agent API searches by itself"
    return {
        "name": "perplexity-agent",
        "configured": configured,
        "price": None,
        "paid": True,
        "billing": "per use",
        "env": [ENV_API_KEY, ENV_BASE_URL],
        "missing": [] if configured else [ENV_API_KEY],
        "note": note if configured else f"{note}; set {ENV_API_KEY}",
    }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _governance_row(instance: Any) -> dict[str, Any]:
    """Rate limit, cool-down state and spend today of one provider, from the state store (never raises)."""
    try:
        status = _portal.run(_governance.provider_status, instance)
    except Exception as exc:  # a broken store must not break the listing
        return {"cooldown": f"unknown ({type(exc).__name__})"}
    cooldown = status["cooldown"]
    if status["cooldown_ends_in_s"]:
        cooldown = f"{cooldown} ({status['cooldown_ends_in_s']:.0f} s left)"
    return {"rate_limit": status["rate_limit"], "cooldown": cooldown, "spend_today": status["spend_today"],
            "window_calls": status["window_calls"]}


#: from this many columns, ``perplexed providers`` also shows each provider's environment variables and limits
WIDE_COLUMNS = 150


def _all_env(rows: list[dict[str, Any]]) -> list[str]:
    return [name for row in rows for name in row.get("env") or ()]


def _limits_set(row: dict[str, Any]) -> bool:
    cooldown = str(row.get("cooldown") or "off")
    return bool(row.get("rate_limit")) or cooldown != "off" or float(row.get("spend_today") or 0.0) > 0


def _limits_text(row: dict[str, Any]) -> Any:
    from rich.text import Text

    if row["name"] == "perplexity-agent":
        return Text("-", style="dim")
    rate = row.get("rate_limit") or "no limit"
    if row.get("window_calls") is not None and row.get("rate_limit"):
        rate = f"{rate} ({row['window_calls']} in window)"
    cooldown = str(row.get("cooldown") or "off")
    state = Text(f"{rate} · ")
    state.append(f"cool-down {cooldown}", style="yellow" if cooldown.startswith(("cooling", "trial")) else "")
    state.append(f" · {_money(float(row.get('spend_today') or 0.0))}")
    return state


def command(args: argparse.Namespace) -> int:
    """``perplexed providers [--json]``."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    _use_cli_store()
    configure_governance()  # PERPLEXED_RATE_LIMITS and friends: their limits show in the table
    rows = _provider_rows()
    if args.json:
        _print_json([{k: v for k, v in row.items() if not k.startswith("_")} for row in rows])
        return EXIT_OK
    out, _ = _consoles()
    wide = out.width >= WIDE_COLUMNS
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("Provider", no_wrap=True, style="bold")
    table.add_column("Configured", no_wrap=True)
    table.add_column("Price / call", justify="right", no_wrap=True)
    if wide:  # the variables are also in the Note when one is missing, and in --json
        table.add_column("Environment", overflow="fold", min_width=len(max(_all_env(rows), key=len, default="")))
    if wide:  # narrower: a provider's limits, cool-down and spend are in its Note when there is any
        table.add_column("Rate limit · cool-down · spent today", overflow="fold", min_width=22)
    table.add_column("Note", overflow="fold", min_width=len(max(_all_env(rows), key=len, default="")), ratio=1)
    for row in rows:
        configured = Text("yes", style="green") if row["configured"] else Text("no", style="red")
        price = row["price"]
        price_text = row.get("billing") or ("?" if price is None else ("free" if price == 0 else _money(price)))
        cells: list[Any] = [row["name"], configured, price_text]
        note = Text(row.get("_table_note", row["note"]))
        if wide:
            cells += [", ".join(row["env"]), _limits_text(row)]
        elif _limits_set(row):
            note = Text.assemble(note, "\n" if row["note"] else "", _limits_text(row))
        cells.append(note)
        table.add_row(*cells)
    out.print(table)
    local = next((row["index"] for row in rows if row["name"] == "local" and "index" in row), None)
    if local is not None:
        out.print(Text(f"Local index: {local['path']} ({local['why']})"))
    try:
        chain_names = default_chain()
        shown = " → ".join(chain_names) if isinstance(chain_names, list) else str(chain_names)
    except ConfigError as exc:
        shown = f"invalid ({exc})"
    out.print(f"Default chain: {_escape(shown)}  (set PERPLEXED_PROVIDER or pass --provider)")
    return EXIT_OK
