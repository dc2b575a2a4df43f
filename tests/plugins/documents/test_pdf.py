"""PDF: pages as sections, encryption, scans, broken files."""

from __future__ import annotations

import pytest
from taskctx_documents import DocumentLimits, PdfHandler

from taskctx.errors import MediaError
from tests.plugins.documents.builders import encrypt_pdf, make_pdf
from tests.plugins.documents.helpers import section_texts


def test_one_section_per_page() -> None:
    """Each page is a ``page:N`` section titled ``Page N`` holding that page's text."""
    parsed = PdfHandler().parse(make_pdf(["Alpha (one)\nsecond line", "Beta", "Gamma"]), "a.pdf")
    assert [(s.scope, s.title) for s in parsed.sections] == [
        ("page:1", "Page 1"),
        ("page:2", "Page 2"),
        ("page:3", "Page 3"),
    ]
    assert section_texts(parsed) == {
        "page:1": "Alpha (one)\nsecond line\n",
        "page:2": "Beta\n",
        "page:3": "Gamma\n",
    }
    assert parsed.metadata["pages"] == 3


def test_an_empty_page_is_an_empty_section() -> None:
    """A page without text stays addressable: a section of zero characters."""
    parsed = PdfHandler().parse(make_pdf(["Text", "", "More"]), "gap.pdf")
    middle = parsed.sections[1]
    assert (middle.scope, middle.chars, middle.start == middle.end) == ("page:2", 0, True)


def test_pdf_without_text_is_no_text() -> None:
    """Pages with no text layer (scans) give ``no_text`` naming the file and the page count."""
    with pytest.raises(MediaError) as caught:
        PdfHandler().parse(make_pdf(["", ""]), "scan.pdf")
    assert caught.value.code == "no_text"
    assert "scan.pdf" in str(caught.value)
    assert "2 page(s)" in str(caught.value)


def test_password_protected_pdf_is_encrypted() -> None:
    """An AES PDF with a user password is ``encrypted``; no password is guessed."""
    data = encrypt_pdf(make_pdf(["Secret plans"]), user_password="x")
    with pytest.raises(MediaError) as caught:
        PdfHandler().parse(data, "locked.pdf")
    assert caught.value.code == "encrypted"
    assert "locked.pdf" in str(caught.value)


def test_pdf_encrypted_with_empty_user_password_is_parsed() -> None:
    """Encryption that the empty user password opens (permissions only) does not stop parsing."""
    data = encrypt_pdf(make_pdf(["Open to all"]), user_password="")
    parsed = PdfHandler().parse(data, "permissions.pdf")
    assert parsed.text == "Open to all\n"
    assert parsed.metadata["encrypted"] is True
    assert parsed.metadata["opened_with"] == "empty user password"


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.4\n", b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n", make_pdf(["x"])[:60]],
    ids=["header-only", "no-xref", "truncated"],
)
def test_broken_pdf_is_parse_failed(data: bytes) -> None:
    """Malformed PDFs are ``parse_failed`` naming the file, never another exception."""
    with pytest.raises(MediaError) as caught:
        PdfHandler().parse(data, "broken.pdf")
    assert caught.value.code == "parse_failed"
    assert "broken.pdf" in str(caught.value)


def test_too_many_pages_is_too_large() -> None:
    """More pages than ``max_pages`` is ``too_large`` before any text is extracted."""
    handler = PdfHandler(DocumentLimits(max_pages=2))
    with pytest.raises(MediaError) as caught:
        handler.parse(make_pdf(["a", "b", "c"]), "long.pdf")
    assert caught.value.code == "too_large"
    assert "3 pages" in str(caught.value)


def test_failing_page_fails_the_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page whose extraction raises fails the whole PDF, naming the page and the error."""
    from pypdf import PageObject

    original = PageObject.extract_text

    def flaky(self: PageObject, *args: object, **kwargs: object) -> str:
        if "Bad" in original(self):
            raise ValueError("broken content stream")
        return original(self)

    monkeypatch.setattr(PageObject, "extract_text", flaky)
    with pytest.raises(MediaError) as caught:
        PdfHandler().parse(make_pdf(["Good", "Bad"]), "half.pdf")
    assert caught.value.code == "parse_failed"
    assert "page 2 of 2" in str(caught.value)
    assert "ValueError: broken content stream" in str(caught.value)


def test_version_names_the_library() -> None:
    """The cache key changes with pypdf's version and with the limits."""
    import pypdf
    from taskctx_documents.limits import DocumentLimits

    assert f"+pypdf-{pypdf.__version__}+" in PdfHandler().version
    assert PdfHandler().version != PdfHandler(DocumentLimits(max_bytes=1000)).version
