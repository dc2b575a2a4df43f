"""The parse cache: once per content digest and handler version, failures included."""

from __future__ import annotations

import hashlib
import json
from functools import partial
from pathlib import Path

import pytest
from taskctx_workspace import TaskWorkspace
from taskctx_workspace.parsing import HandlerRegistry, ParseCache

from taskctx import PluginHost
from taskctx.errors import MediaError
from taskctx.protocols import ParsedDocument
from tests.plugins.workspace.helpers import TinyHandler, age, pdf_bytes, png_bytes


@pytest.fixture
def doc(root: Path) -> Path:
    """A document file in the root, modified a minute ago."""
    path = root / "report.pdf"
    path.write_bytes(pdf_bytes("quarterly numbers"))
    age(path)
    return path


def _workspace(root: Path, host: PluginHost, handler: TinyHandler) -> TaskWorkspace:
    workspace = TaskWorkspace(root, host=host)
    workspace.register_file_io_handler(handler)
    return workspace


def test_second_parse_does_not_call_the_handler(doc: Path, host: PluginHost) -> None:
    """The same bytes are parsed once, also by a new workspace instance (cache on disk)."""
    handler = TinyHandler()
    workspace = _workspace(doc.parent, host, handler)
    first = workspace.parsed("report.pdf")
    assert first.text == "QUARTERLY NUMBERS"
    assert workspace.parsed("report.pdf") == first
    assert workspace.read_file("report.pdf").text == first.text
    assert handler.calls == 1
    assert workspace.parse_count == 1
    assert _workspace(doc.parent, host, handler).parsed("report.pdf") == first
    assert handler.calls == 1


def test_cache_files_are_named_by_digest_and_handler(doc: Path, host: PluginHost) -> None:
    """Results live at <derived dir>/parsed/<sha256>-<handler>-<version>.json."""
    workspace = _workspace(doc.parent, host, TinyHandler(name="tiny/pdf", version="2.0-beta"))
    workspace.parsed("report.pdf")
    sha = hashlib.sha256(doc.read_bytes()).hexdigest()
    names = [p.name for p in (workspace.derived_dir / "parsed").iterdir()]
    assert names == [f"{sha}-tiny_pdf-2.0_beta.json"]


@pytest.mark.parametrize(("body", "code"), [("ENCRYPTED", "encrypted"), ("CRASH", "parse_failed")])
def test_failures_are_cached_with_their_code(
    root: Path, host: PluginHost, body: str, code: str
) -> None:
    """A refused or crashing parse is remembered: same code, no second handler call."""
    (root / "bad.pdf").write_bytes(pdf_bytes(body))
    handler = TinyHandler()
    for attempt in range(3):
        workspace = _workspace(root, host, handler)
        with pytest.raises(MediaError) as info:
            workspace.parsed("bad.pdf")
        assert info.value.code == code
        result = workspace.read_file("bad.pdf")
        assert result.problem is not None
        assert result.problem.code == code
        assert handler.calls == 1, attempt


def test_new_content_or_handler_version_parses_again(doc: Path, host: PluginHost) -> None:
    """The cache key is the content digest plus handler name and version."""
    handler = TinyHandler()
    _workspace(doc.parent, host, handler).parsed("report.pdf")
    doc.write_bytes(pdf_bytes("revised numbers"))
    age(doc)
    assert _workspace(doc.parent, host, handler).parsed("report.pdf").text == "REVISED NUMBERS"
    upgraded = TinyHandler(version="2")
    _workspace(doc.parent, host, upgraded).parsed("report.pdf")
    assert (handler.calls, upgraded.calls) == (2, 1)


def test_damaged_cache_entries_are_parsed_again(doc: Path, host: PluginHost) -> None:
    """A cache file that is not valid JSON (or another key's) is ignored and rewritten."""
    handler = TinyHandler()
    workspace = _workspace(doc.parent, host, handler)
    workspace.parsed("report.pdf")
    (entry,) = (workspace.derived_dir / "parsed").iterdir()
    entry.write_text("{not json")
    assert _workspace(doc.parent, host, handler).parsed("report.pdf").text == "QUARTERLY NUMBERS"
    assert handler.calls == 2
    record = json.loads(entry.read_text())
    record["sha256"] = "0" * 64
    entry.write_text(json.dumps(record))
    _workspace(doc.parent, host, handler).parsed("report.pdf")
    assert handler.calls == 3


def test_parsed_refuses_what_is_not_a_parseable_document(root: Path, host: PluginHost) -> None:
    """Text and images are not documents; a document without handler is handler_missing."""
    (root / "pic.png").write_bytes(png_bytes())
    (root / "r.pdf").write_bytes(pdf_bytes())
    workspace = TaskWorkspace(root, host=host)
    codes = []
    for path in ("notes.txt", "pic.png", "r.pdf"):
        with pytest.raises(MediaError) as info:
            workspace.parsed(path)
        codes.append(info.value.code)
    assert codes == ["not_a_document", "not_a_document", "handler_missing"]


