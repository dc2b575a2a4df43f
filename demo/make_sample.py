"""Write the demo's sample folder (a PDF, a DOCX, an XLSX, a PPTX, a PNG) and a skill library.

Every file is made with the real libraries (the PDF by taskctx-documents' minimal
writer, with a real text layer), so `make demo` reads genuine documents.
Usage: python demo/make_sample.py OUT_DIR [RECORDS_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

from docx import Document
from openpyxl import Workbook
from PIL import Image, ImageDraw
from pptx import Presentation
from pptx.util import Inches
from taskctx_documents.testing import minimal_pdf

PAGES = (
    "Upload incident report. The nightly upload times out after 30 s when the file is "
    "larger than 2 GB.",
    "Root cause: the proxy closes idle connections after 30 s; the client sends no "
    "keep-alive while it hashes the file.",
)


def write_pdf(path: Path, pages: tuple[str, ...]) -> None:
    """A small PDF with a text layer, one page per string."""
    path.write_bytes(minimal_pdf(pages))


def write_docx(path: Path) -> None:
    """A Word document with headings, a table and a footer."""
    document = Document()
    document.add_heading("Upload runbook", level=1)
    document.add_paragraph("Check the proxy idle timeout before retrying a failed upload.")
    document.add_heading("Limits", level=2)
    table = document.add_table(rows=2, cols=2)
    for row, (name, value) in enumerate((("idle timeout", "30 s"), ("max file", "2 GB"))):
        table.cell(row, 0).text = name
        table.cell(row, 1).text = value
    document.sections[0].footer.paragraphs[0].text = "Operations team"
    document.save(str(path))


def write_xlsx(path: Path) -> None:
    """A workbook with upload timings on one sheet and notes on another."""
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Uploads"
    sheet.append(["date", "size_gb", "seconds", "result"])
    for day, size, seconds, result in (
        ("2026-11-20", 1.2, 21, "ok"),
        ("2026-11-21", 2.4, 30, "timeout"),
        ("2026-11-22", 2.6, 30, "timeout"),
    ):
        sheet.append([day, size, seconds, result])
    workbook.create_sheet("Notes").append(["timeouts start above 2 GB"])
    workbook.save(str(path))


def write_pptx(path: Path) -> None:
    """Two slides with a note."""
    deck = Presentation()
    for title, body, note in (
        ("Upload timeouts", "Uploads above 2 GB fail after 30 s", "Seen since the proxy change"),
        ("Fix", "Send keep-alives while hashing", "Owner: platform team"),
    ):
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = title
        box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1))
        box.text_frame.text = body
        slide.notes_slide.notes_text_frame.text = note
    deck.save(str(path))


def write_png(path: Path) -> None:
    """A small chart-like picture (reference only for text consumers)."""
    image = Image.new("RGB", (120, 60), "white")
    draw = ImageDraw.Draw(image)
    for index, height in enumerate((20, 45, 50)):
        draw.rectangle((10 + 35 * index, 58 - height, 35 + 35 * index, 58), fill="steelblue")
    image.save(path, format="PNG")


def write_records(root: Path) -> None:
    """A record store with review observations and an event, as an agent would leave them."""
    from taskctx_records import RecordStore

    if (root / ".taskctx" / "records" / "records.db").exists():
        return  # the store is append-only: the demo keeps the records of earlier runs
    store = RecordStore(root)
    store.put(
        {"status": "failed", "reason": "upload times out after 30 s", "file_gb": 2.4},
        collection="observations",
        kind="review_result",
        scope={"task_id": "demo"},
    )
    store.put(
        "Retry succeeded after enabling keep-alive on the client.",
        collection="notes",
        scope={"task_id": "demo"},
    )
    store.append_event("review", "started", {"by": "planner"}, task_id="demo")


SKILL_MD = """\
---
name: review-upload
description: Review an upload failure. Use when a transfer times out or is cut off.
---
# Review an upload failure

## Evidence first

Quote the observation and the file that shows the timeout; cite refs.

## Likely causes

Idle timeouts on a proxy, missing keep-alive, a client limit of 30 s.
"""


def write_skills(root: Path) -> None:
    """A skill library with one skill the demo trusts and binds as required."""
    skill = root / "review-upload"
    (skill / "scripts").mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (skill / "scripts" / "probe.sh").write_text("curl -v --max-time 30 $URL\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    """Write the sample folder (first argument) and, given a second, a record store there."""
    if len(argv) not in (1, 2):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    if len(argv) == 2:
        write_records(Path(argv[1]))
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    write_pdf(out / "incident.pdf", PAGES)
    write_docx(out / "runbook.docx")
    write_xlsx(out / "uploads.xlsx")
    write_pptx(out / "review.pptx")
    write_png(out / "chart.png")
    write_skills(out.parent / "skills")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
