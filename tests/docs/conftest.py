"""The environment documentation samples and examples run in: offline, as after the quickstart.

- a scratch folder holding ``examples/`` (a link to the repository's), as the working directory;
- the sample corpus already indexed, in a private index (``PERPLEXED_LOCAL_INDEX``);
- ``SEARXNG_URL``: the real SearXNG the test session starts on 127.0.0.1;
- ``PERPLEXITY_API_KEY`` (a stand-in) and ``PERPLEXITY_BASE_URL``: a loopback Agent API serving the synthesized
  cassettes' bodies;
- no other provider key, so a paid provider in a chain fails as a ``config`` attempt and the chain moves on.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from docs_env import AGENT_CASSETTES, ROOT, STAND_IN_KEY, STRIPPED_ENV, DocEnv
from testkit.loopback import Raw, serve


def _body(name: str) -> tuple[str, str]:
    data: dict[str, Any] = yaml.safe_load((AGENT_CASSETTES / name).read_text())
    response = data["interactions"][0]["response"]
    return response["body"]["string"], response["headers"]["Content-Type"][0]


@pytest.fixture(scope="session")
def agent_api_stand_in() -> Iterator[str]:
    completed, completed_type = _body("create_completed.yaml")
    streamed, streamed_type = _body("stream_normal.yaml")

    def handle(request: Any) -> Raw:
        if b'"stream":true' in request.body.replace(b" ", b""):
            return Raw(streamed.encode(), content_type=streamed_type)
        return Raw(completed.encode(), content_type=completed_type)

    with serve() as server:
        server.route("/v1/agent", handle)
        server.route("/v1/responses", handle)
        yield server.url


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from perplexed.providers.local import build_index

    path = tmp_path_factory.mktemp("doc-index") / "index.db"
    build_index(ROOT / "examples" / "corpus", index=path)
    return path


@pytest.fixture
def doc_env(tmp_path: Path, searxng: Any, agent_api_stand_in: str, sample_index: Path) -> DocEnv:
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    index = tmp_path / "index.db"
    shutil.copyfile(sample_index, index)
    env = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED_ENV)}
    env.update(
        HOME=str(tmp_path),
        XDG_DATA_HOME=str(tmp_path / "data"),
        PERPLEXED_LOCAL_INDEX=str(index),
        SEARXNG_URL=searxng.base_url,
        PERPLEXITY_API_KEY=STAND_IN_KEY,
        PERPLEXITY_BASE_URL=agent_api_stand_in,
        PYTHONUNBUFFERED="1",
    )
    return DocEnv(env=env, cwd=work)
