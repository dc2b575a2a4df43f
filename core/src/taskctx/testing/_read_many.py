"""The conformance rule of ``async_read_exact_many`` (``SupportsReadMany``)."""

from __future__ import annotations

from typing import Any

import pytest

from taskctx.digests import SHA256_PREFIX
from taskctx.model import ContextRef, ExactRead, SourceDescriptor
from taskctx.protocols import ContextSource, SupportsReadMany
from taskctx.testing._common import run as _run

__all__ = ["ReadManyRules"]


def _single(source: ContextSource, ref: ContextRef, limit: int | None) -> ExactRead | Exception:
    """What the source's own read of ``ref`` returns or raises (the scoped read for a
    scoped ref when it has one)."""
    scoped = getattr(source, "async_read_scoped", None)
    try:
        if ref.scope is not None and scoped is not None:
            read: ExactRead = _run(scoped(ref, limit))
            return read
        return _run(source.async_read_exact(ref, limit))
    except Exception as exc:
        return exc


def refs_to_batch(descriptors: list[SourceDescriptor], binding: str) -> list[ContextRef]:
    """Every descriptor's ref, unpinned and pinned to its version (and its sections'),
    a ref pinned to a version it never had, and a ref of nothing: one batch of each kind."""
    refs: list[ContextRef] = []
    for d in descriptors:
        scopes = [d.scope] if d.scope is not None else [None, *(s.scope for s in d.sections)]
        for scope in scopes:
            refs.append(ContextRef(binding=binding, path=d.path, scope=scope))
            refs.append(
                ContextRef(binding=binding, path=d.path, scope=scope, version=d.content_version)
            )
    if descriptors:
        foreign = SHA256_PREFIX + "0" * 64
        refs.append(ContextRef(binding=binding, path=descriptors[0].path, version=foreign))
    refs.append(ContextRef(binding=binding, path="no/such/item-7f3a9c.txt"))
    return refs


class ReadManyRules:
    """The rule a source offering ``async_read_exact_many`` keeps (mixed into
    ``SourceContract``)."""

    def _descriptors(self, source: ContextSource, **request: Any) -> list[SourceDescriptor]:
        raise NotImplementedError  # SourceContract's

    def test_batched_reads_match_single_reads(self, source: ContextSource) -> None:
        """``async_read_exact_many`` answers every ref, in order, with what one read of it
        returns (the same ExactRead) or the same kind of exception it raises, at every limit."""
        if not isinstance(source, SupportsReadMany):
            pytest.skip("no async_read_exact_many: the kernel reads this source one by one")
        assert list(_run(source.async_read_exact_many([], None))) == []
        refs = refs_to_batch(self._descriptors(source), "contract")
        for limit in (None, 0, 1):
            answers = list(_run(source.async_read_exact_many(refs, limit)))
            assert len(answers) == len(refs), f"{len(answers)} answers for {len(refs)} refs"
            for ref, answer in zip(refs, answers, strict=True):
                single = _single(source, ref, limit)
                where = f"{ref} limit={limit}"
                if isinstance(single, Exception):
                    assert isinstance(answer, type(single)), (
                        f"{where}: the batch answered {answer!r}, one read raised {single!r}"
                    )
                else:
                    assert isinstance(answer, ExactRead), f"{where}: the batch answered {answer!r}"
                    assert answer == single, f"{where}: the batch read differs from one read"
