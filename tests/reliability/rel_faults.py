"""The fault catalogue shared by the reliability tests (issue 9), built on ``tests/loopback.py``.

A :class:`Fault` names one way a search server misbehaves, how to make a loopback server do it, and what the
engine must record for it (outcome and reason). :func:`fault_server` starts a server that misbehaves that way
(or, for ``refused``, reserves a port nothing listens on). :class:`Metered` is a paid SearXNG-shaped provider
whose 200 "soft failure" is billed, so the matrix can check that the cost of billable attempts survives on
the error. :func:`measure` runs a call and reports elapsed time and the peak of traced memory.
"""

from __future__ import annotations

import contextlib
import socket
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from perplexed import Outcome, ProviderAnswer, SearchOptions
from perplexed.providers import SearXNG
from testkit.loopback import (
    Drip,
    Hang,
    Html,
    Huge,
    Json,
    LoopbackServer,
    Raw,
    Reply,
    ResetMidBody,
    Status,
    searxng_json,
    serve,
)

__all__ = [
    "DEADLINE_SLACK_S",
    "FAULTS",
    "HANG_BUDGET_MS",
    "MEMORY_BOUND",
    "Fault",
    "Measured",
    "Metered",
    "fault_server",
    "good_server",
    "measure",
    "refused_url",
]

#: The issue fixes the bound: a call returns or raises within its deadline + 50 ms.
DEADLINE_SLACK_S = 0.050
#: Small budgets for the faults that hang, so the matrix stays fast.
HANG_BUDGET_MS = 300
#: "Memory stays bounded": the peak of traced memory during one call. The largest legitimate buffer is one
#: capped body (8 MB by default); the bound leaves room for httpx's read buffers and the portal hop.
MEMORY_BOUND = 16 * 1024 * 1024

HUNDRED_MB = 100 * 1024 * 1024
#: 1 byte every 200 ms: a 60-byte body would take 12 s.
DRIP_BODY = b'{"results": [{"url": "https://example.com/drip", "title": "D"}]}'
#: What the billed soft failure costs (USD), and what the good provider costs.
METERED_COST = 0.004
GOOD_COST = 0.001


@dataclass(frozen=True)
class Fault:
    """One misbehaviour: ``reply`` (None = connection refused), and the attempt it must produce."""

    name: str
    reply: Callable[[], Reply] | None
    outcome: Outcome
    reason: str | None
    hangs: bool = False  # costs the budget: the attempt must last about the budget, then be cancelled
    error_has: tuple[str, ...] = ()  # substrings the attempt's error must carry
    detail_has: str | None = None
    #: the provider budget for this fault's cells. Reading 8 MB and refusing the rest is not a hang, but under
    #: tracemalloc on a loaded box it can take longer than the hang budget: the huge bodies get more.
    budget_ms: int = 300


