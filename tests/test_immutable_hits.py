"""Isolation by immutability (issue 35): hits and results are frozen models, and the memory store answers every
reader with the same frozen hits, read-only all the way down, instead of copying them per cache hit. A caller
who wants a changed hit asks for a copy (``hit.model_copy(update=...)``, ``dict(hit.raw)``)."""

from __future__ import annotations

import copy
import json
import pickle
from datetime import date
from typing import Any

import perplexed
import pytest
from perplexed import Hit, Page, Result
from perplexed.providers import FunctionProvider
from perplexed.store import Admission, CachedAnswer, MemoryStore, Record
from perplexed.store._base import (  # private: the freezer is the unit under test
    ReadOnlyDict,
    ReadOnlyList,
    copy_hits,
    snapshot_hits,
)
from pydantic import ValidationError


@pytest.fixture(autouse=True)
def memory_store() -> MemoryStore:
    store = MemoryStore()
    perplexed.configure(store=store)
    return store


def answer(calls: list[str] | None = None) -> Any:
    def search(query: str, options: Any) -> list[dict[str, Any]]:
        if calls is not None:
            calls.append(query)
        return [{"url": "https://a.example/doc", "title": "A", "raw": {"owner": "a", "tags": ["x"],
                                                                         "meta": {"n": [1, {"deep": "y"}]}}},
                {"url": "https://b.example/doc", "title": "B"}]

    return search


def test_a_hit_and_a_result_are_frozen_and_copies_say_what_changed() -> None:
    hit = Hit(id=1, url="https://example.com/a", title="old")
    with pytest.raises(ValidationError, match="frozen"):
        hit.title = "new"  # type: ignore[misc]
    changed = hit.model_copy(update={"title": "new"})
    assert (hit.title, changed.title, changed.url) == ("old", "new", "https://example.com/a")
    result = Result(query="q", provider="p", hits=[hit])
    with pytest.raises(ValidationError, match="frozen"):
        result.hits = []  # type: ignore[misc]
    assert result.model_copy(update={"hits": [changed]}).hits == [changed] and result.hits == [hit]


async def test_cache_hits_share_the_cached_hits_instead_of_copying_them() -> None:
    calls: list[str] = []
    provider = FunctionProvider(answer(calls), name="kb")
    first = await perplexed.asearch("q", provider, cache_ttl_s=600)
    second = await perplexed.asearch("q", provider, cache_ttl_s=600)
    third = perplexed.search("q", provider, cache_ttl_s=600)
    assert calls == ["q"] and second.attempts[0].cached and third.attempts[0].cached
    assert all(a is b for a, b in zip(second.hits, third.hits, strict=True))  # no copy per cache hit
    assert second.hits is not third.hits  # each result's list is its own (reorder or filter it freely)
    third.hits.reverse()
    assert [h.title for h in second.hits] == ["A", "B"]
    assert first.hits == second.hits and first.hits[0] is not second.hits[0]  # the leader keeps its own


async def test_a_shared_hit_is_read_only_all_the_way_down() -> None:
    provider = FunctionProvider(answer(), name="kb")
    await perplexed.asearch("q", provider, cache_ttl_s=600)
    hit = (await perplexed.asearch("q", provider, cache_ttl_s=600)).hits[0]
    raw: Any = hit.raw
    tags: Any = raw["tags"]
    deep: Any = raw["meta"]["n"][1]
    refused = [
        lambda: raw.__setitem__("owner", "me"), lambda: raw.update(owner="me"), lambda: raw.pop("owner"),
        lambda: raw.setdefault("new", 1), lambda: raw.clear(), lambda: raw.__delitem__("owner"),
        lambda: tags.append("poison"), lambda: tags.extend(["p"]), lambda: tags.__setitem__(0, "p"),
        lambda: tags.sort(), lambda: raw["meta"]["n"].insert(0, 2), lambda: deep.__setitem__("deep", "p"),
        lambda: hit.sources.append({"provider": "poison"}),
    ]
    for change in refused:
        with pytest.raises(TypeError, match="read-only"):
            change()
    with pytest.raises(TypeError, match="read-only"):
        raw |= {"owner": "me"}
    with pytest.raises(TypeError, match="read-only"):
        tags += ["p"]
    again = (await perplexed.asearch("q", provider, cache_ttl_s=600)).hits[0]
    assert again.raw == {"owner": "a", "tags": ["x"], "meta": {"n": [1, {"deep": "y"}]}} and again.sources == []


