"""A fetched body to clean text: content types, extraction, interstitials, the slice. Pure (CPU only, no I/O).

HTML and XHTML go through ``trafilatura`` (the ``fetch`` extra), PDFs through ``pypdf`` (the ``pdf`` extra),
``text/plain`` and ``text/markdown`` are kept as they are. Any other content type is ``unsupported_type``. A
challenge or "enable JavaScript" page (an interstitial) is ``blocked``, not a page with little text.
"""

from __future__ import annotations

import codecs
import html as html_lib
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from perplexed._errors import ConfigError, DocumentError, install_hint

__all__ = [
    "FETCH_HINT",
    "Extracted",
    "Slice",
    "body_kind",
    "cut",
    "decode_text",
    "extract_body",
    "interstitial",
]

FETCH_HINT = f"the http fetch provider needs the fetch extra: {install_hint('fetch')}"

Format = Literal["markdown", "text"]
Kind = Literal["html", "text", "markdown", "pdf"]

_HTML_TYPES = {"text/html", "application/xhtml+xml", "application/xml+xhtml"}
_TEXT_TYPES = {"text/plain"}
_MARKDOWN_TYPES = {"text/markdown", "text/x-markdown"}
_PDF_TYPES = {"application/pdf", "application/x-pdf"}


def media_type(content_type: str | None) -> str:
    """``text/html`` from ``text/html; charset=utf-8`` (lower case, no parameters)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def charset(content_type: str | None) -> str | None:
    match = re.search(r"charset\s*=\s*[\"']?([\w.:-]+)", content_type or "", re.I)
    return match.group(1) if match else None


def body_kind(content_type: str | None, body: bytes) -> Kind | None:
    """How to read a body (``html``, ``text``, ``markdown``, ``pdf``), from its ``Content-Type`` (sniffed
    from its first bytes when there is none); None for a type that is not read (``unsupported_type``)."""
    mtype = media_type(content_type)
    if mtype in _HTML_TYPES:
        return "html"
    if mtype in _MARKDOWN_TYPES:
        return "markdown"
    if mtype in _TEXT_TYPES:
        return "text"
    if mtype in _PDF_TYPES:
        return "pdf"
    if mtype in ("", "application/octet-stream", "binary/octet-stream"):
        head = body[:512].lstrip().lower()
        if head.startswith(b"%pdf-"):
            return "pdf"
        if head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
            return "html"
        if not mtype and head and b"\x00" not in head:
            return "text"
    return None


def decode_text(body: bytes, content_type: str | None) -> str:
    """A text body as a string: the declared charset, else a BOM or a ``<meta charset>``, else UTF-8
    (undecodable bytes replaced)."""
    declared = charset(content_type)
    if body[:3] == b"\xef\xbb\xbf":
        return body[3:].decode("utf-8", "replace")
    if body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return body.decode("utf-16", "replace")
    if declared is None:
        meta = re.search(rb"<meta[^>]{0,200}charset\s*=\s*[\"']?([\w.:-]+)", body[:4096], re.I)
        if meta is not None:
            declared = meta.group(1).decode("ascii", "replace")
    codec = _charset_codec(declared) if declared else None
    if codec is not None:
        try:
            return body.decode(codec, "replace")
        except (LookupError, UnicodeError, ValueError, TypeError):  # a codec that is no charset after all
            pass
    return body.decode("utf-8", "replace")


#: Python codecs that are no charset of a web page (a hostile ``charset=idna`` is read like an unknown one)
_NOT_CHARSETS = frozenset({"idna", "punycode", "undefined", "unicode_escape", "raw_unicode_escape", "mbcs", "oem"})


def _charset_codec(declared: str) -> str | None:
    """The Python codec of a declared charset, or None when it names no text charset (then UTF-8 is read)."""
    try:
        info = codecs.lookup(declared)
    except (LookupError, ValueError, TypeError):
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARSETS:
        return None
    return info.name


@dataclass(frozen=True)
class Extracted:
    """The whole extracted text of a page and what is known about it."""

    text: str
    format: Format
    title: str = ""
    published: date | None = None
    language: str | None = None
    page_type: str | None = None
    page_type_confidence: float | None = None
    structured: dict[str, Any] = field(default_factory=dict)


# --- interstitials ------------------------------------------------------------------------------------

#: markers of a bot challenge page, in the raw HTML (lower case): a page with little text and one of these
_CHALLENGE_MARKERS = (
    "/cdn-cgi/challenge-platform",
    "cf-browser-verification",
    "cf_chl_opt",
    "captcha-delivery.com",  # DataDome
    "px-captcha",  # PerimeterX / HUMAN
    "_incapsula_resource",
    "awswaf",
)
#: captcha widgets also found in the comment and login forms of real articles: they count only on a page with
#: (almost) no text
_WIDGET_MARKERS = ("g-recaptcha", "h-captcha", "hcaptcha.com/1/api.js", "recaptcha/api.js", "cf-turnstile")
_WIDGET_TEXT = 200
_CHALLENGE_TITLES = re.compile(
    r"^\s*(just a moment\.*|attention required!?.*cloudflare.*|access denied|pardon our interruption|"
    r"are you a robot\??|security check|verify(ing)? (you are|that you are) (a )?human.*|robot check|"
    r"one more step|please wait\.*|ddos-guard|captcha.*|bot verification)\s*$",
    re.I,
)
#: what a bot check says (counts on a page with little text)
_CHECK_PHRASES = re.compile(
    r"(verify (you are|that you are) (a )?human|are you a robot|complete the (security check|captcha)|"
    r"checking your browser|unusual traffic from your (computer|network))",
    re.I,
)
#: what an "enable JavaScript" shell says: many real pages carry such a note, so it counts only on a page whose
#: text is (almost) nothing else
_JS_PHRASES = re.compile(
    r"(enable javascript|javascript is (disabled|required|not enabled)|turn on javascript|"
    r"requires javascript|javascript must be enabled|you need to enable javascript|please enable (js|cookies))",
    re.I,
)
#: below this many characters of extracted text, interstitial markers decide that the page is one
_INTERSTITIAL_TEXT = 1500
#: scripts that bot managers inject into ordinary pages (they measure, they do not block): not a challenge
_DETECTION_SCRIPTS = ("/cdn-cgi/challenge-platform/scripts/jsd/",)
#: a challenge marker beside this much visible text (scripts and styles excluded) is beside real content: the
#: challenge is not the page (issue 36)
_BESIDE_CONTENT = 2000


def interstitial(raw_html: str, text: str, title: str = "") -> str | None:
    """Why this page is a challenge or "enable JavaScript" interstitial (None when it looks like a page).

    Only a page with little text is judged (an article that mentions JavaScript stays an article)."""
    if len(text) >= _INTERSTITIAL_TEXT:
        return None
    head = raw_html[:200_000].lower()
    for script in _DETECTION_SCRIPTS:
        head = head.replace(script, " ")
    markers = [marker for marker in _CHALLENGE_MARKERS if marker in head]
    if markers and len(_visible_text(raw_html)) < _BESIDE_CONTENT:
        return f"a bot challenge page ({markers[0]})"
    if len(text) < _WIDGET_TEXT:
        for marker in _WIDGET_MARKERS:
            if marker in head:
                return f"a captcha page ({marker})"
    page_title = title or _html_title(raw_html)
    if page_title and _CHALLENGE_TITLES.match(page_title):
        return f"a bot challenge page (title {page_title.strip()[:60]!r})"
    visible = text or _visible_text(raw_html)
    match = _CHECK_PHRASES.search(visible)
    if match is None and len(_JS_PHRASES.sub("", visible)) < _WIDGET_TEXT:
        match = _JS_PHRASES.search(visible) or _JS_PHRASES.search(_noscript_text(raw_html))
    if match is not None:
        return f"an interstitial that says {match.group(0)!r}"
    return None


_TITLE = re.compile(r"<title[^>]{0,200}>(.{0,500}?)</title>", re.I | re.S)
_NOSCRIPT = re.compile(r"<noscript[^>]{0,200}>(.{0,2000}?)</noscript>", re.I | re.S)
_TAG = re.compile(r"<[^>]{0,2000}>")
_SCRIPT = re.compile(r"<(script|style)[^>]{0,2000}>.*?</\1\s*>", re.I | re.S)
_HTML_LANG = re.compile(r"<html[^>]{0,500}?\blang\s*=\s*[\"']?([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})?)", re.I)


def _html_title(raw_html: str) -> str:
    match = _TITLE.search(raw_html[:100_000])
    return re.sub(r"\s+", " ", html_lib.unescape(match.group(1))).strip() if match else ""


_OG_TITLE = re.compile(r"<meta[^>]{0,300}?property\s*=\s*[\"']og:title[\"'][^>]{0,600}?content\s*=\s*[\"']([^\"']{1,500})", re.I)
_DATE_META = re.compile(
    r"<meta[^>]{0,300}?(?:property|name|itemprop)\s*=\s*[\"'](?:article:published_time|og:published_time|"
    r"datePublished|pubdate|publishdate|date|dc\.date|dc\.date\.issued|dcterms\.created|sailthru\.date|"
    r"parsely-pub-date)[\"'][^>]{0,300}?content\s*=\s*[\"']([^\"']{6,40})",
    re.I,
)
_DATE_JSONLD = re.compile(r"\"datePublished\"\s*:\s*\"([^\"]{6,40})\"")
_DATE_TIME = re.compile(r"<time[^>]{0,200}?datetime\s*=\s*[\"']([^\"']{6,40})", re.I)


def html_title(raw_html: str) -> str:
    """The page's title: ``og:title``, else ``<title>``."""
    match = _OG_TITLE.search(raw_html[:100_000])
    if match:
        return re.sub(r"\s+", " ", html_lib.unescape(match.group(1))).strip()
    return _html_title(raw_html)


