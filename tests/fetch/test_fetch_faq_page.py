"""A FAQ block in a page's JSON-LD (issue 36): a ``FAQPage``'s ``Question`` and ``Answer`` entities are its FAQ, not
a forum thread, so they do not make the page a forum; in a ``QAPage`` they still do."""

from __future__ import annotations

import json

from pages import PARAGRAPHS
from perplexed.extract._extract import extract_html  # private: extraction without a fetch

FAQ = [("How long does delivery take?", "Orders ship within two working days and arrive within a week."),
       ("Can I return an item?", "Yes: any unused item can be returned within thirty days for a full refund.")]


def _with_questions(page_type: str) -> str:
    data = {"@context": "https://schema.org", "@type": page_type, "mainEntity": [
        {"@type": "Question", "name": question, "acceptedAnswer": {"@type": "Answer", "text": answer}}
        for question, answer in FAQ]}
    script = f"<script type='application/ld+json'>{json.dumps(data)}</script>"
    faq = "".join(f"<h3>{question}</h3><p>{answer}</p>" for question, answer in FAQ)
    prose = "".join(f"<p>{paragraph}</p>" for paragraph in PARAGRAPHS[:3])
    return (f"<!doctype html><html lang='en'><head><title>Delivery and returns</title>{script}</head><body>"
            f"<div class='content'><h1>Delivery and returns</h1>{prose}<h2>Questions</h2>{faq}</div></body></html>")


def test_a_faq_in_json_ld_does_not_make_a_page_a_forum() -> None:
    extracted = extract_html(_with_questions("FAQPage"), "https://shop.example/guides/delivery", "text")
    assert extracted.page_type != "forum"
    assert "returned within thirty days" in extracted.text


def test_questions_and_answers_of_a_qa_page_still_point_at_a_forum() -> None:
    extracted = extract_html(_with_questions("QAPage"), "https://answers.example/q/delivery", "text")
    assert extracted.page_type == "forum"
