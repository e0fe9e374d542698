"""The first Agent API call of a process keeps its timeout: the once-per-process set-up (TLS context, httpcore's
async backend imports: ~250 ms) happens when the client is built, not inside the first call's budget (it made
answer(deadline_ms=300) overrun by ~80 ms on a process's first call)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent(
    """
    import asyncio, time
    import httpx
    from perplexed import APITimeoutError
    from perplexed.agent import AsyncAgentClient

    async def hang(request):
        await asyncio.sleep(5)
        return httpx.Response(200)

    async def main():
        client = AsyncAgentClient(api_key="pplx-first-call-test-key", transport=httpx.MockTransport(hang),
                                  max_retries=0)
        start = time.perf_counter()
        try:
            await client.create(preset="fast", input="x", timeout=0.2)
        except APITimeoutError:
            pass
        print(round(time.perf_counter() - start, 3))

    asyncio.run(main())
    """
)


@pytest.mark.timing
def test_the_first_call_of_a_process_keeps_its_timeout() -> None:
    proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    elapsed = float(proc.stdout.strip())
    assert 0.2 <= elapsed < 0.2 + 0.05, f"first create took {elapsed * 1000:.0f} ms with a 200 ms timeout"
