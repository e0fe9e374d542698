"""The command line's "did you mean" behaves as the library's (issue 26, point 4): by meaning and case
(``--topk`` -> ``--max-results``, ``--providers`` -> ``--provider``, ``--max_results`` -> ``--max-results``),
and for a misspelt command or choice (``serch`` -> ``search``, ``--strategy merj`` -> ``merge``)."""

from __future__ import annotations

import pytest
from perplexed.cli import (  # private: both argparse spellings, though one Python shows only one
    _with_choice_hint,
    main,
)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["search", "q", "--topk", "2"], "--topk (did you mean --max-results?)"),
        (["search", "q", "--providers", "local"], "--providers (did you mean --provider?)"),
        (["search", "q", "--max_results", "2"], "--max_results (did you mean --max-results?)"),
        (["search", "q", "--Provider", "local"], "--Provider (did you mean --provider?)"),
        (["index", "--lst"], "--lst (did you mean --list?)"),
        (["serch", "q"], "invalid choice: 'serch': did you mean 'search'?"),
        (["search", "q", "--strategy", "merj"], "invalid choice: 'merj': did you mean 'merge'?"),
    ],
)
def test_a_misspelt_flag_command_or_choice_names_the_closest(capsys: pytest.CaptureFixture[str], args: list[str],
                                                             words: str) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


def test_nothing_close_adds_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "q", "--strategy", "zzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "message",
    ["argument COMMAND: invalid choice: 'serch' (choose from 'search', 'answer')",  # Python 3.11
     "argument COMMAND: invalid choice: 'serch' (choose from search, answer)"],  # later versions
)
def test_both_argparse_spellings_of_invalid_choice(message: str) -> None:
    assert "did you mean 'search'?" in _with_choice_hint(message)


@pytest.mark.parametrize(("window", "closest"), [("dya", "day"), ("Day", "day"), ("weekly", "week"), ("hours", "hour")])
def test_a_misspelt_spend_window_names_the_closest(window: str, closest: str, capsys: pytest.CaptureFixture[str]) -> None:
    import perplexed
    from perplexed import ConfigError

    with pytest.raises(ConfigError, match=f"did you mean '{closest}'"):  # validated before anything is set
        perplexed.configure(spend_limits={window: 5})
    assert main(["search", "q", "-p", "local", "--spend-limit", f"{window}=5"]) == 2
    assert f"did you mean '{closest}'" in capsys.readouterr().err
