"""Extraction is bounded like the body (issue 40 #1, #3), from the attacker's side: a loopback site serves pages
that are cheap to send and expensive to extract; the fetch returns at its deadline, and afterwards no work it
started goes on (psutil: the CPU time and resident size of this process and of any worker it started)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import perplexed
import psutil
import pytest
from hostile import BRACKETS, P_TAGS, shared_stream_pdf
from pages import ARTICLE_TITLE, article_html
from perplexed import Outcome, Page, UpstreamError
from testkit.loopback import SLACK, LoopbackServer, Status

LOOP = ["127.0.0.0/8"]
DEADLINE_MS = 1500


@pytest.fixture(autouse=True)
def _no_idle_workers() -> Iterator[None]:
    """Every test starts and ends without warm workers, so the children seen are the ones it started."""
    try:
        from perplexed.extract._worker import _pool  # private: the worker pool, inspected directly
    except ImportError:  # a version without workers: nothing to clean
        yield
        return
    _pool.close()
    _pool.retry_at = 0.0  # a worker that could not start in an earlier test of this process is tried again
    yield
    _pool.close()


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _is_worker(process: psutil.Process) -> bool:
    """An extraction worker of this process (other tests of the same pytest worker may leave servers running)."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE and "worker import main" in " ".join(process.cmdline())
    except psutil.Error:  # ended meanwhile
        return False


def _workers() -> list[psutil.Process]:
    return [c for c in psutil.Process().children(recursive=True) if _is_worker(c)]


def _quiet_after(seconds: float = 1.0) -> tuple[float, int, list[psutil.Process]]:
    """CPU seconds this process spent in ``seconds`` after a fetch returned, the growth of its resident size in
    that time, and the workers still alive then. An idle process spends ~0 s; an extraction left running in a
    thread spends up to 1 s (0.3 s and more even on a machine loaded 10 deep on 2 CPUs)."""
    me = psutil.Process()
    cpu, rss = _cpu(me), me.memory_info().rss
    time.sleep(seconds)
    spent = _cpu(me) - cpu
    return spent, me.memory_info().rss - rss, _workers()


def _serve(loopback: LoopbackServer, path: str, body: bytes, content_type: str) -> str:
    loopback.route(path, Status(200, body, content_type=content_type))
    loopback.route("/robots.txt", Status(404, b""))
    return loopback.url_for(path)


def _assert_timed_out_at_the_deadline(exc: UpstreamError, elapsed: float) -> None:
    assert [a.outcome for a in exc.attempts] == [Outcome.TIMEOUT], exc.attempts
    assert elapsed < DEADLINE_MS / 1000 + 1.0 + SLACK


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_8_mb_page_of_p_tags_stops_at_the_deadline_and_nothing_goes_on(
    mode: str, loopback: LoopbackServer
) -> None:
    url = _serve(loopback, "/p", P_TAGS, "text/html")
    rss_before = psutil.Process().memory_info().rss
    started = time.monotonic()
    with pytest.raises(UpstreamError) as info:
        if mode == "sync":
            await asyncio.to_thread(perplexed.fetch, url, allow_private=LOOP, deadline_ms=DEADLINE_MS)
        else:
            await perplexed.afetch(url, allow_private=LOOP, deadline_ms=DEADLINE_MS)
    _assert_timed_out_at_the_deadline(info.value, time.monotonic() - started)
    cpu, grown, workers = _quiet_after()
    assert workers == [], workers  # the worker that extracted the page was killed and reaped
    assert cpu < 0.1, f"{cpu:.2f} s of CPU in the second after the fetch returned"
    assert grown < 50 << 20 and psutil.Process().memory_info().rss - rss_before < 300 << 20


async def test_three_hostile_pages_at_once_leave_nothing_running(loopback: LoopbackServer) -> None:
    url = _serve(loopback, "/p", P_TAGS, "text/html")
    results = await perplexed.afetch_many([url + "?1", url + "?2", url + "?3"], allow_private=LOOP,
                                          deadline_ms=DEADLINE_MS)
    assert all(isinstance(r, UpstreamError) and r.attempts[0].outcome is Outcome.TIMEOUT for r in results), results
    cpu, _grown, workers = _quiet_after()
    assert workers == [] and cpu < 0.1


async def test_a_pdf_of_pages_sharing_one_content_stream_stops_at_the_deadline(loopback: LoopbackServer) -> None:
    url = _serve(loopback, "/doc.pdf", shared_stream_pdf(), "application/pdf")
    started = time.monotonic()
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(url, allow_private=LOOP, deadline_ms=DEADLINE_MS)
    _assert_timed_out_at_the_deadline(info.value, time.monotonic() - started)
    cpu, _grown, workers = _quiet_after()
    assert workers == [] and cpu < 0.1


