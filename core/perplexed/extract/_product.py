"""A product page's boilerplate: the blocks around a product that are not the product. Pure (CPU only).

:func:`without_boilerplate` takes the text the extractor kept for a product page and drops its lines that come only
from the blocks whose ``class``/``id`` words say they are customer reviews, recommendations ("related", "you may
also like", "recently viewed", up-/cross-sells) or cookie/consent banners and newsletter sign-ups, from dialogs
(``dialog``, ``role="dialog"``, ``aria-modal``), from rails of other products (:func:`is_rail`: three or more
sibling cards, each with a link and a price, whatever their class says: "similar items", "sponsored") and from the
site's chrome (header, menus, footer). What stays is the product itself: its name, description, specifications and
offer (tabbed panels included). The text is filtered, not re-extracted: removing blocks before the extractor runs
changes which container it picks as the page's main one (measured on WCXB dev: it dropped descriptions as often as
it dropped reviews). A line is a block's when its words are in the block in a row (for a long line also without
spaces, or by most of its runs of five words: the extractor glues a card's pieces and leaves out a review's
"Verified Purchase" link) and not elsewhere: a line also found outside those blocks stays. A block holding the
page's ``<h1>`` or most of its text is never boilerplate (a ``class`` word on a wrapper of the whole page says
nothing), nor is a small one (a rating line, a press quote), a testimonial block (the seller's own quotes) or an
editorial-review block (a book's blurbs and excerpt). When the filter would leave under a fifth of the text and
under 600 characters, the text is kept whole: the extractor took the reviews (or a listing's cards) as the page
because they are what it has. Measured on WCXB dev product pages (tune/holdout halves of the page ids): 0.664/0.667
-> 0.671/0.681.

:func:`with_structured` fills a thin product text in from the structured data (JSON-LD, microdata, OpenGraph): the
name, description and offer the text lacks. The name counts as there when its words are in the text in a row, the
description when its first twelve words are: compared by words, not characters (the structured copy often differs
by a typographic apostrophe or a dash: adding it again doubled the text).

:func:`without_repeats` drops a line that repeats an earlier one word for word: a product page shows its name,
price and options again in a sticky bar, a mobile layout and a gallery caption, and the extractor keeps each copy.
"""

from __future__ import annotations

import re
from typing import Any

from perplexed.extract._pagetype import _PRICE

__all__ = ["is_rail", "with_structured", "without_boilerplate", "without_repeats", "words_say_boilerplate"]

#: class/id words of the blocks around a product that are not the product
_WORDS = (
    # customer reviews (and the review widgets' own names)
    r"reviews?|yotpo|okendo|jdgm|judgeme|stamped|loox|trustpilot|bazaarvoice|bv|powerreviews|feefo|reevoo|"
    # recommendations
    r"related|recommend|recommendations?|recommended|upsells?|cross-?sells?|recently|similar|also|"
    # consent and sign-ups
    r"cookies?|consent|gdpr|onetrust|newsletter"
)
_CLASS = re.compile(rf"(?:^|[\s_-])(?:{_WORDS})(?:[\s_-]|$)", re.I)
#: the seller's own quotes and the publisher's reviews (a book's blurbs, its excerpt) are part of the offer
_OWN = re.compile(r"testimonial|editorial", re.I)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_TOKEN = re.compile(r"\w+")
_GONE = 0.2  # when less than this share of the text is left, the blocks were the page's content (kept whole)
_GONE_LEFT = 600  # ...and under this many characters (more is a product text of its own: the blocks were not all)
_SMALL = 400  # characters: a smaller block is part of the product (a rating line, a press quote)
_NAME_WORDS = 1000  # a structured name is in the text when all its words are, in a row...
_OPENING = 12  # ...a description when its first words are
_RAIL = 3  # a block with this many product cards (a link and a price each)...
_RAIL_SHARE = 0.6  # ...among its children is a rail of other products ("similar items", "sponsored")
_RAIL_TAGS = frozenset({"ul", "ol", "div", "section"})
_GLUED = 40  # characters: a longer line is matched without its spaces too
_SHINGLE = 5  # words in a run...
_RUN_WORDS = 15  # ...of a line of this many words or more, which is the blocks' when this share of its runs...
_RUNS_IN = 0.7  # ...is in them...
_RUNS_OUT = 0.2  # ...and at most this share outside them
_KEEP = 0.5  # a block with this share of the page's text or more is the page, not a block around it


