"""The memory keeps its word (issue 22): no cached answer crosses tenants, money fails closed, cached hits are
copies, single flight and rate-limit waits as promised, strict inputs. Each test runs on the memory, SQLite and
Redis stores where the point applies (a real valkey-server for Redis), through the public API, sync and async.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import perplexed
import pytest
from perplexed import ConfigError, Outcome, UpstreamError
from perplexed.providers import FunctionProvider
from perplexed.store import MemoryStore, RedisStore, SQLiteStore, Store
from perplexed.store import open_store as open_store_url
from pydantic import ValidationError

STORE_KINDS = ["memory", "sqlite", "redis"]


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Configure the process's store: a fresh MemoryStore, a SQLite file, or a real Valkey (own prefix)."""
    kind = request.param
    if kind == "memory":
        perplexed.configure(store=MemoryStore())
    elif kind == "sqlite":
        perplexed.configure(store=SQLiteStore(tmp_path / "state.db"))
    else:
        valkey = request.getfixturevalue("valkey")
        prefix = request.getfixturevalue("redis_prefix")
        perplexed.configure(store=RedisStore(valkey.url, prefix=prefix, timeout_ms=2000))
    yield kind


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def run(mode: str, query: str, provider: Any, **options: Any) -> perplexed.Result:
    if mode == "sync":
        return await asyncio.to_thread(perplexed.search, query, provider, **options)
    return await perplexed.asearch(query, provider, **options)


def tenant(name: str, calls: list[str] | None = None) -> Any:
    """A closure answering with the tenant's own document (the same qualified name for every tenant)."""

    def search(query: str, options: Any) -> list[dict[str, Any]]:
        if calls is not None:
            calls.append(name)
        return [{"url": f"https://{name}.example/doc", "title": f"{name}'s document", "raw": {"owner": name}}]

    return search


def urls(result: perplexed.Result) -> list[str]:
    return [h.url for h in result.hits]


# -- 1. cache identity --------------------------------------------------------------------------------------------


class CallableTenant:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, query: str, options: Any) -> list[dict[str, str]]:
        return [{"url": f"https://{self.name}.example/doc"}]


def _by_partial(name: str, query: str, options: Any) -> list[dict[str, str]]:
    return [{"url": f"https://{name}.example/doc"}]


def _pairs() -> dict[str, tuple[Any, Any]]:
    return {
        "closures": (tenant("a"), tenant("b")),
        "partials": (functools.partial(_by_partial, "a"), functools.partial(_by_partial, "b")),
        "lambdas": (lambda q, o: [{"url": "https://a.example/doc"}], lambda q, o: [{"url": "https://b.example/doc"}]),
        "callables": (CallableTenant("a"), CallableTenant("b")),
    }


@pytest.mark.parametrize("kind", sorted(_pairs()))
async def test_two_tenants_with_one_label_never_share_cached_answers(store_kind: str, mode: str, kind: str) -> None:
    fn_a, fn_b = _pairs()[kind]
    a = FunctionProvider(fn_a, name="kb")
    b = FunctionProvider(fn_b, name="kb")  # the same label (and, for closures, the same qualified name)
    first = await run(mode, "setbacks", a, cache_ttl_s=600)
    second = await run(mode, "setbacks", b, cache_ttl_s=600)
    assert urls(first) == ["https://a.example/doc"]
    assert urls(second) == ["https://b.example/doc"], "tenant B got tenant A's cached documents"
    assert not second.attempts[0].cached
    again = await run(mode, "setbacks", a, cache_ttl_s=600)
    assert again.attempts[0].cached and urls(again) == ["https://a.example/doc"]