def html_date(raw_html: str) -> date | None:
    """The publication date a page declares (meta tags, JSON-LD ``datePublished``, the first ``<time>``)."""
    head = raw_html[:300_000]
    for pattern in (_DATE_META, _DATE_JSONLD, _DATE_TIME):
        match = pattern.search(head)
        if match:
            try:
                return date.fromisoformat(match.group(1).strip()[:10])
            except ValueError:
                continue
    return None


def _noscript_text(raw_html: str) -> str:
    return " ".join(_TAG.sub(" ", m) for m in _NOSCRIPT.findall(raw_html[:200_000]))


def _visible_text(raw_html: str) -> str:
    body = _SCRIPT.sub(" ", raw_html[:200_000])
    return re.sub(r"\s+", " ", html_lib.unescape(_TAG.sub(" ", body))).strip()


def html_language(raw_html: str) -> str | None:
    match = _HTML_LANG.search(raw_html[:20_000])
    return match.group(1).replace("_", "-") if match else None


# --- extraction -------------------------------------------------------------------------------------


def _trafilatura() -> Any:
    try:
        import trafilatura  # the fetch extra
    except ImportError as exc:  # trafilatura itself, or lxml.html.clean (lxml_html_clean) it needs
        raise ConfigError(f"{FETCH_HINT} ({exc})") from None
    return trafilatura


