"""The options, each declared once: name, type, default, bounds, environment variable, command-line flag, one-line
help, and the agent-tool arguments it is exposed as.

Everything else derives from these declarations: the core's validation (:mod:`perplexed.policy._options`: which names
are search, chain or fetch options, each one's default and bounds and the words of its errors), the command
line's flags (:mod:`perplexed.cli`, :mod:`perplexed.commands._fetch`, :mod:`perplexed._cli_options`), the LangChain
components' fields and the LlamaIndex components' keyword parameters (their ``inspect.signature``), the agent
tools' arguments (:mod:`perplexed.tools._catalogue`) and the options table of docs/chain.md (:func:`options_table`; a test
fails when the page and the catalogue differ).

Pure: no I/O, nothing above the errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

__all__ = [
    "OPTIONS",
    "TABLE_END",
    "TABLE_START",
    "Option",
    "fetch_chain_names",
    "names",
    "option",
    "options_table",
    "with_options_table",
]

Group = Literal["search", "chain", "fetch", "governance"]
#: How the command line reads a flag's value (its converter in :mod:`perplexed.cli`).
CliValue = Literal["whole", "positive", "hedge", "seconds", "usd", "choice", "switch", "append", "text"]


@dataclass(frozen=True)
class Option:
    """One option of :func:`perplexed.search` (``search``, ``chain``), :func:`perplexed.fetch` (``fetch``) or
    :func:`perplexed.configure` (``governance``).

    ``annotation``: its type as the adapters' typed parameters show it (they add ``| None``: ``None`` keeps the
    core's default). ``limits``: pydantic's bounds (``ge``, ``gt``, ``le``). ``expects``: the words of what it
    takes, in its errors. ``flag`` / ``metavar`` / ``cli``: its command-line flag, and how the flag's value is
    read. ``env``: the environment variable read when it is not given. ``tools``: the agent tools (MCP names)
    that take it as an argument.
    """

    name: str
    group: Group
    annotation: Any
    default: Any
    help: str
    limits: Mapping[str, float] = field(default_factory=dict)
    expects: str = ""
    choices: tuple[str, ...] = ()
    env: str | None = None
    flag: str | None = None
    metavar: str | None = None
    cli: CliValue | None = None
    tools: tuple[str, ...] = ()
    fetch: bool = False
    """A chain option a fetch takes too (how the fetch chain runs)."""

    @property
    def minimum(self) -> float | None:
        return self.limits.get("ge", self.limits.get("gt"))

    @property
    def maximum(self) -> float | None:
        return self.limits.get("le")

    def bounds_text(self) -> str:
        """``1 to 100``, ``> 0, at most 3600000``, or empty."""
        low, high = self.limits.get("ge"), self.limits.get("le")
        if low is not None and high is not None:
            return f"{_num(low)} to {_num(high)}"
        parts = []
        if low is not None:
            parts.append(f"at least {_num(low)}")
        if "gt" in self.limits:
            parts.append(f"> {_num(self.limits['gt'])}")
        if high is not None:
            parts.append(f"at most {_num(high)}")
        if self.choices:
            parts.append(", ".join(repr(c) for c in self.choices))
        return ", ".join(parts)


def _num(value: float) -> str:
    return f"{value:g}" if value < 1e6 else f"{int(value)}"


_MS = "a number of milliseconds"
RECENCY = ("day", "week", "month", "year")
SAFE_SEARCH = ("off", "moderate", "strict")
FALLBACK_ON = ("error", "empty", "timeout", "insufficient")
STRATEGIES = ("sequential", "hedged", "merge", "adaptive")
FORMATS = ("markdown", "text")

OPTIONS: tuple[Option, ...] = (
    # --- search options: they reach the providers (and the cache key) -----------------------------------------
    Option("max_results", "search", int, 10, "hits to return", {"ge": 1, "le": 100},
           "a whole number, at least 1 and at most 100", flag="--max-results", metavar="N", cli="whole",
           tools=("web_search", "answer")),
    Option("include_domains", "search", list[str], None,
           "only hits from these domains ('nature.com', '*.gov', 'example.com/docs')", expects="a list of domains",
           tools=("web_search", "answer")),
    Option("exclude_domains", "search", list[str], None, "never hits from these domains",
           expects="a list of domains", tools=("web_search", "answer")),
    Option("recency", "search", Literal["day", "week", "month", "year"], None,
           "only hits published within the last day, week, month or year", choices=RECENCY,
           tools=("web_search", "answer")),
    Option("published_after", "search", date | str, None, "only hits published on or after this date",
           expects="a date or an ISO 'YYYY-MM-DD' string"),
    Option("published_before", "search", date | str, None, "only hits published on or before this date",
           expects="a date or an ISO 'YYYY-MM-DD' string"),
    Option("language", "search", str, None, "result language code, e.g. 'en' or 'en-US'",
           expects="a language/country code like 'en' or 'en-US'"),
    Option("country", "search", str, None, "country code, e.g. 'us'",
           expects="a language/country code like 'en' or 'en-US'"),
    Option("safe_search", "search", Literal["off", "moderate", "strict"], None,
           "safe-search level, where the provider supports it", choices=SAFE_SEARCH),
    # --- chain options: how the chain runs; never sent to a provider, never in a cache key ------------------------
    Option("provider_timeout_ms", "chain", int, 15000, "time limit per provider call, in ms",
           {"gt": 0, "le": 3_600_000}, _MS, flag="--timeout-ms", metavar="MS", cli="positive", fetch=True),
    Option("deadline_ms", "chain", int, 30000, "time limit for the whole chain (a search, or one URL's fetch), in ms",
           {"gt": 0, "le": 3_600_000}, _MS, flag="--deadline-ms", metavar="MS", cli="positive", fetch=True),
    Option("fallback_on", "chain", str | list[str], ("error", "empty"),
           "outcomes that move the chain to the next provider (a fetch also moves on after 'insufficient')",
           expects="a list of outcomes", choices=FALLBACK_ON, fetch=True),
    Option("cache_ttl_s", "chain", float, None,
           "reuse a provider's answer for this many seconds (None or 0: off; the command line: 3600)",
           expects="a number of seconds", flag="--cache-ttl", metavar="SECONDS", cli="seconds", fetch=True),
    Option("cache_single_flight", "chain", bool, False,
           "with the cache on: identical searches at the same time share one provider call", expects="True or False", fetch=True),
    Option("budget_usd", "chain", float, None,
           "most one search may spend: a paid provider that would exceed it is skipped", expects="a number (USD)",
           flag="--budget", metavar="USD", cli="usd", fetch=True),
    Option("strategy", "chain", Literal["sequential", "hedged", "merge", "adaptive"], "sequential",
           "sequential: one provider at a time; hedged: start the next provider when the current one is slow; "
           "merge: ask several at once and fuse their hits; adaptive: order the chain by what the state store has "
           "seen (and routing=)", choices=STRATEGIES, flag="--strategy", cli="choice"),
    Option("hedge_after_ms", "chain", int | Literal["auto"], "auto",
           "hedged: start the next provider after this many ms without an answer ('auto': the provider's observed "
           "p95 latency)", {"ge": 0}, "a number of milliseconds or 'auto'", flag="--hedge-after",
           metavar="MS|auto", cli="hedge"),
    Option("merge_providers", "chain", int, 2, "merge: how many providers to ask at once", {"ge": 1, "le": 20},
           "an integer", flag="--merge-providers", metavar="N", cli="positive"),
    Option("min_hits", "chain", int, None,
           "quality floor: an answer with fewer hits is insufficient and the chain moves on", {"ge": 1, "le": 100},
           "an integer", flag="--min-hits", metavar="N", cli="positive"),
    Option("accept", "chain", Callable[..., Any], None,
           "quality gate: accept(result) returns True to accept, False or a reason string to reject",
           expects="a callable taking a Result"),
    # strategy="adaptive" (docs/eval.md): priors from a routing file, exploration, reproducibility
    Option("routing", "chain", Any, None,
           "adaptive: a routing file (path) from `perplexed eval --write-routing`, or a Routing, as priors",
           expects="a routing file path or a perplexed.Routing", flag="--routing", metavar="FILE", cli="text"),
    Option("explore", "chain", float, 0.05,
           "adaptive: at most this share of calls put a member other than the top one first",
           {"ge": 0.0, "le": 1.0}, "a share between 0 and 1"),
    Option("seed", "chain", int, None, "adaptive: makes the exploration reproducible", expects="an integer"),
    # the usage ledger (docs/usage.md): who or what the call is for
    Option("tag", "chain", str, None,
           "who or what the call is for (a tenant, feature or user), recorded in the usage ledger",
           expects="1-64 letters, digits or '_.:@-', starting with a letter or digit", flag="--tag", metavar="TAG",
           cli="text", fetch=True),
    # --- fetch options: they reach the fetch providers ------------------------------------------------------------
    Option("format", "fetch", Literal["markdown", "text"], "markdown", "content format", expects="'markdown' or 'text'",
           choices=FORMATS, flag="--format", cli="choice"),
    Option("max_chars", "fetch", int, 20_000, "characters of content per page", {"ge": 1}, "an integer >= 1",
           flag="--max-chars", metavar="N", cli="positive", tools=("web_fetch",)),
    Option("start_index", "fetch", int, 0, "where the content starts (paging a long page)", {"ge": 0},
           "an integer >= 0", flag="--start-index", metavar="N", cli="whole", tools=("web_fetch",)),
    Option("min_chars", "fetch", int, 200, "quality floor: less text is insufficient and the chain moves on", {"ge": 0},
           "an integer >= 0", flag="--min-chars", metavar="N", cli="whole"),
    Option("max_age_s", "fetch", float, None, "how old a provider's cached copy of the page may be, in seconds",
           {"ge": 0}, "a non-negative number of seconds"),
    Option("allow_private", "fetch", bool | list[str], False,
           "allow private, loopback and link-local addresses (True), or only these networks (a list of CIDRs)",
           flag="--allow-private", cli="switch"),
    Option("respect_robots", "fetch", bool, True, "check robots.txt (the http provider)", expects="True or False",
           flag="--no-robots", cli="switch"),
    # --- governance (perplexed.configure): state across calls, for every search -----------------------------------
    Option("rate_limits", "governance", dict[str, str], None,
           "at most RATE calls to provider NAME: 5/s, 60/min, 1000/hour, 10000/day (e.g. tavily=1/s)",
           env="PERPLEXED_RATE_LIMITS", flag="--rate-limit", metavar="NAME=RATE", cli="append"),
    Option("rate_limit_wait_ms", "governance", int, 1000,
           "how long a call may wait for a rate-limit slot before the chain moves on (default 1000)",
           env="PERPLEXED_RATE_LIMIT_WAIT_MS", flag="--rate-limit-wait-ms", metavar="MS|NAME=MS", cli="append"),
    Option("cooldown_after", "governance", int, None,
           "after N failures in a row a provider rests and the chain skips it (default: off)",
           env="PERPLEXED_COOLDOWN_AFTER", flag="--cooldown-after", metavar="N|NAME=N", cli="append"),
    Option("cooldown_s", "governance", float, 30, "how many seconds a provider rests (default 30)",
           env="PERPLEXED_COOLDOWN_S", flag="--cooldown-s", metavar="S|NAME=S", cli="append"),
    Option("spend_limits", "governance", dict[str, float], None,
           "most all searches together may spend in a rolling window: minute, hour, day or week (e.g. day=5)",
           env="PERPLEXED_SPEND_LIMITS", flag="--spend-limit", metavar="WINDOW=USD", cli="append"),
)

_BY_NAME = {o.name: o for o in OPTIONS}


def option(name: str) -> Option:
    """The declaration of option ``name``."""
    return _BY_NAME[name]


def names(group: Group) -> tuple[str, ...]:
    """The names of a group's options, in declaration order."""
    return tuple(o.name for o in OPTIONS if o.group == group)