def test_fallback_documents_are_parsed_too(root: Path, host: PluginHost) -> None:
    """A document written by this execution in read-only mode can be parsed."""
    handler = TinyHandler()
    workspace = _workspace(root, host, handler)
    workspace.write_file("mine.pdf", pdf_bytes("draft"))
    assert workspace.parsed("mine.pdf").text == "DRAFT"


class _Timeout:
    """A handler that always times out, then would succeed."""

    name = "slow"
    suffixes = ("pdf",)
    media_types = ("application/pdf",)

    def __init__(self) -> None:
        self.calls = 0

    def parse(self, data: bytes, path: str) -> ParsedDocument:
        """Time out on the first call only."""
        self.calls += 1
        if self.calls == 1:
            raise MediaError("took too long", code="timeout")
        return ParsedDocument(text="late", media_type="application/pdf")


def test_timeouts_are_not_cached(tmp_path: Path) -> None:
    """A timeout may not happen again, so the next read tries again."""
    cache = ParseCache(tmp_path)
    handler = _Timeout()
    data = pdf_bytes()
    with pytest.raises(MediaError, match="too long"):
        cache.parsed(None, handler, "x.pdf", lambda: data)
    assert cache.parsed(None, handler, "x.pdf", lambda: data).text == "late"
    assert next(iter(tmp_path.iterdir())).name.endswith("-slow-0.json")


def test_bytes_that_changed_are_cached_under_their_own_digest(tmp_path: Path) -> None:
    """If the file changed after its digest was taken, the parse is keyed by what was read."""
    cache = ParseCache(tmp_path)
    handler = TinyHandler()
    data = pdf_bytes("now")
    actual = hashlib.sha256(data).hexdigest()
    assert cache.parsed("0" * 64, handler, "x.pdf", lambda: data).text == "NOW"

    def unreadable() -> bytes:
        raise AssertionError("a cached parse must not read the file")

    assert cache.parsed(actual, handler, "x.pdf", unreadable).text == "NOW"
    assert [p.name.split("-")[0] for p in tmp_path.iterdir()] == [actual]


def test_handler_lookup_by_media_type_then_longest_suffix() -> None:
    """Media type claims win; otherwise the longest matching suffix."""
    short = TinyHandler(name="short", suffixes=("gz",), media_types=())
    long = TinyHandler(name="long", suffixes=("tar.gz",), media_types=())
    pdf = TinyHandler(name="pdf")
    registry = HandlerRegistry([short, long, pdf])
    assert registry.handler_for("a/b.tar.gz", None) is long
    assert registry.handler_for("b.gz", None) is short
    assert registry.handler_for("b.bin", "Application/PDF; x=y") is pdf
    assert registry.handler_for(None, None) is None
    assert registry.handler_for("b.txt", "text/plain") is None


def _fill(cache: ParseCache, handler: TinyHandler, count: int, start: int = 0) -> list[str]:
    """Parse ``count`` distinct documents through ``cache``; their digests, in order."""
    digests = []
    for n in range(start, start + count):
        data = pdf_bytes(f"document number {n} " + "x" * 200)
        digest = hashlib.sha256(data).hexdigest()
        cache.parsed(digest, handler, f"d{n}.pdf", partial(bytes, data))
        digests.append(digest)
    return digests


def _on_disk(directory: Path) -> set[str]:
    return {p.name.split("-", 1)[0] for p in directory.iterdir() if p.suffix == ".json"}


def test_the_parse_cache_keeps_at_most_max_files_dropping_the_least_used(tmp_path: Path) -> None:
    """Past ``max_files`` the oldest entries go until 80 % are left; a hit keeps one young."""
    handler = TinyHandler()
    cache = ParseCache(tmp_path, max_files=5)
    first, *_rest = _fill(cache, handler, 5)
    age(*(p for p in tmp_path.iterdir() if first not in p.name))
    assert cache.parsed(first, handler, "d0.pdf", lambda: b"") is not None  # a hit: touched
    newer = _fill(cache, handler, 1, start=5)
    kept = _on_disk(tmp_path)
    assert len(kept) <= 4
    assert first in kept
    assert newer[0] in kept
    assert cache.evicted == 6 - len(kept)
    assert handler.calls == 6


def test_the_parse_cache_keeps_at_most_max_bytes(tmp_path: Path) -> None:
    """Past ``max_bytes`` entries are deleted until it is back under 80 % of it, counting
    what was on disk before this cache opened."""
    handler = TinyHandler()
    _fill(ParseCache(tmp_path), handler, 10)
    size = sum(p.stat().st_size for p in tmp_path.iterdir())
    cache = ParseCache(tmp_path, max_bytes=size)
    _fill(cache, handler, 1, start=10)
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= size * 0.8
    assert cache.evicted >= 2


def test_bad_parse_cache_bounds_are_refused() -> None:
    """A bound below 1 says which."""
    with pytest.raises(ValueError, match="at least 1, not 0 and 5"):
        ParseCache(None, max_bytes=0, max_files=5)
