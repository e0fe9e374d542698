"""A product page's extraction (issue 36): the product (name, description, specifications, offer) stays; its
customer reviews, recommendations and cookie banner, and the copies of its name in a sticky bar, go."""

from __future__ import annotations

import json

from lxml import html as lxml_html
from perplexed.extract._extract import extract_html  # private: extraction without a fetch
from perplexed.extract._product import (  # private: the product rules are unit-tested
    with_structured,
    without_boilerplate,
    without_repeats,
)

NAME = "Ridgeline Insulated Water Bottle"
DESCRIPTION = ("A double-walled stainless steel bottle that keeps drinks cold for twenty-four hours and hot for "
               "twelve, with a leak-proof lid, a powder-coated grip and a wide mouth that takes ice cubes.")
FEATURES = ["Holds 750 ml", "Dishwasher-safe lid", "Free of BPA"]
SPECS = [("Capacity", "750 ml"), ("Weight", "380 g"), ("Material", "18/8 stainless steel")]
REVIEWS = ["Kept my coffee warm through a whole day of skiing, the lid never leaked once in my bag.",
           "The paint chipped after a month of daily use but it still keeps water ice cold all day long.",
           "Bought a second one for my partner, we take them on every hike and they are worth the money.",
           "Fits the cup holder of my car, which my old bottle never did, and the handle is sturdy enough.",
           "Arrived with a dent on the bottom but customer service sent a replacement within a week."]
RELATED = ["Summit Camp Mug", "Trail Snack Box", "Canyon Flask"]


def product_page() -> str:
    data = {"@context": "https://schema.org", "@type": "Product", "name": NAME, "sku": "RIB-750",
            "offers": {"@type": "Offer", "price": "34.00", "priceCurrency": "USD"}}
    reviews = "".join(f"<li class='review-item'><p class='review-body'>{text}</p>"
                      f"<span class='review-author'>Customer {i}</span></li>" for i, text in enumerate(REVIEWS))
    related = "".join(f"<li class='card'><a href='/products/{n.lower().replace(' ', '-')}'>{n}</a> $19</li>"
                      for n in RELATED)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>" + NAME + "</title>"
            "<script type='application/ld+json'>" + json.dumps(data) + "</script></head><body>"
            "<header><nav><a href='/'>Home</a> <a href='/shop'>Shop</a></nav></header>"
            "<div class='sticky-bar'><p>" + NAME + "</p><p>$34.00</p><button>Add to cart</button></div>"
            "<main><div class='product-main'><h1>" + NAME + "</h1><p class='price'>$34.00</p>"
            "<button class='add-to-cart'>Add to cart</button>"
            "<div class='product-description'><p>" + DESCRIPTION + "</p><ul>"
            + "".join(f"<li>{f}</li>" for f in FEATURES) + "</ul></div>"
            "<table class='specs'>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in SPECS) + "</table>"
            "<p>" + NAME + "</p></div>"
            "<section id='customerReviews' class='product-reviews'><h2>Customer reviews</h2><ul>" + reviews
            + "</ul></section>"
            "<section class='related-products'><h2>You may also like</h2><ul>" + related + "</ul></section></main>"
            "<div class='cookie-banner'><p>We use cookies to improve your shopping experience and to measure "
            "how our store is used by visitors.</p><button>Accept</button></div>"
            "<footer><p>Copyright 2026 Ridgeline. All rights reserved.</p></footer></body></html>")


def test_a_product_page_keeps_the_product_without_its_reviews_recommendations_or_cookie_banner() -> None:
    extracted = extract_html(product_page(), "https://shop.example/products/ridgeline-bottle", "text")
    assert extracted.page_type == "product"
    text = extracted.text
    assert NAME in text and DESCRIPTION in text and "34.00" in text
    for feature in FEATURES:
        assert feature in text
    for name, value in SPECS:
        assert name in text and value in text
    for review in REVIEWS:
        assert review not in text
    assert "We use cookies" not in text
    for line in text.split("\n"):  # the name's copies (sticky bar, caption) are one line of the text at most
        assert line.strip() != NAME or text.count(NAME) <= 2


def test_only_lines_of_review_blocks_found_nowhere_else_are_dropped() -> None:
    tree = lxml_html.fromstring(product_page())
    kept = without_boilerplate(f"{NAME}\n{DESCRIPTION}\n{REVIEWS[0]}\nCustomer reviews\n{REVIEWS[1]}", tree)
    assert kept.split("\n") == [NAME, DESCRIPTION]  # the heading "Customer reviews" is the block's own line too
    # a line of the product found inside a review too (a reviewer quoting the name) stays: it is also outside
    assert without_boilerplate(NAME, tree) == NAME


def test_a_page_whose_text_is_all_review_lines_keeps_it() -> None:
    tree = lxml_html.fromstring(product_page())
    text = "\n".join(REVIEWS)  # the extractor took the reviews as the page: they are what it has
    assert without_boilerplate(text, tree) == text


def test_a_testimonial_block_is_the_sellers_own_content() -> None:
    page = product_page().replace("class='product-reviews'", "class='testimonials home-review-cards'")
    tree = lxml_html.fromstring(page)
    text = f"{DESCRIPTION}\n{REVIEWS[0]}"
    assert without_boilerplate(text, tree) == text


def test_repeated_lines_keep_their_first_copy() -> None:
    text = f"{NAME}\n$34.00\n{DESCRIPTION}\n{NAME}\n\n$34.00\nAdd to cart"
    assert without_repeats(text) == f"{NAME}\n$34.00\n{DESCRIPTION}\n\nAdd to cart"


def test_structured_data_fills_in_only_what_a_thin_text_lacks() -> None:
    structured = {"name": "L'atelier Warrior Drop Necklace", "price": "3665.00", "currency": "USD",
                  "description": "This version of L'atelier's warrior design features the signature gold bar."}
    # the text has the name and the description with typographic apostrophes: no second copy is added
    text = ("L\u2019atelier Warrior Drop Necklace\n"
            "This version of L\u2019atelier\u2019s warrior design features the signature gold bar.")
    assert with_structured(text, structured) == f"Price: 3665.00 USD\n{text}"
    # a text without them gets the name and the description, before it
    filled = with_structured("Add to cart", structured)
    assert filled.split("\n") == [structured["name"], structured["description"], "Price: 3665.00 USD", "Add to cart"]
