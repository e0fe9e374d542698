"""A page's structured data: JSON-LD, microdata and OpenGraph, read into one flat dict. Pure (CPU only, no I/O).

:func:`structured_data` returns what the page declares about itself: ``title``, ``author``, ``published``,
``type`` (the main schema.org ``@type`` or ``og:type``), ``description``, ``types`` (every schema.org type seen,
for the page-type classifier), and for a product ``name``, ``price``, ``currency``, ``availability``, ``brand``,
``sku``. Absent keys are simply missing. Nothing is fetched; a malformed JSON-LD block is skipped.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from typing import Any

__all__ = ["StructuredData", "structured_data"]

StructuredData = dict[str, Any]

_JSONLD = re.compile(r"<script[^>]{0,300}?type\s*=\s*[\"']?application/ld\+json[\"']?[^>]{0,300}>(.*?)</script\s*>",
                     re.I | re.S)
_META = re.compile(r"<meta\b[^>]{0,1500}>", re.I)
_ATTR = re.compile(r"([\w:.-]+)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+)")
#: ``itemtype=...`` case-insensitively; its first letter as the set of what ``re.I`` matches for "i" (I, i, U+0130,
#: U+0131), so that the search only tries the positions of that letter (a case-insensitive first letter is tried at
#: every position: milliseconds on a large page)
_ITEMTYPE = re.compile("[iI\u0130\u0131]" r"(?i:temtype\s*=\s*[\"']?https?://schema\.org/(\w+))")
_ITEMPROP_META = re.compile(r"<(?:meta|link)\b[^>]{0,600}?itemprop\s*=\s*[\"'](\w+)[\"'][^>]{0,600}?"
                            r"(?:content|href)\s*=\s*[\"']([^\"']{1,500})[\"']", re.I)
_ITEMPROP_TEXT = re.compile(r"<(span|div|h1|h2|p|strong|b)\b[^>]{0,600}?itemprop\s*=\s*[\"'](name|price|priceCurrency|"
                            r"description)[\"'][^>]{0,600}>([^<]{1,2000})<", re.I)
_MAX_SCAN = 2_000_000
_MAX_BLOCK = 500_000

#: the schema.org types that describe a page's main thing, most telling first (a page often declares an
#: Organization or a WebSite beside its real subject)
_MINOR = {"organization", "website", "webpage", "breadcrumblist", "listitem", "imageobject", "person", "searchaction",
          "sitenavigationelement", "wpheader", "wpfooter", "wpsidebar", "readaction", "entrypoint", "postaladdress",
          "contactpoint", "corporation", "localbusiness", "videoobject", "brand", "offer", "aggregateoffer",
          "aggregaterating", "rating", "review", "thing", "place", "geocoordinates", "propertyvalue",
          "quantitativevalue", "monetaryamount", "pricespecification", "unitpricespecification", "interactioncounter",
          "speakablespecification", "creativework", "imagegallery", "sitelinkssearchbox"}


def _text(value: Any) -> str:
    if isinstance(value, str):
        return re.sub(r"\s+", " ", html_lib.unescape(value)).strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, dict):
        return _text(value.get("name") or value.get("@value") or "")
    if isinstance(value, list) and value:
        return ", ".join(t for t in (_text(v) for v in value[:5]) if t)
    return ""


def _types(node: dict[str, Any]) -> list[str]:
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return [k.rsplit("/", 1)[-1] for k in kinds if isinstance(k, str)]


def _nodes(value: Any, depth: int = 0) -> list[dict[str, Any]]:
    """Every JSON-LD object with a ``@type``, top-level ones first, ``@graph`` flattened (bounded depth)."""
    out: list[dict[str, Any]] = []
    if depth > 6:
        return out
    if isinstance(value, list):
        for item in value[:200]:
            out.extend(_nodes(item, depth + 1))
    elif isinstance(value, dict):
        if "@type" in value:
            out.append(value)
        if "@graph" in value:
            out.extend(_nodes(value["@graph"], depth + 1))
        for key in ("mainEntity", "mainEntityOfPage", "itemListElement", "hasPart", "offers"):
            if key in value and depth < 3:
                out.extend(_nodes(value[key], depth + 1))
    return out


def _jsonld(raw_html: str) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    for block in _JSONLD.findall(raw_html[:_MAX_SCAN])[:30]:
        block = block.strip()
        if not block or len(block) > _MAX_BLOCK:
            continue
        try:
            data = json.loads(block)
        except ValueError:
            try:  # a common fault: raw newlines or a trailing ';'
                data = json.loads(re.sub(r"[\r\n\t]+", " ", block).rstrip(";"))
            except ValueError:
                continue
        nodes.extend(_nodes(data))
    return nodes


def _offer(node: dict[str, Any], out: StructuredData) -> None:
    offers = node.get("offers")
    offer = offers[0] if isinstance(offers, list) and offers else offers
    if not isinstance(offer, dict):
        return
    price = offer.get("price", offer.get("lowPrice"))
    if price is None and isinstance(offer.get("priceSpecification"), dict):
        price = offer["priceSpecification"].get("price")
    if price not in (None, ""):
        out.setdefault("price", _text(price))
    if offer.get("priceCurrency"):
        out.setdefault("currency", _text(offer["priceCurrency"]))
    availability = _text(offer.get("availability"))
    if availability:
        out.setdefault("availability", availability.rsplit("/", 1)[-1])


def structured_data(raw_html: str) -> StructuredData:
    """JSON-LD, microdata and OpenGraph of a page, as one flat dict (see the module docstring)."""
    out: StructuredData = {}
    nodes = _jsonld(raw_html)
    types: list[str] = []
    for node in nodes:
        types.extend(_types(node))
    head = raw_html[:_MAX_SCAN]
    # microdata is looked for only on a page that has some: every letter these case-insensitive patterns match after
    # "i" is ASCII, so a page whose lower-cased text lacks "temtype" ("temprop") has no match (issue 36: time)
    lowered = head.lower()
    micro = _ITEMTYPE.findall(head) if "temtype" in lowered else []
    itemprops = "temprop" in lowered
    types.extend(micro)
    main = [t for t in types if t.lower() not in _MINOR]
    if main:
        out["type"] = main[0]
    for node in nodes:
        kinds = {k.lower() for k in _types(node)}
        if "product" in kinds or "productgroup" in kinds:
            for key, field in (("name", "name"), ("description", "description"), ("sku", "sku"), ("brand", "brand")):
                value = _text(node.get(field))
                if value:
                    out.setdefault(key, value[:5000])
            _offer(node, out)
        elif kinds & {"offer", "aggregateoffer"}:
            _offer({"offers": node}, out)
        if kinds - _MINOR or not out.get("title"):
            headline = _text(node.get("headline") or (node.get("name") if kinds - _MINOR else None))
            if headline:
                out.setdefault("title", headline[:500])
            author = _text(node.get("author"))
            if author:
                out.setdefault("author", author[:200])
            published = _text(node.get("datePublished") or node.get("dateCreated"))
            if published:
                out.setdefault("published", published[:40])
            if kinds - _MINOR and "description" not in out:
                description = _text(node.get("description"))
                if description:
                    out["description"] = description[:5000]
    for prop, value in _ITEMPROP_META.findall(head) if itemprops else ():
        key = {"priceCurrency": "currency", "datePublished": "published"}.get(prop, prop)
        if key in ("price", "currency", "availability", "published", "name", "sku"):
            out.setdefault(key, _text(value).rsplit("/", 1)[-1] if key == "availability" else _text(value))
    for _tag, prop, value in _ITEMPROP_TEXT.findall(head) if itemprops else ():
        key = {"priceCurrency": "currency"}.get(prop, prop)
        if "product" in {t.lower() for t in micro} or key != "name":
            out.setdefault(key, _text(value))
    og: dict[str, str] = {}
    for tag in _META.findall(head[:300_000]):
        attrs = {k.lower(): v.strip("\"'") for k, v in _ATTR.findall(tag[5:])}
        name = (attrs.get("property") or attrs.get("name") or "").lower()
        if name.startswith(("og:", "article:", "product:")) and "content" in attrs:
            og.setdefault(name, _text(attrs["content"]))
        elif name == "author" and "content" in attrs:
            og.setdefault("author", _text(attrs["content"]))
    if og.get("og:title"):
        out.setdefault("title", og["og:title"])
    if og.get("og:type"):
        out["og_type"] = og["og:type"]
        out.setdefault("type", og["og:type"])
    if og.get("og:description"):
        out.setdefault("description", og["og:description"])
    for key, name in (("article:published_time", "published"), ("article:author", "author"), ("author", "author"),
                      ("product:price:amount", "price"), ("og:price:amount", "price"),
                      ("product:price:currency", "currency"), ("og:price:currency", "currency"),
                      ("product:availability", "availability")):
        if og.get(key):
            out.setdefault(name, og[key])
    if types:
        out["types"] = list(dict.fromkeys(types))[:20]
    return out
