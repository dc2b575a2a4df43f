"""ContextReader: a pinned snapshot, and pages read from it.

A reader pins the TaskContext revision and every source revision at its first read
(or ``pin()``). Later reads on changed sources fail with ``StaleReaderError`` until
``refresh()``; pages of one result (``read_next``) never mix snapshots.

A page flows one way, each step given what it needs and returning a value: gathering
(``taskctx.gathering``: each binding's index sync and ranked candidates), assembly
(``taskctx.assembly``, reading through ``taskctx.readback`` and naming refs through the
reader's ``taskctx.aliases.AliasTable``), coverage (``taskctx.coverage``) and paging
(``taskctx.paging``). The reader only wires them and keeps what outlives a page: the
snapshot, the alias table and what it disclosed.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

import attrs

from taskctx._sync import run_sync
from taskctx.aliases import AliasTable
from taskctx.assembly import PageAssembler
from taskctx.candidates import Candidate
from taskctx.coverage import BindingScan, page_coverage
from taskctx.errors import (
    CursorError,
    StaleReaderError,
    TaskCtxError,
    UnknownBindingError,
    UnknownSourceKindError,
)
from taskctx.gathering import (
    RankedCandidates,
    ScanRequest,
    Segment,
    page_candidates,
    scan_binding,
    search_window,
    skipped_scan,
)
from taskctx.model import (
    DIRECT_BINDING,
    Completeness,
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextReadIntent,
    Diagnostic,
    OmissionReason,
    ReaderState,
    Snapshot,
    SourceCoverage,
)
from taskctx.page import Page
from taskctx.paging import MAX_CURSOR_PARTS, Continuation, ResultCursors, next_position
from taskctx.parts import query_terms
from taskctx.readback import Readback, ReadReuse
from taskctx.selection import select_and_add

if TYPE_CHECKING:
    from taskctx.context import TaskContext
    from taskctx.entries import SourceBinding

__all__ = ["ContextReader"]


@attrs.define(slots=True)
class ContextReader:
    """Reads packages of one TaskContext for one consumer from one pinned snapshot.

    Made only by ``TaskContext.reader()`` and ``TaskContext.restore_reader()``.
    """

    context: TaskContext
    consumer: ContextConsumer
    phase: str | None
    budget: ContextBudget
    selector_name: str | None
    cursor_ttl: float
    _snapshot: Snapshot | None = None
    _aliases: AliasTable = attrs.field(factory=AliasTable)
    _disclosed: set[str] = attrs.field(factory=set)
    _packages_issued: int = 0
    _pin_errors: dict[str, str] = attrs.field(factory=dict)
    _result_parts: tuple[str, ...] = ()
    """Refs of the parts the current result's pages delivered (its cursors carry them)."""

    @classmethod
    def create(
        cls,
        context: TaskContext,
        consumer: ContextConsumer,
        phase: str | None,
        budget: ContextBudget,
        selector: str | None,
        cursor_ttl: float,
    ) -> ContextReader:
        """A new, unpinned reader (use ``TaskContext.reader``)."""
        return cls(context, consumer, phase, budget, selector, cursor_ttl)

    @classmethod
    def restore(cls, context: TaskContext, state: ReaderState, cursor_ttl: float) -> ContextReader:
        """A reader rebuilt from exported state (use ``TaskContext.restore_reader``)."""
        reader = cls(
            context,
            state.consumer,
            state.phase,
            state.budget,
            state.selector,
            cursor_ttl,
            state.snapshot,
        )
        reader._aliases = AliasTable.restore(state.aliases)
        reader._disclosed = set(state.disclosed)
        reader._packages_issued = state.packages_issued
        return reader

    @property
    def snapshot(self) -> Snapshot | None:
        """The pinned revisions, or None before the first read."""
        return self._snapshot

    def export_state(self) -> dict[str, Any]:
        """JSON-safe state; ``TaskContext.restore_reader`` rebuilds this reader from it."""
        if self._snapshot is None:
            raise TaskCtxError("nothing to export: the reader has not pinned a snapshot yet")
        return ReaderState(
            task_id=self.context.task_id,
            consumer=self.consumer,
            phase=self.phase,
            budget=self.budget,
            snapshot=self._snapshot,
            aliases=self._aliases.issued,
            disclosed=tuple(sorted(self._disclosed)),
            selector=self.selector_name,
            packages_issued=self._packages_issued,
        ).model_dump(mode="json")

    def continue_from(self, package: ContextPackage) -> None:
        """Go on from ``package``, which a reader of this task showed before (in another
        process, say): its aliases keep their refs here, new refs number on after them,
        and its blocks count as disclosed. Only before this reader's first read."""
        if self._snapshot is not None:
            raise TaskCtxError("continue_from comes before the reader's first read")
        if package.task_id != self.context.task_id:
            raise TaskCtxError(
                f"package {package.package_id} belongs to task {package.task_id!r}, "
                f"not {self.context.task_id!r}"
            )
        self._aliases = AliasTable.restore({**package.aliases, **self._aliases.issued})
        self._disclosed.update(str(block.ref) for block in package.blocks)

    # -- snapshot ------------------------------------------------------------------

    async def _current_revisions(self) -> dict[str, str | BaseException]:
        bindings = list(self.context.bindings.values())
        results = await asyncio.gather(
            *(b.source.async_revision() for b in bindings), return_exceptions=True
        )
        return {b.binding_id: r for b, r in zip(bindings, results, strict=True)}

    async def async_pin(self) -> Snapshot:
        """Pin the current revisions (sources that fail to answer are left out)."""
        revisions = await self._current_revisions()
        self._pin_errors = {
            k: f"{type(v).__name__}: {v}" for k, v in revisions.items() if not isinstance(v, str)
        }
        self._snapshot = Snapshot(
            context_revision=self.context.revision,
            sources={k: v for k, v in revisions.items() if isinstance(v, str)},
        )
        return self._snapshot

    def pin(self) -> Snapshot:
        """Sync facade of :meth:`async_pin`."""
        return run_sync(self.async_pin(), "async_pin")

    async def async_refresh(self) -> Snapshot:
        """Re-pin to the current revisions; earlier cursors stop working."""
        return await self.async_pin()

    def refresh(self) -> Snapshot:
        """Sync facade of :meth:`async_refresh`."""
        return run_sync(self.async_refresh(), "async_refresh")

    async def _check_fresh(self, snapshot: Snapshot, continuing: bool) -> None:
        if self.context.revision != snapshot.context_revision:
            raise StaleReaderError(
                "the task context changed (entries or bindings) since this reader pinned its "
                "snapshot; call refresh() or make a new reader"
            )
        current = await self._current_revisions()
        for binding_id, pinned in snapshot.sources.items():
            now = current.get(binding_id)
            if not isinstance(now, str) or now == pinned:
                continue
            source = self.context.bindings[binding_id].source
            if continuing and getattr(source, "serves_pinned_revisions", False):
                continue
            raise StaleReaderError(
                f"source {binding_id!r} moved from revision {pinned!r} to {now!r} since this "
                "reader pinned it; call refresh() to read the new state"
            )

    # -- reading -------------------------------------------------------------------

    async def async_read(self, intent: ContextReadIntent | str) -> ContextPackage:
        """Read the first page for ``intent`` from the pinned snapshot."""
        if isinstance(intent, str):
            intent = ContextReadIntent(query=intent)
        self._check_filters(intent)
        if self._snapshot is None:
            await self.async_pin()
        else:
            await self._check_fresh(self._snapshot, continuing=False)
        self._result_parts = ()
        return self.context._keep_package(await self._read_page(intent, 0, 1, allow_repin=True))

    def read(self, intent: ContextReadIntent | str) -> ContextPackage:
        """Sync facade of :meth:`async_read`."""
        return run_sync(self.async_read(intent), "async_read")

    async def async_read_next(self, cursor: str | None) -> ContextPackage:
        """The next page of the result ``cursor`` continues, from the same snapshot."""
        if not cursor:
            raise CursorError("no cursor: the previous package has no more pages")
        at = self._cursors().open(cursor)
        self._check_filters(at.intent)
        if self._snapshot is None:
            self._snapshot = at.snapshot
        elif at.snapshot != self._snapshot:
            raise CursorError("cursor belongs to another snapshot than this reader's pinned one")
        await self._check_fresh(at.snapshot, continuing=True)
        self._result_parts = at.parts
        self._disclosed.update(at.parts)
        package = await self._read_page(at.intent, at.position, at.page, allow_repin=False)
        return self.context._keep_package(package)

    def read_next(self, cursor: str | None) -> ContextPackage:
        """Sync facade of :meth:`async_read_next`."""
        return run_sync(self.async_read_next(cursor), "async_read_next")

    def _check_filters(self, intent: ContextReadIntent) -> None:
        """Refuse binding ids and source kinds the context does not have, before any source
        is asked anything (a typo must not read as "searched nothing")."""
        bindings = self.context.bindings
        wanted = intent.filters.bindings
        if wanted is not None:
            unknown = sorted(set(wanted) - set(bindings))
            if unknown:
                raise UnknownBindingError(
                    f"filters.bindings names {', '.join(map(repr, unknown))}, not attached to "
                    f"task context {self.context.task_id!r}; attached: "
                    f"{', '.join(map(repr, sorted(bindings))) or 'none'}"
                )
        kinds = intent.filters.source_kinds
        if kinds is not None:
            attached = {b.kind for b in bindings.values()}
            unknown = sorted(set(kinds) - attached)
            if unknown:
                raise UnknownSourceKindError(
                    f"filters.source_kinds names {', '.join(map(repr, unknown))}, not the kind "
                    f"of any binding of task context {self.context.task_id!r}; attached kinds: "
                    f"{', '.join(map(repr, sorted(attached))) or 'none'}"
                )

    def _cursors(self) -> ResultCursors:
        return ResultCursors.for_reader(
            self.context.cursor_key, self.context.task_id, self.consumer.name, self.cursor_ttl
        )

    # -- one page ------------------------------------------------------------------

    async def _scan(
        self, binding: SourceBinding, request: ScanRequest, readback: Readback
    ) -> tuple[BindingScan, Segment | None]:
        skipped = skipped_scan(binding, request)
        if skipped is not None:
            return skipped, None
        context = self.context
        state = context.partition_state(binding)
        return await scan_binding(
            binding, request, context.index, state, readback.text_loader(binding)
        )

    async def _gather(
        self, intent: ContextReadIntent, position: int, allow_repin: bool, readback: Readback
    ) -> list[tuple[BindingScan, Segment | None]]:
        """Scan every binding; a first page re-pins the sources that moved meanwhile."""
        assert self._snapshot is not None
        request = ScanRequest(
            intent=intent,
            snapshot=self._snapshot,
            pin_errors=dict(self._pin_errors),
            allow_repin=allow_repin,
            limit=position + search_window(self.budget.max_blocks),
        )
        bindings = list(self.context.bindings.values())
        scans = await asyncio.gather(*(self._scan(b, request, readback) for b in bindings))
        pinned = self._snapshot.sources
        moved = {
            scan.binding_id: scan.revision
            for scan, _ in scans
            if scan.revision is not None and scan.revision != pinned.get(scan.binding_id)
        }
        if moved:
            self._snapshot = self._snapshot.model_copy(update={"sources": {**pinned, **moved}})
        return list(scans)

    async def _fill(
        self,
        assembler: PageAssembler,
        intent: ContextReadIntent,
        required: list[Candidate],
        ranked: RankedCandidates,
        position: int,
        page_no: int,
    ) -> int | None:
        """Fill the page: required candidates (page 1), then optional ones from
        ``position``; return where the optional ones stopped (None: selection is off)."""
        if page_no == 1:
            await assembler.add_required(required)
        else:
            for candidate in required:
                assembler.omit(
                    candidate,
                    OmissionReason.ALREADY_DISCLOSED,
                    "delivered on page 1 of this result",
                )
        if intent.optional_selection == "none":
            return None
        if self.selector_name is None:
            return await assembler.add_optional(ranked, position)
        selector = self.context.host.selector(self.selector_name)
        return await select_and_add(
            selector, assembler, ranked, position, intent, self.phase, self.consumer.name
        )

    async def _read_page(
        self, intent: ContextReadIntent, position: int, page_no: int, allow_repin: bool
    ) -> ContextPackage:
        context = self.context
        # what the index sync reads for this page is delivered without a second read
        readback = Readback(context.read_scope(), ReadReuse())
        scans = await self._gather(intent, position, allow_repin, readback)
        entries = list(context.entries.values())
        gathered = page_candidates(entries, scans, intent, readback)
        assembler = PageAssembler(
            self.budget,
            self.consumer,
            self._aliases,
            readback,
            frozenset(self._disclosed),
            intent.required_overflow,
            query_terms(intent.query),
        )
        stopped_at = await self._fill(
            assembler, intent, gathered.required, gathered.ranked, position, page_no
        )
        truncated = any(scan.truncated for scan, _ in scans)
        next_at = next_position(stopped_at, len(gathered.ranked), truncated)
        direct = None
        if entries:
            direct = BindingScan(
                DIRECT_BINDING,
                "direct",
                revision=context.revision,
                considered=gathered.direct_considered,
            )
        coverage, diagnostics = page_coverage(
            [scan for scan, _ in scans],
            direct,
            assembler.page,
            selection_disabled=intent.optional_selection == "none",
        )
        return self._package(intent, assembler.page, page_no, next_at, coverage, diagnostics)

    def _package(
        self,
        intent: ContextReadIntent,
        page: Page,
        page_no: int,
        next_at: int | None,
        coverage: dict[str, SourceCoverage],
        diagnostics: list[Diagnostic],
    ) -> ContextPackage:
        """The package of an assembled page; what it delivered whole is now disclosed."""
        assert self._snapshot is not None
        parts = [str(b.ref) for b in page.blocks if b.completeness is Completeness.PART]
        for block in page.blocks:
            if block.completeness is Completeness.COMPLETE:
                self._disclosed.add(str(block.ref))
        self._disclosed.update(parts)  # a part's own characters were delivered whole
        self._result_parts = (*self._result_parts, *parts)[-MAX_CURSOR_PARTS:]
        cursor = None
        if next_at is not None:
            cursor = self._cursors().issue(
                Continuation(self._snapshot, intent, next_at, page_no + 1, self._result_parts)
            )
        self._packages_issued += 1
        return ContextPackage(
            package_id=f"pkg_{uuid.uuid4().hex[:16]}",
            task_id=self.context.task_id,
            consumer=self.consumer,
            phase=self.phase,
            snapshot=self._snapshot,
            intent=intent,
            budget=self.budget,
            page=page_no,
            blocks=tuple(page.blocks),
            attachments=tuple(page.attachments),
            omissions=tuple(page.omissions),
            diagnostics=(*page.diagnostics, *diagnostics),
            source_coverage=coverage,
            has_more=next_at is not None,
            cursor=cursor,
            used_chars=page.used_chars,
            budget_excess=page.budget_excess,
            aliases=self._aliases.shown_by(page.blocks, page.attachments, page.omissions),
        )
