"""Hostile pages for the extraction bounds (issue 40 #1, #3): cheap to send, expensive to extract."""

from __future__ import annotations

#: 8 MB of ``<p>`` tags: under the 8 MiB body cap, minutes of trafilatura and gigabytes without a bound
P_TAGS = b"<html><body>" + b"<p>" * 2_700_000 + b"</body></html>"

#: 50 KB of ``[``: Markdown -> text backtracks quadratically (tens of seconds in one regular expression)
BRACKETS = "[" * 50_000


def shared_stream_pdf(pages: int = 3000, ops: int = 4000) -> bytes:
    """A small PDF of ``pages`` pages that all draw the same content stream (``ops`` text operators): a few
    hundred KB that make a text extractor parse the stream once per page."""
    stream = b"BT /F1 12 Tf 72 712 Td " + b"(setback) Tj 0 -1 Td " * ops + b"ET"
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    first_page = len(objects) + 1
    kids = b" ".join(b"%d 0 R" % (first_page + i) for i in range(pages))
    objects[1] = b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages
    for _ in range(pages):
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                       b"/Resources << /Font << /F1 3 0 R >> >> >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
