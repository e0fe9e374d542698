"""A service page's type and region (issue 36): a site's home page is typed by its offer unless a stronger signal
says otherwise, and a page typed service whose features trafilatura thinned out gets its main region."""

from __future__ import annotations

import typed_pages as tp
from pages import article_html
from perplexed.extract._extract import extract_html  # private: extraction without a fetch


def test_a_home_page_is_a_service_page() -> None:
    page = tp.service_page()
    assert extract_html(page, "https://hosting.example/", "text").page_type == "service"
    assert extract_html(page, "https://hosting.example/index.html", "text").page_type == "service"


def test_a_home_page_with_a_stronger_signal_keeps_its_type() -> None:
    assert extract_html(tp.product_jsonld_only(), "https://shop.example/", "text").page_type == "product"
    assert extract_html(tp.forum_thread(), "https://forum.example/", "text").page_type == "forum"


def test_a_page_without_a_url_is_no_home_page() -> None:
    assert extract_html(article_html(), None, "text").page_type == "article"


def test_an_article_on_a_home_page_stays_an_article() -> None:  # its many paragraphs outweigh the home page
    assert extract_html(article_html(), "https://news.example/", "text").page_type == "article"


def test_a_service_page_keeps_its_features_and_plans() -> None:
    extracted = extract_html(tp.service_page(), "https://hosting.example/", "text")
    assert "Automatic HTTPS certificates" in extracted.text
    for plan in tp.PLANS:
        assert plan[0] in extracted.text and plan[1] in extracted.text
