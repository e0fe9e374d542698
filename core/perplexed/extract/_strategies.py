"""Page-type-aware extraction: classify the page, then extract it with the strategy of its type. Pure (CPU only).

trafilatura stays the base (and is all an article gets). A type's own strategy is used only when the type clearly
beats ``article`` (score margin ``_SURE``); otherwise the page is extracted as an article:

- **forum**: every post of the thread in page order, with its author line, without the posts' chrome (avatars,
  member statistics, signatures, action bars) and controls (:mod:`perplexed.extract._forum`); trafilatura's text
  (without its control-label lines) when the posts found are much shorter;
- **product**: trafilatura's text (tabbed panels included) without the lines that come only from customer-review,
  recommendation and consent blocks, dialogs, rails of other products and the site's chrome, and without repeated lines (:mod:`perplexed.extract._product`), and when it is
  thin the name, description, price and availability from the structured data (JSON-LD, microdata, OpenGraph)
  where the text lacks them;
- **service**: trafilatura on the page with item titles that are links made text (feature lists, pricing tables
  and their headings kept);
- **collection / listing**: trafilatura's text, plus the items of the page's main grid it dropped as link-dense
  (the largest group of 4+ same-class sibling cards, each with a link and a short text, outside navigation,
  headers, footers and asides): each item's title and short description, one line each; facets, sort controls and
  pagination are not item cards and stay out; a collection's or listing's review, recommendation and consent blocks and its
  cards' control lines ("Add to cart", "Sale price") go too (:mod:`perplexed.extract._collection`);
- **documentation**: trafilatura's text (headings, prose, code blocks and tables kept; navigation and sidebars
  dropped by its boilerplate rules). Dropping sidebar/facet/version-picker containers by class before it was
  measured on WCXB dev and made the score worse: not kept.

Every type: a cookie-consent banner (:mod:`perplexed.extract._consent`) is dropped from the tree the typed
strategies read, and its lines from trafilatura's text.

Then the **main region** fallback: a collection, listing, documentation or service page (or a page the classifier is
unsure is an article, ``_REGION_UNSURE``) whose text is under ``_REGION_SHARE`` (a service page:
``_SERVICE_REGION_SHARE``) of its main region's text gets the
region's whole text (:func:`_main_region`): trafilatura dropped the page's items (a listing's entries, a grid's
cards, a service page's feature blocks) as link-dense boilerplate. A collection or listing page takes its region
more readily, without its browsing controls, unless the region is only a little longer than the text
(:mod:`perplexed.extract._listing`); so does a sure "article" that is nearly a listing without a comment thread
(``nearly_listing``) and a "forum" without a sure thread (``weak_forum``). Measured on a fixed half of WCXB dev (md5 of the
page id) and checked on the other half; not for sure articles (on the article-extraction benchmark the region of an
article adds its comments and menus).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from perplexed.extract._collection import prune as prune_collection
from perplexed.extract._collection import without_card_controls
from perplexed.extract._consent import drop_consent, without_lines
from perplexed.extract._forum import BLOCK_TAGS, CONTROL_TAGS, block_text, thread_posts, without_controls
from perplexed.extract._listing import (
    LISTING_ALIKE_SHARE,
    NEARLY_LISTING_SHARE,
    WEAK_FORUM_SHARE,
    listing_alike,
    nearly_listing,
    once,
    prune,
    region_share,
    weak_forum,
)
from perplexed.extract._pagetype import _PRICE, PageType, classify
from perplexed.extract._product import with_structured, without_boilerplate, without_repeats
from perplexed.extract._structured import structured_data
from perplexed.extract._trees import page_tree, trafilatura_tree

__all__ = ["TypedText", "extract_typed"]

Format = Literal["markdown", "text"]

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_SURE = 1.0  # how far a type's score must beat "article"'s for its strategy to be used
_THIN = 600  # characters of product text below which the structured data fills in
_RECALL_BELOW = 250  # characters of text below which trafilatura's recall pass is tried
_LIMIT = 4_000_000  # bytes of HTML the typed strategies read (bigger pages get the article strategy)


@dataclass
class TypedText:
    """A page's extracted text with its type, the type's confidence and the page's structured data."""

    text: str
    page_type: PageType
    confidence: float
    structured: dict[str, Any] = field(default_factory=dict)


