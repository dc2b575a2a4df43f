"""Resource URIs are canonical refs under the taskctx:// scheme, both ways."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from taskctx_mcp import ConfigError, ContextService, load_config, ref_to_uri, uri_to_ref
from taskctx_mcp.uris import URIError

from taskctx import ContextRef
from taskctx.errors import CursorError
from tests.contrib.mcp.conftest import make_config


@pytest.mark.parametrize(
    "ref",
    [
        ContextRef(binding="files", path="docs/upload.md"),
        ContextRef(binding="files", path="a b/ü#?%.txt"),
        ContextRef(binding="files", path="report.docx", scope="section:Details & more"),
        ContextRef(binding="records", path="observations/r1", version="v7"),
        ContextRef(binding="files", path="x.txt", scope="lines:1-2", version="sha256:ab"),
    ],
)
def test_refs_round_trip_through_uris(ref: ContextRef) -> None:
    """``uri_to_ref(ref_to_uri(ref)) == ref`` for paths, scopes and versions that need
    quoting."""
    uri = ref_to_uri(ref)
    assert uri.startswith("taskctx://")
    assert uri_to_ref(uri) == ref


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("ctx://files/a.txt", "not a taskctx"),
        ("taskctx://files", "<binding>/<path>"),
        ("taskctx:///a.txt", "<binding>/<path>"),
        ("taskctx://files/", "<binding>/<path>"),
        ("taskctx://files/a.txt#lines:1-2", "fragment"),
        ("taskctx://files/a.txt?lines=1-2&page=3", "more than one scope"),
        ("taskctx://files/a.txt?lines", "malformed query"),
        ("taskctx://bad%20id/a.txt", "invalid binding"),
        ("taskctx://files/a%00.txt", "NUL"),
    ],
)
def test_bad_uris_say_what_is_wrong(uri: str, words: str) -> None:
    """Each class of malformed URI is a URIError naming the fault."""
    with pytest.raises(URIError, match=words):
        uri_to_ref(uri)


def test_an_expired_cursor_is_refused(project: Path) -> None:
    """A read cursor and a listing cursor past cursor_ttl are refused as expired."""
    service = ContextService.from_config(
        make_config(project, cursor_ttl=0.5, budget={"max_blocks": 1}, resources={"page_size": 1})
    )
    package = anyio.run(service.read_context, "")
    listing = anyio.run(service.list_resources, None)
    assert package.cursor is not None
    assert listing.next_cursor is not None
    time.sleep(0.8)
    with pytest.raises(CursorError, match="expired"):
        anyio.run(service.read_next, package.cursor)
    with pytest.raises(CursorError, match="expired"):
        anyio.run(service.list_resources, listing.next_cursor)


@pytest.mark.parametrize("ttl", ["0", "-1", "1000000000", "'soon'", "true", "nan"])
def test_a_bad_cursor_ttl_is_a_config_error(tmp_path: Path, ttl: str) -> None:
    """cursor_ttl follows the kernel's bounds: a positive number up to 30 days."""
    path = tmp_path / "ttl.toml"
    path.write_text(f"cursor_ttl = {ttl}\n")
    with pytest.raises(ConfigError, match="cursor_ttl"):
        load_config(path)