async def test_a_caller_gets_changeable_copies_on_request() -> None:
    provider = FunctionProvider(answer(), name="kb")
    await perplexed.asearch("q", provider, cache_ttl_s=600)
    hit = (await perplexed.asearch("q", provider, cache_ttl_s=600)).hits[0]
    mine = dict(hit.raw)
    mine["owner"] = "me"
    deep = copy.deepcopy(hit.raw)
    deep["tags"].append("mine")
    deep["meta"]["n"][1]["deep"] = "mine"
    assert type(deep) is dict and type(deep["tags"]) is list and type(deep["meta"]["n"][1]) is dict
    sources = list(hit.sources)
    sources.append({"provider": "me"})
    changed = hit.model_copy(update={"raw": {**hit.raw, "owner": "me"}, "title": "mine"})
    assert changed.raw["owner"] == "me" and changed.title == "mine" and mine["owner"] == "me"
    thawed = hit.model_copy(deep=True)
    thawed.raw["tags"].append("mine")  # a deep copy is plain, changeable containers
    again = (await perplexed.asearch("q", provider, cache_ttl_s=600)).hits[0]
    assert again is hit and hit.raw["owner"] == "a" and hit.raw["tags"] == ["x"] and hit.title == "A"
    assert hit.raw["meta"]["n"][1] == {"deep": "y"} and hit.sources == []


async def test_a_shared_hit_reads_serialises_and_pickles_like_a_fresh_one() -> None:
    provider = FunctionProvider(answer(), name="kb")
    fresh = await perplexed.asearch("q", provider, cache_ttl_s=600)
    cached = await perplexed.asearch("q", provider, cache_ttl_s=600)
    assert cached.hits == fresh.hits
    assert isinstance(cached.hits[0].raw, dict) and isinstance(cached.hits[0].raw["tags"], list)
    dumped = cached.hits[0].model_dump()
    assert dumped == fresh.hits[0].model_dump()
    dumped["raw"]["tags"].append("mine")  # a dump is plain data of the caller's own
    dumped["raw"]["meta"]["n"][1]["deep"] = "mine"
    assert cached.hits[0].raw["tags"] == ["x"] and cached.hits[0].raw["meta"]["n"][1] == {"deep": "y"}
    assert cached.model_dump_json() != "" and json.loads(cached.hits[0].model_dump_json()) == json.loads(
        fresh.hits[0].model_dump_json())
    assert json.dumps(cached.hits[0].raw) == json.dumps(fresh.hits[0].raw)
    assert repr(cached.hits[0]) == repr(fresh.hits[0])
    back = pickle.loads(pickle.dumps(cached.hits[0]))
    assert back == fresh.hits[0] and type(back.raw) is ReadOnlyDict
    assert Hit.model_validate(cached.hits[0].model_dump()) == fresh.hits[0]


async def test_the_leader_changing_its_own_hits_deep_down_never_reaches_the_cache() -> None:
    provider = FunctionProvider(answer(), name="kb")
    first = await perplexed.asearch("q", provider, cache_ttl_s=600)
    first.hits[0].raw["tags"].append("poison")  # the leader's hits are the provider's own, changeable
    first.hits[0].raw["meta"]["n"][1]["deep"] = "poison"
    first.hits[0].sources.append({"provider": "poison"})
    again = (await perplexed.asearch("q", provider, cache_ttl_s=600)).hits[0]
    assert again.raw == {"owner": "a", "tags": ["x"], "meta": {"n": [1, {"deep": "y"}]}} and again.sources == []


