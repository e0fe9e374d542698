"""`perplexed doctor`'s pure checks, as tables: key formats, response shapes (good, renamed, new, retyped
fields), reported cost against the price table. The declared shapes are checked against every provider's
cassettes, so they cannot drift from what the parsers are tested with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from perplexed.doctor import SHAPES
from perplexed.doctor._checks import (  # private: doctor's pure checks, table-style, without a live call
    check_key_format,
    check_shape,
    compare_cost,
    reported_cost,
)
from perplexed.doctor._shapes import CostField, Field, Shape  # private: made-up shapes to show drift is found

ROOT = Path(__file__).resolve().parents[1]


# --- key formats -----------------------------------------------------------------------------------------

KEY_CASES = [
    ("tavily", None, "missing"),
    ("tavily", "", "missing"),
    ("tavily", "   ", "missing"),
    ("tavily", "tvly-dev-0123456789abcdefABCDEF", "ok"),
    ("tavily", "tvly-short", "warn"),
    ("tavily", "sk-0123456789abcdef0123", "warn"),  # someone else's key
    ("perplexity", "pplx-0123456789abcdefghijklmnopqrstuvwxyz0123456789ab", "ok"),
    ("perplexity", " pplx-0123456789abcdefghij", "error"),
    ("perplexity", "pplx-0123456789abcdefghij\n", "error"),
    ("perplexity", '"pplx-0123456789abcdefghij"', "error"),
    ("perplexity", "Bearer pplx-0123456789abcdefghij", "error"),
    ("perplexity", "pplx-0123 456789abcdefghij", "error"),
    ("perplexity", "pplx-0123456789abcdéfghij", "error"),
    ("firecrawl", "fc-0123456789abcdef0123456789abcdef", "ok"),
    ("exa", "12345678-9abc-def0-1234-56789abcdef0", "ok"),
    ("exa", "exa-not-a-uuid-key-0000", "warn"),
    ("linkup", "12345678-9abc-def0-1234-56789abcdef0", "ok"),
    ("brave", "BSAabcdefghijklmnopqrstuvwxyz01", "ok"),
    ("brave", "short", "error"),
    ("ceramic", "anything-goes-here-42", "ok"),  # no known format: only the generic rules
]


@pytest.mark.parametrize(("provider", "key", "expected"), KEY_CASES)
def test_key_format_table(provider: str, key: str | None, expected: str) -> None:
    status, message = check_key_format(provider, key)
    assert status == expected
    if key and len(key.strip()) >= 4:
        assert key.strip() not in message  # never the value


# --- shapes ----------------------------------------------------------------------------------------------

TOY = Shape(
    items="data.hits",
    top=(Field("data", "dict"), Field("data.hits", "list"), Field("cost", "num"), Field("note", "str", "optional")),
    item=(Field("url", "str"), Field("title", "str|null", "expected"), Field("score", "num", "optional")),
    known={"": frozenset({"data", "cost", "note"}), "data": frozenset({"hits"}), "data.hits[]": frozenset({"url", "title", "score"})},
    cost=CostField("cost"),
)


def body(**top: Any) -> dict[str, Any]:
    hits = top.pop("hits", [{"url": "https://a", "title": "A", "score": 1}, {"url": "https://b", "title": None}])
    doc: dict[str, Any] = {"data": {"hits": hits}, "cost": 0.007}
    doc.update(top)
    return doc


SHAPE_CASES: list[tuple[str, Any, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = [
    # (case, body, missing, wrong_type, unknown)
    ("good", body(), (), (), ()),
    ("int where num", body(cost=1), (), (), ()),
    ("new top field", body(brand_new=1), (), (), ("brand_new",)),
    ("new item field", body(hits=[{"url": "https://a", "title": "A", "favicon": "f"}]), (), (), ("data.hits[].favicon",)),
    (
        "renamed item field",
        body(hits=[{"link": "https://a", "title": "A"}]),
        ("data.hits[].url (in 1 of 1 hits)",),
        (),
        ("data.hits[].link",),
    ),
    ("renamed expected field", body(hits=[{"url": "https://a", "name": "A"}]), ("data.hits[].title",), (), ("data.hits[].name",)),
    ("expected field in one hit is enough", body(hits=[{"url": "https://a"}, {"url": "https://b", "title": "B"}]), (), (), ()),
    ("optional absent", body(hits=[{"url": "https://a", "title": "A"}]), (), (), ()),
    ("retyped item field", body(hits=[{"url": 5, "title": "A"}]), (), ("data.hits[].url: int, expected str",), ()),
    ("retyped optional", body(hits=[{"url": "u", "title": "A", "score": "high"}]), (), ("data.hits[].score: str, expected num",), ()),
    ("retyped top field", body(cost="0.007"), (), ("cost: str, expected num",), ()),
    ("bool is not a number", body(cost=True), (), ("cost: bool, expected num",), ()),
    ("missing top field", {"data": {"hits": []}}, ("cost",), (), ()),
    ("hit list renamed", {"data": {"results": []}, "cost": 0.1}, ("data.hits",), (), ("data.results",)),
    ("no hits: item fields unchecked", body(hits=[]), (), (), ()),
    ("not an object", ["a"], ("(the body is a JSON list, not an object)",), (), ()),
]


@pytest.mark.parametrize(("case", "data", "missing", "wrong", "unknown"), SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_check_shape_table(case: str, data: Any, missing: tuple[str, ...], wrong: tuple[str, ...], unknown: tuple[str, ...]) -> None:
    found = check_shape(TOY, data)
    assert (found.missing, found.wrong_type, found.unknown) == (missing, wrong, unknown)
    assert found.drift == bool(missing or wrong)  # new fields alone are not drift


COST_CASES = [
    (0.007, 0.007, "ok"),
    (0.00705, 0.007, "ok"),  # within a hundredth of a cent
    (0.012, 0.007, "drift"),
    (0.0, 0.005, "drift"),
    (None, 0.005, "ok"),  # nothing reported: the table is what perplexed charges
    (0.003, None, "ok"),  # no table (Agent API): reported only
    (None, None, "ok"),
    (2.0, 2.0, "ok"),
    (2.05, 2.0, "drift"),
]


@pytest.mark.parametrize(("reported", "table", "expected"), COST_CASES)
def test_compare_cost_table(reported: float | None, table: float | None, expected: str) -> None:
    status, note = compare_cost(reported, table)
    assert status == expected and note


@pytest.mark.parametrize(
    ("shape", "data", "rate", "expected"),
    [
        (SHAPES["exa"], {"costDollars": {"total": 0.007}}, None, 0.007),
        (SHAPES["firecrawl"], {"creditsUsed": 2}, 0.001, 0.002),
        (SHAPES["tavily"], {"usage": {"credits": 2}}, 0.008, 0.016),
        (SHAPES["tavily"], {"usage": {"credits": 2}}, None, None),
        (SHAPES["tavily"], {"usage": {"credits": "2"}}, 0.008, None),
        (SHAPES["brave"], {"web": {}}, None, None),  # a flat price: nothing reported
    ],
)
def test_reported_cost(shape: Shape, data: Any, rate: float | None, expected: float | None) -> None:
    got = reported_cost(shape, data, rate)
    assert got == (None if expected is None else pytest.approx(expected))


def _bodies(pattern: str) -> list[tuple[str, Any]]:
    out = []
    for path in sorted(ROOT.glob(pattern)):
        provider = path.parent.name
        for interaction in yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]:
            out.append((f"{path.parent.parent.name}/{provider}/{path.name}", json.loads(interaction["response"]["body"]["string"])))
    return out


GOOD = _bodies("cassettes/*/*/ok.yaml") + _bodies("cassettes/synthesized/firecrawl/scrape.yaml") + _bodies(
    "cassettes/synthesized/agent/create_completed.yaml"
)


@pytest.mark.parametrize(("name", "data"), GOOD, ids=[g[0] for g in GOOD])
def test_every_ok_cassette_has_the_declared_shape(name: str, data: Any) -> None:
    provider = name.split("/")[1]
    found = check_shape(SHAPES[provider], data)
    assert not found.drift, (found.missing, found.wrong_type)
    assert found.items >= 1


def test_every_provider_has_a_shape() -> None:
    from perplexed.providers._table import WEB_PROVIDERS  # private: the static table, not test plug-ins

    assert set(WEB_PROVIDERS) | {"agent"} == set(SHAPES)
    assert {"searxng", "ceramic", "firecrawl", "perplexity", "tavily", "exa", "brave", "linkup"} <= {
        g[0].split("/")[1] for g in GOOD
    }
