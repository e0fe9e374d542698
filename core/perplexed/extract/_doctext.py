"""Plain text and a title from a document's bytes: Markdown, plain text, HTML, reStructuredText, PDF.

Pure functions, no I/O: :func:`extract` takes the file's bytes and name and returns a :class:`Document`, or
raises :class:`DocumentError` saying why the file cannot be indexed (binary, not UTF-8). The title is the
document's first heading (``<title>`` for HTML, ``title:`` front matter for Markdown, the document title
for PDF), else the file name. The text keeps the words and drops the markup, so that full-text search and
snippets read naturally. PDFs need the optional ``pdf`` extra (pypdf); their text keeps page boundaries
(:attr:`Document.pages`).

:func:`cjk_terms` turns the Chinese, Japanese and Korean runs of a text into overlapping character bigrams
and unigrams, the form the index stores them in so that any substring of one or more characters is found.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from perplexed._errors import DocumentError, install_hint
from perplexed.extract._cjk import _CJK_CHARS, CJK_RUN

__all__ = [
    "CJK_RUN",
    "EXTRACTOR_VERSION",
    "KINDS",
    "PDF_HINT",
    "Document",
    "DocumentError",
    "cjk_terms",
    "decode",
    "extract",
    "kind_of",
    "pdf_supported",
]

#: bumped whenever extraction changes, so that the index re-reads files it had already indexed
EXTRACTOR_VERSION = "2"

#: file suffix (lower case) -> document kind
KINDS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".mkd": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "rst",
    ".rest": "rst",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
}

#: what to install to index PDFs (shown when a PDF is skipped)
PDF_HINT = f"install the 'pdf' extra to index PDFs: {install_hint('pdf')}"


@dataclass(frozen=True)
class Document:
    """A document's title and plain text, and its kind (``markdown``, ``text``, ``rst``, ``html``, ``pdf``).

    ``pages``: for a PDF, the offset in ``text`` where each page starts (page 1 at 0); empty otherwise.
    """

    title: str
    text: str
    kind: str
    pages: tuple[int, ...] = ()


def pdf_supported() -> bool:
    """Whether PDFs can be indexed here (the ``pdf`` extra, pypdf, is installed)."""
    return importlib.util.find_spec("pypdf") is not None


def kind_of(filename: str) -> str | None:
    """The document kind for a file name, from its suffix; None when the type is not supported."""
    dot = filename.rfind(".")
    return KINDS.get(filename[dot:].lower()) if dot > 0 else None


def decode(data: bytes) -> str:
    """Decode a text file: UTF-8 (a BOM is allowed). Binary data or another encoding is a DocumentError."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise DocumentError("UTF-16 text: only UTF-8 is supported (save the file as UTF-8)")
    if b"\x00" in data:
        raise DocumentError("binary file (contains NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def extract(data: bytes, filename: str, kind: str | None = None) -> Document:
    """Title and plain text of a document. ``kind`` defaults to the one implied by ``filename``'s suffix."""
    kind = kind or kind_of(filename) or "text"
    if kind == "pdf":
        return _pdf(data, filename)
    text = decode(data).replace("\r\n", "\n").replace("\r", "\n")
    if kind == "markdown":
        title, body = _markdown(text)
    elif kind == "rst":
        title, body = _rst(text)
    elif kind == "html":
        title, body = _html(text)
    else:
        title, body = _first_heading(text.split("\n")), text
    title = _squash(title)
    body = _tidy(body)
    if title and body.startswith(title):  # the heading is the title: keep it out of the text and snippets
        first, _, rest = body.partition("\n")
        if _squash(first) == title:
            underline, _, after = rest.partition("\n")
            body = (after if _is_adornment(underline) else rest).lstrip("\n")
    return Document(title=title or filename, text=body, kind=kind)


# --- PDF ----------------------------------------------------------------------------------------------


def _pdf(data: bytes, filename: str) -> Document:
    try:
        import pypdf
    except ImportError:
        raise DocumentError(f"PDF: {PDF_HINT}") from None
    if not data.lstrip()[:5] == b"%PDF-":
        raise DocumentError("not a PDF file (no %PDF- header)")
    pages: list[str] = []
    title = ""
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError("encrypted PDF (a password is needed to read it)")
        for page in reader.pages:
            pages.append(_tidy(page.extract_text() or ""))
        meta = reader.metadata
        if meta is not None and isinstance(meta.title, str):
            title = _squash(meta.title)
    except DocumentError:
        raise
    except Exception as exc:  # pypdf raises many kinds of errors on damaged or hostile files
        raise DocumentError(f"cannot read the PDF ({type(exc).__name__}: {str(exc)[:200]})") from None
    offsets: list[int] = []
    text = ""
    for page_text in pages:
        offsets.append(len(text))
        text += page_text + "\n\n"
    if not text.strip():
        raise DocumentError("no text in the PDF (scanned pages? run OCR on it first)")
    if not title:
        first = next((line for line in text.split("\n") if line.strip()), "")
        title = _squash(first) if 0 < len(first) <= 120 else ""
    return Document(title=title or filename, text=text.rstrip(), kind="pdf", pages=tuple(offsets))


# --- CJK --------------------------------------------------------------------------------------------

# the CJK ranges and runs live in _cjk (the index's query side reads them without this module)
# a word that holds CJK characters, with the letters or digits glued to it ("Python编程"): compiled on first use
# (its negated class over these ranges takes ~9 ms to compile, and a search never needs it: only indexing does)
_CJK_WORD_PATTERN = f"[^\\W{_CJK_CHARS}]{{0,64}}(?:[{_CJK_CHARS}]+[^\\W{_CJK_CHARS}]{{0,64}})+"


@functools.cache
def _cjk_word() -> re.Pattern[str]:
    return re.compile(_CJK_WORD_PATTERN)


def cjk_grams(run: str) -> list[str]:
    """A CJK run as overlapping bigrams, then its unigrams (``番茄和`` -> ``番茄 茄和 番 茄 和``)."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)] + list(run)


def cjk_terms(text: str) -> str:
    """The CJK runs of ``text`` as space-separated bigrams and unigrams ('' when there are none).

    Letters and digits glued to a run (``Python编程``) are kept as words of their own, so that they can be
    found too. The default tokenizer sees a whole run as one word; these terms let the index find any
    substring of a run, one character or more.
    """
    if text.isascii() or not CJK_RUN.search(text):  # isascii: the common case, at C speed
        return ""
    out: list[str] = []
    for word in _cjk_word().finditer(text):
        pos = 0
        token = word.group()
        for run in CJK_RUN.finditer(token):
            if run.start() > pos:
                out.append(token[pos : run.start()])
            out.extend(cjk_grams(run.group()))
            pos = run.end()
        if pos < len(token):
            out.append(token[pos:])
    return " ".join(out)


# --- whitespace ----------------------------------------------------------------------------------------


def _squash(text: str) -> str:
    return " ".join(text.split())


def _tidy(text: str) -> str:
    """Collapse runs of spaces in each line and blank-line runs to one blank line."""
    lines = [" ".join(line.split()) for line in text.split("\n")]
    out = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", out).strip()


# --- Markdown -----------------------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s+\S.*$")
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>")
_TAG = re.compile(r"</?[A-Za-z][^>]{0,300}>")
_EMPHASIS = re.compile(r"(\*{1,3}|_{1,3}|~~)(?=\S)(.+?)(?<=\S)\1")
_CODE_SPAN = re.compile(r"`+([^`]+)`+")
_LIST_MARK = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _inline_markdown(text: str) -> str:
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _CODE_SPAN.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    for _ in range(2):  # nested emphasis: ***a*** or **_a_**
        text = _EMPHASIS.sub(r"\2", text)
    return text


def _front_matter(lines: list[str]) -> tuple[str | None, list[str]]:
    """A YAML front-matter block's ``title`` and the lines after the block."""
    if not lines or lines[0].strip() != "---":
        return None, lines
    for end in range(1, min(len(lines), 200)):
        if lines[end].strip() in ("---", "..."):
            title = None
            for line in lines[1:end]:
                match = re.match(r"^title\s*:\s*(.+?)\s*$", line)
                if match:
                    title = match.group(1).strip().strip("'\"")
                    break
            return title, lines[end + 1 :]
    return None, lines


def _markdown(text: str) -> tuple[str, str]:
    title, lines = _front_matter(text.split("\n"))
    out: list[str] = []
    fence: str | None = None
    previous = ""
    for line in lines:
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
            else:
                out.append(line)  # code is text too: it is searchable
            previous = ""
            continue
        if fence_match:
            fence = fence_match.group(1)
            previous = ""
            continue
        atx = _ATX.match(line)
        if atx:
            heading = _inline_markdown(atx.group(2))
            if title is None and heading.strip():
                title = heading
            out.append(heading)
            previous = ""
            continue
        if _SETEXT.match(line) and previous.strip() and not _LIST_MARK.match(previous):
            if title is None:
                title = _inline_markdown(previous)
            previous = ""
            continue
        if _RULE.match(line) or _REF_DEF.match(line) or _TABLE_SEP.match(line):
            previous = ""
            continue
        cleaned = _QUOTE.sub("", line)
        cleaned = _LIST_MARK.sub(r"\1", cleaned)
        if "|" in cleaned and cleaned.strip().startswith("|"):
            cleaned = cleaned.replace("|", " ")
        cleaned = _inline_markdown(cleaned)
        out.append(cleaned)
        previous = line
    return title or "", "\n".join(out)


def _first_heading(lines: list[str]) -> str:
    """For plain text: a Markdown-style ``# heading`` or an underlined line among the first lines, else ''."""
    seen = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        seen += 1
        if seen > 3:
            break
        atx = _ATX.match(line)
        if atx and atx.group(2).strip():
            return atx.group(2)
        if i + 1 < len(lines) and _is_adornment(lines[i + 1]) and len(lines[i + 1].strip()) >= len(line.strip()):
            return line
    return ""


# --- reStructuredText ------------------------------------------------------------------------------------

_ADORNMENT_CHARS = "=-~^\"'`#*+<>:._"
_ROLE = re.compile(r":[\w.+-]+:`([^`<]*?)\s*(?:<[^>]*>)?`")
_RST_LINK = re.compile(r"`([^`<]+?)\s*<[^>]*>`__?")
_RST_REF = re.compile(r"`([^`]+)`_{1,2}")
_LITERAL = re.compile(r"``(.+?)``")
_EXPLICIT = re.compile(r"^\s*\.\.(?:\s|$)")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+([\w:-]+)::\s*(.*)$")
_TEXT_DIRECTIVES = {
    "note", "tip", "hint", "important", "warning", "caution", "danger", "attention", "error", "admonition",
    "topic", "sidebar", "rubric", "seealso", "versionadded", "versionchanged", "deprecated",
}
_FIELD = re.compile(r"^\s*:[\w\s-]+:\s*")


def _is_adornment(line: str) -> bool:
    stripped = line.rstrip()
    return len(stripped) >= 3 and stripped[0] in _ADORNMENT_CHARS and stripped == stripped[0] * len(stripped)


def _inline_rst(text: str) -> str:
    text = _ROLE.sub(r"\1", text)
    text = _RST_LINK.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    text = _RST_REF.sub(r"\1", text)
    for _ in range(2):
        text = _EMPHASIS.sub(r"\2", text)
    return text.replace("\\", "")


def _rst(text: str) -> tuple[str, str]:
    lines = text.split("\n")
    title = ""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        # overlined title: ====== / Title / ======
        if _is_adornment(line) and nxt.strip() and i + 2 < len(lines) and _is_adornment(lines[i + 2]):
            heading = _inline_rst(nxt.strip())
            title = title or heading
            out.append(heading)
            i += 3
            continue
        # underlined title: Title / =====
        if line.strip() and not _is_adornment(line) and _is_adornment(nxt) and len(nxt.rstrip()) >= len(line.strip()):
            heading = _inline_rst(line.strip())
            title = title or heading
            out.append(heading)
            i += 2
            continue
        if _is_adornment(line):  # a transition
            i += 1
            continue
        if _EXPLICIT.match(line):  # directive, comment, link target or substitution definition
            directive = _DIRECTIVE.match(line)
            if directive and directive.group(1) in _TEXT_DIRECTIVES and directive.group(2):
                out.append(_inline_rst(directive.group(2)))  # ".. note:: Keep the text"
            i += 1
            continue
        cleaned = _FIELD.sub("", line) if line.lstrip().startswith(":") else line
        cleaned = cleaned[:-1] if cleaned.endswith("::") else cleaned  # "Example::" introduces a literal block
        out.append(_inline_rst(cleaned))
        i += 1
    return title, "\n".join(out)


# --- HTML ---------------------------------------------------------------------------------------------

_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object"}
_BLOCK = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer", "nav",
    "aside", "main", "blockquote", "pre", "dd", "dt", "dl", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "figure", "figcaption", "title", "td", "th",
}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.heading: list[str] = []
        self.description = ""
        self._skip = 0
        self._in_title = False
        self._in_heading = 0  # depth inside the first heading
        self._heading_done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        if tag == "meta":
            values = {k.lower(): v or "" for k, v in attrs}
            if values.get("name", "").lower() == "description":
                self.description = values.get("content", "")
            return
        if tag in _SKIP:
            self._skip += 1
            return
        if tag in _HEADINGS and not self._heading_done:
            self._in_heading += 1
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag in _HEADINGS and self._in_heading:
            self._in_heading -= 1
            if not self._in_heading and "".join(self.heading).strip():
                self._heading_done = True
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "hr"):
            self.parts.append("\n")
        else:
            self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
            return
        if self._skip:
            return
        if self._in_heading and not self._heading_done:
            self.heading.append(data)
        self.parts.append(data)


def _html(text: str) -> tuple[str, str]:
    parser = _TextParser()
    parser.feed(text)
    parser.close()
    title = _squash("".join(parser.title)) or _squash("".join(parser.heading))
    body = "".join(parser.parts)
    if parser.description.strip():
        body = parser.description.strip() + "\n\n" + body
    return title, body
