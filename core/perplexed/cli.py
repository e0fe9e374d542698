"""The ``perplexed`` command line (extra ``cli``: rich and platformdirs).

    perplexed index PATH [PATH ...] [--index FILE]       build or update the local full-text index
    perplexed index --list | --remove F | --rebuild | --reset   manage it
    perplexed search QUERY [--provider a,b,c] [--json]   search through a provider chain
    perplexed answer QUERY [--provider ..] [--stream]    a grounded answer with cited sources
    perplexed providers                                  registered providers, configured or not, price
    perplexed doctor [--live [PROVIDER ...] --yes]       check the configuration; --live: check for API drift
    perplexed mcp [--http [--host H] [--port N]]         serve the chain as a Model Context Protocol server

Exit codes: 0 ok; 1 no results, or every provider failed (the attempts are printed); 2 usage or
configuration error. With ``--json`` the result is printed as one JSON document on stdout, and nothing
else. Expected errors are one-line messages, never tracebacks.

rich is imported only when a command runs, so ``import perplexed`` never needs it.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from perplexed import __version__, _cli_gc, telemetry  # _cli_gc: collections pause while the modules load
from perplexed._cli_options import GOVERNANCE_FLAGS as _GOVERNANCE_FLAGS
from perplexed._cli_options import Commands as _Commands
from perplexed._cli_options import add_option_flags, configure_governance, option_values
from perplexed._cli_options import cli_words as _cli_words
from perplexed._cli_options import command_of as _command_of
from perplexed._cli_output import CLI_CACHE_TTL_S, EXIT_NO_RESULTS, EXIT_OK, EXIT_USAGE
from perplexed._cli_output import consoles as _consoles
from perplexed._cli_output import escape as _escape
from perplexed._cli_output import money as _money
from perplexed._cli_output import print_json as _print_json
from perplexed._cli_output import process_ends as _process_ends
from perplexed._cli_output import use_cli_store as _use_cli_store
from perplexed._errors import (
    AuthenticationError,
    ConfigError,
    CorruptIndexError,
    InvalidRequest,
    PermissionDeniedError,
    PerplexedError,
    UpstreamError,
    UsageError,
    install_hint,
)
from perplexed._models import Hit, Result
from perplexed.commands._search import print_attempts as _print_attempts
from perplexed.commands._search import print_hits as _print_hits
from perplexed.engine import chain
from perplexed.index import (
    INDEX_ENV,
)
from perplexed.policy._keywords import suggestion
from perplexed.policy._settings import default_chain

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console
    from rich.text import Text

__all__ = ["UsageError", "main"]

_cli_gc.resume()  # the modules are loaded (perplexed._cli_gc)


class _Parser(argparse.ArgumentParser):
    commands: Mapping[str, argparse.ArgumentParser]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = {}

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{_with_choice_hint(message)} (see `{self.prog} --help`)")


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


def _with_choice_hint(message: str) -> str:
    """argparse's "invalid choice: 'serch' (choose from ...)" with the closest choice named, as everywhere
    else ("did you mean 'search'?")."""
    found = _INVALID_CHOICE.search(message)
    if found is None:
        return message
    listed = found.group(2)  # 'a', 'b' (Python 3.11) or a, b (later versions)
    choices = re.findall(r"'([^']*)'", listed) or [c.strip() for c in listed.split(",")]
    near = suggestion(found.group(1), choices)
    if near is None:
        return message
    return f"{message[:found.start()]}invalid choice: {found.group(1)!r}: did you mean {near!r}? (choose from {found.group(2)})"


# --- entry point --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``perplexed`` command; returns the exit code. Without ``argv`` (the ``perplexed`` script, ``python -m
    perplexed``: the process ends when this returns) the objects left are spared the interpreter's last
    garbage collections (:func:`perplexed._cli_output.process_ends`)."""
    code = _main(list(sys.argv[1:] if argv is None else argv))
    if argv is None:
        _process_ends()
    return code


