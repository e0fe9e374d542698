"""``file://`` only where the chain has the local provider (issue 40 #5), from the attacker's side: an indexed
document's file:// URL given to a fetch chain, an MCP server or a fetch_many list that has no local provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import InvalidRequest


@pytest.fixture
def indexed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from perplexed.providers.local import build_index

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "private"
    folder.mkdir()
    (folder / "salaries.md").write_text("# Salaries\n\n" + "Confidential pay figures. " * 30, encoding="utf-8")
    build_index(folder)
    return (folder / "salaries.md").resolve().as_uri()


async def test_the_default_chain_and_a_chain_naming_local_answer_file_urls(indexed: str) -> None:
    assert (await perplexed.afetch(indexed)).provider == "local"
    assert (await perplexed.afetch(indexed, ["local", "http"])).provider == "local"
    assert (await perplexed.afetch(indexed, "local,http")).title == "Salaries"


@pytest.mark.parametrize("chain", ["http", ["http"], ["http", "jina"], "http,jina"])
async def test_a_chain_without_the_local_provider_refuses_file_urls(indexed: str, chain: Any) -> None:
    with pytest.raises(InvalidRequest) as info:
        await perplexed.afetch(indexed, chain)
    assert info.value.param == "url" and "no local provider" in info.value.message
    with pytest.raises(InvalidRequest) as many:
        perplexed.fetch_many(["https://example.com/", indexed], chain)
    assert many.value.param == "urls[1]"


async def test_a_chain_of_only_local_refuses_web_urls() -> None:
    with pytest.raises(InvalidRequest) as info:
        await perplexed.afetch("https://example.com/", ["local"])
    assert info.value.param == "url" and "only has the local provider" in info.value.message


async def test_mcp_web_fetch_refuses_file_urls_without_a_local_provider(indexed: str) -> None:
    pytest.importorskip("mcp")
    from perplexed.mcp_server import create_server

    def web(query: str, options: Any) -> list[dict[str, str]]:
        return [{"url": "https://example.com/", "title": "t", "snippet": "s"}]

    result = await create_server(web).call_tool("web_fetch", {"url": indexed})
    text = _text(result)
    assert "Confidential" not in text and "file://" in text and "local provider" in text
    with_local = await create_server(["local"]).call_tool("web_fetch", {"url": indexed})
    assert "Confidential pay figures" in _text(with_local)


def _text(result: Any) -> str:
    blocks = result[0] if isinstance(result, tuple) else getattr(result, "content", result)
    return " ".join(getattr(b, "text", "") for b in blocks)