async def test_two_wrappers_around_one_function_still_share(store_kind: str, mode: str) -> None:
    calls: list[str] = []
    fn = tenant("a", calls)
    await run(mode, "q", FunctionProvider(fn, name="kb"), cache_ttl_s=600)
    second = await run(mode, "q", FunctionProvider(fn, name="kb"), cache_ttl_s=600)
    assert second.attempts[0].cached and calls == ["a"]

    class Service:
        def __init__(self) -> None:
            self.calls = 0

        def search(self, query: str, options: Any) -> list[dict[str, str]]:
            self.calls += 1
            return [{"url": "https://svc.example/doc"}]

    service = Service()  # service.search is a new bound-method object on each access: still one function
    await run(mode, "q", FunctionProvider(service.search, name="svc"), cache_ttl_s=600)
    assert (await run(mode, "q", FunctionProvider(service.search, name="svc"), cache_ttl_s=600)).attempts[0].cached
    assert service.calls == 1
    other = Service()
    assert not (await run(mode, "q", FunctionProvider(other.search, name="svc"), cache_ttl_s=600)).attempts[0].cached


async def test_an_explicit_cache_key_shares_across_objects(store_kind: str) -> None:
    calls: list[str] = []
    first = await perplexed.asearch("q", FunctionProvider(tenant("a", calls), name="kb", cache_key="kb-v1"),
                                    cache_ttl_s=600)
    second = await perplexed.asearch("q", FunctionProvider(tenant("b", calls), name="kb", cache_key="kb-v1"),
                                     cache_ttl_s=600)
    assert second.attempts[0].cached and urls(second) == urls(first) and calls == ["a"]  # the user's promise
    other = await perplexed.asearch("q", FunctionProvider(tenant("c", calls), name="kb", cache_key="kb-v2"),
                                    cache_ttl_s=600)
    assert urls(other) == ["https://c.example/doc"]


def test_cache_key_is_validated() -> None:
    for bad in ("", "  ", 5, "x\n"):
        with pytest.raises(ConfigError, match="cache_key"):
            FunctionProvider(tenant("a"), cache_key=bad)  # type: ignore[arg-type]


# -- 4. cached and single-flight hits are copies ------------------------------------------------------------------


def _poison(result: perplexed.Result, *, shared: bool) -> None:
    """Change the first hit every way a caller could. A hit is frozen (issue 35): assigning a field is refused.
    Its ``raw`` and ``sources`` are the caller's own (a provider's fresh answer, or one a persisting store
    decoded), or, when ``shared`` (the memory store's cache answers every reader with the same hits), read-only."""
    hit = result.hits[0]
    with pytest.raises(ValidationError, match="frozen"):
        hit.title = "poisoned"  # type: ignore[misc]
    if shared:
        with pytest.raises(TypeError, match="read-only"):
            hit.raw["owner"] = "poisoned"
        with pytest.raises(TypeError, match="read-only"):
            hit.raw["extra"] = {"nested": ["poison"]}
        with pytest.raises(TypeError, match="read-only"):
            hit.sources.append({"provider": "poison", "rank": 1})
        return
    hit.raw["owner"] = "poisoned"
    hit.raw["extra"] = {"nested": ["poison"]}
    hit.sources.append({"provider": "poison", "rank": 1})


async def test_no_caller_can_mutate_a_cached_hit_for_another(store_kind: str, mode: str) -> None:
    provider = FunctionProvider(tenant("a"), name="kb")
    first = await run(mode, "q", provider, cache_ttl_s=600)
    _poison(first, shared=False)  # the leader mutates the hits it got back (the cache must not hold them)
    second = await run(mode, "q", provider, cache_ttl_s=600)
    assert second.attempts[0].cached
    _poison(second, shared=store_kind == "memory")
    third = await run(mode, "q", provider, cache_ttl_s=600)
    assert third.attempts[0].cached
    hit = third.hits[0]
    assert hit.raw == {"owner": "a"} and hit.sources == [] and hit.title == "a's document"


async def test_single_flight_followers_get_their_own_copies(store_kind: str) -> None:
    gate = asyncio.Event()

    async def slow(query: str, options: Any) -> list[dict[str, Any]]:
        await gate.wait()
        return [{"url": "https://a.example/doc", "raw": {"owner": "a", "tags": ["x"]}}]

    provider = FunctionProvider(slow, name="slow")
    tasks = [asyncio.create_task(perplexed.asearch("q", provider, cache_ttl_s=600, cache_single_flight=True))
             for _ in range(5)]
    await asyncio.sleep(0.2)
    gate.set()
    results = await asyncio.gather(*tasks)
    hits = [r.hits[0] for r in results]
    assert len({id(h) for h in hits}) == 5 and len({id(h.raw) for h in hits}) == 5
    hits[0].raw["tags"].append("poison")
    hits[1].sources.append({"provider": "poison"})
    assert all(h.raw == {"owner": "a", "tags": ["x"]} for h in hits[2:])
    assert all(h.sources == [] for h in hits[2:])