def _main(args_list: list[str]) -> int:
    as_json = "--json" in args_list
    try:
        import rich  # noqa: F401
    except ImportError:
        sys.stderr.write(
            f"perplexed: the command line needs the 'cli' extra: {install_hint('cli')}\n"
        )
        return EXIT_USAGE
    parser = _build_parser(_command_of(args_list))
    try:
        try:
            args, extra = parser.parse_known_args(args_list)
        except SystemExit as exc:  # --help, --version
            return exc.code if isinstance(exc.code, int) else 0
        if extra:
            raise UsageError(_unrecognized(parser, args.command, extra))
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        command: Callable[[argparse.Namespace], int] = args.run
        return command(args)
    except (UsageError, ConfigError, InvalidRequest) as exc:
        return _fail(exc, as_json)
    except (AuthenticationError, PermissionDeniedError) as exc:
        return _fail(exc, as_json)
    except PerplexedError as exc:  # the service failed (Agent API error, a stream cut short, ...)
        return _fail(exc, as_json, EXIT_NO_RESULTS)
    except KeyboardInterrupt:
        sys.stderr.write("perplexed: interrupted\n")
        return 130
    except BrokenPipeError:  # e.g. `perplexed search … | head`: stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
        except (OSError, ValueError):
            pass
        return EXIT_OK


def _unrecognized(parser: _Parser, command: str | None, extra: list[str]) -> str:
    """What ``perplexed COMMAND`` says about arguments it does not take: each, with the closest option of that
    command when one is close, and the command's own --help."""
    sub = parser.commands.get(command or "")
    options = {o[2:].replace("-", "_"): o for action in (sub or parser)._actions for o in action.option_strings
               if o.startswith("--")}
    words = []
    for arg in extra:
        name = arg.split("=", 1)[0]
        # by meaning and case, as the library's keywords (--topk -> --max-results, --providers -> --provider)
        near = suggestion(name.lstrip("-").replace("-", "_"), options) if name.startswith("-") else None
        words.append(f"{arg} (did you mean {options[near]}?)" if near else arg)
    where = f"perplexed {command}" if sub is not None else "perplexed"
    return f"unrecognized arguments: {' '.join(words)} (see `{where} --help`)"


def _fail(exc: PerplexedError, as_json: bool, code: int = EXIT_USAGE) -> int:
    if as_json:
        _print_json({"error": _error_doc(exc)})
    sys.stderr.write(f"perplexed: error: {_cli_words(str(exc), getattr(exc, 'param', None))}\n")
    return code


def _error_doc(exc: PerplexedError) -> dict[str, Any]:
    doc: dict[str, Any] = {"type": type(exc).__name__, "message": _cli_words(str(exc), getattr(exc, "param", None))}
    reason = getattr(exc, "reason", None)
    if isinstance(reason, str):
        doc["reason"] = reason
    param = getattr(exc, "param", None)
    if isinstance(param, str):
        doc["param"] = param
    return doc


