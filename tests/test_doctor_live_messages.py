"""`perplexed doctor --live` tells a new user what to set: with nothing configured, the variables that
configure a provider; with a misspelt provider name, the closest one."""

from __future__ import annotations

import pytest
from perplexed.cli import main  # private: the perplexed command run in-process, not as a subprocess
from perplexed.providers import available, get


@pytest.fixture
def nothing_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in available():
        cls = get(name)
        for var in (getattr(cls, "env_key", None), getattr(cls, "env_base_url", None)):
            if var:
                monkeypatch.delenv(var, raising=False)


@pytest.mark.usefixtures("nothing_configured")
@pytest.mark.parametrize("extra", [[], ["--yes"], ["--yes", "--json"]])
def test_nothing_configured_names_what_to_set(capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    code = main(["doctor", "--live", *extra])
    out, err = capsys.readouterr()
    assert code == 1
    for var in ("SEARXNG_URL", "TAVILY_API_KEY", "EXA_API_KEY"):
        assert var in out + err


def test_a_misspelt_provider_names_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--live", "Tavily"])
    _, err = capsys.readouterr()
    assert code != 0 and "did you mean 'tavily'" in err


def test_a_live_row_says_it_in_the_command_lines_words(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The Agent API row without a key: "set the PERPLEXITY_API_KEY environment variable", no Python hint."""
    monkeypatch.delenv("PERPLEXITY_API_KEY", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    main(["doctor", "--live", "--agent", "--yes"])
    out = capsys.readouterr().out
    assert "set the PERPLEXITY_API_KEY environment variable" in out
    assert "api_key=" not in out