def fetch_chain_names() -> tuple[str, ...]:
    """The chain options a fetch takes (how the fetch chain runs), in declaration order."""
    return tuple(o.name for o in OPTIONS if o.fetch)


def _type_text(annotation: Any) -> str:
    text = str(annotation).replace("typing.", "").replace("collections.abc.", "").replace("datetime.", "")
    return {"<class 'int'>": "int", "<class 'float'>": "float", "<class 'bool'>": "bool", "<class 'str'>": "str"}.get(
        text, text)


def _default_text(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, tuple):
        return repr(list(value))
    return repr(value)


TABLE_START = "<!-- options-table:start (generated from perplexed.policy._optionspec: do not edit by hand) -->"
TABLE_END = "<!-- options-table:end -->"


def _rows(groups: tuple[Group, ...]) -> Iterator[str]:
    for o in OPTIONS:
        if o.group not in groups:
            continue
        flag = f"`{o.flag}`" if o.flag else ""
        env = f"`{o.env}`" if o.env else ""
        tools = ", ".join(f"`{t}`" for t in o.tools)
        bounds = o.bounds_text()
        kind = _type_text(o.annotation).replace(" | ", " or ")
        kinds = f"{o.group}, fetch" if o.fetch else o.group
        yield (f"| {kinds} | `{o.name}` | `{kind}` | `{_default_text(o.default)}` | {bounds} | {flag} | {env} "
               f"| {tools} | {o.help.replace('|', '/')} |")


def options_table() -> str:
    """The options table of docs/chain.md, generated from :data:`OPTIONS` (between :data:`TABLE_START` and
    :data:`TABLE_END`)."""
    head = ("| kind | option | type | default | bounds | CLI flag | environment | tool argument of | what it does |\n"
            "|---|---|---|---|---|---|---|---|---|")
    body = "\n".join(_rows(("search", "chain", "fetch", "governance")))
    return f"{TABLE_START}\n{head}\n{body}\n{TABLE_END}"


def with_options_table(page: str) -> str:
    """``page`` (the text of docs/chain.md) with its options table regenerated between the markers::

        python -c "import pathlib, perplexed.policy._optionspec as o; p = pathlib.Path('docs/chain.md'); \\
            p.write_text(o.with_options_table(p.read_text()))"
    """
    start, end = page.index(TABLE_START), page.index(TABLE_END) + len(TABLE_END)
    return page[:start] + options_table() + page[end:]