# -- 5. single flight in-process is always on with the cache --------------------------------------------------


async def test_ten_identical_searches_make_one_call(store_kind: str, mode: str) -> None:
    calls: list[str] = []

    def slow(query: str, options: Any) -> list[dict[str, str]]:
        calls.append(query)
        time.sleep(0.3)
        return [{"url": "https://a.example/doc"}]

    provider = FunctionProvider(slow, name="slow", cost=0.01)
    if mode == "sync":  # ten threads at once (asyncio.to_thread's pool may hold fewer workers)
        with ThreadPoolExecutor(10) as pool:
            results = list(pool.map(lambda _: perplexed.search("q", provider, cache_ttl_s=30), range(10)))
    else:
        results = await asyncio.gather(*(perplexed.asearch("q", provider, cache_ttl_s=30) for _ in range(10)))
    assert len(calls) == 1
    assert sorted(r.attempts[0].cached for r in results) == [False] + [True] * 9
    assert sum(r.cost for r in results) == pytest.approx(0.01)


# -- 2. money fails closed ----------------------------------------------------------------------------------------


class BrokenStore(Store):
    """A store whose every method raises (a disk that went away, a bug in a third-party store)."""

    def __init__(self) -> None:
        self.clock = time.time

    async def admit(self, request: Any) -> Any:
        raise OSError("disk I/O error")

    async def record(self, record: Any) -> None:
        raise OSError("disk I/O error")

    async def spend(self, window_s: float) -> dict[str, float]:
        raise OSError("disk I/O error")

    async def latency_p95(self, provider: str) -> float | None:
        raise OSError("disk I/O error")

    async def state(self, provider: str, window_s: float | None = None) -> Any:
        raise OSError("disk I/O error")


class Yes(Store):
    """A third-party store that answers "call" to everything."""

    def __init__(self) -> None:
        self.clock = time.time

    async def admit(self, request: Any) -> Any:
        from perplexed.store import Decision

        return Decision("call")

    async def record(self, record: Any) -> None:
        return None

    async def spend(self, window_s: float) -> dict[str, float]:
        return {}

    async def latency_p95(self, provider: str) -> float | None:
        return None

    async def state(self, provider: str, window_s: float | None = None) -> Any:
        from perplexed.store import ProviderState

        return ProviderState()


def paid_and_free(calls: list[str]) -> list[FunctionProvider]:
    return [FunctionProvider(tenant("paid", calls), name="paid", cost=0.05),
            FunctionProvider(tenant("free", calls), name="free")]


@pytest.mark.parametrize("store", [BrokenStore, Yes])
async def test_budget_usd_holds_whatever_the_store_does(mode: str, store: type[Store]) -> None:
    perplexed.configure(store=store())
    calls: list[str] = []
    result = await run(mode, "q", paid_and_free(calls), budget_usd=0.01)
    assert calls == ["free"]
    assert [(a.provider, a.outcome.value, a.reason) for a in result.attempts] == [
        ("paid", "skipped", "over_budget"), ("free", "ok", None)]


async def test_spend_limits_fail_closed_on_a_store_error(mode: str) -> None:
    perplexed.configure(store=BrokenStore(), spend_limits={"day": 100.0})
    calls: list[str] = []
    result = await run(mode, "q", paid_and_free(calls))
    assert calls == ["free"]
    skipped = result.attempts[0]
    assert (skipped.outcome.value, skipped.reason) == ("skipped", "over_budget")
    assert skipped.error is not None and "store" in skipped.error
    with pytest.raises(UpstreamError) as info:  # a paid provider alone: nothing paid goes out
        await run(mode, "q", paid_and_free(calls)[:1])
    assert [a.reason for a in info.value.attempts] == ["over_budget"] and calls == ["free"]


