"""Shared fetch work never cancels its other waiters (issue 40 #6), from the attacker's side: a site whose
robots.txt answers slowly, one caller with a short deadline, another with a long one on the same origin."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time

import perplexed
from pages import article_html
from perplexed import Page, UpstreamError
from testkit.loopback import Html, LoopbackServer, Status

LOOP = ["127.0.0.0/8"]


def _slow_robots(loopback: LoopbackServer, delay: float = 1.0) -> None:
    loopback.route("/robots.txt", Status(404, b"", content_type="text/plain", delay=delay))
    loopback.route("/a", Html(article_html()))
    loopback.route("/b", Html(article_html()))


async def test_a_short_deadline_does_not_cancel_another_fetch_of_the_same_site(loopback: LoopbackServer) -> None:
    _slow_robots(loopback)
    short = asyncio.ensure_future(perplexed.afetch(loopback.url_for("/a"), allow_private=LOOP, deadline_ms=300))
    await asyncio.sleep(0.05)  # the short fetch owns the robots.txt load
    long = asyncio.ensure_future(perplexed.afetch(loopback.url_for("/b"), allow_private=LOOP, deadline_ms=10_000))
    results = await asyncio.gather(short, long, return_exceptions=True)
    assert isinstance(results[0], UpstreamError) and results[0].attempts[0].reason == "timeout"
    assert isinstance(results[1], Page), repr(results[1])
    assert sum(r.path == "/robots.txt" for r in loopback.requests) == 1  # still one shared load


async def test_cancelling_one_caller_leaves_the_other_its_page(loopback: LoopbackServer) -> None:
    _slow_robots(loopback, 0.6)
    first = asyncio.ensure_future(perplexed.afetch(loopback.url_for("/a"), allow_private=LOOP))
    await asyncio.sleep(0.05)
    second = asyncio.ensure_future(perplexed.afetch(loopback.url_for("/b"), allow_private=LOOP))
    await asyncio.sleep(0.05)
    first.cancel()
    page = await second
    assert isinstance(page, Page) and page.content
    assert first.cancelled()


async def test_every_caller_gone_ends_the_shared_load(loopback: LoopbackServer) -> None:
    from perplexed.net import _fetch_net  # private: checks no robots.txt load is left pending

    _slow_robots(loopback, 5.0)
    task = asyncio.ensure_future(perplexed.afetch(loopback.url_for("/a"), allow_private=LOOP, deadline_ms=200))
    result = await asyncio.gather(task, return_exceptions=True)
    assert isinstance(result[0], UpstreamError)
    await asyncio.sleep(0)
    assert not _fetch_net._robots_pending.get(asyncio.get_running_loop())  # nothing left running
    assert loopback.wait_disconnect(timeout=2.0)  # the robots.txt connection was closed, not left waiting


def test_sync_callers_in_threads_keep_their_own_deadlines(loopback: LoopbackServer) -> None:
    _slow_robots(loopback)

    def one(path: str, deadline_ms: int) -> Page | BaseException:
        try:
            return perplexed.fetch(loopback.url_for(path), allow_private=LOOP, deadline_ms=deadline_ms)
        except BaseException as exc:  # what each caller got is the point
            return exc

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        short = pool.submit(one, "/a", 300)
        time.sleep(0.05)
        long = pool.submit(one, "/b", 10_000)
        got_short, got_long = short.result(), long.result()
    assert isinstance(got_short, UpstreamError)
    assert isinstance(got_long, Page), repr(got_long)


def test_fetch_many_with_one_site_and_a_short_deadline_gives_each_url_an_answer(loopback: LoopbackServer) -> None:
    _slow_robots(loopback, 2.0)
    results = perplexed.fetch_many([loopback.url_for("/a"), loopback.url_for("/b")], allow_private=LOOP,
                                   deadline_ms=300)
    assert all(isinstance(r, UpstreamError) for r in results), results


async def test_a_single_flight_leaders_timeout_leaves_its_follower_the_page(loopback: LoopbackServer) -> None:
    loopback.route("/robots.txt", Status(404, b""))
    loopback.route("/slow", Status(200, article_html().encode(), content_type="text/html", delay=1.0))
    shared = {"allow_private": LOOP, "cache_ttl_s": 60, "cache_single_flight": True}
    leader = asyncio.ensure_future(perplexed.afetch(loopback.url_for("/slow"), deadline_ms=300, **shared))
    await asyncio.sleep(0.05)
    follower = asyncio.ensure_future(perplexed.afetch(loopback.url_for("/slow"), deadline_ms=10_000, **shared))
    results = await asyncio.gather(leader, follower, return_exceptions=True)
    assert isinstance(results[0], UpstreamError) and isinstance(results[1], Page), results
    perplexed.reset()