def _key(text: str) -> str:
    return " ".join(_TOKEN.findall(text.lower()))


def words_say_boilerplate(node: Any) -> bool:
    """Whether ``node``'s ``class``/``id`` words name a review, recommendation or consent block."""
    attrs = _CAMEL.sub("-", f"{node.get('class', '')} {node.get('id', '')}")
    return len(attrs) >= 3 and _CLASS.search(attrs) is not None


def _chrome(node: Any) -> bool:
    """Whether ``node`` is the site's chrome: its header, menus, search box or footer."""
    return node.tag in ("header", "nav", "footer") or node.get("role") in ("banner", "navigation", "contentinfo", "search")


def _dialog(node: Any) -> bool:
    """Whether ``node`` is a dialog (a modal: sign-in, sharing, "save to a collection", a size guide's overlay)."""
    return node.tag == "dialog" or node.get("role") in ("dialog", "alertdialog") or node.get("aria-modal") == "true"


def is_rail(node: Any, marks: tuple[set[Any], set[Any]] | None = None) -> bool:
    """Whether ``node`` is a rail of other products: ``_RAIL`` or more element children, most of them (``_RAIL_SHARE``)
    cards that each hold a link and a price. ``marks``: the elements holding a link and those holding a price
    (:func:`_marks`, found once for a whole page), else they are looked for under ``node``."""
    children = [child for child in node if isinstance(child.tag, str)]
    if len(children) < _RAIL:
        return False
    if marks is None:
        marks = _marks(node)
    linked, priced = marks
    cards = sum(1 for child in children if child.tag != "a" and child in linked and child in priced)
    return cards >= _RAIL and cards >= _RAIL_SHARE * len(children)


def _marks(root: Any) -> tuple[set[Any], set[Any]]:
    """The elements under ``root`` (itself included) that hold a link, and those whose own text or a descendant's
    holds a price (one pass: a rail's test is then a set look-up per card)."""
    linked: set[Any] = set()
    priced: set[Any] = set()
    for node in root.iter("a"):
        for holder in (node, *node.iterancestors()):
            if holder in linked:
                break
            linked.add(holder)
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue
        parent = node.getparent()
        found = [node] if node.text and _PRICE.search(node.text) else []
        if node.tail and parent is not None and _PRICE.search(node.tail):
            found.append(parent)
        for start in found:
            for holder in (start, *start.iterancestors()):
                if holder in priced:
                    break
                priced.add(holder)
    return linked, priced


def _boilerplate(root: Any, total: int) -> list[Any]:
    """The outermost review, recommendation, consent, dialog, product-rail and chrome blocks under ``root``."""
    found: list[Any] = []
    seen: set[Any] = set()
    marks = _marks(root)
    for node in root.iter():
        if not isinstance(node.tag, str) or node.tag in ("body", "html", "main"):
            continue
        chrome = _chrome(node)
        if not chrome and not words_say_boilerplate(node) and not _dialog(node) and \
                not (node.tag in _RAIL_TAGS and is_rail(node, marks)):
            continue
        if any(ancestor in seen for ancestor in node.iterancestors()):
            continue
        if chrome:  # the site's header, menus or footer, however small (not one holding the product's name)
            if node.find(".//h1") is None and len(node.text_content()) < _KEEP * total:
                found.append(node)
                seen.add(node)
            continue
        if any(_OWN.search(f"{n.get('class', '')} {n.get('id', '')}")
               for n in (node, *node.iterancestors())):  # the seller's picked quotes, the publisher's reviews
            continue
        size = len(node.text_content())
        if node.find(".//h1") is not None or size >= _KEEP * total or size < _SMALL:
            continue
        found.append(node)
        seen.add(node)
    return found