async def test_text_format_of_hostile_markdown_leaves_the_event_loop_and_stops_at_the_deadline(
    loopback: LoopbackServer,
) -> None:
    url = _serve(loopback, "/notes.md", BRACKETS.encode(), "text/markdown")
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    tick = asyncio.ensure_future(ticker())
    started = time.monotonic()
    try:
        with pytest.raises(UpstreamError) as info:
            await perplexed.afetch(url, allow_private=LOOP, format="text", deadline_ms=DEADLINE_MS)
    finally:
        tick.cancel()
    _assert_timed_out_at_the_deadline(info.value, time.monotonic() - started)
    assert max(gaps) < 0.25 + SLACK, f"the event loop was blocked {max(gaps):.2f} s"
    cpu, _grown, workers = _quiet_after()
    assert workers == [] and cpu < 0.1


async def test_a_function_providers_hostile_markdown_is_converted_off_the_loop_too() -> None:
    def vendor(url: str, options: object) -> dict[str, str]:
        return {"text": BRACKETS, "format": "markdown"}

    started = time.monotonic()
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch("https://example.com/", vendor, format="text", deadline_ms=DEADLINE_MS)
    assert info.value.attempts[0].outcome is Outcome.TIMEOUT
    assert time.monotonic() - started < DEADLINE_MS / 1000 + 1.0 + SLACK


async def test_ordinary_pages_still_come_back_whole(loopback: LoopbackServer) -> None:
    url = _serve(loopback, "/a", article_html().encode(), "text/html")
    pages = await asyncio.gather(*(perplexed.afetch(f"{url}?{i}", allow_private=LOOP) for i in range(6)))
    assert all(isinstance(p, Page) and p.title == ARTICLE_TITLE and "front yard setback" in p.content for p in pages)
    text = await perplexed.afetch(url, allow_private=LOOP, format="text")
    assert "front yard setback" in text.content and "# " not in text.content
    small_pdf = _serve(loopback, "/small.pdf", shared_stream_pdf(pages=2, ops=5), "application/pdf")
    pdf = await perplexed.afetch(small_pdf, allow_private=LOOP, min_chars=10)
    assert pdf.content.count("setback") == 10


async def test_a_page_that_needs_more_memory_than_a_worker_may_take_is_body_too_large(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERPLEXED_EXTRACT_MEMORY_MB", "64")  # the workers of this test: 64 MiB over their start
    url = _serve(loopback, "/p", P_TAGS, "text/html")
    with pytest.raises(UpstreamError) as info:
        await perplexed.afetch(url, allow_private=LOOP, deadline_ms=60_000, provider_timeout_ms=60_000)
    attempt = info.value.attempts[0]
    assert attempt.reason == "body_too_large" and "64 MiB" in (attempt.error or ""), attempt
    _cpu_spent, _grown, workers = _quiet_after(0.2)
    assert workers == []  # a worker that ran out of memory is not reused


# Run in the serial phase: in the parallel suite (-n 3, 6 000 tests) this test has found no worker at all after its
# first fetch (provider http, pool enabled, none live or idle), which it never does alone or with tests/fetch;
# the cause is not found yet (see the closing note of this session).
@pytest.mark.timing
async def test_a_warm_worker_is_reused_between_fetches(loopback: LoopbackServer) -> None:
    url = _serve(loopback, "/a", article_html().encode(), "text/html")
    page = await perplexed.afetch(url, allow_private=LOOP)
    first = {p.pid for p in _workers()}
    from perplexed.extract._worker import _pool  # private: the extraction worker pool is inspected directly

    assert first, (page.provider, _pool.disabled, _pool.turned_off, len(_pool.live), len(_pool.idle),
                   [" ".join(c.cmdline())[:80] for c in psutil.Process().children(recursive=True)])
    await asyncio.to_thread(perplexed.fetch, url + "?again", allow_private=LOOP)  # another thread, another loop
    assert first and {p.pid for p in _workers()} == first


def test_a_worker_dies_with_the_process_that_started_it(loopback: LoopbackServer) -> None:
    import signal
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("ctypes")
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    url = _serve(loopback, "/p", P_TAGS, "text/html")
    script = (
        "import perplexed, sys\n"
        f"perplexed.fetch({url!r}, allow_private=True, deadline_ms=120000, provider_timeout_ms=120000)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=str(Path(__file__).parents[2]))
    try:
        deadline = time.monotonic() + 30
        workers: list[psutil.Process] = []
        while time.monotonic() < deadline and not workers:
            time.sleep(0.1)
            workers = psutil.Process(parent.pid).children()
        assert workers, "the fetch started no worker"
        time.sleep(0.5)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        _gone, alive = psutil.wait_procs(workers, timeout=5)
        assert alive == [], alive
    finally:
        parent.kill()
