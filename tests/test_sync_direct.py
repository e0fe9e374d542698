"""The sync API's direct path (issue 35): an eligible ``perplexed.search`` runs the engine in the caller's thread,
without an event loop, over httpx's sync client; anything else still runs on the portal loop.

The differential table runs the same searches three ways against one loopback server: ``asearch`` (on a loop of
this thread), ``search`` on the portal (``on_attempt`` given: the portal path) and ``search`` on the direct path,
and asserts equal results, attempts (outcome, reason, error, cost; durations left out) and usage-ledger lines.
"""

from __future__ import annotations

import asyncio
import re
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import httpx
import perplexed
import pytest
from perplexed import Attempt, Result, UpstreamError, telemetry
from perplexed.policy._options import SearchOptions  # private: the type of a provider's options
from perplexed.providers import FunctionProvider, SearXNG
from testkit.hits import searxng_json
from testkit.loopback import Close, Drip, Hang, Huge, Json, LoopbackServer, Raw, ResetMidBody, Status, serve

OK = searxng_json(3)


class Tracked(SearXNG):
    """SearXNG that records the thread its flow runs in (the thread driving the engine's coroutine) and
    whether the flow was closed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.threads: list[threading.Thread] = []
        self.closed = 0

    def flow(self, query: str, options: SearchOptions) -> Generator[httpx.Request, httpx.Response, Any]:
        self.threads.append(threading.current_thread())
        try:
            return (yield from super().flow(query, options))
        finally:
            self.closed += 1


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with serve() as srv:
        srv.route("/ok/search", Json(OK))
        srv.route("/ok2/search", Json(searxng_json(2, prefix="https://example.org/p")))
        srv.route("/empty/search", Json({"query": "q", "results": []}))
        srv.route("/500/search", Status(500, "boom"))
        srv.route("/hang/search", Hang())
        srv.route("/huge/search", Huge(256 * 1024))
        srv.route("/huge-chunked/search", Huge(256 * 1024, content_length=False))
        srv.route("/bad/search", Raw(b'{"results": ['))
        srv.route("/same/search", Status(302, "", headers={"Location": "/ok/search?q=moved&format=json"}))
        srv.route("/away/search", Status(302, "", headers={"Location": "http://127.0.0.2:9/x"}))
        srv.route("/drip/search", Drip(OK, interval=0.1, chunks=20))
        srv.route("/drip-slow/search", Drip(b'{"results": [{"url": "https://example.com/d"}]}', interval=0.2, chunks=46))
        srv.route("/reset/search", ResetMidBody())
        srv.route("/close/search", Close())
        yield srv


def _p(server: LoopbackServer, path: str, **kwargs: Any) -> Tracked:
    return Tracked(base_url=server.url_for("/" + path), name=path.replace("-", "_"), **kwargs)


def _norm(attempt: Attempt) -> dict[str, Any]:
    data = attempt.model_dump()
    data["duration_ms"] = 0
    if data["error"]:  # a budget capped by the deadline is what was left of it: "within 299 ms" or "300 ms"
        data["error"] = re.sub(r"\d+ ms", "N ms", data["error"])
    return data


def _outcome(run: Callable[[], Result]) -> tuple[Any, ...]:
    try:
        result = run()
    except UpstreamError as exc:
        return ("raised", exc.reason, [_norm(a) for a in exc.attempts])
    return ("result", result.provider, [h.model_dump() for h in result.hits], [_norm(a) for a in result.attempts])


# name -> (members, options)
CASES: dict[str, tuple[list[str], dict[str, Any]]] = {
    "ok": (["ok"], {}),
    "empty": (["empty"], {}),
    "http_500": (["500"], {}),
    "hang_past_provider_timeout": (["hang", "ok"], {"provider_timeout_ms": 300}),
    "hang_past_deadline": (["hang", "ok"], {"provider_timeout_ms": 2000, "deadline_ms": 300}),
    "drip_past_budget": (["drip"], {"provider_timeout_ms": 400}),
    "body_too_large": (["huge"], {}),
    "body_too_large_chunked": (["huge-chunked"], {}),
    "redirect_same_origin": (["same"], {}),
    "redirect_other_origin": (["away"], {}),
    "malformed_json": (["bad"], {}),
    "chain_with_fallback": (["500", "empty", "ok"], {}),
    "chain_all_fail": (["500", "bad"], {}),
    "max_results": (["ok"], {"max_results": 2}),
    "reset_mid_body": (["reset"], {}),
    "closed_without_answer": (["close", "ok"], {}),
    "refused": (["refused", "ok"], {}),
}

# connection failures: the same outcome and reason; the error names the transport's own exception, whose text
# is the I/O backend's (anyio's "All connection attempts failed" for a refused connect, the socket's
# "[Errno 111] Connection refused" with httpx's sync client)
TRANSPORT_TEXT = {"reset_mid_body", "closed_without_answer", "refused"}


def _members(server: LoopbackServer, names: list[str]) -> list[Tracked]:
    return [Tracked(base_url="http://127.0.0.1:1", name=n) if n == "refused" else _p(server, n, max_body_bytes=64 * 1024)
            for n in names]


def _transport_text(outcome: tuple[Any, ...]) -> tuple[Any, ...]:
    """``outcome`` with each connection failure's text after its exception's name left out."""
    attempts = [{**a, "error": re.sub(r"^(connection: \w+).*", r"\1", a["error"] or "")} for a in outcome[-1]]
    return (*outcome[:-1], attempts)


def _ledger(tag: str) -> list[dict[str, Any]]:
    rows = perplexed.usage(by=("provider", "outcome"), tag=tag).rows
    return sorted((r.model_dump(exclude={"latency_p50_ms", "latency_p95_ms", "tag"}) for r in rows),
                  key=lambda r: (r["provider"], r["outcome"]))


@pytest.mark.parametrize("case", list(CASES))
def test_async_portal_and_direct_runs_agree(server: LoopbackServer, case: str) -> None:
    names, options = CASES[case]
    outcomes: dict[str, tuple[Any, ...]] = {}
    ledgers: dict[str, list[dict[str, Any]]] = {}
    caller = threading.current_thread()
    for mode in ("async", "portal", "direct"):
        members = _members(server, names)
        provider: Any = members if len(members) > 1 else members[0]
        tag = f"{case}.{mode}".replace("_", "-")
        kwargs = {**options, "tag": tag}
        seen: list[Attempt] = []
        if mode == "async":
            run: Callable[[], Result] = lambda: asyncio.run(perplexed.asearch("zoning", provider, **kwargs))  # noqa: B023,E731
        elif mode == "portal":
            run = lambda: perplexed.search("zoning", provider, on_attempt=seen.append, **kwargs)  # noqa: B023,E731
        else:
            run = lambda: perplexed.search("zoning", provider, **kwargs)  # noqa: B023,E731
        outcomes[mode] = _outcome(run)
        ledgers[mode] = _ledger(tag)
        called = [t for m in members for t in m.threads]
        assert called, "no provider was called"
        assert sum(m.closed for m in members) == len(called)  # every flow was closed
        if mode == "portal":
            assert all(t.name == "perplexed-portal" for t in called)
            assert [_norm(a) for a in seen] == outcomes[mode][-1]  # on_attempt saw every attempt
        else:  # async on this thread's loop; direct in this thread, with no loop at all
            assert all(t is caller for t in called)
        if case in TRANSPORT_TEXT:
            assert any((a["error"] or "").startswith("connection: ") for a in outcomes[mode][-1])
            outcomes[mode] = _transport_text(outcomes[mode])
    assert outcomes["portal"] == outcomes["async"]
    assert outcomes["direct"] == outcomes["async"]
    assert ledgers["portal"] == ledgers["async"]
    assert ledgers["direct"] == ledgers["async"]
    assert ledgers["direct"], "no ledger line"


def test_the_budget_holds_on_the_direct_path(server: LoopbackServer) -> None:
    """A hung provider costs its budget, not the socket's timeout; the next member answers."""
    hang, ok = _members(server, ["hang", "ok"])
    started = time.perf_counter()
    result = perplexed.search("zoning", [hang, ok], provider_timeout_ms=250)
    elapsed = time.perf_counter() - started
    assert result.provider == "ok"
    assert [a.outcome.value for a in result.attempts] == ["timeout", "ok"]
    assert result.attempts[0].error == "no answer within 250 ms (cancelled)"
    assert 0.25 <= elapsed < 0.25 + 0.4
    assert hang.threads == [threading.current_thread()]


