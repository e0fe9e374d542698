"""The LangChain page (docs/langchain.md) runs as written: its ```python blocks are executed in order, in one
namespace, from the clone (the quickstart's local index answers most samples), with the real local SearXNG
(``SEARXNG_URL``) for the one about SearXNG and the loopback Agent API (``PERPLEXITY_*``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "docs" / "langchain.md"


def langchain_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("<!-- section:langchain -->") : text.index("<!-- /section:langchain -->")]
    return re.findall(r"^```python\n(.*?)^```", section, flags=re.S | re.M)


def test_the_section_has_examples() -> None:
    blocks = langchain_blocks()
    assert len(blocks) >= 6
    assert any("as_provider(" in b for b in blocks) and any("tool_calls" in b for b in blocks)


@pytest.mark.integration
def test_readme_examples_run(searxng_env: Any, agent_api: Any, capsys: pytest.CaptureFixture[str]) -> None:
    # the quickstart's index of the sample documents, at this test's own index path (tests/conftest.py)
    corpus = README.parents[1] / "examples" / "corpus"
    subprocess.run([sys.executable, "-m", "perplexed", "index", str(corpus), "--index",
                    os.environ["PERPLEXED_LOCAL_INDEX"]], check=True, capture_output=True, timeout=120)
    namespace: dict[str, Any] = {"__name__": "readme"}
    for block in langchain_blocks():
        exec(compile(block, str(README), "exec"), namespace)

    printed = capsys.readouterr().out
    assert "[1] " in printed and "Sources:\n[1] " in printed  # the search tool's and the answer tool's text
    assert len(namespace["docs"]) == 3 and namespace["docs"][0].metadata["answered_by"] == "searxng"
    assert len(namespace["many"]) == 3
    assert namespace["answer"].metadata["type"] == "answer"
    assert set(re.findall(r"\[(\d+)\]", namespace["answer"].page_content)) <= {str(n) for n in namespace["by_id"]}
    assert namespace["log"].lines and namespace["log"].lines[0].startswith("local: ok in ")
    assert namespace["crag"].invoke("front yard setback")[0].metadata["answered_by"] == "local"
    assert namespace["messages"][-1].content.endswith("[1].")
    assert namespace["messages"][2].artifact  # the tool's Documents
    assert namespace["web"].invoke("zoning")[0].metadata["answered_by"] == "searxng"  # the SearXNG sample