def _trafilatura(document: Any, url: str | None, fmt: Format, comments: bool = False) -> str:
    """trafilatura's text of ``document``; its recall pass when the precise pass kept (almost) nothing of a page,
    then its pass with comments (a raw page only: a tree may have been changed by the first pass). A raw page is
    parsed once, as trafilatura would (:func:`~perplexed.extract._trees.trafilatura_tree`), for all its passes."""
    raw = isinstance(document, str)
    if raw:
        document = trafilatura_tree(document)
        if document is None:  # no HTML: trafilatura would have found no tree either
            return ""
    text = _trafilatura_pass(document, url, fmt, comments, recall=False)
    if len(text) < _RECALL_BELOW and raw:
        again = _trafilatura_pass(document, url, fmt, comments, recall=True)
        if len(again) > len(text):
            text = again
        if len(text) < _RECALL_BELOW and not comments:  # a page that is all comments (a thread, a link's discussion)
            with_comments = _trafilatura_pass(document, url, fmt, True, recall=False)
            if len(with_comments) > len(text):
                text = with_comments
    return text


def _trafilatura_pass(document: Any, url: str | None, fmt: Format, comments: bool, recall: bool) -> str:
    import trafilatura
    from trafilatura.core import determine_returnstring
    from trafilatura.settings import Extractor

    options = Extractor(output_format="markdown" if fmt == "markdown" else "txt", formatting=fmt == "markdown",
                        comments=comments, tables=True, url=url, recall=recall)
    result: Any = trafilatura.bare_extraction(document, url=url, options=options)
    return "" if result is None else str(determine_returnstring(result, options) or "").strip()


def _inside(node: Any, tags: tuple[str, ...]) -> bool:
    parent = node.getparent()
    while parent is not None:
        if parent.tag in tags:
            return True
        parent = parent.getparent()
    return False


def _unwrap_heading_links(tree: Any) -> None:
    """An item's title is often a link: trafilatura drops link-dense blocks, so the link becomes its text."""
    for anchor in list(tree.iter("a")):
        if _inside(anchor, _HEADINGS):
            anchor.drop_tag()


def _lines(node: Any) -> str:
    parts: list[str] = []
    block_text(node, parts)
    lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


_CARD_MIN = 4
_CARD_LINKED = 0.8  # an item with more of its text in links is a menu entry, not a card
_CARD_SHARE = 0.5  # the missing cards must weigh this much against the text for the page to be their grid
_CARD_TEXT = (15, 600)  # characters of text an item card has (a title and a short description)


def _cards(tree: Any) -> list[str]:
    """The items of the page's main grid: the largest group of 4+ same-tag, same-class siblings that each hold a
    link and a short text (outside navigation, headers, footers and asides), one line per item."""
    best: list[str] = []
    best_size = 0
    for parent in tree.iter("ul", "ol", "div", "section", "main"):
        if len(parent) < _CARD_MIN or _inside(parent, ("nav", "header", "footer", "aside")):
            continue
        groups: dict[tuple[str, str], list[Any]] = {}
        for child in parent:
            if isinstance(child.tag, str) and child.tag in ("li", "div", "article"):
                groups.setdefault((child.tag, child.get("class", "")), []).append(child)
        for members in groups.values():
            if len(members) < _CARD_MIN:
                continue
            items = []
            for member in members:
                if member.find(".//a") is None:
                    continue
                text = re.sub(r"\s+", " ", " ".join(_lines(member).split("\n"))).strip()
                linked = sum(len(a.text_content().strip()) for a in member.iter("a"))
                if _CARD_TEXT[0] <= len(text) <= _CARD_TEXT[1] and linked <= _CARD_LINKED * len(text):
                    items.append(text)
            size = sum(len(t) for t in items)
            if len(items) >= _CARD_MIN and size > best_size:
                best, best_size = items, size
    return best


def _with_cards(text: str, tree: Any) -> str:
    """A collection's or listing's text with the grid items trafilatura dropped (as link-dense) added."""
    lowered = re.sub(r"\s+", " ", text.lower())
    missing = [item for item in _cards(tree) if item.lower()[:40] not in lowered]
    if sum(len(item) for item in missing) < _CARD_SHARE * len(text):  # an article's "related" grid, not the page
        return text
    return "\n".join([text, *missing]).strip() if missing else text


def _with_structured(text: str, structured: dict[str, Any]) -> str:
    """A product's text, with its structured name, description and offer added where the text lacks them."""
    return with_structured(text, structured)


