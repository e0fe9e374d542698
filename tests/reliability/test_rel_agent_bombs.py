"""Issue 12 section 1, Agent API side: decompression bombs against ``AgentClient.create`` and ``.stream``.

The Agent client reads bodies through perplexed's bounded decoding (``_http.read_capped`` for whole
responses, ``_http.aiter_decoded`` for streams): the cap is on DECODED bytes, checked while decoding in
bounded steps. Measured in a fresh process after one warm-up call of the same kind (this module, run as a
script, is the probe): the call fails with a documented error within the client's timeout + 50 ms, and peak
RSS over baseline stays within 2 x the cap (32 MiB: a whole response's cap, and the largest event a stream
may hold). Before the fix the stream path read through httpx's unbounded decoders (``aiter_bytes``): a
32 KB zstd body inflated whole, one network chunk at a time, before any cap saw it.
"""

from __future__ import annotations

import gc
import gzip
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
CAP = 32 * 1024 * 1024  # the Agent client's body cap, and the SSE decoder's per-event cap
TIMEOUT = 2.0  # the client's timeout in the probe (seconds)
SLACK = 0.05
KEY = "pplx-bomb-probe-not-a-real-key"


# --- the probe (runs in a fresh process) -----------------------------------------------------------------


def _call(mode: str, base_url: str, timeout: float) -> str:
    import perplexed
    from perplexed.agent import AgentClient

    client = AgentClient(api_key=KEY, base_url=base_url, timeout=timeout, max_retries=0)
    try:
        if mode == "create":
            client.create(preset="fast", input="bomb")
        else:
            for _ in client.stream(preset="fast", input="bomb"):
                pass
    except perplexed.PerplexedError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def _probe(mode: str, warm_url: str, bomb_url: str, timeout: float) -> dict[str, Any]:
    assert _call(mode, warm_url, 10.0) == "ok"
    gc.collect()
    rss_over, elapsed, outcome = peak_rss_over(lambda: _call(mode, bomb_url, timeout))
    return {"rss_over": rss_over, "elapsed": elapsed, "outcome": outcome}


# --- the tests ---------------------------------------------------------------------------------------------


def _skip_unless_decodable(encoding: str) -> None:
    from perplexed.net._decode import accept_encoding  # private: which encodings this install can decode

    if encoding == "zstd" and importlib.util.find_spec("zstandard") is None:
        pytest.skip("zstandard is not installed (zstd is then neither advertised nor decoded)")
    if encoding == "br" and "br" not in accept_encoding():
        pytest.skip("brotli >= 1.2 is not installed (br is then neither advertised nor decoded)")


def _completed() -> bytes:
    return json.dumps(
        {
            "id": "resp_warm",
            "object": "response",
            "status": "completed",
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
            ],
        }
    ).encode()


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    from testkit.loopback import Status, serve

    done = _completed()
    stream = (
        b"data: "
        + json.dumps({"type": "response.completed", "response": json.loads(done)}).encode()
        + b"\n\n"
    )
    with serve() as srv:
        srv.route(
            "/warm-create/v1/agent",
            Status(200, gzip.compress(done), {"Content-Encoding": "gzip"}, "application/json"),
        )
        srv.route(
            "/warm-stream/v1/agent",
            Status(200, gzip.compress(stream), {"Content-Encoding": "gzip"}, "text/event-stream"),
        )
        yield srv


def _run_probe(server: Any, mode: str, encoding: str) -> dict[str, Any]:
    import rel_bombs
    from testkit.loopback import Status

    bomb = {
        "gzip": rel_bombs.gzip_bomb,
        "deflate": rel_bombs.deflate_bomb,
        "zstd": rel_bombs.zstd_bomb,
        "br": rel_bombs.brotli_bomb,
    }[encoding]()
    ctype = "application/json" if mode == "create" else "text/event-stream"
    server.route(f"/{encoding}-{mode}/v1/agent", Status(200, bomb, {"Content-Encoding": encoding}, ctype))
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            mode,
            f"{server.url}/warm-{mode}",
            f"{server.url}/{encoding}-{mode}",
            str(TIMEOUT),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=HERE,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.timing
@pytest.mark.parametrize("mode", ["create", "stream"])
@pytest.mark.parametrize("encoding", ["zstd", "gzip", "deflate", "br"])
def test_a_bomb_is_bounded_in_memory_and_time(server: Any, mode: str, encoding: str) -> None:
    _skip_unless_decodable(encoding)
    m = _run_probe(server, mode, encoding)
    print(
        f"{encoding} bomb, {mode}: RSS +{m['rss_over'] / 2**20:.1f} MiB (cap {CAP / 2**20:.0f} MiB), "
        f"{m['elapsed'] * 1000:.0f} ms (timeout {TIMEOUT * 1000:.0f} ms): {m['outcome'][:160]}"
    )
    assert m["outcome"] != "ok"
    # refused at the cap (a whole response: APIError; a stream: StreamError for an event over the cap, or
    # APITimeoutError when no event came within the timeout): never a success, a crash or a raw httpx error
    assert m["outcome"].split(":")[0] in {"APIError", "StreamError", "APITimeoutError"}, m
    assert m["elapsed"] <= TIMEOUT + SLACK, m
    assert m["rss_over"] <= 2 * CAP, f"peak RSS +{m['rss_over']} bytes over baseline (cap {CAP})"


if __name__ == "__main__":
    sys.path[:0] = [str(HERE.parent)]
    from testkit.memory import peak_rss_over
    print(json.dumps(_probe(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))), flush=True)
