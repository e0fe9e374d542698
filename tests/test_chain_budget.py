"""Rule 4: every provider gets ``provider_timeout_ms``, capped by what is left of ``deadline_ms``; an overrun
is cancelled (its connection closed, its task gone) and recorded as ``timeout``. The sync API honours the
same budgets as the async one. Also: function providers (sync and async) under the same budget rules.

Timing bounds are correctness checks with :data:`loopback.SLACK` of allowance for a busy CI machine; speed
is measured by ``benchmarks/bench_engine.py``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from perplexed import Outcome, Result, UpstreamError
from perplexed.providers import FunctionProvider, SearXNG
from testkit import loopback as lb
from testkit.loopback import HEALTHY_MS, SLACK, Drip, Hang, Json, LoopbackServer, SearchAPI, searxng_json


def sx(server: LoopbackServer, path: str, name: str | None = None) -> SearXNG:
    return SearXNG(base_url=f"{server.url}/{path}", name=name or path)


async def timed(api: SearchAPI, *args: Any, **kw: Any) -> tuple[Result | UpstreamError, float]:
    """Run a search; return the result (or the UpstreamError) and the elapsed seconds."""
    start = time.monotonic()
    try:
        outcome: Result | UpstreamError = await api(*args, **kw)
    except UpstreamError as exc:
        outcome = exc
    return outcome, time.monotonic() - start


# --- the budget -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget_ms", [150, 400])
async def test_a_hung_provider_costs_its_budget_and_is_a_timeout(
    api: SearchAPI, loopback: LoopbackServer, budget_ms: int
) -> None:
    loopback.route("/hang/search", Hang())

    err, elapsed = await timed(api, "zoning", sx(loopback, "hang"), provider_timeout_ms=budget_ms)

    assert isinstance(err, UpstreamError)
    (attempt,) = err.attempts
    assert attempt.outcome is Outcome.TIMEOUT
    assert attempt.reason == "timeout"
    assert attempt.error == f"no answer within {budget_ms} ms (cancelled)"
    assert budget_ms <= attempt.duration_ms < budget_ms + SLACK * 1000
    assert budget_ms / 1000 <= elapsed < budget_ms / 1000 + SLACK


async def test_a_server_that_hangs_right_after_accept_is_a_timeout(api: SearchAPI) -> None:
    with lb.serve({"*": Hang(read_request=False)}) as server:
        err, elapsed = await timed(api, "zoning", sx(server, "x"), provider_timeout_ms=200)

        assert isinstance(err, UpstreamError)
        assert err.attempts[0].outcome is Outcome.TIMEOUT
        assert 0.2 <= elapsed < 0.2 + SLACK
        assert server.requests == []  # it never even read the request
        assert await asyncio.to_thread(server.wait_disconnect, 2.0)


async def test_headers_then_a_slow_drip_is_bounded_by_the_whole_budget(
    api: SearchAPI, loopback: LoopbackServer
) -> None:
    # headers at once, then a body byte group every 100 ms for 2 s: no read ever stalls for long, so a
    # per-read socket timeout would never fire; the provider's budget covers the whole answer
    loopback.route("/drip/search", Drip(searxng_json(3), interval=0.1, chunks=20))
    loopback.route("/ok/search", Json(searxng_json(1)))

    result, elapsed = await timed(
        api, "zoning", [sx(loopback, "drip"), sx(loopback, "ok")], provider_timeout_ms=HEALTHY_MS
    )

    assert isinstance(result, Result)
    assert [(a.provider, a.outcome) for a in result.attempts] == [("drip", Outcome.TIMEOUT), ("ok", Outcome.OK)]
    assert HEALTHY_MS / 1000 <= elapsed < HEALTHY_MS / 1000 + SLACK


async def test_a_slow_drip_that_finishes_inside_the_budget_is_ok(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/drip/search", Drip(searxng_json(2), interval=0.03, chunks=4))

    result = await api("zoning", sx(loopback, "drip"), provider_timeout_ms=3000)

    assert result.provider == "drip"
    assert [a.outcome for a in result.attempts] == [Outcome.OK]
    assert len(result.hits) == 2
    assert result.attempts[0].duration_ms >= 4 * 30


async def test_the_budget_is_capped_by_what_is_left_of_the_deadline(
    api: SearchAPI, loopback: LoopbackServer
) -> None:
    loopback.route("/hang/search", Hang())

    err, elapsed = await timed(
        api, "zoning", [sx(loopback, "hang", "h1"), sx(loopback, "hang", "h2")],
        provider_timeout_ms=400, deadline_ms=650,
    )

    assert isinstance(err, UpstreamError)
    h1, h2 = err.attempts
    assert (h1.outcome, h2.outcome) == (Outcome.TIMEOUT, Outcome.TIMEOUT)
    assert 400 <= h1.duration_ms < 400 + SLACK * 1000
    # h2 only gets the ~250 ms left of the deadline, not its own 400 ms
    assert h2.duration_ms < 400
    assert h2.error is not None and "capped by the chain deadline" in h2.error
    assert 0.65 <= elapsed < 0.65 + SLACK


async def test_a_provider_timeout_longer_than_the_deadline_is_capped(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/hang/search", Hang())

    err, elapsed = await timed(
        api, "zoning", sx(loopback, "hang"), provider_timeout_ms=60_000, deadline_ms=300
    )

    assert isinstance(err, UpstreamError)
    assert err.attempts[0].outcome is Outcome.TIMEOUT
    assert 0.3 <= elapsed < 0.3 + SLACK


async def test_the_sync_api_costs_the_budget_not_the_socket_timeout(loopback: LoopbackServer) -> None:
    """A hung server must cost the sync caller the budget, not the OS socket timeout (minutes) or forever."""
    import perplexed

    loopback.route("/hang/search", Hang())
    loopback.route("/ok/search", Json(searxng_json(2)))

    def sync_call() -> tuple[Result, float]:
        start = time.monotonic()
        result = perplexed.search(
            "zoning", [sx(loopback, "hang"), sx(loopback, "ok")], provider_timeout_ms=HEALTHY_MS, deadline_ms=5000
        )
        return result, time.monotonic() - start

    result, elapsed = await asyncio.to_thread(sync_call)  # a plain thread with no event loop of its own

    assert result.provider == "ok"
    assert result.attempts[0].outcome is Outcome.TIMEOUT
    assert HEALTHY_MS / 1000 <= elapsed < HEALTHY_MS / 1000 + SLACK


# --- cancellation: the connection is closed, the task is gone ------------------------------------------------


async def test_a_timed_out_connection_is_closed(api: SearchAPI, loopback: LoopbackServer) -> None:
    loopback.route("/hang/search", Hang())

    err, _ = await timed(api, "zoning", sx(loopback, "hang"), provider_timeout_ms=200)

    assert isinstance(err, UpstreamError) and err.attempts[0].outcome is Outcome.TIMEOUT
    # the server sees the client go away right after the budget (not at loop or interpreter shutdown)
    assert await asyncio.to_thread(loopback.wait_disconnect, 2.0)
    (conn,) = loopback.connections
    assert conn.closed_by == "client"
    assert conn.closed_at is not None
    held = conn.closed_at - conn.requests[0].received_at
    assert 0 <= held < 0.2 + SLACK  # (a lower bound would measure the server thread's scheduling, not us)


async def test_a_dripping_connection_is_closed_when_its_budget_ends(
    api: SearchAPI, loopback: LoopbackServer
) -> None:
    loopback.route("/drip/search", Drip(searxng_json(3), interval=0.1, chunks=50))

    err, _ = await timed(api, "zoning", sx(loopback, "drip"), provider_timeout_ms=300)

    assert isinstance(err, UpstreamError) and err.attempts[0].outcome is Outcome.TIMEOUT
    assert await asyncio.to_thread(loopback.wait_disconnect, 2.0)
    (conn,) = loopback.connections
    assert conn.closed_by == "client"
    assert conn.closed_at is not None and conn.closed_at - conn.opened_at < 0.3 + SLACK


async def test_after_a_timeout_the_next_search_uses_a_fresh_connection(
    api: SearchAPI, loopback: LoopbackServer
) -> None:
    loopback.route("/hang/search", Hang())
    loopback.route("/ok/search", Json(searxng_json(1)))

    await timed(api, "zoning", sx(loopback, "hang"), provider_timeout_ms=150)
    result = await api("zoning", sx(loopback, "ok"))

    assert result.provider == "ok"
    hang_conn = loopback.requests[0].connection
    ok_conn = loopback.requests[1].connection
    assert hang_conn is not ok_conn  # the cancelled connection was not returned to the pool


async def test_a_hung_async_function_provider_is_cancelled_and_its_task_is_gone(api: SearchAPI) -> None:
    started = threading.Event()
    cancelled = threading.Event()

    async def hangs(query: str, options: Any) -> list[dict[str, str]]:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return []  # pragma: no cover

    tasks_before = set(asyncio.all_tasks())
    err, elapsed = await timed(api, "zoning", FunctionProvider(hangs), provider_timeout_ms=200)

    assert isinstance(err, UpstreamError)
    assert err.attempts[0].outcome is Outcome.TIMEOUT
    assert started.is_set() and cancelled.is_set()
    assert 0.2 <= elapsed < 0.2 + SLACK
    assert set(asyncio.all_tasks()) == tasks_before  # nothing left running on this loop


async def test_the_sync_api_cancels_on_the_portal_loop_too(loopback: LoopbackServer) -> None:
    import perplexed
    from perplexed.net import _portal  # private: the sync API's portal loop must hold no leftover task

    finished = threading.Event()

    async def hangs(query: str, options: Any) -> list[dict[str, str]]:
        try:
            await asyncio.sleep(30)
        finally:
            finished.set()
        return []  # pragma: no cover

    with pytest.raises(UpstreamError):
        await asyncio.to_thread(perplexed.search, "zoning", FunctionProvider(hangs), provider_timeout_ms=150)

    assert finished.wait(2)
    portal = _portal.loop()
    pending = await asyncio.wrap_future(
        asyncio.run_coroutine_threadsafe(_other_tasks(), portal)
    )
    assert not [t for t in pending if "hangs" in repr(t.get_coro())]


async def _other_tasks() -> list[asyncio.Task[Any]]:
    me = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t is not me]


# --- function providers under the same budget rules -------------------------------------------------------------


async def test_a_hung_sync_function_provider_costs_its_budget(api: SearchAPI) -> None:
    release = threading.Event()

    def blocks(query: str, options: Any) -> list[dict[str, str]]:
        release.wait(30)
        return [{"url": "https://late.example/"}]

    def answers(query: str, options: Any) -> list[dict[str, str]]:
        return [{"url": "https://ok.example/", "title": "ok"}]

    try:
        result, elapsed = await timed(
            api, "zoning", [FunctionProvider(blocks), FunctionProvider(answers)], provider_timeout_ms=HEALTHY_MS
        )
    finally:
        release.set()

    assert isinstance(result, Result)
    assert [(a.provider, a.outcome) for a in result.attempts] == [("blocks", Outcome.TIMEOUT), ("answers", Outcome.OK)]
    assert [h.url for h in result.hits] == ["https://ok.example/"]
    assert HEALTHY_MS / 1000 <= elapsed < HEALTHY_MS / 1000 + SLACK


async def test_hung_sync_function_providers_do_not_starve_later_calls(api: SearchAPI) -> None:
    """Many sync providers stuck past their budget (threads cannot be killed) must not delay the next ones:
    each search still ends within its budget, and the next sync provider still runs."""
    release = threading.Event()

    def blocks(query: str, options: Any) -> list[dict[str, str]]:
        release.wait(30)
        return []

    def answers(query: str, options: Any) -> list[dict[str, str]]:
        return [{"url": f"https://ok.example/{query}"}]

    try:
        for i in range(12):  # more than any default thread pool of a small machine
            result, elapsed = await timed(
                api, f"q{i}", [FunctionProvider(blocks), FunctionProvider(answers)], provider_timeout_ms=250
            )
            assert isinstance(result, Result), result
            assert result.provider == "answers"
            assert elapsed < 0.5 + SLACK  # two budgets at most
    finally:
        release.set()


async def test_a_slow_async_function_is_capped_by_the_deadline(api: SearchAPI) -> None:
    calls: list[str] = []

    async def slow(query: str, options: Any) -> list[dict[str, str]]:
        calls.append("slow")
        await asyncio.sleep(5)
        return []  # pragma: no cover

    async def never(query: str, options: Any) -> list[dict[str, str]]:
        calls.append("never")  # pragma: no cover
        return []  # pragma: no cover

    err, elapsed = await timed(
        api, "zoning", [FunctionProvider(slow), FunctionProvider(never)], provider_timeout_ms=5000, deadline_ms=250
    )

    assert isinstance(err, UpstreamError)
    assert [a.outcome for a in err.attempts] == [Outcome.TIMEOUT, Outcome.DEADLINE]
    assert calls == ["slow"]
    assert 0.25 <= elapsed < 0.25 + SLACK


async def test_function_providers_that_answer_in_time_are_ok(api: SearchAPI) -> None:
    async def async_fn(query: str, options: Any) -> list[dict[str, str]]:
        await asyncio.sleep(0.01)
        return [{"url": "https://a.example/", "title": query}]

    def sync_fn(query: str, options: Any) -> list[dict[str, str]]:
        time.sleep(0.01)
        return [{"url": "https://s.example/", "title": query}]

    a = await api("zoning", FunctionProvider(async_fn), provider_timeout_ms=2000)
    s = await api("zoning", FunctionProvider(sync_fn), provider_timeout_ms=2000)

    assert [(h.url, h.title, h.provider) for h in a.hits] == [("https://a.example/", "zoning", "async_fn")]
    assert [(h.url, h.title, h.provider) for h in s.hits] == [("https://s.example/", "zoning", "sync_fn")]


async def test_a_provider_raising_its_own_timeout_error_is_a_timeout_not_a_cancellation(api: SearchAPI) -> None:
    def own_timeout(query: str, options: Any) -> list[dict[str, str]]:
        raise TimeoutError("socket read timed out")

    err, elapsed = await timed(api, "zoning", FunctionProvider(own_timeout), provider_timeout_ms=5000)

    assert isinstance(err, UpstreamError)
    attempt = err.attempts[0]
    assert attempt.outcome is Outcome.TIMEOUT
    assert attempt.error == "timeout: socket read timed out"
    assert elapsed < SLACK


def test_a_hung_sync_provider_does_not_keep_the_interpreter_alive(tmp_path: Path) -> None:
    """The thread of a sync provider stuck past its budget is a daemon: the process still exits."""
    script = tmp_path / "hung.py"
    script.write_text(
        textwrap.dedent(
            """
            import time, perplexed
            from perplexed.providers import FunctionProvider

            def stuck(query, options):
                time.sleep(120)

            try:
                perplexed.search("q", FunctionProvider(stuck), provider_timeout_ms=100)
            except perplexed.UpstreamError as exc:
                print(exc.attempts[0].outcome.value)
            """
        )
    )
    core = Path(__file__).resolve().parents[1] / "core"
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(core), "PATH": ""},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "timeout"
    assert time.monotonic() - start < 30


async def test_cancelling_the_caller_cancels_the_call_and_closes_its_connection(loopback: LoopbackServer) -> None:
    """An outer timeout (the caller's own) is not swallowed as a provider timeout: it propagates, and the
    in-flight request is cancelled with its connection closed."""
    import perplexed

    loopback.route("/hang/search", Hang())
    attempts: list[Any] = []

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(
            perplexed.asearch("zoning", sx(loopback, "hang"), provider_timeout_ms=10_000, on_attempt=attempts.append),
            timeout=0.2,
        )

    assert attempts == []  # the provider's attempt never ended: the caller gave up first
    assert await asyncio.to_thread(loopback.wait_disconnect, 2.0)


def test_concurrent_sync_callers_each_get_their_own_budget(loopback: LoopbackServer) -> None:
    """Eight threads call search() at once against a hung server: they share the portal loop, yet each one
    returns after its own budget (not eight budgets in a row)."""
    import concurrent.futures

    import perplexed

    loopback.route("/hang/search", Hang())
    loopback.route("/ok/search", Json(searxng_json(1)))

    def call(i: int) -> tuple[str | None, float]:
        start = time.monotonic()
        result = perplexed.search(
            f"q{i}", [sx(loopback, "hang"), sx(loopback, "ok")], provider_timeout_ms=HEALTHY_MS
        )
        return result.provider, time.monotonic() - start

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(call, range(8)))
    total = time.monotonic() - start

    assert [provider for provider, _ in outcomes] == ["ok"] * 8
    assert all(elapsed < HEALTHY_MS / 1000 + SLACK for _, elapsed in outcomes)
    assert total < HEALTHY_MS / 1000 + 2 * SLACK
    assert sum(1 for r in loopback.requests if r.path == "/hang/search") == 8
