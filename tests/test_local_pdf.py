"""PDFs in the local index (issue 17): with the ``pdf`` extra (pypdf) their text is indexed and a hit keeps
its page number; without it, the skip message names the extra to install. The PDFs are written by the tests
(a minimal hand-made PDF: one Helvetica text object per page), no binary files are committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import perplexed
import pytest
from perplexed.extract._doctext import DocumentError, extract  # private: PDF text extraction, below the index
from perplexed.index import query_index  # private: the extracted text as stored, row by row
from perplexed.providers import Local
from perplexed.providers.local import build_index

pytest.importorskip("pypdf")


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A valid PDF with one page per string (each line of it a line of text), with a correct xref table."""
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    kids = []
    for i, text in enumerate(pages):
        page, content = 4 + 2 * i, 5 + 2 * i
        kids.append(f"{page} 0 R")
        lines = " ".join(f"({_escape(line)}) Tj T*" for line in text.split("\n"))
        stream = f"BT /F1 12 Tf 14 TL 72 720 Td {lines} ET".encode("latin-1")
        objects[page] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            + f"/Contents {content} 0 R >>".encode()
        )
        objects[content] = f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream"
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(pages)} >>".encode()
    info = ""
    if title is not None:
        number = max(objects) + 1
        objects[number] = f"<< /Title ({_escape(title)}) >>".encode("latin-1")
        info = f" /Info {number} 0 R"
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offsets[n]:010d} 00000 n \n".encode() for n in range(1, size))
    out += f"trailer\n<< /Size {size} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.pdf").write_bytes(
        make_pdf(
            ["Garden manual\nIntroduction to raised beds", "Watering\nTomatoes need deep watering twice a week",
             "Pests\nAphids dislike marigolds planted nearby"],
            title="The Garden Manual",
        )
    )
    (docs / "untitled.pdf").write_bytes(make_pdf(["Compost notes\nTurn the heap every fortnight"]))
    (docs / "notes.md").write_text("# Notes\n\nmarigolds again\n", encoding="utf-8")
    return docs


def test_extract_keeps_page_boundaries_and_the_title() -> None:
    doc = extract(make_pdf(["first page words", "second page words"], title="Doc title"), "x.pdf")
    assert doc.kind == "pdf" and doc.title == "Doc title"
    assert doc.pages[0] == 0 and len(doc.pages) == 2
    assert doc.text[doc.pages[1]:].startswith("second page")


def test_pdf_text_is_indexed_with_the_page_of_each_hit(folder: Path, tmp_path: Path) -> None:
    index = tmp_path / "index.db"
    report = build_index(folder, index)
    assert report.errors == [] and sorted(Path(p).name for p in report.added) == [
        "manual.pdf", "notes.md", "untitled.pdf"
    ]
    (row,) = query_index(index, "deep watering")
    assert (Path(row.path).name, row.page, row.title, row.kind) == ("manual.pdf", 2, "The Garden Manual", "pdf")
    assert "watering" in row.snippet.lower()
    rows = {Path(r.path).name: r for r in query_index(index, "marigolds")}
    assert rows["manual.pdf"].page == 3 and rows["notes.md"].page is None
    (untitled,) = query_index(index, "fortnight")
    assert untitled.title == "Compost notes" and untitled.page == 1
    hit = perplexed.search("aphids", provider=Local(index=index)).hits[0]
    assert hit.url.endswith("/manual.pdf#page=3") and hit.raw["page"] == 3


def test_a_damaged_pdf_is_reported_and_the_run_goes_on(folder: Path, tmp_path: Path) -> None:
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R >> endobj\n%%EOF")
    (folder / "fake.pdf").write_bytes(b"just text, not a PDF")
    (folder / "blank.pdf").write_bytes(make_pdf([""]))
    report = build_index(folder, tmp_path / "index.db")
    reasons = {Path(p.path).name: p.reason for p in report.errors}
    assert set(reasons) == {"broken.pdf", "fake.pdf", "blank.pdf"}
    assert "not a PDF" in reasons["fake.pdf"] and "no text" in reasons["blank.pdf"]
    assert report.documents == 3


def test_without_the_extra_pdfs_are_skipped_naming_the_extra(folder: Path, tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['pypdf'] = None\n"  # as if the extra were not installed
        "from perplexed.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERPLEXED_")}
    env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1")
    index = str(tmp_path / "index.db")
    run = subprocess.run([sys.executable, "-c", code, "index", str(folder), "--index", index, "--json"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    skipped = {Path(p["path"]).name: p["reason"] for p in json.loads(run.stdout)["skipped"]}
    assert set(skipped) == {"manual.pdf", "untitled.pdf"}
    assert "pip install 'perplexed-search[pdf]'" in skipped["manual.pdf"]
    text = subprocess.run([sys.executable, "-c", code, "index", str(folder), "--index", index],
                          capture_output=True, text=True, env=env, timeout=120)
    assert "perplexed-search[pdf]" in text.stdout and "manual.pdf" in text.stdout
    with pytest.raises(DocumentError, match=r"perplexed-search\[pdf\]"):
        subprocess_free_extract_without_pypdf()


def subprocess_free_extract_without_pypdf() -> None:
    saved = sys.modules.get("pypdf")
    sys.modules["pypdf"] = None  # type: ignore[assignment]
    try:
        extract(make_pdf(["x"]), "x.pdf")
    finally:
        if saved is not None:
            sys.modules["pypdf"] = saved
        else:
            del sys.modules["pypdf"]
