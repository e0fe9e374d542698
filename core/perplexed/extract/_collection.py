"""Collection pages (issue 36): the blocks around a product grid that are not the grid. Pure (CPU only).

A collection page (a category page, a product grid) takes its main region's text (see
:mod:`perplexed.extract._listing`), and the region holds more than the grid and its introduction: the cookie
preferences and newsletter sign-up the consent filter did not catch (a preferences dialog rendered in the page,
outside the banner), customer-review carousels, "recently viewed" and "recommended for you" rails. The annotators
of WCXB dev leave them out. :func:`prune` takes the blocks whose ``class``/``id`` words say so
(:mod:`perplexed.extract._product`'s words: reviews, recommendations, consent) out of the tree before its main
region is read, unless a block holds a good share of the page's text (then the word is on a wrapper of the grid).

Measured on WCXB dev (collection pages, word F1 summed over pages): tune +0.32, holdout +0.11; no page lost more
than 0.01.

:func:`without_card_controls` drops the lines of a collection's text that are a product card's controls and labels
and nothing else ("Add to cart", "Quick view", "Regular price", "Sale price", "Choose options", "Color:"): each
card repeats them, the annotators drop them. A line with anything more (a price, a name) stays. Measured on WCXB
dev (collection pages, word F1 summed): tune +0.09, holdout +0.12.
"""

from __future__ import annotations

import re
from typing import Any

from perplexed.extract._product import words_say_boilerplate

__all__ = ["prune", "without_card_controls"]

_SHARE = 0.3  # a block with this share of the page's text or more wraps the grid: kept


def prune(tree: Any) -> None:
    """Take a collection page's review, recommendation, cookie-consent and newsletter blocks out of ``tree``."""
    body = tree.find("body")
    total = len((body if body is not None else tree).text_content()) or 1
    for node in list(tree.iter()):
        if not isinstance(node.tag, str) or node.getparent() is None or node.tag in ("body", "html", "main"):
            continue
        if words_say_boilerplate(node) and len(node.text_content()) < _SHARE * total:
            node.drop_tree()


#: a product card's control or label line, whole: buttons, price labels, badges ("from" before a price line)
_CONTROL = re.compile(
    r"(add to (cart|bag|basket|wish ?list|compare)|quick (view|shop|add|buy)|(regular|sale|unit|original) price|"
    r"unit price ?/ ?per|choose options?|select options?|view options|more options|view details|see details|"
    r"compare|add|buy now|shop now|wish ?list|save to wish ?list|notify me|learn more|sold out|on sale|sale|new|"
    r"best ?seller|from)",
    re.I,
)
#: a grid's own chrome line, whole: the column labels of a product table ("Price", "Rating"), a card's badges ("Top
#: rated", "Sponsored", "New arrival"), a loading placeholder, the sort and filter toggles, "Show more" and the result
#: counters ("Showing 1-24 of 300 results"). WCXB dev, the lines of our text on collection and listing pages (both
#: halves): "Price" 0 of 131 in the ground truth, "Rating" 0 of 104, "Loading..." 0 of 61, "Top rated" 11 of 91,
#: "Featured" 1 of 8, the others none; collection +0.0018 (tune +0.002, holdout +0.002), listing +0.0004.
_CHROME = re.compile(
    r"(price|prices|rating|ratings|loading( \.\.\.|\.\.\.|…)?|top rated|sponsored|new arrivals?|featured|award winner|"
    r"free (shipping|delivery)|sort( by)?(:.*)?|filters?( by)?|(show|hide) filters|(see|show|load|view) more|read more|"
    r"apply now|loaded \d+ results|showing \d+( ?[-\u2013] ?\d+)? of \d+( results| products| items)?)",
    re.I,
)
_LABEL_WORDS = 3  # a line ending in ":" with this few words is a label without its value ("Color:")


def without_card_controls(text: str) -> str:
    """``text`` without the lines that are only a product card's control or label."""
    kept = []
    for line in text.split("\n"):
        bare = line.strip()
        if bare.endswith(":") and len(bare.split()) <= _LABEL_WORDS:
            continue
        if bare and (_CONTROL.fullmatch(bare.rstrip(":").strip()) or _CHROME.fullmatch(bare)):
            continue
        kept.append(line)
    return "\n".join(kept)