def _outside(root: Any, skip: set[Any]) -> list[str]:
    """The text pieces of ``root`` outside the ``skip`` blocks (iterative: a page's tree can be deep)."""
    parts: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.tail and node is not root:
            parts.append(node.tail)
        if node in skip:
            continue
        if isinstance(node.tag, str) and node.text:
            parts.append(node.text)
        stack.extend(reversed(node))
    return parts


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1)}


def _dropped(text: str, blocks: list[Any], outside: str, glued_too: bool = False) -> str:
    """``text`` without its lines found in ``blocks`` and not in ``outside`` (the words of the rest of the page);
    with ``glued_too``, a long line is also looked for without its spaces, and by its runs of words (most of them
    in the blocks, few outside: the extractor left out a piece of a review, a "Verified Purchase" link)."""
    inside = " " + " | ".join(_key(" ".join(block.itertext())) for block in blocks) + " "
    inside_glued, outside_glued = inside.replace(" ", ""), outside.replace(" ", "")
    inside_runs: set[tuple[str, ...]] | None = None
    outside_runs: set[tuple[str, ...]] = set()
    kept = []
    for line in text.split("\n"):
        key = _key(line)
        if key and f" {key} " in inside and f" {key} " not in outside:
            continue
        glued = key.replace(" ", "")  # the extractor glues a card's pieces ("Advertiser: x" + "Promoted items")
        if glued_too and len(glued) >= _GLUED and glued in inside_glued and glued not in outside_glued:
            continue
        words = key.split()
        if glued_too and len(words) >= _RUN_WORDS:
            if inside_runs is None:  # only for a page with such lines
                inside_runs, outside_runs = _shingles(inside.split()), _shingles(outside.split())
            runs = _shingles(words)
            if (len(runs & inside_runs) >= _RUNS_IN * len(runs)
                    and len(runs & outside_runs) <= _RUNS_OUT * len(runs)):
                continue
        kept.append(line)
    return "\n".join(kept).strip()


def without_boilerplate(text: str, tree: Any) -> str:
    """``text`` (extracted from the product page ``tree``, lxml, not changed) without the lines that come only
    from its review, recommendation and consent blocks and its rails of other products."""
    body = tree.find("body")
    root = body if body is not None else tree
    total = len(root.text_content())
    blocks = _boilerplate(root, total) if total else []
    if not blocks:
        return text
    outside = f" {_key(' '.join(_outside(root, set(blocks))))} "
    chrome = [block for block in blocks if _chrome(block)]
    if chrome:  # the site's header, menus or footer are never the page (an app shell's page is only those)
        text = _dropped(text, chrome, outside)
    others = [block for block in blocks if not _chrome(block)]
    out = _dropped(text, others, outside, glued_too=True) if others else text
    return text if len(out) < _GONE * len(text) and len(out) < _GONE_LEFT else out


def _lacks(text_key: str, piece: str, words: int) -> bool:
    """Whether the text (its words, ``text_key``) lacks ``piece``'s first ``words`` words in a row (compared by
    words: a typographic apostrophe or a dash is the same piece)."""
    key = " ".join(_TOKEN.findall(piece.lower())[:words])
    return bool(key) and f" {key} " not in text_key


def with_structured(text: str, structured: dict[str, Any]) -> str:
    """A product's ``text`` with its structured name, description and offer added where the text lacks them."""
    text_key = f" {_key(text)} "
    extra = []
    name = structured.get("name", "")
    if name and _lacks(text_key, name, _NAME_WORDS):
        extra.append(name)
    description = structured.get("description", "")
    if description and _lacks(text_key, description, _OPENING):
        extra.append(description)
    if structured.get("price") and structured["price"] not in text:
        offer = " ".join(str(structured[k]) for k in ("price", "currency") if structured.get(k))
        extra.append(f"Price: {offer}" + (f" ({structured['availability']})" if structured.get("availability") else ""))
    return "\n".join([*extra, text]).strip() if extra else text


def without_repeats(text: str) -> str:
    """``text`` without the lines whose words repeat an earlier line's (the first copy stays)."""
    seen: set[str] = set()
    kept = []
    for line in text.split("\n"):
        key = _key(line)
        if key and key in seen:
            continue
        seen.add(key)
        kept.append(line)
    return "\n".join(kept)