#: the types whose page falls back to its main region's whole text when trafilatura's text is a small share of it
_REGION_TYPES = frozenset({"article", "collection", "listing", "documentation", "service"})
_REGION_UNSURE = 0.55  # an "article" gets it only when the classifier is this unsure (a close runner-up type)
_REGION_SHARE = 0.5  # trafilatura's text below this share of the main region's text: the region is the page's text
#: a service page's feature blocks and pricing cards are many short blocks trafilatura thins out: its region is the
#: text unless trafilatura kept most of it (WCXB dev, pages typed service: 0.5 -> 0.8 took tune 0.778 -> 0.798,
#: holdout 0.772 -> 0.783)
_SERVICE_REGION_SHARE = 0.8
_REGION_DROP = ("nav", "aside", "footer", "header", "form", "button", "select", "noscript", "svg", "dialog")
_REGION_ROLES = frozenset({"navigation", "banner", "contentinfo", "dialog", "complementary"})
#: text only screen readers get ("Regular price", "Sale price", "Unit price" beside each card's price)
_SCREEN_READER = re.compile(r"(^|\s)(visually-hidden|sr-only|screen-reader-text|visuallyhidden)(\s|$)", re.I)
_MD_HEADING = {"h1": "# ", "h2": "## ", "h3": "### ", "h4": "#### ", "h5": "##### ", "h6": "###### "}


def _region_parts(node: Any, out: list[str], markdown: bool) -> None:
    """Like :func:`~perplexed.extract._forum.block_text`, with markdown marks for headings, list items, code blocks and table cells."""
    if not isinstance(node.tag, str) or node.tag in CONTROL_TAGS:
        if node.tail:
            out.append(node.tail)
        return
    tag = node.tag
    if markdown and tag == "pre":
        code = node.text_content().strip("\n")
        out.append(f"\n```\n{code}\n```\n")
        if node.tail:
            out.append(node.tail)
        return
    if markdown and tag in _MD_HEADING:
        out.append("\n" + _MD_HEADING[tag])
    elif markdown and tag == "li":
        out.append("\n- ")
    if node.text:
        out.append(node.text)
    for child in node:
        _region_parts(child, out, markdown)
    if markdown and tag in ("td", "th"):
        out.append(" | ")
    if tag in BLOCK_TAGS:
        out.append("\n")
    if node.tail:
        out.append(node.tail)


_MENU_LINKS = 4  # a block with this many links or more...
_MENU_LINKED = 0.9  # ...with this share of its text in links...
_MENU_ENTRY = 20  # ...and this few characters of text per link is a menu (not in <nav> on many sites)


def _menus(tree: Any) -> list[Any]:
    """The menu-like blocks of ``tree``: many short links and (almost) nothing else (children before parents)."""
    stats: dict[Any, tuple[int, int, int]] = {}
    menus = []
    for node in reversed(list(tree.iter())):
        if not isinstance(node.tag, str):
            continue
        text = len((node.text or "").strip())
        linked = text if node.tag == "a" else 0
        links = 1 if node.tag == "a" else 0
        for child in node:
            child_text, child_linked, child_links = stats.pop(child, (0, 0, 0))
            tail = len((child.tail or "").strip())
            text += child_text + tail
            linked += child_text if node.tag == "a" else child_linked
            links += child_links
        stats[node] = (text, linked, links)
        if (links >= _MENU_LINKS and text and linked >= _MENU_LINKED * text and text < _MENU_ENTRY * links
                and not _PRICE.search(node.text_content())):  # a grid of product cards with swatches is no menu
            menus.append(node)
    return menus


def _main_region(tree: Any, fmt: Format) -> str:
    """The whole text of the page's main region (``<main>`` or ``role="main"``, else the body) without navigation,
    headers, footers, asides, forms, controls and ``aria-hidden`` parts. Changes ``tree`` (call it last)."""
    for node in list(tree.iter()):
        if not isinstance(node.tag, str) or node.getparent() is None:
            continue
        if (node.tag in _REGION_DROP or node.get("role") in _REGION_ROLES
                or node.get("aria-hidden") == "true" or _SCREEN_READER.search(node.get("class", ""))):
            node.drop_tree()
    found = tree.xpath("//main|//*[@role='main']")
    body = tree.find("body")
    root = found[0] if found else body if body is not None else tree
    if not found:  # the whole body: its menus outside <nav> go (inside <main>, short links are swatches, tags...)
        for menu in _menus(root):
            if menu.getparent() is not None:
                menu.drop_tree()
    parts: list[str] = []
    _region_parts(root, parts, fmt == "markdown")
    text = "".join(parts)
    if fmt != "markdown":
        lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in text.split("\n"))
        return "\n".join(line for line in lines if line)
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            out.append(line)
        elif fenced:
            out.append(line)
        else:
            line = re.sub(r"[ \t\r\f\v]+", " ", line).strip()
            if line and line not in ("-", "|") and not re.fullmatch(r"#+", line):
                out.append(line)
    return "\n".join(out)


