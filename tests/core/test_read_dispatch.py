"""dispatch_read: the one scoped-read dispatch the reader and the source conformance kit share."""

from __future__ import annotations

import asyncio

import pytest

from taskctx import PluginHost
from taskctx.dispatch import dispatch_read
from taskctx.model import ContextRef, ExactRead
from taskctx.testing import MemorySource


class OwnScoped(MemorySource):
    """A memory source that serves scoped refs itself (upper-cased, to tell it apart)."""

    async def async_read_scoped(self, ref: ContextRef, limit: int | None) -> ExactRead:
        """The whole item, upper-cased, under the ref's scope."""
        whole = await self.async_read_exact(ref.with_scope(None), None)
        assert whole.text is not None
        return ExactRead.from_text(
            ref.path,
            whole.text.upper(),
            limit,
            scope=ref.scope,
            media_type=whole.media_type,
            content_version=whole.content_version,
        )


@pytest.fixture
def host() -> PluginHost:
    """Built-ins only: the kernel's ``lines`` scoped reader."""
    return PluginHost(allow=[], load_entrypoints=False)


def _source(cls: type[MemorySource] = MemorySource) -> MemorySource:
    source = cls()
    source.put("notes.txt", "one\ntwo\nthree\n")
    return source


def _ref(scope: str | None) -> ContextRef:
    return ContextRef(binding="b", path="notes.txt", scope=scope)


def test_whole_item_goes_to_read_exact(host: PluginHost) -> None:
    """A ref without a scope is read by async_read_exact, even on a source with its own
    scoped read."""
    read, served_by = asyncio.run(dispatch_read(_source(OwnScoped), _ref(None), None, 3, host))
    assert (read.text, read.scope) == ("one", None)
    assert served_by == "source 'memory' (async_read_exact)"


def test_scoped_ref_goes_to_the_sources_own_scoped_read(host: PluginHost) -> None:
    """A source's own async_read_scoped wins over a registered scoped reader."""
    read, served_by = asyncio.run(
        dispatch_read(_source(OwnScoped), _ref("lines:2-2"), "text/plain", None, host)
    )
    assert read.text == "ONE\nTWO\nTHREE\n"
    assert served_by == "source 'memory' (async_read_scoped)"


def test_scoped_ref_goes_to_the_registered_reader(host: PluginHost) -> None:
    """Without its own scoped read, the host's reader for the scope kind and media type
    slices the item."""
    read, served_by = asyncio.run(
        dispatch_read(_source(), _ref("lines:2-2"), "text/plain", None, host)
    )
    assert (read.text, read.scope) == ("two\n", "lines:2-2")
    assert served_by == "scoped reader 'lines' over source 'memory'"


@pytest.mark.parametrize(
    ("scope", "media_type"),
    [("page:2", "text/plain"), ("lines:2-2", "application/pdf")],
    ids=["unknown-scope-kind", "media-type-no-reader-serves"],
)
def test_scoped_ref_nobody_serves_falls_back_to_read_exact(
    host: PluginHost, scope: str, media_type: str
) -> None:
    """No reader for the scope kind or the media type: the exact read answers (and the
    readback's check then sees the scope it did not get)."""
    read, served_by = asyncio.run(dispatch_read(_source(), _ref(scope), media_type, None, host))
    assert read.scope is None
    assert served_by == "source 'memory' (async_read_exact)"
