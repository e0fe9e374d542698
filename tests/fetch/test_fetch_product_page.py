"""A product page's extraction (issue 36): the product (name, description, specifications, offer) stays; its
customer reviews, recommendations and cookie banner, and the copies of its name in a sticky bar, go."""

from __future__ import annotations

import json

from lxml import html as lxml_html
from perplexed.extract._extract import extract_html  # private: extraction without a fetch
from perplexed.extract._product import (  # private: the product rules are unit-tested
    is_rail,
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


OTHERS = [("Summit Camp Mug with a double wall and a lid", "$19.00"), ("Trail Snack Box in recycled steel", "$24.50"),
          ("Canyon Flask for the backcountry, 350 ml", "$31.00"), ("Harbor Tumbler with a sliding lid", "$22.00")]


def rail_page() -> str:
    """A product page with a rail of other products whose class words say nothing (a plain carousel)."""
    cards = "".join(f"<li class='carousel__item'><div><a href='/p/{i}'><h3>{name}</h3></a>"
                    f"<span>{price}</span><span>Sponsored seller offer</span><p>Free delivery by Tuesday, free returns "
                    f"within thirty days of the delivery date</p></div></li>"
                    for i, (name, price) in enumerate(OTHERS))
    specs = "".join(f"<p>{DESCRIPTION}</p>" for _ in range(4))  # the page is more than its rail
    return ("<html><body><main><h1>" + NAME + "</h1><p>$34.00</p>" + specs +
            "<div class='carousel'><h2>Similar items</h2><ul class='carousel__list'>" + cards + "</ul></div>"
            "</main></body></html>")


def test_a_rail_of_other_products_is_dropped() -> None:
    tree = lxml_html.fromstring(rail_page())
    assert is_rail(tree.find(".//ul"))
    rail_lines = [f"{name}{price}Sponsored seller offerFree delivery by Tuesday" for name, price in OTHERS]  # glued
    kept = without_boilerplate("\n".join([NAME, DESCRIPTION, *rail_lines, *(name for name, _ in OTHERS)]), tree)
    assert kept == f"{NAME}\n{DESCRIPTION}"
    # a text that is all cards is a listing's (a page of homes, of offers) taken for a product's: it stays whole
    cards = "\n".join(rail_lines)
    assert without_boilerplate(cards, tree) == cards


def test_a_products_own_option_list_is_no_rail() -> None:
    options = "".join(f"<li><label>Size {size}</label> <span>$34.00</span></li>" for size in ("S", "M", "L", "XL"))
    tree = lxml_html.fromstring(f"<html><body><h1>{NAME}</h1><ul class='sizes'>{options}</ul></body></html>")
    assert not is_rail(tree.find(".//ul"))  # its options are no links: the product's own offer


def test_a_dialogs_lines_are_dropped() -> None:
    dialog = ("<div role='dialog' aria-modal='true'><h2>Make your collection public?</h2><p>Public collections can "
              "be seen by other shoppers and may show up in recommendations and other places on the site, including "
              "search results, gift guides and the pages of the shops whose items you saved to them.</p>"
              "<p>Keep collections to yourself or inspire other shoppers by sharing the things you love with them, "
              "from the first item you save to the last one you add to your wish list before the holidays.</p>"
              "<button>Set to private</button></div>")
    specs = "".join(f"<li>{name}: {value}</li>" for name, value in SPECS * 8)
    page = f"<html><body><h1>{NAME}</h1><p>{DESCRIPTION}</p><p>{DESCRIPTION}</p><ul>{specs}</ul>{dialog}</body></html>"
    tree = lxml_html.fromstring(page)
    text = f"{NAME}\n{DESCRIPTION}\nMake your collection public?"
    assert without_boilerplate(text, tree) == f"{NAME}\n{DESCRIPTION}"


def test_a_review_line_missing_a_piece_is_still_the_reviews() -> None:
    # the extractor left out the "Verified Purchase" link between a review's date and its body
    review = ("<li class='review'><span>Dana R.</span> <span>5.0 out of 5 stars</span> <span>Keeps ice all day"
              "</span> <span>Reviewed on 4 March 2026</span> <a href='/vp'>Verified Purchase</a> <p>" + REVIEWS[0]
              + " " + REVIEWS[3] + "</p></li>")
    page = (f"<html><body><h1>{NAME}</h1>" + f"<p>{DESCRIPTION}</p>" * 4 +
            f"<ul class='customer-reviews'>{review}<li>{REVIEWS[1]}</li><li>{REVIEWS[2]}</li></ul></body></html>")
    line = f"Dana R. 5.0 out of 5 stars Keeps ice all day Reviewed on 4 March 2026{REVIEWS[0]} {REVIEWS[3]}"
    assert without_boilerplate(f"{NAME}\n{DESCRIPTION}\n{line}", lxml_html.fromstring(page)) == f"{NAME}\n{DESCRIPTION}"


def test_a_publishers_editorial_reviews_are_the_product() -> None:
    page = product_page().replace("class='product-reviews'", "class='editorial-reviews'")
    text = f"{DESCRIPTION}\n{REVIEWS[0]}"
    assert without_boilerplate(text, lxml_html.fromstring(page)) == text


def test_reviews_that_are_most_of_the_text_go_when_the_product_has_a_text_of_its_own() -> None:
    tree = lxml_html.fromstring(product_page())
    own = "\n".join([NAME, DESCRIPTION, DESCRIPTION.upper(), DESCRIPTION.lower(), *FEATURES])  # over 600 characters
    text = "\n".join([own, *REVIEWS * 7])  # the reviews are over four fifths of it
    assert len(own) >= 600 and len(own) < 0.2 * len(text)
    assert without_boilerplate(text, tree) == own
