"""Collection and listing pages (issue 36, WCXB dev): the items of the main grid and the page's introduction, without
the browsing controls a category page puts inside its ``<main>`` (facet options, sort controls, pagination,
breadcrumbs), with a responsive page's second copy of its introduction kept once; and the rule that picks the main
region's text over trafilatura's for these pages."""

from __future__ import annotations

import typed_pages as tp
from perplexed.extract._extract import extract_html  # private: extraction without a fetch
from perplexed.extract._listing import (  # private: the listing rules unit-tested
    listing_alike,
    nearly_listing,
    once,
    prune,
    region_share,
    weak_forum,
)

INTRO = "Shoes for every day and every trail, made from natural materials and built to last for years."


def _category_page(wrapper: str = "div class='results'") -> str:
    """A category page whose browsing controls are all inside ``<main>`` (no ``<aside>``, no ``<nav>``)."""
    crumbs = "<div class='breadcrumbs'><a href='/'>Home</a> / <a href='/men'>Men</a> / Shoes</div>"
    facets = ("<div class='facet-list'><h3>Refine by size</h3><ul>"
              + "".join(f"<li><input type='checkbox' id='s{n}'><label for='s{n}'>Size {n} (12)</label></li>"
                        for n in range(6, 13))
              + "</ul><div><label><input type='radio' name='c'> Stormy Grey (4)</label></div></div>")
    sort = "<div class='sorting'><span>Sort by</span> <a href='?s=new'>Newest first</a></div>"
    cards = "".join(
        f"<li class='product-card'><h3><a href='/products/{i}'>{name}</a></h3><p>{text}</p>"
        f"<span class='price'>{price}</span></li>" for i, (name, text, price) in enumerate(tp.ITEMS))
    pages = "<div class='pagination'><a href='?p=1'>1</a> <a href='?p=2'>2</a> <a href='?p=3'>Next page</a></div>"
    tag = wrapper.split()[0]
    return (
        "<html><head><title>Men's Shoes</title><script type='application/ld+json'>"
        '{"@context": "https://schema.org", "@type": "CollectionPage", "name": "Men\'s Shoes"}</script></head>'
        f"<body><main>{crumbs}<h1>Men's Shoes</h1><p class='intro mobile-only'>{INTRO}</p>"
        f"<p class='intro desktop-only'>{INTRO}</p>{facets}{sort}<{wrapper}><ul class='grid'>{cards}</ul></{tag}>"
        f"{pages}</main></body></html>")


def test_a_category_page_keeps_its_items_and_intro_without_the_controls_inside_its_main() -> None:
    extracted = extract_html(_category_page(), "https://shop.example/collections/mens-shoes", "text")
    assert extracted.page_type == "collection"
    text = extracted.text
    for name, description, _price in tp.ITEMS:
        assert name in text and description in text
    assert "Men's Shoes" in text and text.count(INTRO) == 1  # the responsive page's second copy kept once
    for control in ("Refine by size", "Size 9", "Stormy Grey", "Sort by", "Newest first", "Next page", "Home /"):
        assert control not in text


def test_a_control_named_container_that_wraps_the_grid_is_kept() -> None:
    """A class word like ``filters`` on the grid's own wrapper (a filterable grid) does not drop the items."""
    extracted = extract_html(_category_page("div class='filters'"), "https://shop.example/c/shoes", "text")
    for name, description, _price in tp.ITEMS:
        assert name in extracted.text and description in extracted.text


def test_the_region_rule_of_each_type() -> None:
    region = "x" * 1000
    # the other region types: the region when the text is under the share of it
    assert region_share("service", 0.5, "y" * 400, region) and not region_share("service", 0.5, "y" * 600, region)
    # a collection: the region even when the text is longer, unless the region is a stub beside it
    assert region_share("collection", 0.5, "y" * 3000, region)
    assert not region_share("collection", 0.5, "y" * 3000, "x" * 100)
    # a listing: when the text is under twice the region
    assert region_share("listing", 0.5, "y" * 1500, region) and not region_share("listing", 0.5, "y" * 2500, region)
    # a page that is only probably a listing (many are articles): when the text is under 0.75 of the region
    assert region_share("listing", 0.5, "y" * 700, region, sure=False)
    assert not region_share("listing", 0.5, "y" * 900, region, sure=False)
    # a region as long as the text or a little longer (under 1.3 times) adds chrome, not items: the text stays
    assert not region_share("listing", 0.5, "y" * 800, region) and not region_share("collection", 0.5, "y" * 1000, region)
    assert region_share("collection", 0.5, "y" * 1100, region)  # a shorter region: the text without its controls
    # a share of 0 (trafilatura's text alone) keeps the text for every type
    assert not any(region_share(kind, 0.0, "y", region) for kind in ("service", "collection", "listing"))


def test_long_lines_are_kept_once_and_code_blocks_as_they_are() -> None:
    line = "A line long enough to be a duplicate when it is seen twice."
    code = "print('the same long line of code, twice in a block')"
    text = f"{line}\nShort\nShort\n{line}\n```\n{code}\n{code}\n```"
    assert once(text) == f"{line}\nShort\nShort\n```\n{code}\n{code}\n```"


def test_an_article_that_is_nearly_a_listing_reads_its_region_when_trafilatura_kept_little() -> None:
    page = "p" * 10_000  # the whole page's text
    near = {"article": 3.5, "listing": 3.2}
    assert listing_alike(near, "t" * 1000, page)  # a tenth of the page: its entries were dropped
    assert not listing_alike(near, "t" * 3000, page)  # trafilatura kept a good share of the page
    assert not listing_alike({"article": 3.0, "listing": 2.0}, "t" * 1000, page)  # clearly an article
    assert not listing_alike({"article": 1.0, "listing": 0.0}, "t" * 1000, page)  # no listing signal at all