def check_fetch_extra() -> None:
    """``ConfigError`` naming the fetch extra when trafilatura cannot be imported here (checked in this process
    before a page is sent to an extraction worker; cheap: the module is found, not imported)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("trafilatura") is not None
    except (ImportError, ValueError):  # ValueError: sys.modules["trafilatura"] is None (blocked)
        found = False
    if not found:
        raise ConfigError(f"{FETCH_HINT} (No module named 'trafilatura')")


def extract_html(raw_html: str, url: str | None, fmt: Format) -> Extracted:
    """The main content of an HTML page (trafilatura), as markdown or plain text, with title, date and language."""
    _trafilatura()  # the fetch extra, or a ConfigError naming it
    from perplexed.extract._strategies import extract_typed

    # trafilatura's own metadata extraction (htmldate and friends) costs more than the extraction itself: the
    # title, date and language are read here from the page's head instead (html_title/html_date/html_language).
    # The page's type picks the strategy (issue 36): see _strategies_extract.
    typed = extract_typed(raw_html, url, fmt)
    text = typed.text
    return Extracted(
        text=text.strip(),
        format=fmt,
        title=html_title(raw_html),
        published=html_date(raw_html),
        language=html_language(raw_html),
        page_type=typed.page_type,
        page_type_confidence=typed.confidence,
        structured=typed.structured,
    )


def extract_body(body: bytes, content_type: str | None, url: str | None, fmt: Format) -> tuple[Extracted, str]:
    """Extract a body of a supported kind (see :func:`body_kind`); returns the extraction and the decoded raw
    text (for interstitial checks). Raises ``DocumentError`` for an unreadable PDF, ``ConfigError`` when an
    extra is missing."""
    kind = body_kind(content_type, body)
    if kind == "pdf":
        from perplexed.extract._doctext import extract as extract_document

        document = extract_document(body, "page.pdf", kind="pdf")
        return Extracted(text=document.text, format="text", title=document.title if document.title != "page.pdf" else ""), ""
    raw = decode_text(body, content_type)
    if kind == "html":
        return extract_html(raw, url, fmt), raw
    text = raw.replace("\r\n", "\n").replace("\r", "\n").strip()
    title = ""
    if kind == "markdown":
        for line in text.split("\n", 40)[:40]:
            if line.startswith("# "):
                title = line[2:].strip()
                break
    return Extracted(text=text, format="markdown" if kind == "markdown" else fmt, title=title), raw


def extract_page(body: bytes, content_type: str | None, url: str | None,
                 fmt: Format) -> tuple[Extracted, str | None]:
    """A fetched body's extraction (:func:`extract_body`) and, for HTML, why it is an interstitial (None when it
    looks like a page). Pure and CPU-bound: the ``http`` provider runs it in a worker process
    (:mod:`perplexed.extract._worker`), bounded by the fetch's deadline."""
    extracted, raw = extract_body(body, content_type, url, fmt)
    why = interstitial(raw, extracted.text, extracted.title) if body_kind(content_type, body) == "html" else None
    return extracted, why


