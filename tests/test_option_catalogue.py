"""One catalogue of options (issue 41 §2): each option is declared once (``perplexed.catalogue.OPTIONS``) and
everything else is derived from it: the core's validation (names, defaults, bounds, error words), the CLI's
flags, the LangChain fields, the LlamaIndex keyword parameters (their real signatures), the agent tools'
arguments, and the options table of docs/chain.md (this test fails when the page and the catalogue differ)."""

from __future__ import annotations

import argparse
import inspect
import typing
from pathlib import Path

import perplexed
import pytest
from perplexed.catalogue import (  # private: the catalogue everything derives from, named in docs/chain.md's prose
    OPTIONS,
    TOOLS,
    option,
    options_table,
)
from perplexed.integration import prepare_fetch

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]


def group(name: str) -> tuple[str, ...]:
    return tuple(o.name for o in OPTIONS if o.group == name)


def test_each_option_is_declared_once() -> None:
    names = [o.name for o in OPTIONS]
    assert len(names) == len(set(names))
    flags = [o.flag for o in OPTIONS if o.flag]
    assert len(flags) == len(set(flags))
    for o in OPTIONS:
        assert o.help and o.help == o.help.strip(), o.name
        assert o.group in ("search", "chain", "fetch", "governance")


def test_the_docs_table_is_the_catalogues() -> None:
    page = (ROOT / "docs" / "chain.md").read_text(encoding="utf-8")
    start = page.index("<!-- options-table:start")
    end = page.index("<!-- options-table:end -->") + len("<!-- options-table:end -->")
    assert page[start:end] == options_table(), (
        "docs/chain.md's options table differs from perplexed.policy._optionspec: regenerate it with "
        "perplexed.policy._optionspec.with_options_table (see its docstring)")
    for o in OPTIONS:
        assert f"| {o.group}{', fetch' if o.fetch else ''} | `{o.name}` |" in page


def test_core_validation_reads_the_catalogue() -> None:
    from perplexed.fetchers import FetchOptions
    from perplexed.operations import _fetch  # private: fetch's option sets vs the catalogue
    from perplexed.policy._options import (  # private: the core's option sets must be the catalogue's
        CHAIN_OPTION_NAMES,
        COMMON_OPTIONS,
        FETCH_OPTION_NAMES,
    )

    assert COMMON_OPTIONS == group("search")
    assert CHAIN_OPTION_NAMES == group("chain")
    assert FETCH_OPTION_NAMES == group("fetch") == _fetch.FETCH_OPTION_NAMES
    assert _fetch.FETCH_CHAIN_NAMES == tuple(o.name for o in OPTIONS if o.fetch)
    for model, names in ((perplexed.SearchOptions, group("search")), (perplexed.ChainOptions, group("chain"))):
        for name in names:
            field = model.model_fields[name]
            default = option(name).default
            assert field.default == (frozenset(default) if isinstance(default, tuple) else default), name
            metadata = {type(m).__name__.lower(): getattr(m, type(m).__name__.lower()) for m in field.metadata}
            for bound, value in option(name).limits.items():
                if name != "hedge_after_ms":  # checked in ChainOptions.build (an int or 'auto')
                    assert metadata[bound] == value, (name, bound)
    for name in group("fetch"):  # the fetch model is the fetchers' (perplexed.fetchers.FetchOptions)
        if name != "allow_private":
            assert FetchOptions.model_fields[name].default == option(name).default, name


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: perplexed.SearchOptions.build(max_results=0), "max_results must be a whole number, at least 1 and at most 100, got 0"),
        (lambda: perplexed.ChainOptions.build(deadline_ms="soon"), "deadline_ms must be a number of milliseconds, got 'soon'"),
        (lambda: perplexed.ChainOptions.build(budget_usd="x"), "budget_usd must be a number (USD), got 'x'"),
        (lambda: perplexed.ChainOptions.build(strategy="fast"), "(strategy takes 'sequential', 'hedged', 'merge', 'adaptive')"),
        (lambda: perplexed.ChainOptions.build(fallback_on=["never"]), "(fallback_on takes 'error', 'empty', 'timeout', 'insufficient')"),
        (lambda: perplexed.ChainOptions.build(cache_single_flight=1), "cache_single_flight must be True or False"),
        (lambda: prepare_fetch("https://example.com/", format="html"), "format must be 'markdown' or 'text', got 'html'"),
        (lambda: prepare_fetch("https://example.com/", max_chars=0), "max_chars must be an integer >= 1, got 0"),
        (lambda: prepare_fetch("https://example.com/", max_age_s=-1), "max_age_s must be a non-negative number of seconds, got -1"),
    ],
)
def test_the_error_texts_are_the_declared_words(call: typing.Callable[[], object], words: str) -> None:
    with pytest.raises(perplexed.InvalidRequest) as info:
        call()
    assert words in str(info.value)


