"""The command line's words for the library's options: each option's flag (an error names ``--min-hits``, never
``min_hits``), and the governance flags (``--rate-limit``, ``--cooldown-after``, ``--spend-limit``, ...), each
with its environment variable, set through :func:`perplexed.configure` under the library option's name."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from ._configure import configure
from ._errors import ConfigError, UsageError

__all__ = ["GOVERNANCE_FLAGS", "cli_words", "configure_governance"]

#: The command-line flag of each library option an error message can name (the CLI never shows Python names).
_FLAGS = {
    "max_results": "--max-results",
    "provider_timeout_ms": "--timeout-ms",
    "deadline_ms": "--deadline-ms",
    "min_hits": "--min-hits",
    "merge_providers": "--merge-providers",
    "hedge_after_ms": "--hedge-after",
    "budget_usd": "--budget",
    "cache_ttl_s": "--cache-ttl",
    "rate_limits": "--rate-limit",
    "rate_limit": "--rate-limit",
    "cooldown_after": "--cooldown-after",
    "cooldown_s": "--cooldown",
    "spend_limits": "--spend-limit",
    "spend_limit": "--spend-limit",
}
_FLAG_NAMES = re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, _FLAGS), key=len, reverse=True)) + r")\b(=)?")

#: The Python hints of the library's messages, and what the command line says instead.
_PYTHON_HINTS = (
    (re.compile(r" or pass api_key=\.\.\."), ""),
    (re.compile(r"pass api_key= or set the (\w+) environment variable"), r"set the \1 environment variable"),
    (re.compile(r"pass base_url=\.\.\. or set (\w+)"), r"set \1"),
    (re.compile(r" or pass client=AgentClient\(api_key=\.\.\.\)( \(AsyncAgentClient for the async API\))?"), ""),
    (re.compile(r"; pass on_empty='answer' to answer without sources"), ""),
    (re.compile(r"pass provider='perplexity-agent' alone"), "pass --provider perplexity-agent alone"),
    (re.compile(r" \(or None = off\)"), ""),
    (re.compile(r"pass allow_private=True or a list of networks to allow it"),
     "pass --allow-private, or --allow-network CIDR, to allow it"),
)


def cli_words(text: str, param: str | None = None) -> str:
    """A library message as the command line says it: no Python hints, flags instead of argument names
    (``min_hits=5`` is ``--min-hits 5``)."""
    for pattern, replacement in _PYTHON_HINTS:
        text = pattern.sub(replacement, text)
    text = _FLAG_NAMES.sub(lambda m: _FLAGS[m.group(1)] + (" " if m.group(2) else ""), text)
    text = re.sub(r"(--[\w-]+)\[('[^']*')\]", r"\1 for \2", text)  # --rate-limit['tavily']
    return re.sub(r"(--[\w-]+) of \1(?![\w-])", r"\1", text)  # "--cooldown-after of --cooldown-after"


#: The governance flags: (flag, metavar, environment variable, help). Each sets the library option of the same
#: name (``--rate-limit`` -> ``rate_limits``, ``--spend-limit`` -> ``spend_limits``) through ``configure()``.
GOVERNANCE_FLAGS = (
    ("--rate-limit", "NAME=RATE", "PERPLEXED_RATE_LIMITS",
     "at most RATE calls to provider NAME: 5/s, 60/min, 1000/hour, 10000/day (e.g. tavily=1/s)"),
    ("--rate-limit-wait-ms", "MS|NAME=MS", "PERPLEXED_RATE_LIMIT_WAIT_MS",
     "how long a call may wait for a rate-limit slot before the chain moves on (default 1000)"),
    ("--cooldown-after", "N|NAME=N", "PERPLEXED_COOLDOWN_AFTER",
     "after N failures in a row a provider rests and the chain skips it (default: off)"),
    ("--cooldown-s", "S|NAME=S", "PERPLEXED_COOLDOWN_S", "how many seconds a provider rests (default 30)"),
    ("--spend-limit", "WINDOW=USD", "PERPLEXED_SPEND_LIMITS",
     "most all searches together may spend in a rolling window: minute, hour, day or week (e.g. day=5)"),
)
#: flag -> (library option, kind of value)
_GOVERNANCE_OPTIONS = {
    "--rate-limit": ("rate_limits", "pairs"),
    "--rate-limit-wait-ms": ("rate_limit_wait_ms", "int"),
    "--cooldown-after": ("cooldown_after", "int"),
    "--cooldown-s": ("cooldown_s", "float"),
    "--spend-limit": ("spend_limits", "usd"),
}


def configure_governance(given_flag: Callable[[str], list[str] | None] = lambda flag: None) -> None:
    """Rate limits, cool-downs and spend limits from the flags (``given_flag(flag)``: the values given to a
    flag, None when it was not), else from their environment variables, set with ``configure()``."""
    for flag, metavar, env, _ in GOVERNANCE_FLAGS:
        given = given_flag(flag)
        source, text = (flag, ",".join(given)) if given else (env, os.environ.get(env, "").strip())
        if not text:
            continue
        option, kind = _GOVERNANCE_OPTIONS[flag]
        value = _governance_value(text, kind, source, metavar)
        try:
            configure(**{option: value})
        except ConfigError as exc:
            if source == env:  # the variable the user set, not the flag they did not use
                words = cli_words(str(exc)).replace(flag, env)
                raise ConfigError(words if env in words else f"{env}: {words}") from None
            raise


def _governance_value(text: str, kind: str, source: str, metavar: str) -> Any:
    """``5`` (every provider) or ``NAME=VALUE,NAME=VALUE`` (per name) as the library takes it."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    pairs = [item.partition("=") for item in items]
    if kind in ("pairs", "usd") or any(sep for _, sep, _ in pairs):
        if not items or not all(sep and name.strip() and value.strip() for name, sep, value in pairs):
            raise UsageError(f"{source} takes {metavar.split('|')[-1]}, got {text!r}")
        return {name.strip(): _governance_number(value.strip(), kind, source) for name, _, value in pairs}
    if len(items) != 1:
        raise UsageError(f"{source} takes one value or NAME=VALUE pairs, got {text!r}")
    return _governance_number(items[0], kind, source)


def _governance_number(text: str, kind: str, source: str) -> Any:
    if kind == "pairs":
        return text  # a rate, checked by the library
    try:
        return int(text) if kind == "int" else float(text.lstrip("$"))
    except ValueError:
        what = "a whole number" if kind == "int" else "an amount of USD" if kind == "usd" else "a number"
        raise UsageError(f"{source}: expected {what}, got {text!r}") from None
