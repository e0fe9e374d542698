"""The main-region fallback of typed extraction (issue 36, WCXB dev): pages whose items trafilatura drops as
link-dense (a collection's grid, a service page's feature blocks, a listing's entries) keep them; menus outside
``<nav>`` stay out; and a page declaring a legacy charset is read as the decoded text it is."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest
import typed_pages as tp
from perplexed.extract import _strategies  # private: the region rule is unit-tested
from perplexed.extract._extract import decode_text, extract_html  # private: extraction without a fetch

SAMPLE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "wcxb"


def _f1(predicted: str, reference: str) -> float:  # WCXB's evaluate.py word F1 (lower-cased \w+ tokens)
    pred, ref = re.findall(r"\w+", predicted.lower()), re.findall(r"\w+", reference.lower())
    overlap = sum((Counter(pred) & Counter(ref)).values())
    return 0.0 if not overlap else 2 * overlap / (len(pred) + len(ref))


def _entry(page_id: str) -> tuple[str, dict[str, str]]:
    entry = next(e for e in json.loads((SAMPLE / "pages.json").read_text()) if e["id"] == page_id)
    raw = decode_text(gzip.decompress((SAMPLE / "html" / f"{page_id}.html.gz").read_bytes()), None)
    return raw, entry


@pytest.mark.parametrize(("page_id", "floor"), [("0643", 0.75), ("0713", 0.9), ("2851", 0.8)])
def test_a_page_whose_items_trafilatura_drops_gets_its_main_region(page_id: str, floor: float,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    raw, entry = _entry(page_id)
    extracted = extract_html(raw, entry.get("url"), "text")
    assert extracted.page_type in ("collection", "listing", "service")
    assert _f1(extracted.text, entry["main_content"]) >= floor
    monkeypatch.setattr(_strategies, "_REGION_SHARE", 0.0)  # trafilatura's text alone: far below
    monkeypatch.setattr(_strategies, "_SERVICE_REGION_SHARE", 0.0)  # (a service page's own share)
    assert _f1(extract_html(raw, entry.get("url"), "text").text, entry["main_content"]) < floor - 0.2


def test_a_menu_of_short_links_outside_nav_is_not_part_of_the_main_region() -> None:
    from lxml import html as lxml_html  # type: ignore[import-untyped]

    menu = "".join(f"<div class='col'><a href='/m/{i}'>Entry {i}</a></div>" for i in range(30))
    cards = "".join(f"<li><a href='/e/{i}'>Event number {i}</a> in a city of the Americas, on day {i}</li>"
                    for i in range(8))
    tree = lxml_html.fromstring(f"<html><body><div class='megamenu'>{menu}</div><div class='content'><h1>Events"
                                f"</h1><ul>{cards}</ul></div></body></html>")
    region = _strategies._main_region(tree, "markdown")
    assert "# Events" in region and "- Event number 7 in a city of the Americas, on day 7" in region
    assert "Entry" not in region


def test_a_page_declaring_a_legacy_charset_is_read_as_the_decoded_text() -> None:
    """The body is decoded before extraction: a ``<meta charset>`` naming another charset must not garble the
    tree the typed strategies read (here the forum posts)."""
    html = tp.forum_thread().replace("charset='utf-8'", "charset='windows-1252'").replace(
        "My sourdough starter", "My crème brûlée sourdough starter")
    extracted = extract_html(html, "https://forum.example/t/starter-stopped-rising/123", "text")
    assert extracted.page_type == "forum"
    assert "My crème brûlée sourdough starter" in extracted.text and "Ã" not in extracted.text