class Counter:
    """A raw value of a type the cache does not know to be immutable."""

    def __init__(self) -> None:
        self.n = 0


async def test_a_value_of_an_unknown_type_makes_every_reader_get_copies() -> None:
    def search(query: str, options: Any) -> list[Hit]:
        return [Hit(url="https://a.example/doc", raw={"counter": Counter(), "tags": ["x"]})]

    provider = FunctionProvider(search, name="odd")
    await perplexed.asearch("q", provider, cache_ttl_s=600)
    one = (await perplexed.asearch("q", provider, cache_ttl_s=600)).hits[0]
    one.raw["counter"].n += 1
    one.raw["tags"].append("mine")  # copies of its own: plain and changeable
    two = (await perplexed.asearch("q", provider, cache_ttl_s=600)).hits[0]
    assert two is not one and two.raw["counter"].n == 0 and two.raw["tags"] == ["x"]


async def test_a_cached_fetched_page_is_read_only_too(memory_store: MemoryStore) -> None:
    page = Page(url="https://a.example/", final_url="https://a.example/", content="body",
                structured={"author": ["ann"], "type": "Article"})
    hit = Hit(id=1, url="https://a.example/", page=page, published=date(2024, 1, 2))
    await memory_store.record(Record(provider="p", label="p", health="answer", cache_key="k",
                                     answer=CachedAnswer([hit]), ttl_s=60))
    got = (await memory_store.admit(Admission("p", "p", cache_key="k"))).answer
    assert got is not None and got.hits[0] == hit
    cached = got.hits[0].page
    assert cached is not None
    with pytest.raises(TypeError, match="read-only"):
        cached.structured["author"].append("eve")
    with pytest.raises(TypeError, match="read-only"):
        cached.attempts.append(cached.attempts[0] if cached.attempts else None)  # type: ignore[arg-type]
    page.structured["author"].append("eve")  # the page handed in stays the caller's own
    again = (await memory_store.admit(Admission("p", "p", cache_key="k"))).answer
    assert again is not None and again.hits[0].page is not None
    assert again.hits[0].page.structured == {"author": ["ann"], "type": "Article"}


def test_snapshots_freeze_once_and_copies_thaw() -> None:
    hits = [Hit(id=1, url="https://example.com/a", raw={"k": [1, {"d": 2}]}, sources=[{"provider": "p"}])]
    frozen = snapshot_hits(hits)
    assert snapshot_hits(frozen) is frozen and not frozen.copy_out
    assert type(frozen[0].raw) is ReadOnlyDict and type(frozen[0].sources) is ReadOnlyList
    assert type(frozen[0].raw["k"]) is ReadOnlyList and type(frozen[0].raw["k"][1]) is ReadOnlyDict
    assert frozen[0] == hits[0] and frozen[0].model_fields_set == hits[0].model_fields_set
    thawed = copy_hits(frozen)
    assert thawed == hits and type(thawed[0].raw["k"][1]) is dict and type(thawed[0].sources) is list
    thawed[0].raw["k"].append(3)
    assert frozen[0].raw["k"] == [1, {"d": 2}]


def test_the_memory_stores_size_estimate_counts_a_fetched_pages_text() -> None:
    from perplexed.store.memory import _answer_bytes  # private: the size estimate of an entry

    plain = Hit(id=1, url="https://example.com/a")
    page = Page(url="https://example.com/a", final_url="https://example.com/a", content="x" * 1_000_000)
    heavy = plain.model_copy(update={"page": page})
    grown = _answer_bytes(snapshot_hits([heavy]), None) - _answer_bytes(snapshot_hits([plain]), None)
    assert 1_000_000 <= grown <= 1_005_000  # the text, plus a fixed estimate per field
