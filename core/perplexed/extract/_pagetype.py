"""What kind of page this is: article, forum, product, collection, listing, documentation, service or other.

Pure (CPU only, no I/O). :func:`classify` scores each type from the page's structured data (schema.org types,
``og:type``), its URL's path, and its DOM's structure (class and id words, repeated item cards, prices, code
blocks, post containers, add-to-cart buttons), and returns the best type with a confidence in [0, 1]. Every rule
is a general signal (no site list); ``article`` is the default a page falls back to when no signal is strong.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from perplexed._models import PageType

__all__ = ["PAGE_TYPES", "PageKind", "PageType", "classify"]
PAGE_TYPES: tuple[PageType, ...] = ("article", "forum", "product", "collection", "listing", "documentation",
                                    "service", "other")

#: schema.org / og types (lower case) and the page type they point at, with a weight
_SCHEMA: dict[str, tuple[PageType, float]] = {
    "article": ("article", 2.0), "newsarticle": ("article", 3.0), "blogposting": ("article", 3.0),
    "reportagenewsarticle": ("article", 3.0), "scholarlyarticle": ("article", 2.0), "recipe": ("article", 2.0),
    "howto": ("article", 1.0), "review": ("article", 0.5), "claimreview": ("article", 2.0),  # a fact-check
    "qapage": ("forum", 4.0), "discussionforumposting": ("forum", 4.0), "question": ("forum", 2.0),
    "answer": ("forum", 1.5), "socialmediaposting": ("forum", 1.5),
    "product": ("product", 4.0), "productgroup": ("product", 4.0), "productmodel": ("product", 3.0),
    "collectionpage": ("collection", 2.5), "offercatalog": ("collection", 2.0), "itemlist": ("listing", 1.0),
    "searchresultspage": ("listing", 2.0),
    "techarticle": ("documentation", 3.0), "apireference": ("documentation", 4.0),
    "softwaresourcecode": ("documentation", 1.5),
    "service": ("service", 3.0), "professionalservice": ("service", 2.0), "faqpage": ("service", 1.0),
    "course": ("service", 1.5), "softwareapplication": ("service", 1.5), "webapplication": ("service", 1.5),
}
#: a FAQPage's questions and answers (its ``mainEntity``) are its FAQ, not a forum thread: not counted for it
_FAQ_PARTS = frozenset({"question", "answer"})
_OG: dict[str, tuple[PageType, float]] = {"article": ("article", 1.0), "product": ("product", 2.5),
                                          "product.group": ("collection", 1.5), "og:product": ("product", 2.5)}
_URL: list[tuple[re.Pattern[str], PageType, float]] = [
    (re.compile(r"/(forums?|threads?|topics?|questions|discussions?|community|t|viewtopic(\.php)?|showthread(\.php)?)"
                r"(/|$|\?|\.)"), "forum", 2.0),
    (re.compile(r"/(products?|dp|p|item|shop/p)/[^/]+"), "product", 1.5),
    (re.compile(r"/(collections|category|categories|c|shop|catalog|store|departments?)(/|$)"), "collection", 1.5),
    (re.compile(r"/(docs?|documentation|manual|reference|api|guide|guides|handbook|userguide|usersguide|wiki|kb|"
                r"tutorials?|learn/docs)(/|$)|\.htm$|readthedocs|/en/(latest|stable)/"), "documentation", 1.5),
    (re.compile(r"/(news|blog|articles|events|jobs|careers|press|courses|programs|directory|search|tag|tags|"
                r"archive|resources|listings?)/?$"), "listing", 1.5),
    (re.compile(r"/(services?|pricing|plans|solutions|features|consulting|hire|book|contact)(/|$)"), "service", 1.5),
    (re.compile(r"/\d{4}/\d{2}/|/(blog|news|article|articles|posts?|story|stories)/[^/]+"), "article", 1.0),
]
#: a site's home page is most often its offer (WCXB dev: 41 of its 75 home pages are service pages); a strong other
#: signal (a Product in JSON-LD, a post stream) still wins. Only for a page with a URL (no URL is no home page).
_HOME = (re.compile(r"^/(index\.(html?|php))?$"), 2.0)
_WORD = re.compile(r"[a-z]+")
#: a price: "$12.99", "€ 5", "12,50 EUR", "99 kr" (case-insensitive). Both patterns open on the set of their possible
#: first characters (then a lookbehind picks the branch) so that a search only tries the positions of those characters:
#: the same matches as ``(?:[$€£¥₹]\s?\d[\d,.]*|\d[\d,.]*\s?(?:€|eur|usd|kr)\b)`` with re.I, in a fraction of the time
_PRICE = re.compile(r"[$€£¥₹\d](?i:(?<=[$€£¥₹])\s?\d[\d,.]*|(?<=\d)[\d,.]*\s?(?:€|eur|usd|kr)\b)")
#: an add-to-cart control's words; the same matches as ``\b(add to (cart|bag|basket|trolley)|buy (it )?now|in den
#: warenkorb|ajouter au panier)\b`` with re.I ("i" there also matches U+0130 and U+0131)
_CART = re.compile("[aAbBiI\u0130\u0131](?<!\\w[aAbBiI\u0130\u0131])"
                   r"(?i:(?<=a)dd to (cart|bag|basket|trolley)|(?<=b)uy (it )?now|(?<=i)n den warenkorb|"
                   r"(?<=a)jouter au panier)\b")


@dataclass
class PageKind:
    """The type of a page, its confidence, and the scores that chose it (for debugging and tests)."""

    type: PageType
    confidence: float
    scores: dict[str, float] = field(default_factory=dict)


_CONTAINERS = frozenset(("ul", "ol", "div", "section"))
_ITEMS = frozenset(("li", "div", "article"))


def _features(tree: Any) -> tuple[Counter[str], Counter[str], int, str]:
    """Class/id words, tag counts, the number of repeated sibling groups (cards), and the buttons' text. (Each
    distinct class-and-id string's words are found once and counted as often as the string is seen.)"""
    names: list[str] = []
    attributes: list[str] = []
    buttons: list[str] = []
    repeated = 0
    for node in tree.iter("*"):  # the elements (no comments or processing instructions)
        tag = node.tag
        names.append(tag)
        attrs = node.get("class", "") + " " + node.get("id", "")
        if len(attrs) > 1:
            attributes.append(attrs)
        if tag in ("button", "input") and len(buttons) < 200:
            buttons.append(node.get("value", "") + " " + (node.text or ""))
        if tag in _CONTAINERS and len(node) >= 4:
            kinds = Counter((child.tag, child.get("class", "")) for child in node if isinstance(child.tag, str))
            top = kinds.most_common(1)
            if top and top[0][1] >= 4 and top[0][0][0] in _ITEMS and \
                    sum(1 for child in node if child.find(".//a") is not None) >= 4:
                repeated += 1
    words: Counter[str] = Counter()
    for attrs, seen in Counter(attributes).items():
        for word in set(_WORD.findall(attrs.lower())):
            words[word] += seen
    return words, Counter(names), repeated, " ".join(buttons)


