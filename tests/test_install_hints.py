"""A missing extra's message says how to install it from a clone too: until the package is on PyPI,
``pip install 'perplexed-search[X]'`` does not install this project (a new user has a clone)."""

from __future__ import annotations

import pytest
from perplexed._errors import install_hint  # private: every missing-extra message comes from one helper
from perplexed.extract._doctext import PDF_HINT  # private: the message text without uninstalling pypdf
from perplexed.extract._extract import FETCH_HINT  # private: the fetch extra's message, not uninstalled


@pytest.mark.parametrize(("message", "extra"), [(PDF_HINT, "pdf"), (FETCH_HINT, "fetch"), (install_hint("mcp"), "mcp")])
def test_the_hint_names_the_package_and_the_clone_form(message: str, extra: str) -> None:
    assert f"pip install 'perplexed-search[{extra}]'" in message
    assert f"pip install -e '.[{extra}]'" in message


def test_the_store_and_mcp_messages_use_it() -> None:
    from pathlib import Path

    import perplexed

    core = Path(perplexed.__file__).parent
    for module in ("store/redis.py", "mcp_server.py", "cli.py"):
        text = (core / module).read_text(encoding="utf-8")
        assert "pip install 'perplexed-search[" not in text, module  # each goes through install_hint