async def test_spend_limits_fail_closed_with_redis_down(mode: str) -> None:
    from testkit.valkey_servers import closed_port

    perplexed.configure(store=RedisStore(f"redis://127.0.0.1:{closed_port()}/0", timeout_ms=100),
                        spend_limits={"day": 100.0})
    calls: list[str] = []
    for _ in range(3):
        result = await run(mode, "q", paid_and_free(calls), budget_usd=1.0)
        assert result.attempts[0].reason == "over_budget"
    assert calls == ["free"] * 3


def test_a_store_url_naming_a_directory_fails_before_any_call(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.setenv("PERPLEXED_STORE", f"sqlite:///{tmp_path}")
    calls: list[str] = []
    with pytest.raises(ConfigError, match="directory"):
        perplexed.search("q", paid_and_free(calls), budget_usd=0.01)
    assert calls == []


def test_cli_budget_holds_with_an_unopenable_state_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    from testkit.loopback import Json, searxng_json, serve

    data = tmp_path / "data"
    (data / "perplexed" / "state.db").mkdir(parents=True)  # the CLI's state file cannot be opened
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERPLEXED_", "SEARXNG"))}
    env.update(HOME=str(tmp_path), XDG_DATA_HOME=str(data), XDG_CONFIG_HOME=str(tmp_path / "config"),
               PERPLEXED_PRICE_SEARXNG="0.05")
    with serve({"/search": Json(searxng_json(2))}) as server:
        env["SEARXNG_URL"] = server.url
        run_ = subprocess.run([sys.executable, "-m", "perplexed", "search", "q", "-p", "searxng", "--budget",
                               "0.001", "--json"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert server.requests == [], run_.stdout + run_.stderr
    assert run_.returncode == 1 and "over_budget" in run_.stdout


# -- 6. rate-limit waits --------------------------------------------------------------------------------------------


@pytest.mark.timing
async def test_a_second_call_under_1_per_s_waits_with_the_default(store_kind: str, mode: str) -> None:
    seen: list[float] = []

    def fast(query: str, options: Any) -> list[dict[str, str]]:
        seen.append(time.monotonic())
        return [{"url": "https://a.example/" + query}]

    provider = FunctionProvider(fast, name="one-per-s", rate_limit="1/s")
    first = await run(mode, "a", provider)
    second = await run(mode, "b", provider)
    assert [a.outcome for a in (*first.attempts, *second.attempts)] == [Outcome.OK, Outcome.OK]
    assert len(seen) == 2 and seen[1] - seen[0] >= 0.99  # never 2 calls in one window
    assert second.attempts[0].duration_ms >= 900  # it waited for its slot


@pytest.mark.timing
async def test_rate_limit_wait_bounds_the_total_wait(store_kind: str, mode: str) -> None:
    seen: list[float] = []

    def fast(query: str, options: Any) -> list[dict[str, str]]:
        seen.append(time.monotonic())
        return [{"url": "https://a.example/" + query}]

    provider = FunctionProvider(fast, name="five-per-s", rate_limit="5/s", rate_limit_wait_ms=1500)
    if mode == "sync":
        with ThreadPoolExecutor(12) as pool:
            outcomes = list(pool.map(lambda i: _attempt_or_error(perplexed.search, f"q{i}", provider), range(12)))
    else:
        outcomes = await asyncio.gather(*(_aattempt_or_error(f"q{i}", provider) for i in range(12)))
    called = [a for a in outcomes if a.outcome is Outcome.OK]
    skipped = [a for a in outcomes if a.outcome is Outcome.SKIPPED]
    assert (len(called), len(skipped)) == (10, 2), outcomes
    assert all(a.reason == "rate_limited" for a in skipped)
    assert max(a.duration_ms for a in outcomes) <= 1500 + 250  # no wait over 1.5 s (+ the call, scheduling)
    assert max(a.duration_ms for a in skipped) <= 1500
    seen.sort()
    assert all(seen[i + 5] - seen[i] >= 0.99 for i in range(len(seen) - 5))  # never 6 calls in one second


def _attempt_or_error(search: Any, query: str, provider: Any) -> Any:
    try:
        return search(query, provider).attempts[0]
    except UpstreamError as exc:
        return exc.attempts[0]


async def _aattempt_or_error(query: str, provider: Any) -> Any:
    try:
        return (await perplexed.asearch(query, provider)).attempts[0]
    except UpstreamError as exc:
        return exc.attempts[0]


# -- 9. hedged calls cancelled mid-flight count at list price ----------------------------------------------------


async def test_cancelled_hedged_calls_are_counted_in_spend(store_kind: str, mode: str) -> None:
    perplexed.configure(spend_limits={"day": 1000.0})

    async def slow(query: str, options: Any) -> list[dict[str, str]]:
        await asyncio.sleep(5)
        return [{"url": "https://slow.example/a"}]

    def quick(query: str, options: Any) -> list[dict[str, str]]:
        time.sleep(0.15)
        return [{"url": "https://quick.example/a"}]

    chain = [FunctionProvider(slow, name="slow", cost=0.25), FunctionProvider(quick, name="quick", cost=0.01)]
    result = await run(mode, "q", chain, strategy="hedged", hedge_after_ms=20)
    assert result.provider == "quick"
    assert [a.outcome for a in result.attempts] == [Outcome.CANCELLED, Outcome.OK]
    for _ in range(100):  # the cancelled call's record is written in the background
        if perplexed.spend("day").get("slow"):
            break
        await asyncio.sleep(0.02)
    assert perplexed.spend("day") == {"quick": 0.01, "slow": 0.25}


# -- 10. strict inputs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["5/ms", "5/ss", "5/m", "\uff15/s", "\u0665/s", "5/s\n", "5/s\t", "\t5/s", "5/\u0455",
                                 "5/sec\r\n", "5/secs/", "5 /s /s"])
def test_rate_limits_are_strict(bad: str) -> None:
    with pytest.raises(ConfigError, match="rate_limit"):
        FunctionProvider(tenant("a"), rate_limit=bad)
    with pytest.raises(ConfigError, match="rate_limit"):
        perplexed.configure(rate_limits={"x": bad})


@pytest.mark.parametrize("good", ["5/s", "5/sec", "5/second", "60/min", "60/minute", "100/hour", "1000/day",
                                  "2/h", "7/d", "4/S", " 3 / sec "])
def test_documented_rate_limit_spellings(good: str) -> None:
    FunctionProvider(tenant("a"), rate_limit=good)


def test_amounts_and_ttls_beyond_what_a_store_can_keep_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="cost"):
        FunctionProvider(tenant("a"), cost=1e300)
    with pytest.raises(ConfigError, match="spend_limits"):
        perplexed.configure(spend_limits={"day": 1e300})
    with pytest.raises(ConfigError, match="price"):
        perplexed.configure(prices={"tavily": 1e12})
    with pytest.raises(ConfigError, match="budget_usd"):
        perplexed.search("q", FunctionProvider(tenant("a")), budget_usd=1e300)
    with pytest.raises(ConfigError, match="cache_ttl_s"):
        perplexed.search("q", FunctionProvider(tenant("a")), cache_ttl_s=1e308)
    FunctionProvider(tenant("a"), cost=1e9)  # the bounds themselves are fine
    perplexed.configure(spend_limits={"day": 1e9})
    perplexed.search("q", FunctionProvider(tenant("a")), cache_ttl_s=10 * 365 * 86400)