def test_a_pickers_options_are_browsing_controls() -> None:
    """A drop-down of links with ARIA option roles (a language picker) goes; the items stay."""
    from lxml import html as lxml_html  # type: ignore[import-untyped]

    languages = "".join(f"<a role='menuitemradio' href='?l={n}'><span>Language {n}</span></a>" for n in range(30))
    items = "".join(f"<li><a href='/r/{n}'>Repository {n}</a> <p>What repository {n} does.</p></li>" for n in range(5))
    tree = lxml_html.fromstring(f"<html><body><main><h1>Trending</h1><details><summary>Language</summary>"
                                f"<div role='listbox'>{languages}</div></details><ul>{items}</ul></main></body></html>")
    prune(tree)
    text = tree.text_content()
    assert "Language 7" not in text and "Repository 3" in text and "What repository 4 does." in text


EVENTS = [("Harbour Jazz Night", "Live quartet on the pier with local food stalls and a late ferry home for everyone."),
          ("Old Town Walking Tour", "A two hour guided walk through the lanes, the market hall and the cathedral close."),
          ("Riverside Film Evening", "Classic films under the stars on the lawn, blankets and warm drinks provided."),
          ("Spring Craft Market", "Makers from the region sell ceramics, prints, knitwear and small batch preserves."),
          ("Lantern Parade", "Children and families carry paper lanterns from the square down to the harbour wall.")]


def test_a_listing_drops_its_recommendation_rail_and_its_cards_controls_as_a_collection_does() -> None:
    """The collection rules (extract._collection) hold for a listing too: its "you may also like" rail and its
    cards' control lines go, its entries stay."""
    cards = "".join(f"<article class='event-card'><h3><a href='/events/{i}'>{name}</a></h3><p>{text}</p>"
                    "<div class='card-actions'>Add to cart</div><a class='qv'>Quick view</a></article>"
                    for i, (name, text) in enumerate(EVENTS))
    rail = ("<section class='recommendations'><h2>You may also like these</h2><ul>"
            + "".join(f"<li><a href='/x/{i}'>Other event number {i} in town</a></li>" for i in range(5)) + "</ul></section>")
    page = ("<html><head><title>Events this week</title><script type='application/ld+json'>"
            '{"@context": "https://schema.org", "@type": "ItemList", "name": "Events this week"}</script></head>'
            f"<body><main><h1>Events this week</h1><div class='results'>{cards}</div>{rail}</main></body></html>")
    extracted = extract_html(page, "https://city.example/events/this-week", "text")
    assert extracted.page_type == "listing"
    for name, text in EVENTS:
        assert name in extracted.text and text in extracted.text
    for gone in ("Add to cart", "Quick view", "You may also like", "Other event number"):
        assert gone not in extracted.text


TEASERS = [(f"Story number {i} about the council budget vote",
            f"The council met on a Tuesday evening to weigh item {i} of the plan, with residents for and against it.")
           for i in range(12)]


def _news_front(item_class: str = "teaser", stream_id: str = "stream") -> str:
    """A news section's front: a top story in an ``<article>`` (all trafilatura keeps), then a stream of teasers that
    are links through and through (trafilatura drops them as link-dense boilerplate)."""
    items = "".join(f"<div class='{item_class}'><a href='/news/{i}'><h3>{title}</h3><span>{line}</span></a></div>"
                    for i, (title, line) in enumerate(TEASERS))
    return ("<html><head><title>Local news</title></head><body><main><h1>Local news</h1><article><h2>Top story</h2>"
            "<p>The latest stories from the city desk, updated through the day by our reporters, who cover the "
            "council, the schools and the courts.</p><p>Today the council votes on the budget for the coming year "
            f"after a long week of hearings.</p></article><div id='{stream_id}'>{items}</div></main></body></html>")


def test_a_news_front_typed_article_that_is_nearly_a_listing_keeps_its_teasers() -> None:
    extracted = extract_html(_news_front(), "https://news.example/local", "text")
    assert extracted.page_type == "article"  # one <article> and no listing URL: the classifier says article
    assert all(title in extracted.text and line in extracted.text for title, line in TEASERS)
    assert "Top story" in extracted.text


def test_nearly_a_listing_needs_a_close_listing_score_no_thread_and_a_small_text() -> None:
    page = "p" * 10_000
    near = {"article": 3.5, "listing": 2.0, "forum": 0.5}
    assert nearly_listing(near, "t" * 3000, page)  # under a third of the page
    assert not nearly_listing(near, "t" * 3400, page)  # trafilatura kept a good share
    assert not nearly_listing({**near, "forum": 1.5}, "t" * 3000, page)  # a comment thread: its region has comments
    assert not nearly_listing({**near, "listing": 1.0}, "t" * 3000, page)  # clearly an article
    assert not nearly_listing({"article": 1.0, "listing": 0.0}, "t" * 3000, page)  # no listing signal at all


def test_an_index_typed_forum_without_a_sure_thread_keeps_its_items() -> None:
    """Class words ("post", "posts") make an index look like a thread; trafilatura kept only its top story."""
    extracted = extract_html(_news_front("post", "posts"), "https://news.example/local", "text")
    assert extracted.page_type == "forum"
    assert all(title in extracted.text and line in extracted.text for title, line in TEASERS)


def test_a_weak_forum_needs_a_close_article_score_and_a_small_text() -> None:
    page = "p" * 10_000
    assert weak_forum({"article": 2.0, "forum": 3.0}, "t" * 1000, page)
    assert not weak_forum({"article": 2.0, "forum": 3.0}, "t" * 1600, page)  # trafilatura kept a good share
    assert not weak_forum({"article": 2.0, "forum": 4.0}, "t" * 1000, page)  # a sure thread
