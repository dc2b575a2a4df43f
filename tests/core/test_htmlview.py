"""The HTML page of a package: every part present, everything escaped, nothing loaded;
written by taskctx inspect and taskctx read --html."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from taskctx.cli import main
from taskctx.htmlview import CONTENT_SECURITY_POLICY, package_html
from tests.core.htmlfixtures import rich_package


class _Elements(HTMLParser):
    """Every start tag with its attributes, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Keep the tag."""
        self.tags.append((tag, dict(attrs)))


def _elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(page)
    return parser.tags


def test_every_block_attachment_omission_and_diagnostic_is_on_the_page() -> None:
    """Each is an element carrying its alias; omissions sit under their reason."""
    package = rich_package()
    tags = _elements(package_html([package]))
    aliases = {attrs.get("data-alias") for _, attrs in tags}
    assert {b.alias for b in package.blocks} <= aliases
    assert {a.alias for a in package.attachments} <= aliases
    assert {o.alias for o in package.omissions} <= aliases
    reasons = {attrs.get("data-reason") for tag, attrs in tags if tag == "details"}
    assert reasons == {o.reason.value for o in package.omissions}
    assert sum(attrs.get("class") == "diagnostic" for tag, attrs in tags if tag == "tr") == len(
        package.diagnostics
    )
    assert any(tag == "svg" for tag, _ in tags)  # the coverage chart


def test_hostile_content_is_text_and_the_page_loads_nothing() -> None:
    """No script, frame, stylesheet or remote image: the block's markup is shown as text;
    images are data: URIs and the policy forbids every fetch."""
    page = package_html([rich_package(leak="http://127.0.0.1:9")])
    tags = _elements(page)
    assert not [t for t, _ in tags if t in ("script", "iframe", "link", "object", "embed")]
    sources = [attrs.get("src") or "" for tag, attrs in tags if tag == "img"]
    assert sources
    assert all(src.startswith("data:image/") for src in sources)
    assert "&lt;script&gt;document.title" in page
    policy = [
        a for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert [p["content"] for p in policy] == [CONTENT_SECURITY_POLICY]


def test_aliases_link_to_their_items_and_back() -> None:
    """Each [[ref:ref_N]] links to the alias table, whose row links to the item."""
    package = rich_package()
    tags = _elements(package_html([package]))
    ids = {attrs.get("id") for _, attrs in tags}
    links = {attrs.get("href") for tag, attrs in tags if tag == "a"}
    for alias in package.aliases:
        assert f"p1-alias-{alias}" in ids
        assert f"#p1-alias-{alias}" in links
    delivered = {b.alias for b in package.blocks}
    assert {f"#p1-{alias}" for alias in delivered} <= links
    assert {f"p1-{alias}" for alias in delivered} <= ids


def test_no_package_is_refused() -> None:
    """An empty list has nothing to show."""
    with pytest.raises(ValueError, match="no package to show"):
        package_html([])


def test_taskctx_inspect_and_read_html_write_the_page(tmp_path: Path) -> None:
    """inspect PACKAGE.json writes PACKAGE.html (or -o); a file that is not a package is
    named; read --html FILE writes the same kind of page beside its usual output."""
    package = rich_package()
    saved = tmp_path / "package.json"
    saved.write_text(package.model_dump_json(), encoding="utf-8")
    result = CliRunner().invoke(main, ["inspect", str(saved)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(tmp_path / "package.html")
    assert package.package_id in (tmp_path / "package.html").read_text(encoding="utf-8")
    pages = tmp_path / "pages.json"
    pages.write_text(json.dumps([package.model_dump(mode="json")] * 2), encoding="utf-8")
    both = CliRunner().invoke(main, ["inspect", str(pages), "-o", str(tmp_path / "x.html")])
    assert both.exit_code == 0, both.output
    assert (tmp_path / "x.html").read_text(encoding="utf-8").count("<article") == 2
    junk = tmp_path / "junk.json"
    junk.write_text('{"a": 1}', encoding="utf-8")
    refused = CliRunner().invoke(main, ["inspect", str(junk)])
    assert refused.exit_code == 2
    assert "is not a package printed by taskctx read --json" in refused.stderr
    assert not (tmp_path / "junk.html").exists()
    page = tmp_path / "read.html"
    read = CliRunner().invoke(main, ["read", "--put", "information=hello", "--html", str(page)])
    assert read.exit_code == 0, read.output
    assert read.output.startswith("<context")
    assert "hello" in page.read_text(encoding="utf-8")