def _build_parser(command: str | None = None) -> _Parser:
    """The ``perplexed`` parser; with ``command``, only that command's arguments are built (all are listed)."""
    parser = _Parser(
        prog="perplexed",
        description="Reliable, cheap, cited search: a fallback chain of search providers, free first.",
        epilog="Exit codes: 0 ok, 1 no results or all providers failed, 2 usage or configuration error.",
    )
    parser.add_argument("--version", action="version", version=f"perplexed {__version__}")
    parser.set_defaults(command=None)
    action = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    parser.commands = action.choices
    sub: Any = _Commands(action, command)

    def chain_options(p: argparse.ArgumentParser, query: bool = True) -> None:
        if query:
            p.add_argument("query", nargs="+", metavar="QUERY", help="what to search for (quote it, or not)")
        p.add_argument(
            "--provider", "-p", metavar="A,B,C",
            help="provider or comma-separated chain, tried in order (default: $PERPLEXED_PROVIDER or "
            "local,searxng)",
        )
        names = [n for n in _CHAIN_FLAG_OPTIONS if query or n != "max_results"]
        add_option_flags(p, names, _flag_types(), short={"max_results": "-n"}, helps={
            "cache_ttl_s": f"reuse a provider's answer for this long (default {CLI_CACHE_TTL_S:g}; 0 = off)"})
        if not query:
            p.set_defaults(max_results=None)
        p.add_argument("--index", metavar="FILE", help=f"local index file for the 'local' provider (default: ${INDEX_ENV}, else "
                       ".perplexed/index.db in this folder or a parent, else in the user data folder)")
        p.set_defaults(cache_ttl_s=CLI_CACHE_TTL_S)
        p.add_argument("--no-cache", action="store_true", help="do not use or fill the result cache")
        limits = p.add_argument_group(
            "rate limits, cool-downs and spend limits",
            "each also read from its environment variable when the flag is not given; NAME is a provider's "
            "registry name or label (see docs/production.md)")
        for flag, metavar, env, what in _GOVERNANCE_FLAGS:
            limits.add_argument(flag, action="append", metavar=metavar, help=f"{what} (${env}; repeat or "
                                "comma-separate)" if "=" in metavar and "|" not in metavar else f"{what} (${env})")
        if query:
            p.add_argument("--json", action="store_true", help="print one JSON document and nothing else")

    p_search = sub.add_parser("search", help="search through a provider chain", description=(
        "Search through a chain of providers: the first that answers wins. Prints the hits, every attempt "
        "(provider, outcome, duration, cost) and the total cost."))
    chain_options(p_search)
    p_search.set_defaults(command="search", run=_cmd_search)

    p_answer = sub.add_parser("answer", help="a grounded answer with cited sources", description=(
        "Search, then answer from the hits with the Perplexity Agent API (needs PERPLEXITY_API_KEY). "
        "Citations [n] point at the numbered sources."))
    chain_options(p_answer)
    p_answer.add_argument("--preset", metavar="NAME", help="Agent API preset (model and settings)")
    p_answer.add_argument("--stream", action="store_true", help="print the answer as it is written")
    p_answer.add_argument("--verify", action="store_true",
                          help="check that each cited source supports its sentence (offline): print the sentences "
                          "that are not supported, then citation recall and precision")
    p_answer.set_defaults(command="answer", run=_cmd_answer)

    from perplexed.commands._fetch import add_access_flags
    from perplexed.commands._fetch import add_parser as add_fetch

    add_fetch(sub, _Parser, _positive_int, _whole_number)

    from perplexed.commands._eval import add_parser as add_eval

    add_eval(sub, _positive_int, _whole_number, _usd)

    from perplexed.commands._usage import add_parser as add_usage  # issue 38

    add_usage(sub)

    p_prov = sub.add_parser("providers", help="registered providers, configured or not, and their price",
                            description="Every registered provider: configured or not (key, URL), and price.")
    p_prov.add_argument("--json", action="store_true", help="print one JSON document and nothing else")
    p_prov.set_defaults(command="providers", run=_cmd_providers)

    p_index = sub.add_parser("index", help="build, update or manage the local full-text index", description=(
        "Index the Markdown, text, HTML, reStructuredText and PDF (with the 'pdf' extra) files under each "
        "PATH (a folder or a single file) for the 'local' provider. Run it again to update: changed files "
        "are re-read, deleted files dropped. --list, --remove, --rebuild and --reset manage the index."))
    p_index.add_argument("paths", nargs="*", metavar="PATH", help="folder (or single file) of documents")
    p_index.add_argument("--index", metavar="FILE",
                         help=f"index file (default: ${INDEX_ENV}, else .perplexed/index.db in this folder or a "
                         "parent, else in the user data folder; --list says which)")
    p_index.add_argument("--follow-links", action="store_true",
                         help="also follow symbolic links that lead out of the indexed folders")
    manage = p_index.add_mutually_exclusive_group()
    manage.add_argument("--list", action="store_true",
                        help="list the indexed folders: documents, last indexed, size")
    manage.add_argument("--remove", action="append", metavar="FOLDER",
                        help="drop an indexed folder and its documents (also one that no longer exists)")
    manage.add_argument("--rebuild", action="store_true",
                        help="rebuild the index from its indexed folders (and any PATH), e.g. when it is damaged")
    manage.add_argument("--reset", action="store_true", help="delete the index and everything in it")
    p_index.add_argument("--verbose", "-v", action="store_true",
                         help="on a damaged index, print everything SQLite reports (else one line)")
    p_index.add_argument("--json", action="store_true", help="print one JSON document and nothing else")
    p_index.set_defaults(command="index", run=_cmd_index)

    p_mcp = sub.add_parser("mcp", help="serve the chain to AI agents as a Model Context Protocol server",
                           description=(
        "Run an MCP server whose tools (web_search, web_fetch, answer) run this chain: stdio by default "
        "(for Claude Desktop, Cursor, VS Code, ...), or streamable HTTP with --http. The chain and its "
        "options are those of `perplexed search` (same flags, defaults and environment). Needs the 'mcp' "
        "extra."))
    chain_options(p_mcp, query=False)
    p_mcp.add_argument("--fetch-provider", metavar="A,B,C", help="the chain of web_fetch (default: http)")
    p_mcp.add_argument("--max-chars", type=_positive_int, metavar="N",
                       help="cut each text result at N characters (default 8000)")
    p_mcp.add_argument("--preset", metavar="NAME", help="Agent API preset of the answer tool")
    add_access_flags(p_mcp)
    p_mcp.add_argument("--http", action="store_true", help="serve streamable HTTP (stateless) at /mcp")
    p_mcp.add_argument("--host", default="127.0.0.1", help="with --http: address to bind (default 127.0.0.1)")
    p_mcp.add_argument("--port", type=_port, default=8000, help="with --http: port (default 8000; 0 = any free)")
    p_mcp.add_argument("--token", metavar="TOKEN",
                       help="with --http: require Authorization: Bearer TOKEN (better: set $PERPLEXED_MCP_TOKEN, "
                       "which `ps` does not show); needed to bind to a non-loopback address; never empty")
    p_mcp.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       help="with --http: also accept requests whose Origin is ORIGIN (repeatable)")
    p_mcp.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="with --http: also accept requests whose Host is NAME or NAME:PORT, e.g. a DNS name "
                       "of this machine (repeatable)")
    p_mcp.set_defaults(command="mcp", run=_cmd_mcp)

    p_doc = sub.add_parser("doctor", help="check the configuration; --live: check the APIs still match", description=(
        "Offline (free): keys (format only), SearXNG, the local index, the state store, the chain. "
        "--live: one cheap real query per configured provider (or each PROVIDER), checked for drift; "
        "prints the estimated cost and sends nothing without --yes (exit 2). Exit 0 ok, 1 a problem."))
    p_doc.add_argument("providers", nargs="*", metavar="PROVIDER", help="with --live: the providers to call")
    p_doc.add_argument("--provider", "-p", metavar="A,B,C", help="the chain to check (default: $PERPLEXED_PROVIDER)")
    p_doc.add_argument("--index", metavar="FILE", help="the local index to check (default: the one a search uses)")
    p_doc.add_argument("--live", action="store_true", help="make one real, cheap, paid query per provider")
    p_doc.add_argument("--agent", action="store_true", help="with --live: check the Agent API (cheapest preset)")
    p_doc.add_argument("--yes", action="store_true", help="with --live: agree to the estimated cost")
    p_doc.add_argument("--record", metavar="DIR", help="with --live: write the exchanges as redacted cassettes")
    p_doc.add_argument("--json", action="store_true", help="print one JSON document and nothing else")
    p_doc.set_defaults(command="doctor", run=_cmd_doctor)
    return parser


