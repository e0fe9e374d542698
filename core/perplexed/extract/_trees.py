"""A page's lxml trees, parsed faster: the typed strategies' tree and trafilatura's. Pure (CPU only, no I/O).

``lxml.html``'s parser asks a Python method (``HtmlElementClassLookup.lookup``) which class each element gets, every
time an element is touched from Python (iterating a tree, ``getparent``, ``xpath`` results): millions of calls per
second of extraction (issue 36, the extraction time). The parsers here give every element the same
``lxml.html.HtmlElement`` class (comments, processing instructions and entities their ``lxml.html`` classes) through
lxml's C-level default lookup. What differs is only that ``<form>``, ``<input>``, ``<select>``, ``<textarea>`` and
``<label>`` are plain ``HtmlElement`` objects, without their form helpers (``.value``, ``.fields``, ...) that neither
these strategies nor trafilatura use: the trees, and so the texts, are the same.

:func:`trafilatura_tree` parses a page as ``trafilatura.utils.load_html`` does (its parser options, its repairs and
its fallbacks) so that trafilatura is handed a tree instead of the string; :func:`page_tree` is the tree the typed
strategies read. Parsers are per thread (an lxml parser is not shared between threads).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["page_tree", "trafilatura_tree"]

_LOCAL = threading.local()


def _parser(name: str, **options: Any) -> Any:
    parser = getattr(_LOCAL, name, None)
    if parser is None:
        from lxml import etree  # type: ignore[import-untyped]  # trafilatura's own dependency
        from lxml import html as lxml_html

        parser = lxml_html.HTMLParser(**options)
        parser.set_element_class_lookup(etree.ElementDefaultClassLookup(
            element=lxml_html.HtmlElement, comment=lxml_html.HtmlComment, pi=lxml_html.HtmlProcessingInstruction,
            entity=lxml_html.HtmlEntity))
        setattr(_LOCAL, name, parser)
    return parser


def page_tree(raw_html: str) -> Any:
    """The page parsed for the typed strategies (comments kept). The text is decoded already: the bytes handed to
    lxml are UTF-8 whatever the page's ``<meta charset>`` says. Raises what ``lxml.html.fromstring`` raises."""
    from lxml import html as lxml_html

    parser = _parser("page", encoding="utf-8")
    return lxml_html.fromstring(raw_html.encode("utf-8", "replace"), parser=parser)


def trafilatura_tree(raw_html: str) -> Any | None:
    """The page parsed as ``trafilatura.utils.load_html`` parses a string (None where it finds no HTML): the same
    parser options, the same repairs of faulty HTML, the same fallback to bytes. trafilatura copies a tree it is
    handed, so one tree serves several of its passes. (A trafilatura without these helpers gets the string.)"""
    from lxml import html as lxml_html
    from trafilatura import utils

    if not all(hasattr(utils, name) for name in ("is_dubious_html", "repair_faulty_html")):
        return raw_html  # another trafilatura: it parses the string itself
    parser = _parser("trafilatura", collect_ids=False, default_doctype=False, encoding="utf-8",
                     remove_comments=True, remove_pis=True)
    beginning = raw_html[:50].lower()
    dubious = utils.is_dubious_html(beginning)
    html = utils.repair_faulty_html(raw_html, beginning)
    tree = None
    from_bytes = False
    try:
        tree = lxml_html.fromstring(html, parser=parser)
    except ValueError:  # "Unicode strings with encoding declaration are not supported."
        tree, from_bytes = _from_bytes(html, parser), True
    except Exception:  # as load_html: any parser failure, then the bytes are tried
        tree = None
    if (tree is None or len(tree) < 1) and not from_bytes:
        tree = _from_bytes(html, parser)
    if tree is not None and dubious and len(tree) < 2:
        return None
    return tree


def _from_bytes(html: str, parser: Any) -> Any | None:
    from lxml import html as lxml_html

    try:
        return lxml_html.fromstring(html.encode("utf8", "surrogatepass"), parser=parser)
    except Exception:  # as trafilatura.utils.fromstring_bytes: None when lxml cannot read it
        return None
