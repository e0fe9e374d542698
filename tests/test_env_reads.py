"""The hot path's environment reads (issue 35): cheaper than ``os.environ.get``, yet every change to the
environment between calls is seen at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from perplexed import ConfigError
from perplexed.engine import _governance, _usage  # private: the ledger target read
from perplexed.policy import _settings  # private: env_get is the unit


def test_env_get_follows_every_change(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXED_TEST_ENV_READ", raising=False)
    assert _settings.env_get("PERPLEXED_TEST_ENV_READ") is None
    monkeypatch.setenv("PERPLEXED_TEST_ENV_READ", "one")
    assert _settings.env_get("PERPLEXED_TEST_ENV_READ") == "one"
    os.environ["PERPLEXED_TEST_ENV_READ"] = "two"
    assert _settings.env_get("PERPLEXED_TEST_ENV_READ") == "two"
    monkeypatch.delenv("PERPLEXED_TEST_ENV_READ")
    assert _settings.env_get("PERPLEXED_TEST_ENV_READ") is None


def test_env_get_reads_a_replaced_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "environ", {"PERPLEXED_TEST_ENV_READ": "mapped"})
    assert _settings.env_get("PERPLEXED_TEST_ENV_READ") == "mapped"
    assert _settings.env_get("PERPLEXED_TEST_ENV_UNSET") is None


def test_price_override_follows_the_environment_between_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERPLEXED_PRICE_MY_PROVIDER", raising=False)
    assert _settings.price_override("my-provider") is None
    monkeypatch.setenv("PERPLEXED_PRICE_MY_PROVIDER", "0.25")
    assert _settings.price_override("my-provider") == 0.25
    monkeypatch.setenv("PERPLEXED_PRICE_MY_PROVIDER", "0.5")
    assert _settings.price_override("my-provider") == 0.5
    monkeypatch.setenv("PERPLEXED_PRICE_MY_PROVIDER", "lots")
    for _ in range(2):  # an invalid value is an error every time, never a remembered answer
        with pytest.raises(ConfigError, match="PERPLEXED_PRICE_MY-PROVIDER"):
            _settings.price_override("my-provider")
    monkeypatch.setenv("PERPLEXED_PRICE_MY_PROVIDER", " ")
    assert _settings.price_override("my-provider") is None


def test_price_override_of_a_label_no_variable_can_name() -> None:
    assert _settings.price_override("bad\udfffname\ud800") is None
    assert _settings.price_override("nul\x00name") is None


def test_usage_target_follows_perplexed_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PERPLEXED_STORE", raising=False)
    assert _usage.target() is None
    monkeypatch.setenv("PERPLEXED_STORE", "memory")
    assert _usage.target() is None
    monkeypatch.setenv("PERPLEXED_STORE", f"sqlite:///{tmp_path}/usage.db")
    store = _usage.target()
    assert store is not None and store is _governance.current_store()
    monkeypatch.delenv("PERPLEXED_STORE")
    assert _usage.target() is None