def extract_typed(raw_html: str, url: str | None, fmt: Format) -> TypedText:
    """The main content of an HTML page, extracted with the strategy of its type (see the module docstring)."""
    structured = structured_data(raw_html)
    if len(raw_html) > _LIMIT:
        return TypedText(_trafilatura(raw_html, url, fmt), "article", 0.0, structured)
    from lxml import etree  # type: ignore[import-untyped]  # trafilatura's own dependency

    try:
        tree = page_tree(raw_html)
    except (ValueError, TypeError, etree.ParserError):
        return TypedText(_trafilatura(raw_html, url, fmt), "article", 0.0, structured)
    for node in tree.xpath("//script|//style|//template"):
        if node.getparent() is not None:
            node.drop_tree()
    banner = drop_consent(tree)  # a cookie-consent banner is never the page's text
    try:
        return _by_type(tree, raw_html, url, fmt, structured, banner)
    except RecursionError:  # a pathologically deep tree: the article strategy, as before
        return TypedText(_trafilatura(raw_html, url, fmt), "article", 0.0, structured)


def _by_type(tree: Any, raw_html: str, url: str | None, fmt: Format, structured: dict[str, Any],
             banner: set[str] | None = None) -> TypedText:
    page_text = tree.text_content()
    kind = classify(tree, structured, url, page_text)
    page_type = kind.type
    # a type's strategy only when the type clearly beats "article" (the default strategy is the safe one)
    strategy = page_type if kind.scores[page_type] - kind.scores["article"] >= _SURE else "article"
    if strategy == "forum":
        posts = thread_posts(tree)
        base = _trafilatura(raw_html, url, fmt)
        text = "\n\n".join(posts) if posts and sum(len(p) for p in posts) >= 0.6 * len(base) else without_controls(base)
    elif strategy == "service":
        _unwrap_heading_links(tree)
        text = _trafilatura(tree, url, fmt)
    elif strategy in ("collection", "listing"):
        text = _with_cards(_trafilatura(raw_html, url, fmt), tree)
    elif strategy == "product":
        text = without_repeats(without_boilerplate(_trafilatura(raw_html, url, fmt), tree))
        if len(text) < _THIN:
            text = _with_structured(text, structured)
    else:  # article, documentation, collection, listing, other: trafilatura on the page as it is
        text = _trafilatura(raw_html, url, fmt)
    if banner:  # trafilatura read the raw page: the lines of its consent banner go (before the region check)
        text = without_lines(text, banner)
    # an "article" that is nearly a listing, of whose page trafilatura kept little (see _listing.listing_alike)
    sure_article = page_type == "article" and kind.confidence >= _REGION_UNSURE
    alike = sure_article and listing_alike(kind.scores, text, page_text)
    nearly = sure_article and not alike and nearly_listing(kind.scores, text, page_text,
                                                           structured.get("types", []))  # see _listing
    weak = page_type == "forum" and weak_forum(kind.scores, text, page_text)  # no sure thread: see _listing
    region_type = page_type in _REGION_TYPES and (page_type != "article" or kind.confidence < _REGION_UNSURE
                                                  or alike or nearly)
    if weak or region_type:
        # trafilatura keeps a small share of the main region: it dropped the page's items (a listing's entries,
        # a docs page's tables, a service page's feature blocks) as link-dense boilerplate; the region is the text
        listing = weak or page_type in ("collection", "listing")
        if listing:  # its filter panels, sort controls, pagination and breadcrumbs out (see _listing), and its
            prune(tree)  # review, recommendation and consent blocks (see _collection)
            prune_collection(tree)
        region = once(_main_region(tree, fmt)) if listing else _main_region(tree, fmt)
        share = (_SERVICE_REGION_SHARE if page_type == "service" else LISTING_ALIKE_SHARE if alike
                 else NEARLY_LISTING_SHARE if nearly else WEAK_FORUM_SHARE if weak else _REGION_SHARE)
        if region_share(page_type, share, text, region, sure=strategy == page_type):
            text = region
    if page_type in ("collection", "listing"):  # its cards' "Add to cart", "Quick view", "Sale price" lines (see _collection)
        text = without_card_controls(text)
    return TypedText(text, page_type, kind.confidence, structured)
