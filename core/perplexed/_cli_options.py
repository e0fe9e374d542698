"""The command line's words for the library's options: each option's flag (an error names ``--min-hits``, never
``min_hits``), and the governance flags (``--rate-limit``, ``--cooldown-after``, ``--spend-limit``, ...), each
with its environment variable, set through :func:`perplexed.configure` under the library option's name."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from perplexed._configure import configure
from perplexed._errors import ConfigError, UsageError
from perplexed.policy._optionspec import OPTIONS, option

__all__ = [
    "COMMAND_NAMES",
    "GOVERNANCE_FLAGS",
    "Commands",
    "add_option_flags",
    "cli_words",
    "command_of",
    "configure_governance",
    "option_values",
]

#: The command-line flag of each library option an error message can name (the CLI never shows Python names):
#: the catalogue's (perplexed.policy._optionspec), and the singular words of the governance messages.
_FLAGS = {
    **{o.name: o.flag for o in OPTIONS  # "strategy" is also a plain word of the messages: not replaced
       if o.flag and o.group in ("search", "chain", "governance")
       and o.name not in ("strategy", "rate_limit_wait_ms", "cooldown_s")},
    "rate_limit": "--rate-limit",
    "cooldown_s": "--cooldown",
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


#: The governance flags: (flag, metavar, environment variable, help), the catalogue's. Each sets the library
#: option of the same name (``--rate-limit`` -> ``rate_limits``, ``--spend-limit`` -> ``spend_limits``) through
#: ``configure()``.
GOVERNANCE_FLAGS = tuple((o.flag, o.metavar, o.env, o.help) for o in OPTIONS
                         if o.group == "governance" and o.flag and o.metavar and o.env)
_KINDS = {"rate_limits": "pairs", "spend_limits": "usd", "cooldown_s": "float"}
#: flag -> (library option, kind of value)
_GOVERNANCE_OPTIONS = {o.flag: (o.name, _KINDS.get(o.name, "int")) for o in OPTIONS
                       if o.group == "governance" and o.flag}


def add_option_flags(parser: argparse.ArgumentParser, names: Sequence[str], types: Mapping[str, Callable[[str], Any]],
                     *, short: Mapping[str, str] | None = None, helps: Mapping[str, str] | None = None) -> None:
    """Add each option's flag, as the catalogue declares it (flag, metavar, choices, help): its value lands in
    ``args.<option name>`` (``--timeout-ms`` -> ``provider_timeout_ms``). ``types``: the converter of each kind of
    value (:attr:`perplexed.policy._optionspec.Option.cli`); ``short``: extra spellings (``-n``); ``helps``: a command's
    own words for an option."""
    for name in names:
        declared = option(name)
        if declared.flag is None or declared.cli is None:
            continue
        flags = [declared.flag, *([short[name]] if short and name in short else [])]
        what = (helps or {}).get(name) or _flag_help(name)
        if declared.cli == "choice":
            parser.add_argument(*flags, dest=name, choices=declared.choices, help=what)
        else:
            parser.add_argument(*flags, dest=name, type=types[declared.cli], metavar=declared.metavar, help=what)


def _flag_help(name: str) -> str:
    declared = option(name)
    notes = []
    bounds = declared.bounds_text()
    if bounds and declared.cli in ("whole", "positive"):
        notes.append(bounds)
    if declared.default is not None and declared.cli != "choice" and not isinstance(declared.default, bool):
        notes.append(f"default {declared.default}")
    elif declared.cli == "choice":
        notes.append(f"default {declared.default}")
    return f"{declared.help} ({'; '.join(notes)})" if notes else declared.help


def option_values(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """The options among ``names`` whose flag was given (``args.<option name>`` not None)."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


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


# --- the parser: only the command a run needs is built (issue 35: start-up) ---------------------------------


class _Hollow(argparse.ArgumentParser):
    """A command this run does not run (issue 35: start-up): its name, help and description only, as the
    command list of ``perplexed --help`` shows it; its arguments are not built, and it is never parsed."""

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        return None

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Any:
        return self

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:
        return self

    def set_defaults(self, **kwargs: Any) -> None:
        return None


class Commands:
    """The subparsers action as the command builders see it: every command is registered (same order, name,
    help and description), but only ``wanted``'s arguments are built (all of them when ``wanted`` is None)."""

    def __init__(self, sub: Any, wanted: str | None) -> None:
        self.sub = sub
        self.wanted = wanted
        self.parser_class = sub._parser_class

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        self.sub._parser_class = self.parser_class if self.wanted is None or name == self.wanted else _Hollow
        try:
            return self.sub.add_parser(name, **kwargs)
        finally:
            self.sub._parser_class = self.parser_class


#: every command, as perplexed.cli registers them (tests/test_cold_start.py checks they agree)
COMMAND_NAMES = frozenset({"search", "answer", "fetch", "eval", "usage", "providers", "index", "mcp", "doctor"})


def command_of(args: Sequence[str]) -> str | None:
    """The command ``args`` run: the first word that is not an option (``perplexed`` itself takes only
    ``--help`` and ``--version``), when it names one; else None (the whole parser is built)."""
    for arg in args:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMAND_NAMES else None
    return None