def test_a_trickling_body_is_stopped_at_the_deadline(server: LoopbackServer) -> None:
    """Each read gets what is left of the budget, and the deadline is checked between reads: a server that
    keeps sending (every read answers in time) still ends at the budget."""
    (drip,) = _members(server, ["drip-slow"])  # a byte every 200 ms
    started = time.perf_counter()
    with pytest.raises(UpstreamError) as caught:
        perplexed.search("zoning", drip, provider_timeout_ms=300)
    elapsed = time.perf_counter() - started
    attempt = caught.value.attempts[0]
    assert (attempt.outcome.value, attempt.reason) == ("timeout", "timeout")
    # not the next byte's arrival (400 ms): each read waits only what is left of the budget
    assert 300 <= attempt.duration_ms <= 300 + 50
    assert elapsed < 0.3 + 0.4
    assert drip.threads == [threading.current_thread()]


def _thread_of(provider: Tracked) -> str:
    return provider.threads[-1].name


def test_ineligible_searches_use_the_portal(server: LoopbackServer) -> None:
    here = threading.current_thread().name

    def check(expected: str, **options: Any) -> None:
        ok = _p(server, "ok")
        perplexed.search("zoning", ok, **options)
        assert _thread_of(ok) == expected, options

    check(here)  # the plain search: direct
    check("perplexed-portal", on_attempt=lambda attempt: None)
    check("perplexed-portal", cache_ttl_s=60)
    check("perplexed-portal", budget_usd=1.0)
    check(here, deadline_ms=5000, max_results=3, tag="plain")  # options that change nothing of the path
    with telemetry.scoped(lambda event, measurements, metadata: None):
        check("perplexed-portal")
    check(here, min_hits=1)  # a quality floor is synchronous

    for strategy in ("hedged", "merge"):
        a, b = _p(server, "ok"), _p(server, "ok2")
        perplexed.search("zoning", [a, b], strategy=strategy)
        assert _thread_of(a) == "perplexed-portal", strategy

    # a custom transport (it may be async), a function provider (it runs in a thread of its own)
    custom = Tracked(base_url=server.url_for("/ok"), name="custom", transport=httpx.AsyncHTTPTransport())
    perplexed.search("zoning", custom)
    assert _thread_of(custom) == "perplexed-portal"
    tracked = _p(server, "ok")
    perplexed.search("zoning", [FunctionProvider(lambda q, o: [], name="fn"), tracked])
    assert _thread_of(tracked) == "perplexed-portal"

    # called from a thread that runs an event loop: the portal (never the loop's own thread)
    async def inside_a_loop() -> None:
        perplexed.search("zoning", ok)

    ok = _p(server, "ok")
    asyncio.run(inside_a_loop())
    assert _thread_of(ok) == "perplexed-portal"