def parser_actions(command: str) -> dict[str, argparse.Action]:
    from perplexed import cli  # private: the CLI parser's flags must be the catalogue's

    parser = cli._build_parser()
    return {a.dest: a for a in parser.commands[command]._actions}


@pytest.mark.parametrize("command", ["search", "answer", "mcp", "fetch"])
def test_the_cli_flags_are_the_catalogues(command: str) -> None:
    actions = parser_actions(command)
    flagged = [o for o in OPTIONS if o.flag and o.cli not in (None, "switch", "append") and o.name in actions]
    assert flagged, command
    for o in flagged:
        action = actions[o.name]  # the flag's value lands under the option's own name
        assert o.flag in action.option_strings, o.name
        assert action.metavar == o.metavar or (o.cli == "choice" and tuple(action.choices or ()) == o.choices)
    if command != "fetch":
        assert {o.name for o in OPTIONS if o.group in ("search", "chain") and o.cli} <= set(actions) | {"max_results"}
        for o in OPTIONS:
            if o.group == "governance":
                assert o.flag in actions[o.flag[2:].replace("-", "_")].option_strings
    else:
        assert {o.name for o in OPTIONS if o.group == "fetch" and o.cli not in (None, "switch")} <= set(actions)


def test_the_governance_flags_and_message_words_are_the_catalogues() -> None:
    from perplexed._cli_options import (  # private: the CLI's governance flags must be the catalogue's
        GOVERNANCE_FLAGS,
        cli_words,
    )

    assert GOVERNANCE_FLAGS == tuple((o.flag, o.metavar, o.env, o.help) for o in OPTIONS if o.group == "governance")
    assert cli_words("min_hits=5 is too many") == "--min-hits 5 is too many"
    assert cli_words("the hedged strategy") == "the hedged strategy"


def test_the_langchain_fields_are_the_catalogues() -> None:
    from langchain_perplexed import PerplexedAnswerRetriever, PerplexedRetriever, PerplexedSearchTool

    for component in (PerplexedRetriever, PerplexedSearchTool, PerplexedAnswerRetriever):
        fields = component.model_fields
        for o in OPTIONS:
            if o.group in ("search", "chain") and o.name != "max_results":
                assert fields[o.name].annotation == o.annotation | None, (component.__name__, o.name)
                assert fields[o.name].default is None and o.help[:10].lower() in fields[o.name].description.lower()


def test_the_llama_index_signatures_are_the_catalogues() -> None:
    from llama_index_perplexed import PerplexedQueryEngine, PerplexedRetriever, PerplexedToolSpec

    for component in (PerplexedRetriever, PerplexedQueryEngine, PerplexedToolSpec):
        parameters = inspect.signature(component).parameters
        hints = typing.get_type_hints(component.__init__)
        for o in OPTIONS:
            if o.group in ("search", "chain") and o.name != "max_results":
                assert parameters[o.name].kind is inspect.Parameter.KEYWORD_ONLY, o.name
                assert parameters[o.name].default is None
                assert parameters[o.name].annotation == o.annotation | None == hints[o.name], o.name
        assert list(parameters)[-1] == "options"  # the rest still reaches the chain members


def test_options_exposed_as_tool_arguments_are_declared_so() -> None:
    for tool in TOOLS.values():
        exposed = {o.name for o in OPTIONS if tool.mcp_name in o.tools}
        assert exposed == {a.name for a in tool.arguments if not a.required}, tool.mcp_name
        for name in exposed:
            if option(name).choices:
                assert tool.argument(name).choices == option(name).choices


def test_the_fetch_components_take_the_catalogues_fetch_options() -> None:
    from langchain_perplexed import PerplexedFetchTool
    from llama_index_perplexed import PerplexedReader

    fetch_names = [o.name for o in OPTIONS if o.group == "fetch"] + [o.name for o in OPTIONS if o.fetch]
    parameters = inspect.signature(PerplexedReader).parameters
    for name in fetch_names:
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY and parameters[name].default is None, name
        assert parameters[name].annotation == option(name).annotation | None
    fields = PerplexedFetchTool.model_fields
    for name in ("format", "allow_private", "respect_robots"):
        assert fields[name].default == option(name).default and fields[name].annotation == option(name).annotation
    for name in ("min_chars", "provider_timeout_ms", "deadline_ms"):
        assert fields[name].default is None and fields[name].annotation == option(name).annotation | None