def _soft_failure_searxng() -> Reply:
    # HTTP 200 with no results and engines that did not answer: SearXNG's quiet block
    return Json(searxng_json(0, unresponsive=[["google", "CAPTCHA"], ["bing", "timeout"]]))


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in [
        Fault("refused", None, Outcome.ERROR, "connection", error_has=("connection",)),
        Fault(
            "accept_hang",
            lambda: Hang(read_request=False),
            Outcome.TIMEOUT,
            "timeout",
            hangs=True,
            error_has=("no answer within", "(cancelled)"),
        ),
        Fault(
            "drip",
            lambda: Drip(DRIP_BODY, interval=0.2, chunks=len(DRIP_BODY)),
            Outcome.TIMEOUT,
            "timeout",
            hangs=True,
            error_has=("no answer within", "(cancelled)"),
        ),
        Fault(
            "reset_mid_body", lambda: ResetMidBody(), Outcome.ERROR, "connection", error_has=("connection",)
        ),
        Fault(
            "429_retry_after",
            lambda: Status(
                429, b'{"error": "slow down"}', headers={"Retry-After": "7"}, content_type="application/json"
            ),
            Outcome.ERROR,
            "rate_limited",
            error_has=("429", "retry after 7 s"),
        ),
        Fault("500", lambda: Status(500, "boom"), Outcome.ERROR, "upstream", error_has=("HTTP 500",)),
        Fault(
            "502",
            lambda: Status(502, "<html>bad gateway</html>", content_type="text/html"),
            Outcome.ERROR,
            "upstream",
            error_has=("HTTP 502",),
        ),
        Fault(
            "503",
            lambda: Status(503, b'{"error": "maintenance"}', content_type="application/json"),
            Outcome.ERROR,
            "upstream",
            error_has=("HTTP 503", "maintenance"),
        ),
        Fault(
            "malformed_json",
            lambda: Raw(b'{"results": [{"url": "https://exa'),
            Outcome.ERROR,
            "malformed",
            error_has=("not valid JSON",),
        ),
        Fault("html_not_json", lambda: Html(), Outcome.ERROR, "malformed", error_has=("expected JSON",)),
        Fault(
            "soft_failure_200",
            _soft_failure_searxng,
            Outcome.EMPTY,
            None,
            detail_has="unresponsive engines: google: CAPTCHA",
        ),
        Fault(
            "body_100mb",
            lambda: Huge(HUNDRED_MB),
            Outcome.ERROR,
            "body_too_large",
            error_has=("exceeds the",),
            budget_ms=3000,
        ),
        Fault(
            "body_100mb_chunked",
            lambda: Huge(HUNDRED_MB, content_length=False),
            Outcome.ERROR,
            "body_too_large",
            error_has=("exceeds the",),
            budget_ms=3000,
        ),
    ]
}


@contextlib.contextmanager
def refused_url() -> Iterator[str]:
    """A loopback URL that refuses connections while the context lasts: its port is bound, never listening,
    and held (a port only bound and released can go to the next server started, which then answers on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextlib.contextmanager
def fault_server(fault: Fault) -> Iterator[tuple[str, LoopbackServer | None]]:
    """``(base_url, server)`` misbehaving as ``fault`` (server is None for ``refused``)."""
    if fault.reply is None:
        with refused_url() as url:
            yield url, None
        return
    with serve({"*": fault.reply()}) as server:
        yield server.url, server


@contextlib.contextmanager
def good_server(n: int = 3) -> Iterator[LoopbackServer]:
    """A well-behaved SearXNG answering ``n`` hits."""
    with serve({"/search": Json(searxng_json(n))}) as server:
        yield server


class Metered(SearXNG):
    """A paid SearXNG-shaped provider: ``{"success": false}`` is a soft failure that is billed
    (``ProviderError(cost=...)``), the way a metered API bills a request it could not serve."""

    name = "metered"
    default_price = METERED_COST

    def parse_response(self, response: httpx.Response, query: str, options: SearchOptions) -> ProviderAnswer:
        data = self.json_object(response)
        if data.get("success") is False:
            raise self.fail(
                "soft_failure", "metered API answered success=false", response, cost=self.price(options)
            )
        return super().parse_response(response, query, options)


def metered_soft_failure() -> Reply:
    return Json({"success": False, "results": []})


@dataclass
class Measured:
    elapsed: float
    peak: int
    value: Any = None
    error: BaseException | None = None


def measure(call: Callable[[], Any]) -> Measured:
    """Run ``call()``; elapsed seconds, peak traced memory over the start, result or exception."""
    started_tracing = not tracemalloc.is_tracing()
    if started_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    out = Measured(0.0, 0)
    try:
        out.value = call()
    except Exception as exc:
        out.error = exc
    out.elapsed = time.perf_counter() - t0
    out.peak = tracemalloc.get_traced_memory()[1] - base
    if started_tracing:
        tracemalloc.stop()
    return out


async def ameasure(call: Callable[[], Any]) -> Measured:
    """:func:`measure` for a coroutine function."""
    started_tracing = not tracemalloc.is_tracing()
    if started_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    out = Measured(0.0, 0)
    try:
        out.value = await call()
    except Exception as exc:
        out.error = exc
    out.elapsed = time.perf_counter() - t0
    out.peak = tracemalloc.get_traced_memory()[1] - base
    if started_tracing:
        tracemalloc.stop()
    return out
