"""The HTML page in a real headless Chromium (Debian's package): it renders, every block
and omission is in the live DOM, no console error, and no request leaves the page, not
even for hostile content that names a server. The browser's checks are shown to work on
a page built to fail them."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from PIL import Image

from taskctx.htmlview import package_html
from tests.core.htmlfixtures import rich_package

WINDOW = (1200, 1600)


def _chromium() -> str:
    """The browser, or a skip saying how to get it (a failure under CI)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        how = "install Debian's chromium package (./.ci/install-chromium does it)"
        if os.environ.get("CI"):
            pytest.fail(f"headless Chromium is needed in CI: {how}")
        pytest.skip(f"no headless Chromium here: {how}")
    return found


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        """Count the request; answer with nothing."""
        type(self).hits.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def leak_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 that records every request it gets."""
    hits: list[str] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def _browse(page: Path, tmp_path: Path) -> tuple[str, list[str], Path]:
    """Load ``page`` headless: its live DOM, the console lines, a screenshot."""
    base = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
    ]
    url = page.as_uri()
    dom = subprocess.run(
        [*base, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    )
    shot = tmp_path / f"{page.stem}.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", url], capture_output=True, timeout=120, check=True
    )
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    return dom.stdout, console, shot


def test_the_page_renders_whole_with_no_console_error_and_no_request(
    tmp_path: Path, leak_server: tuple[str, list[str]]
) -> None:
    """Every block, attachment and omission is in the DOM Chromium built; the hostile
    block's markup ran nothing and fetched nothing; the screenshot is a drawn page."""
    url, hits = leak_server
    package = rich_package(leak=url)
    page = tmp_path / "package.html"
    page.write_text(package_html([package]), encoding="utf-8")
    dom, console, shot = _browse(page, tmp_path)
    aliases = [b.alias for b in package.blocks] + [a.alias for a in package.attachments]
    for alias in aliases + [o.alias for o in package.omissions]:
        assert f'data-alias="{alias}"' in dom, alias
    assert "<script" not in dom
    assert "<iframe" not in dom
    assert "owned" not in dom.split("</title>")[0]  # the hostile script never set the title
    assert console == []
    assert hits == []
    with Image.open(shot) as image:
        assert image.size == WINDOW
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50  # text, tags and bars, not a blank page


def test_the_checks_catch_a_page_that_runs_and_fetches(
    tmp_path: Path, leak_server: tuple[str, list[str]]
) -> None:
    """A page without the policy that logs an error and loads an image: the console
    check sees the error and the server sees the request (the checks can fail)."""
    url, hits = leak_server
    page = tmp_path / "bad.html"
    page.write_text(
        f'<html><body><img src="{url}/leak.png"><script>console.error("boom")</script>'
        "</body></html>",
        encoding="utf-8",
    )
    _, console, _ = _browse(page, tmp_path)
    assert any("boom" in line for line in console)
    assert "/leak.png" in hits