async def test_the_biggest_accepted_amounts_work_on_every_store(store_kind: str) -> None:
    perplexed.configure(spend_limits={"day": 1e9})
    provider = FunctionProvider(tenant("a"), name="rich", cost=1e9)
    ten_years = 10 * 365 * 86400
    result = await perplexed.asearch("q", provider, cache_ttl_s=ten_years)
    assert result.cost == 1e9
    assert (await perplexed.asearch("q", provider, cache_ttl_s=ten_years)).attempts[0].cached  # still cached
    with pytest.raises(UpstreamError) as info:  # the day's limit is spent
        await perplexed.asearch("other", provider, cache_ttl_s=ten_years)
    assert [a.reason for a in info.value.attempts] == ["over_budget"]
    assert perplexed.spend("day") == {"rich": 1e9}


@pytest.mark.parametrize(
    ("url", "problem"),
    [("sqlite:////", "directory"), ("sqlite:///:memory:", "in-memory"), ("sqlite:////dev/null", "regular file"),
     ("redis://u:pw-s3cr3t-value@[::1/0", "malformed"), ("redis://u:pw-s3cr3t-value@host:99999/0", "malformed")],
)
def test_store_urls_that_cannot_work_are_config_errors(url: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        open_store_url(url)
    assert "s3cr3t" not in str(info.value)
    with pytest.raises(ConfigError, match=problem):
        perplexed.configure(store=url)
    with pytest.raises(ConfigError, match=problem):
        RedisStore(url) if url.startswith("redis") else open_store_url(url)
    with pytest.raises(ConfigError, match="directory"):
        open_store_url(f"sqlite:///{tmp_path}")


# -- 11. merge trusts no hit for more than it brings --------------------------------------------------------------


def _hostile(query: str, options: Any) -> list[dict[str, Any]]:
    return [
        {"url": "ftp://bank.example/login", "title": "Bank (mirror)", "snippet": "EVIL: send your password"},
        {"url": "bank.example/login", "snippet": "scheme-less twin"},
        {"url": "javascript:alert(document.cookie)", "title": "click"},
        {"url": " JaVa\tScRiPt:alert(1)", "title": "click"},
        {"url": "data:text/html,<script>alert(1)</script>", "title": "data"},
        {"url": "https://c.example/x\r\nSet-Cookie: session=stolen", "title": "crlf"},
        {"url": "https://d.example/x\nLocation: evil", "title": "lf"},
        {"url": "https://e.example/\x00", "title": "nul"},
        {"url": "https://news.example/story", "title": "Story", "snippet": "hostile snippet"},
    ]


def _trusted(query: str, options: Any) -> list[dict[str, Any]]:
    return [{"url": "https://bank.example/login", "title": "Bank"},
            {"url": "https://news.example/story", "title": "Story"}]


@pytest.mark.parametrize("order", ["trusted-first", "hostile-first"])
async def test_merge_keeps_the_trusted_url_and_attributes_filled_fields(mode: str, order: str) -> None:
    trusted = FunctionProvider(_trusted, name="trusted")
    hostile = FunctionProvider(_hostile, name="hostile")
    chain = [trusted, hostile] if order == "trusted-first" else [hostile, trusted]
    result = await run(mode, "q", chain, strategy="merge", max_results=20)
    by_url = {h.url: h for h in result.hits}
    assert set(by_url) == {"https://bank.example/login", "https://news.example/story"}  # nothing else survives
    bank = by_url["https://bank.example/login"]
    assert bank.provider == "trusted" and bank.snippet == ""  # the ftp:// twin neither replaced nor filled it
    assert bank.sources == [{"provider": "trusted", "rank": 1}]
    story = by_url["https://news.example/story"]
    assert story.snippet == "hostile snippet"
    filler = [s for s in story.sources if "filled" in s]
    if order == "trusted-first":  # the trusted hit's empty snippet came from the hostile provider: it says so
        assert story.provider == "trusted" and filler == [{"provider": "hostile", "rank": 1, "filled": ["snippet"]}]
    else:
        assert story.provider == "hostile" and filler == []


def test_local_file_urls_survive_a_merge_and_nobody_else_s() -> None:
    from perplexed import Hit
    from perplexed.engine._hits import fuse  # private: only local may keep file URLs in a merge

    local = [Hit(url="file:///docs/setbacks.md", title="Setbacks")]
    other = [Hit(url="file:///etc/passwd", title="x"), Hit(url="https://a.example/", title="A")]
    fused = fuse([("local", local), ("web", other)], limit=10, own_schemes={"local": frozenset({"file"})})
    assert [h.url for h in fused] == ["file:///docs/setbacks.md", "https://a.example/"]
