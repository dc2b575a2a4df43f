"""Who serves a read: the one dispatch of a ref to a source, its scoped read, a
registered ScopedRead, or the kernel's own slice of a ``chars:S-E`` part.

The reader's :class:`~taskctx.readback.Readback` and the source conformance kit read
through these same functions; nothing is checked here (readback checks every read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from taskctx.errors import UnsupportedScopeError
from taskctx.model import ContextRef, ExactRead
from taskctx.protocols import ContextSource, ScopedRead, SupportsReadMany, scope_kind
from taskctx.sections import CHAR_SCOPE_KIND, parse_char_scope

__all__ = ["ScopedReaders", "batched", "dispatch_read", "dispatch_read_many", "slice_part"]


class ScopedReaders(Protocol):
    """Who serves a scope kind for a media type (``PluginHost`` is one)."""

    def scoped_reader_for(self, scope_kind: str, media_type: str | None) -> ScopedRead | None:
        """The registered ScopedRead for ``scope_kind`` and ``media_type``, if any."""
        ...


async def dispatch_read(
    source: ContextSource,
    ref: ContextRef,
    media_type: str | None,
    limit: int | None,
    host: ScopedReaders,
) -> tuple[ExactRead, str]:
    """The one dispatch of a read to whoever serves it, and who that was.

    A whole item goes to ``async_read_exact``; a scoped ref to the source's own
    ``async_read_scoped``, else to the ScopedRead ``host`` registers for the scope kind
    and ``media_type``, else to ``async_read_exact``. ``ref.version`` is passed on as
    given (the pin). Nothing is checked here: the kernel's readback checks the read, and
    the source conformance kit checks the source through this same path.

    A ``chars:S-E`` scope is the kernel's: the whole item is read (as above) and sliced.
    """
    if ref.scope is not None and scope_kind(ref.scope) == CHAR_SCOPE_KIND:
        return await _read_part(source, ref, media_type, limit, host)
    if ref.scope is None:
        return await source.async_read_exact(ref, limit), _served(source, "async_read_exact")
    own_scoped = getattr(source, "async_read_scoped", None)
    if own_scoped is not None:
        read: ExactRead = await own_scoped(ref, limit)
        return read, _served(source, "async_read_scoped")
    reader = host.scoped_reader_for(scope_kind(ref.scope), media_type)
    if reader is not None:
        served_by = f"scoped reader {reader.name!r} over source {source.kind!r}"
        return await reader.async_read_scoped(source, ref, limit), served_by
    return await source.async_read_exact(ref, limit), _served(source, "async_read_exact")


async def _read_part(
    source: ContextSource,
    ref: ContextRef,
    media_type: str | None,
    limit: int | None,
    host: ScopedReaders,
) -> tuple[ExactRead, str]:
    """``text[S:E]`` of the whole item's text for ``chars:S-E``, with the content version
    the whole read reported."""
    assert ref.scope is not None
    try:
        start, end = parse_char_scope(ref.scope)
    except ValueError as exc:
        raise UnsupportedScopeError(f"{ref}: {exc}") from None
    whole, served_by = await dispatch_read(source, ref.with_scope(None), media_type, None, host)
    return slice_part(whole, ref.scope, start, end, limit), f"a part of what {served_by} read"


def slice_part(whole: ExactRead, scope: str, start: int, end: int, limit: int | None) -> ExactRead:
    """The read of ``text[start:end]`` of a whole-item read, as scope ``scope``."""
    if whole.text is None:
        raise UnsupportedScopeError(f"{whole.path} has no text, so no part {scope!r} of it")
    if end > len(whole.text):
        raise UnsupportedScopeError(
            f"part {scope!r} of {whole.path} ends past its text ({len(whole.text)} chars)"
        )
    return ExactRead.from_text(
        whole.path,
        whole.text[start:end],
        limit,
        scope=scope,
        media_type=whole.media_type,
        representation=whole.representation,
        content_version=whole.content_version,
        notes=whole.notes,
    )


def batched(source: ContextSource, ref: ContextRef) -> bool:
    """Whether ``dispatch_read`` sends ``ref`` to the source itself (a whole item, or a
    scope the source reads itself), so the source's batched read may serve it."""
    if ref.scope is None:
        return True
    if scope_kind(ref.scope) == CHAR_SCOPE_KIND:
        return False
    return getattr(source, "async_read_scoped", None) is not None


async def dispatch_read_many(
    source: ContextSource,
    refs: Sequence[tuple[ContextRef, str | None]],
    limit: int | None,
    host: ScopedReaders,
) -> list[tuple[ExactRead | Exception, str]]:
    """:func:`dispatch_read` of many ``(ref, media_type)`` pairs, each answer in order: a
    read (or the exception it raised) and who served it.

    A source with ``async_read_exact_many`` (:class:`~taskctx.protocols.SupportsReadMany`)
    serves every ref it would serve one by one in one call; the others (scopes a
    registered ScopedRead serves) and sources without it are dispatched one by one.
    """
    answers: list[tuple[ExactRead | Exception, str] | None] = [None] * len(refs)
    batch = [i for i, (ref, _) in enumerate(refs) if batched(source, ref)]
    if batch and isinstance(source, SupportsReadMany):
        reads = await source.async_read_exact_many([refs[i][0] for i in batch], limit)
        if len(reads) != len(batch):
            raise RuntimeError(
                f"source {source.kind!r} answered {len(reads)} reads for {len(batch)} refs "
                "in async_read_exact_many"
            )
        served_by = _served(source, "async_read_exact_many")
        for i, read in zip(batch, reads, strict=True):
            answers[i] = (read, served_by)
    for i, (ref, media_type) in enumerate(refs):
        if answers[i] is not None:
            continue
        try:
            answers[i] = await dispatch_read(source, ref, media_type, limit, host)
        except Exception as exc:  # one ref's failure is its answer, as in a batch
            answers[i] = (exc, _served(source, "async_read_exact"))
    return [answer for answer in answers if answer is not None]


def _served(source: ContextSource, method: str) -> str:
    return f"source {source.kind!r} ({method})"
