"""Collection and listing pages (issue 36): the main region's items without the page's browsing controls. Pure.

On WCXB dev the annotators of a collection (a category page, a product grid) or a listing (a content index, a
course catalogue, a list of reviews) keep the page's heading and introduction and each item of its grid; they drop
the filter panels (facets of checkbox options with their counts), sort controls, pagination, breadcrumbs and
navigation. trafilatura drops the grid as link-dense boilerplate (its text keeps a fraction of the items) or keeps
a wall of banners instead, so these pages take the main region's text (:func:`_strategies._main_region`) more
readily than the other types (:func:`region_share`), after :func:`prune` took the browsing controls out of the
tree, and with the repeated long lines a responsive page renders twice (a mobile and a desktop copy of its
introduction) kept once (:func:`once`).

Measured on a fixed half of WCXB dev (md5 of the page id) and checked on the other half.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["LISTING_ALIKE_SHARE", "NEARLY_LISTING_SHARE", "WEAK_FORUM_SHARE", "listing_alike", "nearly_listing",
           "once", "prune", "region_share", "weak_forum"]

#: how much more readily than the other region types a collection / listing page takes its main region: a
#: collection whenever its region is not tiny (an empty ``<main>``: :data:`_TINY`), a listing when trafilatura's
#: text is under twice the region's (a listing's entries are often all in trafilatura's text already)...
_READILY = {"collection": 200.0, "listing": 4.0}
_UNSURE_LISTING = 1.5  # ...or under 0.75 of it when the page is only probably a listing (many are articles)
_TINY = 0.15  # a region under this share of trafilatura's text is a stub (an empty <main>, a skeleton): not used
#: a region as long as trafilatura's text or up to this much longer adds chrome (a byline, a caption, a related
#: link), not the items trafilatura dropped: the text stays (a smaller region is the text without its controls)
_ALIKE = 1.3
#: a class or id word naming a browsing control: a filter panel, facets, sort controls, pagination, breadcrumbs
_CONTROL = re.compile(r"^(js-)?(filters?|filter-\w+|facets?|facet-\w+|pagination|pager|paging|breadcrumbs?|"
                      r"breadcrumb-\w+|sort|sort-by|sortby|sorting|toolbar)$", re.I)
#: the ARIA roles of a picker's options (a language or date-range drop-down built of links, a custom select box):
#: browsing controls, never items (WCXB dev: a trending list 0.33 -> 0.95 without its drop-down of 180 languages;
#: found on the holdout half, one tune page changed, a service page 0.650 -> 0.635)
_PICKER_ROLES = frozenset({"menuitemradio", "menuitemcheckbox", "option", "listbox"})
_CONTROL_SHARE = 0.2  # a "control" holding this share of the page's text is the grid's wrapper: kept
_OPTION = 60  # characters: a facet option (label and count) is shorter than this
_LONG = 30  # characters: a line this long seen twice is a duplicate (a responsive page's second copy)


def region_share(page_type: str, share: float, text: str, region: str, *, sure: bool = True) -> bool:
    """Whether a page of ``page_type`` whose extracted ``text`` is beside its main ``region`` takes the region:
    the other region types when the text is under ``share`` of it; a collection or listing more readily
    (:data:`_READILY` times ``share``; a listing the classifier is not ``sure`` of, :data:`_UNSURE_LISTING` times),
    unless the region is a stub or only a little longer than the text (:data:`_ALIKE`)."""
    size = len(text.strip())
    if page_type not in _READILY:
        return size < share * len(region)
    readily = _READILY[page_type] if sure or page_type != "listing" else _UNSURE_LISTING
    if size <= len(region) < _ALIKE * size:
        return False
    return size < readily * share * len(region) and len(region) >= _TINY * size


#: a page typed "article" whose listing score is within this of its article score is nearly a listing (a list of
#: papers, an awards page, a blog's front page: WCXB dev's "listing" pages the classifier calls articles)...
_NEAR_LISTING = 0.5
_SOME_LISTING = 0.5  # ...when it has some listing signal at all...
#: ...and when trafilatura's text is under this share of its main region, trafilatura dropped its entries as
#: link-dense boilerplate: the region is the text (WCXB dev, tune half: 2 listing pages 0.18-0.19 -> 0.78-0.90, no
#: article page changed; holdout half: one forum page 0.14 -> 0.77, nothing else changed). Within 1.0 a third
#: listing page gained, but an article of the article-extraction benchmark (a news story beside a column of news
#: teasers, its text 0.17 of its region) took its region: not kept.
LISTING_ALIKE_SHARE = 0.2


def listing_alike(scores: dict[str, float], text: str, page_text: str) -> bool:
    """Whether a page typed "article" with these classifier ``scores`` is nearly a listing and its main region is
    worth reading: trafilatura's ``text`` is under :data:`LISTING_ALIKE_SHARE` of the whole ``page_text`` (the
    region, shorter than the page's text, is only read then)."""
    listing = scores.get("listing", 0.0)
    return (listing >= _SOME_LISTING and scores.get("article", 0.0) - listing <= _NEAR_LISTING
            and len(text.strip()) < LISTING_ALIKE_SHARE * len(page_text))


