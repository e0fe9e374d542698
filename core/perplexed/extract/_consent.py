"""Cookie-consent and privacy-preference banners: found by their containers' class, id, role and label, and
dropped from the page before its text is extracted. Pure (CPU only).

A consent manager's banner or preference center is page chrome, never the page's content, but it is often a
large block of prose (the purposes, the vendors, the categories of cookies) that an extractor takes for the page's
text, beside real content or instead of it. A container is a banner when its class or id says so (``onetrust``,
``cookie-consent``, ``gdpr-banner``, ``cmp``, ...), or it is a dialog or region whose label names cookies, consent
or privacy, and its text speaks of cookies, consent or privacy; and it holds less than half of the page's text
(a page about cookies stays a page) or is named after a consent manager's SDK (``onetrust``, ``didomi``, ...).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["drop_consent", "without_lines"]

#: a class or id token of a consent manager's container
_CONSENT_NAME = re.compile(
    r"^(onetrust[\w-]*|ot-sdk[\w-]*|ot-pc[\w-]*|cookie-?(consent|banner|notice|bar|popup|law|message|prefs?|"
    r"preferences?|policy-banner|wall|modal|dialog|overlay)[\w-]*|cookies?-?(consent|banner|notice|bar)[\w-]*|"
    r"cookieconsent[\w-]*|cookiebanner[\w-]*|cookienotice[\w-]*|cookiepreferences[\w-]*|cookieprefpopup|"
    r"gdpr[\w-]*|[\w-]*consent-(banner|manager|modal|dialog|popup|overlay|bar|notice|sdk|wall)[\w-]*|"
    r"[\w-]*-cmp-(banner|modal|dialog)|qc-cmp2?[\w-]*|didomi[\w-]*|usercentrics[\w-]*|truste[\w-]*|"
    r"cybotcookiebot[\w-]*|cookiebot[\w-]*|sp_message[\w-]*|fc-consent[\w-]*|osano[\w-]*|iubenda[\w-]*|"
    r"cc-(banner|window)|cmplz[\w-]*|ensnotifybanner|consent|privacy-(banner|notice|consent|settings))$",
    re.I,
)
#: a dialog's or region's label that names a consent banner
_CONSENT_LABEL = re.compile(r"cookie|consent|privacy", re.I)
#: what a consent banner's text speaks of
_CONSENT_TEXT = re.compile(r"cookie|consent|privacy|personal data|gdpr|partners|datenschutz", re.I)
#: a consent manager's own container (named after the vendor's SDK): never the page, whatever share of its text it
#: holds (a listing page of short items behind a preference center with long purpose texts; WCXB dev: 2 pages,
#: 0.07 -> 0.95 and 0.14 -> 0.56, no other page changed)
_VENDOR_NAME = re.compile(
    r"^(onetrust[\w-]*|ot-sdk[\w-]*|ot-pc[\w-]*|qc-cmp2?[\w-]*|didomi[\w-]*|usercentrics[\w-]*|truste[\w-]*|"
    r"cybotcookiebot[\w-]*|cookiebot[\w-]*|sp_message[\w-]*|fc-consent[\w-]*|osano[\w-]*|iubenda[\w-]*|cmplz[\w-]*)$",
    re.I,
)
_CONTAINERS = ("div", "section", "aside", "dialog", "form", "footer", "header")
_SHARE = 0.5  # a "banner" with this share of the page's text or more is the page


def _named(node: Any, seen: dict[str, bool]) -> bool:
    names = node.get("class", "") + " " + node.get("id", "")
    named = seen.get(names)
    if named is None:  # each distinct class-and-id string is matched once per page
        named = seen[names] = any(_CONSENT_NAME.match(name) for name in names.split())
    if named:
        return True
    return node.get("role") in ("dialog", "alertdialog", "region") and bool(
        _CONSENT_LABEL.search(node.get("aria-label", "")))


def _vendor(node: Any) -> bool:
    return any(_VENDOR_NAME.match(name) for name in (node.get("class", "") + " " + node.get("id", "")).split())


def drop_consent(tree: Any) -> set[str]:
    """Drop the consent banners of ``tree`` (parsed HTML, changed in place); the lines of text they held (each
    element's text, whitespace collapsed) for :func:`without_lines`."""
    body = tree.find("body")
    total = -1  # the page's text length, measured at the first named container
    found: list[Any] = []
    inside: set[Any] = set()
    seen: dict[str, bool] = {}
    for node in tree.iter(*_CONTAINERS):
        if node.getparent() is None or not _named(node, seen) or any(a in inside for a in node.iterancestors()):
            continue
        text = node.text_content()
        if total < 0:
            total = len((body if body is not None else tree).text_content())
        if _CONSENT_TEXT.search(text) and (len(text) < _SHARE * total or _vendor(node)):
            found.append(node)
            inside.add(node)
    lines: set[str] = set()
    for node in found:
        for element in node.iter():
            if isinstance(element.tag, str):
                line = " ".join(element.text_content().split())
                if line:
                    lines.add(line)
        if node.getparent() is not None:
            node.drop_tree()
    return lines


def without_lines(text: str, lines: set[str]) -> str:
    """``text`` without its lines that are one of ``lines`` (a dropped banner's text, whitespace collapsed)."""
    if not lines:
        return text
    return "\n".join(line for line in text.split("\n") if " ".join(line.split()) not in lines)