def classify(tree: Any, structured: dict[str, Any], url: str | None, text: str = "") -> PageKind:
    """The page's type from its parsed HTML ``tree`` (lxml), its :func:`structured_data` and its URL."""
    scores: dict[str, float] = dict.fromkeys(PAGE_TYPES, 0.0)
    scores["article"] = 1.0
    kinds = [str(kind).lower() for kind in structured.get("types", [])]
    faq = "faqpage" in kinds and "qapage" not in kinds
    for kind in kinds:
        hit = _SCHEMA.get(kind)
        if hit and not (faq and kind in _FAQ_PARTS):
            scores[hit[0]] += hit[1]
    og = _OG.get(str(structured.get("og_type", "")).lower())
    if og:
        scores[og[0]] += og[1]
    path = re.sub(r"^[a-z]+://[^/]+", "", (url or "").lower()) or "/"
    for pattern, kind, weight in _URL:
        if pattern.search(path):
            scores[kind] += weight
    if url and _HOME[0].match(path):
        scores["service"] += _HOME[1]
    words, tags, repeated, buttons = _features(tree)
    body_text = text or ""
    prices = len(_PRICE.findall(body_text[:200_000]))
    carts = len(_CART.findall(buttons)) + len(_CART.findall(body_text[:200_000]))
    forum_words = sum(words[w] for w in ("post", "posts", "message", "reply", "replies", "thread", "topic",
                                         "postbody", "answer", "answers", "forum", "bbcode", "username", "vote"))
    scores["forum"] += min(3.0, forum_words / 8)
    code = tags["pre"] + tags["code"] / 4
    doc_words = sum(words[w] for w in ("sidebar", "toc", "docs", "doc", "documentation", "api", "sphinx",
                                       "markdown", "highlight", "breadcrumb", "version", "menu"))
    scores["documentation"] += min(2.5, code / 3) + min(1.0, doc_words / 10)
    product_words = sum(words[w] for w in ("product", "price", "cart", "variant", "sku", "quantity", "swatch",
                                           "gallery", "pdp", "addtocart"))
    scores["product"] += min(2.0, carts * 0.7) + min(1.0, product_words / 15)
    grid_words = sum(words[w] for w in ("grid", "card", "tile", "filter", "filters", "facet", "facets", "sort",
                                        "pagination", "collection", "listing", "results", "plp"))
    if prices >= 6:
        scores["collection"] += min(2.5, prices / 8) + min(1.0, grid_words / 15)
        scores["product"] -= 1.0 if prices >= 12 else 0.0
    scores["listing"] += min(2.0, repeated / 2) + min(1.0, grid_words / 20) + min(1.0, tags["article"] / 6)
    service_words = sum(words[w] for w in ("pricing", "plan", "plans", "tier", "feature", "features", "cta",
                                           "testimonial", "testimonials", "hero", "benefits", "services"))
    scores["service"] += min(2.5, service_words / 6)
    paragraphs = tags["p"]
    if paragraphs >= 12:
        scores["article"] += 1.0
    if tags["article"] == 1 or words["entry"] or words["prose"]:
        scores["article"] += 0.5
    best = max(scores, key=lambda k: scores[k])
    ordered = sorted(scores.values(), reverse=True)
    margin = ordered[0] - ordered[1]
    confidence = round(min(1.0, 0.5 + margin / 4), 2)
    return PageKind(type=best, confidence=confidence, scores={k: round(v, 2) for k, v in scores.items()})  # type: ignore[arg-type]
