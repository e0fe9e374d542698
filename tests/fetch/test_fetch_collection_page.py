"""A collection page's extraction (issue 36): its grid and introduction stay; the review carousel, the
"recently viewed" rail and the cookie-preferences panel rendered inside the page (outside the consent banner's own
container) go before its main region is read."""

from __future__ import annotations

import typed_pages as tp
from lxml import html as lxml_html
from perplexed.extract._collection import (  # private: the collection rules are unit-tested
    prune,
    without_card_controls,
)
from perplexed.extract._extract import extract_html  # private: extraction without a fetch

REVIEWS = ["These runners carried me through a whole summer of city walking without a single blister on my feet.",
           "The wool keeps my feet dry on long flights and the soles still look new after half a year of wear."]
COOKIES = ("We and our partners use cookies and similar technologies to personalise content, tailor and measure "
           "ads and give you a better experience. Manage your preferences for each category of cookies below.")
RECENT = ["Cloud Rain Jacket", "Harbor Knit Beanie", "Summit Fleece Vest", "Pier Linen Shirt"]


def collection_page() -> str:
    page = tp.collection_grid()
    reviews = ("<section class='reviews-carousel'><h2>What our customers say</h2>"
               + "".join(f"<blockquote><p>{text}</p><cite>Customer {i}</cite></blockquote>"
                         for i, text in enumerate(REVIEWS)) + "</section>")
    recent = ("<section id='recentlyViewed'><h2>Recently viewed items in the store</h2><ul>"
              + "".join(f"<li><a href='/products/r{i}'>{name}</a> <span>$45</span></li>"
                        for i, name in enumerate(RECENT)) + "</ul></section>")
    preferences = (f"<div class='cookie-preferences-panel'><h2>Your privacy</h2><p>{COOKIES}</p>"
                   "<p>Strictly necessary cookies keep the store working and cannot be switched off.</p></div>")
    return page.replace("</main>", reviews + recent + "</main>" + preferences)


def test_a_collection_keeps_its_grid_without_reviews_recent_rail_or_cookie_preferences() -> None:
    extracted = extract_html(collection_page(), "https://shop.example/collections/mens-shoes", "text")
    assert extracted.page_type == "collection"
    text = extracted.text
    assert "Men's Shoes" in text
    for name, description, _ in tp.ITEMS:
        assert name in text and description in text
    for review in REVIEWS:
        assert review not in text
    assert COOKIES not in text
    for name in RECENT:
        assert name not in text


def test_prune_drops_only_the_named_blocks_and_keeps_a_wrapper_of_the_grid() -> None:
    tree = lxml_html.fromstring(collection_page())
    prune(tree)
    content = tree.text_content()
    assert REVIEWS[0] not in content and COOKIES not in content and RECENT[0] not in content
    assert all(name in content for name, _, _ in tp.ITEMS)
    # a "related" word on the element that wraps the whole grid (most of the page's text) says nothing: kept
    wrapped = lxml_html.fromstring(tp.collection_grid().replace("class='product-grid grid'",
                                                                "class='product-grid related-items'"))
    prune(wrapped)
    assert all(name in wrapped.text_content() for name, _, _ in tp.ITEMS)


def test_a_cards_control_and_label_lines_go_and_its_name_and_price_stay() -> None:
    text = "\n".join(["Alpine Wool Runner", "Regular price", "$98", "Sale price", "$79", "Color:", "Add to cart",
                     "Quick view", "Harbor Canvas Slip-On", "From $75", "Add to cart"])
    assert without_card_controls(text).split("\n") == ["Alpine Wool Runner", "$98", "$79", "Harbor Canvas Slip-On",
                                                       "From $75"]


def test_a_collections_extracted_text_has_no_card_controls() -> None:
    page = collection_page().replace("<span class='price'>", "<div class='atc'>Add to cart</div><span class='price'>")
    text = extract_html(page, "https://shop.example/collections/mens-shoes", "text").text
    assert "Add to cart" not in text
    assert all(name in text for name, _, _ in tp.ITEMS)


def test_a_grids_chrome_lines_go_and_a_line_with_a_value_stays() -> None:
    text = "\n".join(["Price", "Rating", "Top Rated", "Sponsored", "Loading...", "Sort by: Best Match", "Filters",
                      "Show more", "Showing 1-24 of 300 results", "Trail Runner 2", "Featured Tech: Mips", "$120",
                      "Free shipping", "Price $ 99.00"])
    assert without_card_controls(text).split("\n") == ["Trail Runner 2", "Featured Tech: Mips", "$120",
                                                       "Price $ 99.00"]