def _port(text: str) -> int:
    value = _whole_number(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, got {value}")
    return value


def _cmd_mcp(args: argparse.Namespace) -> int:
    import perplexed.mcp_server as mcp_server  # not `from perplexed import`: that loads the old eager set, httpx too
    from perplexed.commands._fetch import access_options
    from perplexed.mcp._http import authentication, resolve_token

    if not args.http and (args.token is not None or args.allow_origin or args.allow_host):
        raise UsageError("--token, --allow-origin and --allow-host go with --http")
    token = resolve_token(args.token) if args.http else None
    answer_options = {"preset": args.preset} if args.preset else {}
    fetch_options = access_options(args)
    max_chars = args.max_chars or mcp_server.DEFAULT_MAX_CHARS
    server = (mcp_server.create_server if args.http else mcp_server.stdio_server)(
        _chain_spec(args), fetch_provider=_provider_spec(args.fetch_provider), max_chars=max_chars,
        answer_options=answer_options, fetch_options=fetch_options, **_chain_kwargs(args),
    )
    if not args.http:
        _say(mcp_server.startup_line(server, "stdio", "none (stdio: only the client that started it can call it)"))
        server.run("stdio")
        return EXIT_OK

    def ready(port: int) -> None:
        where = f"http://{_url_host(args.host)}:{port}/mcp"
        _say(mcp_server.startup_line(server, where, authentication(args.host, token, args.token is not None)))

    mcp_server.serve_http(server, host=args.host, port=args.port, token=token, allow_origins=args.allow_origin,
                          allow_hosts=args.allow_host, ready=ready)
    return EXIT_OK


def _say(line: str) -> None:
    """One line on stderr, now (a client reading the server's log sees it at once)."""
    sys.stderr.write(line.replace("\n", " ") + "\n")
    sys.stderr.flush()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _cmd_doctor(args: argparse.Namespace) -> int:
    from perplexed.doctor._report import command

    return command(args)


def _hedge_after(text: str) -> int | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of ms or 'auto', got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def _whole_number(text: str) -> int:
    """A whole number; its range is the library's to check (one wording for a limit, whatever the value)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _positive_int(text: str) -> int:
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _flag_types() -> dict[str, Callable[[str], Any]]:
    """The converter of each kind of flag value the option catalogue declares (``Option.cli``)."""
    return {"whole": _whole_number, "positive": _positive_int, "hedge": _hedge_after, "seconds": _seconds,
            "usd": _usd, "text": str}


#: The options ``search``, ``answer`` and ``mcp`` take as flags (each flag declared in perplexed.policy._optionspec).
_CHAIN_FLAG_OPTIONS = ("max_results", "provider_timeout_ms", "deadline_ms", "strategy", "hedge_after_ms",
                      "merge_providers", "min_hits", "routing", "tag", "cache_ttl_s", "budget_usd")


# --- consoles --------------------------------------------------------------------------------------------


@contextmanager
def _spinner(err: Console, labels: list[str], enabled: bool, after: str | None = None) -> Iterator[None]:
    """A spinner on stderr naming the provider being tried (advanced by the chain's attempt events).

    Once a provider has answered (or every one was tried), it shows ``after`` (e.g. "Answering").
    """
    if not enabled or not labels:
        yield
        return
    verb = "Searching"
    done = 0
    answered = False

    def message() -> str:
        if answered or done >= len(labels):
            return f"{after}…" if after else f"{verb}… finishing"
        step = f" ({done + 1}/{len(labels)})" if len(labels) > 1 else ""
        return f"{verb}… trying [bold]{_escape(labels[done])}[/]{step}"

    from rich.live import Live
    from rich.spinner import Spinner

    spinner = Spinner("dots", text=message(), style="green")
    with Live(spinner, console=err, transient=True, refresh_per_second=12.5) as live:

        def on_event(event: tuple[str, ...], measurements: dict[str, Any], metadata: dict[str, Any]) -> None:
            nonlocal done, answered
            if event == chain.ATTEMPT_EVENT:
                done += 1
                answered = answered or metadata.get("outcome") == "ok"
                spinner.update(text=message())
                live.refresh()  # draw now: a fast provider would otherwise never be named

        handle = telemetry.attach(on_event)
        live.refresh()
        try:
            yield
        finally:
            telemetry.detach(handle)


# --- search ----------------------------------------------------------------------------------------------


def _chain_spec(args: argparse.Namespace) -> Any:
    """The provider spec of ``--provider``, with ``--index FILE`` given to the ``local`` provider itself
    (never through the process environment, so no later message blames a variable the user did not set)."""
    spec = _provider_spec(args.provider)
    if not args.index:
        return spec
    path = os.path.abspath(os.path.expanduser(args.index))

    def is_local(item: Any) -> bool:
        return isinstance(item, str) and item.strip().lower() == "local"

    if spec is None:
        try:
            default = default_chain()
        except ConfigError:
            return None  # resolving it says what is wrong, and where it came from
        if not any(is_local(item) for item in (default if isinstance(default, list) else [default])):
            return None
        spec = default
    local = {"name": "local", "index": path}
    if isinstance(spec, list):
        return [local if is_local(item) else item for item in spec]
    return local if is_local(spec) else spec


def _chain_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    options = option_values(args, [n for n in _CHAIN_FLAG_OPTIONS if n != "cache_ttl_s"])
    # governance: the CLI caches for an hour by default, in its SQLite store next to the local index
    if not getattr(args, "no_cache", False) and getattr(args, "cache_ttl_s", None):
        options["cache_ttl_s"] = args.cache_ttl_s
    _use_cli_store(getattr(args, "index", None))
    configure_governance(lambda flag: getattr(args, flag[2:].replace("-", "_"), None))
    return options


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value >= 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def _usd(text: str) -> float:
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an amount of USD, got {text!r}") from None
    if not (value >= 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"expected an amount of USD >= 0, got {text!r}")
    return value


def _provider_spec(raw: str | None) -> Any:
    if raw is None:
        return None
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise UsageError("--provider names no provider")
    return names if len(names) > 1 or "," in raw else names[0]


def _cmd_search(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    spec = _chain_spec(args)
    options = _chain_kwargs(args)
    prepared = chain.prepare(query, spec, **options)  # validates everything: exit 2 before any call
    if args.json:  # one JSON document and no spinner: no console is made (rich is not imported)
        result, failure = _searched(query, spec, options, prepared.query)
        document = result.model_dump(mode="json")
        _print_json(document if failure is None else {**document, "error": _error_doc(failure)})
        return EXIT_OK if result.hits else EXIT_NO_RESULTS
    labels = [p.label for p in prepared.providers]
    out, err = _consoles()
    with _spinner(err, labels, enabled=err.is_terminal):
        result, failure = _searched(query, spec, options, prepared.query)
    if failure is not None:
        out.print(f"[bold red]All providers failed[/] for {_escape(repr(prepared.query))}.")
    elif result.hits:
        _print_hits(out, result.hits, prepared.query)
    else:
        out.print(f"[yellow]No results[/] for {_escape(repr(prepared.query))}.")
    _print_attempts(out, result, labels)
    return EXIT_OK if result.hits else EXIT_NO_RESULTS


def _searched(query: str, spec: Any, options: dict[str, Any], cleaned: str) -> tuple[Result, UpstreamError | None]:
    """The search's result, or (every provider failed) a result of no hits with the failure's attempts and the
    failure."""
    try:
        return chain.search(query, spec, **options), None
    except UpstreamError as exc:
        return Result(query=cleaned, provider=None, hits=[], attempts=exc.attempts), exc


# --- answer ----------------------------------------------------------------------------------------------


def _cmd_answer(args: argparse.Namespace) -> int:
    import perplexed
    import perplexed.integration

    options = _chain_kwargs(args)
    if args.preset:
        options["preset"] = args.preset
    if args.verify:
        options["verify"] = True
    # every check before any call (exit 2): the chain or the perplexity-agent mode, options, the key
    plan = perplexed.integration.prepare_answer(" ".join(args.query), _chain_spec(args), **options)
    labels = plan.providers
    out, err = _consoles()
    spin = not args.json and err.is_terminal
    final: Any = None
    streamed = False
    try:
        if args.stream:
            with _spinner(err, labels, enabled=spin, after="Answering"):
                stream = iter(perplexed.stream_answer(plan))
                first = next(stream, None)  # the spinner runs until the first words arrive
            for item in _prepend(first, stream):
                if isinstance(item, str):
                    if not args.json:
                        out.file.write(item)
                        out.file.flush()
                        streamed = True
                else:
                    final = item
        else:
            with _spinner(err, labels, enabled=spin, after="Answering"):
                final = perplexed.answer(plan)
    except UpstreamError as exc:  # all providers failed, or nothing found to ground an answer in
        failed = Result(query=plan.query, provider=None, hits=[], attempts=exc.attempts)
        if args.json:
            _print_json({"error": _error_doc(exc), "search": failed.model_dump(mode="json")})
        else:
            if streamed:
                out.file.write("\n")
            what = "found nothing to answer from" if exc.reason == "no_sources" else "failed"
            out.print(f"[bold red]The search {what}[/]: no answer was asked for.")
            _print_attempts(out, failed, labels)
        return EXIT_NO_RESULTS
    if final is None:
        raise UpstreamError("no_answer", [], "the answer stream ended without a final answer")
    if args.json:
        _print_json(_answer_doc(final))
        return EXIT_OK
    if streamed:
        out.file.write("\n")
        out.file.flush()
    else:
        out.print(_linked_answer(final))
    _print_footnotes(out, final)
    if final.verification is not None:  # the labels never change the exit code
        _print_verification(out, final.verification)
    return EXIT_OK


def _print_verification(out: Console, verification: Any) -> None:
    """Each sentence that is not supported, marked with its label and why, then recall and precision."""
    from rich.text import Text

    out.print()
    for line in verification.report(width=max(out.width - 20, 40)).splitlines():
        style = "yellow" if line.startswith("✗") else "dim" if line.startswith("citation") else "green"
        out.print(Text(line, style=style), soft_wrap=True)


def _prepend(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    if first is not None:
        yield first
    yield from rest


def _linked_answer(answer: Any) -> Text:
    """The answer text with each ``[n]`` marker linked to its source (in terminals that support links)."""
    from rich.style import Style
    from rich.text import Text

    text = Text(str(answer.text))
    for citation in answer.citations:
        start, end = citation.span
        text.stylize(Style(color="cyan", link=citation.hit.url or None), start, end)
    return text


def _print_footnotes(out: Console, answer: Any) -> None:
    """Cited sources as footnotes ``[n] Title — URL`` (linked), then the cost line."""
    from rich.style import Style
    from rich.text import Text

    cited: list[Hit] = list(answer.cited)
    if cited:
        out.print()
        for hit in cited:
            line = Text(f"[{hit.id}] ", style="cyan")
            line.append(hit.title or hit.url, style=Style(bold=True, link=hit.url or None))
            if hit.title:
                line.append(" — ")
                line.append(hit.url, style=Style(dim=True, link=hit.url or None))
            out.print(line, soft_wrap=True)
    uncited = len(answer.sources) - len(cited)
    notes = []
    if uncited > 0:
        notes.append(f"{uncited} more source{'s' if uncited != 1 else ''} given, not cited")
    if answer.unmatched:
        notes.append("markers without a source: " + ", ".join(f"[{int(n)}]" for n in answer.unmatched))
    if notes:
        out.print(Text(" · ".join(notes), style="dim"))
    via = f" · sources from {_escape(str(answer.provider))}" if answer.provider else ""
    out.print()
    out.print(
        f"Cost: [bold]{_money(answer.cost)}[/] (search {_money(answer.search_cost)}, "
        f"Agent API {_money(answer.agent_cost)}){via}"
    )


ANSWER_KEYS = ("text", "citations", "sources", "search", "cost")


def _answer_doc(answer: Any) -> dict[str, Any]:
    """The ``--json`` document of an answer: text, citations, sources, search, cost (and ``verification``
    with ``--verify``)."""
    full: dict[str, Any] = answer.to_dict()
    return {key: full[key] for key in (*ANSWER_KEYS, "verification") if key in full}


# --- providers -------------------------------------------------------------------------------------------


def _cmd_providers(args: argparse.Namespace) -> int:
    from perplexed.commands._providers import command

    return command(args)


# --- index -----------------------------------------------------------------------------------------------


def _cmd_index(args: argparse.Namespace) -> int:
    try:
        return _index_command(args)
    except CorruptIndexError as exc:  # one line (main prints it); SQLite's whole report only when asked
        if args.verbose and exc.details:
            sys.stderr.write("perplexed: what SQLite reports about the index:\n")
            sys.stderr.writelines(f"  {line}\n" for line in exc.details)
        elif len(exc.details) > 1 or (exc.details and exc.details[0] not in str(exc)):
            raise CorruptIndexError(f"{exc} (--verbose shows SQLite's report)", path=exc.path,
                                    details=exc.details) from None
        raise


def _index_command(args: argparse.Namespace) -> int:
    from perplexed.commands._index import command

    return command(args)