def test_direct_searches_from_many_threads_share_one_pool(server: LoopbackServer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> tuple[str, bool]:
        ok = _p(server, "ok" if i % 3 else "empty")
        try:
            result = perplexed.search(f"q{i}", ok)
            outcome = result.attempts[0].outcome.value
        except UpstreamError as exc:
            outcome = exc.attempts[0].outcome.value
        return outcome, ok.threads == [threading.current_thread()]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(120)))
    assert all(in_caller for _, in_caller in results)
    assert sorted({o for o, _ in results}) == ["empty", "ok"]


def test_keyboard_interrupt_leaves_the_pool_usable(server: LoopbackServer) -> None:
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        pytest.skip("needs SIGALRM in the main thread")

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    hang = _p(server, "hang")
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            perplexed.search("zoning", hang, provider_timeout_ms=5000)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert hang.threads == [threading.current_thread()]
    assert hang.closed == 1  # the coroutine was closed: its flow's finally ran
    assert server.wait_disconnect(timeout=2.0)  # the interrupted request's connection was closed
    ok = _p(server, "ok")
    assert perplexed.search("zoning", ok, provider_timeout_ms=2000).provider == "ok"  # the pool still works


def test_a_coroutine_that_suspends_fails_loudly() -> None:
    from perplexed.net import _direct  # private: the direct driver's guard against a suspension

    closed: list[bool] = []

    async def suspends() -> int:
        try:
            await asyncio.sleep(0)  # a bare yield: a real loop would resume it; the direct driver must not
            return 1
        finally:
            closed.append(True)

    with pytest.raises(RuntimeError, match="suspended"):
        _direct.run(suspends)
    assert closed == [True]

    async def completes(x: int) -> int:
        return x + 1

    assert _direct.run(completes, 1) == 2