__all__ += ["DocumentError", "check_fetch_extra", "extract_html", "extract_page", "html_language", "media_type"]


# --- the slice -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slice:
    content: str
    truncated: bool
    total_chars: int
    next_index: int | None


def cut(text: str, start_index: int, max_chars: int) -> Slice:
    """``text[start_index:start_index + max_chars]``; ``truncated`` exactly when text remains after it, and then
    ``next_index`` is where it starts."""
    total = len(text)
    piece = text[start_index : start_index + max_chars]
    end = min(total, start_index + len(piece)) if start_index < total else total
    truncated = end < total
    return Slice(content=piece, truncated=truncated, total_chars=total, next_index=end if truncated else None)


_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_MARKS = re.compile(r"(^|\n)\s{0,3}(#{1,6}\s+|>\s?|[-*+]\s+|\d+\.\s+)")
_MD_EMPHASIS = re.compile(r"(\*\*|__|\*|_|`{1,3})(?=\S)(.+?)(?<=\S)\1", re.S)


def markdown_to_text(markdown: str) -> str:
    """Plain text from Markdown, roughly: links keep their words, headings/lists/quotes/emphasis lose their marks."""
    text = _MD_LINK.sub(r"\1", markdown)
    text = _MD_MARKS.sub(r"\1", text)
    text = _MD_EMPHASIS.sub(r"\2", text)
    return text.strip()


__all__ += ["markdown_to_text"]