#: a page typed "article" whose listing score is within this of its article score, with some listing signal and no
#: comment-thread signal at all (its forum score under :data:`_NO_THREAD`: an article's comments are in its main
#: region, not in trafilatura's text), is a listing too when trafilatura's text is under
#: :data:`NEARLY_LISTING_SHARE` of its main region (a news section's front, a blog's index, a list page: trafilatura
#: kept the first teasers or the introduction). WCXB dev, whole split: 5 pages changed, none lower (3 listing pages
#: 0.18-0.29 -> 0.95-0.99, two tune and one holdout; a holdout article 0.03 -> 0.87 and service page 0.51 -> 0.99).
#: Looser (forum score under 2.5, share 0.5) took 15 pages on WCXB dev (listing +0.03, article +0.001), but 7 of
#: the article-extraction benchmark's 181 news articles (a story beside a column of teasers or its comments, its text
#: 0.17-0.49 of its region) lost 0.3-0.7 each: not kept.
_NEARLY = 2.0
_NO_THREAD = 1.0
NEARLY_LISTING_SHARE = 0.33


#: the schema.org types that say the page is one story (a site's generic ``Article`` on every page, its index
#: included, does not): such a page is an article whatever grid of related stories follows it
_ONE_STORY = frozenset({"newsarticle", "blogposting", "reportagenewsarticle", "claimreview", "scholarlyarticle",
                        "recipe", "review", "howto"})


def nearly_listing(scores: dict[str, float], text: str, page_text: str, kinds: Sequence[object] = ()) -> bool:
    """Whether a page typed "article" with these classifier ``scores`` (and these schema.org ``kinds``, none of
    them naming one story: :data:`_ONE_STORY`) is close enough to a listing (and without a comment thread) for its
    main region to be worth reading: trafilatura's ``text`` is under :data:`NEARLY_LISTING_SHARE` of the whole
    ``page_text`` (the region is then compared with the same share)."""
    if any(str(kind).lower() in _ONE_STORY for kind in kinds):
        return False
    listing = scores.get("listing", 0.0)
    return (listing >= _SOME_LISTING and scores.get("article", 0.0) - listing <= _NEARLY
            and scores.get("forum", 0.0) < _NO_THREAD and len(text.strip()) < NEARLY_LISTING_SHARE * len(page_text))


#: a page typed "forum" whose forum score beats its article score by no more than this has no sure thread (a shop's
#: or a site's index whose class words say "post", "topic", "reply"): when trafilatura's text is under
#: :data:`WEAK_FORUM_SHARE` of its main region, it kept a stub (a heading, a banner) of a page whose items it dropped,
#: and the region (without its browsing controls, as a listing's) is the text. WCXB dev, whole split: 3 pages
#: changed, none lower (a collection 0.10 -> 0.99 and a listing 0.06 -> 0.67 on the holdout half, a forum index
#: 0.03 -> 0.19), all three on the holdout half (found in the list of the worst pages of both halves: the tune half has
#: no page it changes, so it is checked on the article-extraction benchmark too: unchanged). A sure thread (forum
#: score 2 or more above article's) whose text is a small share of its region is a thread trafilatura read right
#: (one tune page would lose 0.94 that way): not taken.
_WEAK_THREAD = 1.0
WEAK_FORUM_SHARE = 0.15


def weak_forum(scores: dict[str, float], text: str, page_text: str) -> bool:
    """Whether a page typed "forum" with these classifier ``scores`` is no sure thread and trafilatura's ``text`` is
    under :data:`WEAK_FORUM_SHARE` of the whole ``page_text`` (its main region is then read and compared with the
    same share)."""
    return (scores.get("forum", 0.0) - scores.get("article", 0.0) <= _WEAK_THREAD
            and len(text.strip()) < WEAK_FORUM_SHARE * len(page_text))


def _options(tree: Any) -> None:
    """Drop each checkbox or radio option of a filter panel (its ``<li>`` or ``<label>`` with the option's name
    and count)."""
    for field in list(tree.iter("input")):
        if (field.get("type") or "").lower() not in ("checkbox", "radio"):
            continue
        node = field
        while node.getparent() is not None and node.tag not in ("li", "label") and not node.text_content().strip():
            node = node.getparent()
        parent = node.getparent()
        if node.tag not in ("li", "label") and parent is not None and parent.tag in ("li", "label"):
            node = parent
        if node.getparent() is not None and len(node.text_content().strip()) < _OPTION:
            node.drop_tree()
        elif field.getparent() is not None:
            field.drop_tree()


def prune(tree: Any) -> None:
    """Take a collection's or listing's browsing controls out of ``tree`` (before its main region is read): the
    filter panels' options, a picker's options (ARIA roles :data:`_PICKER_ROLES`), and the containers whose class
    or id names a filter, facet, sort control, pagination or breadcrumb (unless one holds a good share of the page's
    text: then it wraps the grid)."""
    _options(tree)
    for node in list(tree.iter("*")):
        if node.get("role") in _PICKER_ROLES and node.getparent() is not None:
            node.drop_tree()
    body = tree.find("body")
    total = len((body if body is not None else tree).text_content()) or 1
    for node in list(tree.iter()):
        if not isinstance(node.tag, str) or node.getparent() is None:
            continue
        words = f"{node.get('class', '')} {node.get('id', '')}".split()
        if any(_CONTROL.match(word) for word in words) and len(node.text_content()) < _CONTROL_SHARE * total:
            node.drop_tree()


def once(text: str) -> str:
    """``text`` with each long line kept once (a responsive page renders its introduction twice); code blocks are
    left as they are."""
    seen: set[str] = set()
    out = []
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and len(line) >= _LONG:
            if line in seen:
                continue
            seen.add(line)
        out.append(line)
    return "\n".join(out)
