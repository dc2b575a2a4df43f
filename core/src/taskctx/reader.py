"""ContextReader: a pinned snapshot, candidates, selection, exact readback, coverage.

A reader pins the TaskContext revision and every source revision at its first read
(or ``pin()``). Later reads on changed sources fail with ``StaleReaderError`` until
``refresh()``; pages of one result (``read_next``) never mix snapshots.
"""

from __future__ import annotations

import asyncio
import bisect
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

import attrs

from taskctx._sync import run_sync
from taskctx.assembly import Candidate, PageAssembler
from taskctx.codes import DiagnosticCode
from taskctx.coverage import BindingScan, coverage_for
from taskctx.cursor import CursorSigner
from taskctx.errors import (
    CursorError,
    PolicyError,
    StaleReaderError,
    TaskCtxError,
    UnknownBindingError,
    UnknownSourceKindError,
)
from taskctx.index import RevisionMovedError, passes_filters
from taskctx.model import (
    DIRECT_BINDING,
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    CoverageOutcome,
    CoverageReason,
    Diagnostic,
    OmissionReason,
    ReaderState,
    Severity,
    Snapshot,
    SourceDescriptor,
)
from taskctx.readback import Readback, candidate_of
from taskctx.selection import select_and_add

if TYPE_CHECKING:
    from taskctx.context import SourceBinding, TaskContext

__all__ = ["ContextReader"]

CURSOR_PURPOSE = "taskctx.reader.v1"


def search_window(max_blocks: int) -> int:
    """How many ranked hits past the page's start a read asks of a lexical provider."""
    return max(200, 8 * max_blocks)


Segment = tuple["SourceBinding", Sequence[SourceDescriptor], "Sequence[float] | None"]


class _RankedCandidates(Sequence[Candidate]):
    """Optional candidates in rank order, built lazily: a page touches only its window.

    Direct entries come first, then each binding's candidates. When every binding was
    ranked, bindings are interleaved by rank; otherwise they follow in binding order. The
    partitions' lists are used as they are, never copied per read.
    """

    def __init__(self, head: list[Candidate], segments: list[Segment]) -> None:
        self._head = head
        self._segments = segments
        self._built: dict[int, Candidate] = {}
        self._starts: list[int] = []
        total = 0
        for _, descriptors, _ in segments:
            self._starts.append(total)
            total += len(descriptors)
        self._size = total
        self._merged: list[tuple[int, int]] | None = None
        if len(segments) > 1 and all(scores is not None for _, _, scores in segments):
            order = [
                (seg, item)
                for seg, (_, descriptors, _) in enumerate(segments)
                for item in range(len(descriptors))
            ]
            # Scores of different partitions are not comparable (BM25's idf depends on each
            # corpus), so bindings are fused by rank, as reciprocal rank fusion does: the
            # best of each binding first, then the second best of each, ...
            order.sort(key=lambda pair: (pair[1], pair[0]))
            self._merged = order

    def __len__(self) -> int:
        return len(self._head) + self._size

    @overload
    def __getitem__(self, index: int) -> Candidate: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Candidate]: ...
    def __getitem__(self, index: int | slice) -> Candidate | Sequence[Candidate]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index < len(self._head):
            return self._head[index]
        built = self._built.get(index)
        if built is None:
            flat = index - len(self._head)
            if self._merged is not None:
                seg, item = self._merged[flat]
            else:
                seg = bisect.bisect_right(self._starts, flat) - 1
                item = flat - self._starts[seg]
            binding, descriptors, scores = self._segments[seg]
            built = candidate_of(binding, descriptors[item], scores[item] if scores else None)
            self._built[index] = built
        return built


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
    _aliases: dict[str, ContextRef] = attrs.field(factory=dict)
    _alias_by_ref: dict[str, str] = attrs.field(factory=dict)
    _disclosed: set[str] = attrs.field(factory=set)
    _packages_issued: int = 0
    _pin_errors: dict[str, str] = attrs.field(factory=dict)

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
        reader._aliases = dict(state.aliases)
        reader._alias_by_ref = {str(ref): alias for alias, ref in state.aliases.items()}
        reader._disclosed = set(state.disclosed)
        reader._packages_issued = state.packages_issued
        return reader

    @property
    def _readback(self) -> Readback:
        return Readback(self.context)

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
            aliases=self._aliases,
            disclosed=tuple(sorted(self._disclosed)),
            selector=self.selector_name,
            packages_issued=self._packages_issued,
        ).model_dump(mode="json")

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
        return self.context._keep_package(await self._read_page(intent, 0, 1, allow_repin=True))

    def read(self, intent: ContextReadIntent | str) -> ContextPackage:
        """Sync facade of :meth:`async_read`."""
        return run_sync(self.async_read(intent), "async_read")

    async def async_read_next(self, cursor: str | None) -> ContextPackage:
        """The next page of the result ``cursor`` continues, from the same snapshot."""
        if not cursor:
            raise CursorError("no cursor: the previous package has no more pages")
        body = self._signer().verify(cursor)
        try:
            snapshot = Snapshot.model_validate(body["snapshot"])
            intent = ContextReadIntent.model_validate(body["intent"])
            position, page = int(body["position"]), int(body["page"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CursorError(f"malformed cursor payload: {exc}") from None
        if body.get("task") != self.context.task_id or body.get("consumer") != self.consumer.name:
            raise CursorError("cursor was issued for another task or consumer")
        self._check_filters(intent)
        if self._snapshot is None:
            self._snapshot = snapshot
        elif snapshot != self._snapshot:
            raise CursorError("cursor belongs to another snapshot than this reader's pinned one")
        await self._check_fresh(snapshot, continuing=True)
        package = await self._read_page(intent, position, page, allow_repin=False)
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

    def _signer(self) -> CursorSigner:
        return CursorSigner(self.context.cursor_key, CURSOR_PURPOSE)

    def _alias(self, ref: ContextRef) -> str:
        key = str(ref)
        alias = self._alias_by_ref.get(key)
        if alias is None:
            alias = f"ref_{len(self._aliases) + 1}"
            self._aliases[alias] = ref
            self._alias_by_ref[key] = alias
        return alias

    # -- candidates ----------------------------------------------------------------

    async def _scan_binding(
        self, binding: SourceBinding, intent: ContextReadIntent, allow_repin: bool, limit: int
    ) -> tuple[BindingScan, Segment | None]:
        assert self._snapshot is not None
        scan = BindingScan(binding.binding_id, binding.kind)
        wanted = intent.filters.bindings
        if wanted is not None and binding.binding_id not in wanted:
            scan.outcome = CoverageOutcome.NOT_SEARCHED
            scan.reasons.append(CoverageReason.BINDING_EXCLUDED)
            return scan, None
        kinds = intent.filters.source_kinds
        if kinds is not None and binding.kind not in kinds:
            scan.outcome = CoverageOutcome.NOT_SEARCHED
            scan.reasons.append(CoverageReason.SOURCE_KIND_EXCLUDED)
            return scan, None
        revision = self._snapshot.sources.get(binding.binding_id)
        if revision is None:
            scan.outcome = CoverageOutcome.UNAVAILABLE
            scan.reasons.append(CoverageReason.SOURCE_UNAVAILABLE)
            scan.detail = "it did not answer when the snapshot was pinned: " + (
                self._pin_errors.get(binding.binding_id, "reason unknown")
            )
            return scan, None
        scan.revision = revision
        state = self.context.partition_state(binding)
        load_text = self.context.text_loader(binding)

        try:
            try:
                await self.context.index.sync(state, binding.source, revision, load_text)
            except RevisionMovedError as moved:
                if not allow_repin:
                    raise StaleReaderError(
                        f"source {binding.binding_id!r} no longer serves the pinned revision "
                        f"{revision!r} ({moved})"
                    ) from None
                revision = moved.seen
                self._snapshot = self._snapshot.model_copy(
                    update={"sources": {**self._snapshot.sources, binding.binding_id: revision}}
                )
                scan.revision = revision
                try:
                    await self.context.index.sync(state, binding.source, revision, load_text)
                except RevisionMovedError as again:
                    raise StaleReaderError(
                        f"source {binding.binding_id!r} kept changing during the read "
                        f"({again}); failing closed"
                    ) from None
        except (StaleReaderError, PolicyError):
            raise
        except Exception as exc:  # one failing source never sinks the others
            scan.outcome = CoverageOutcome.UNAVAILABLE
            scan.reasons.append(CoverageReason.SOURCE_UNAVAILABLE)
            scan.detail = f"{type(exc).__name__}: {exc}"
            return scan, None
        scan.required = state.required()
        core = {d.key for d in scan.required}  # delivered as such, never also ranked
        try:
            found = self.context.index.candidates(
                state, intent.query, intent.filters, limit, exclude=core
            )
        except Exception as exc:  # the index provider is a plugin: report, do not sink
            scan.outcome = CoverageOutcome.UNAVAILABLE
            scan.reasons.append(CoverageReason.SOURCE_UNAVAILABLE)
            scan.detail = f"index search failed: {type(exc).__name__}: {exc}"
            return scan, None
        scan.truncated = found.truncated
        scan.warnings.extend(found.warnings)
        descriptors, scores = found.descriptors, found.scores
        if intent.roles:
            keep = [
                i for i, d in enumerate(descriptors) if (d.role or binding.role) in intent.roles
            ]
            descriptors = [descriptors[i] for i in keep]
            scores = [scores[i] for i in keep] if scores is not None else None
            if found.truncated:
                # the roles were checked on a window of the ranked matches only: the
                # matching set was not counted, and a count of the window would claim
                # less than was examined
                found.considered = None
                scan.reasons.append(CoverageReason.STREAMING_SCAN_UNMEASURED)
            else:
                found.considered = len(descriptors)
        wanted_keys = {
            (ref.path, ref.scope)
            for ref in intent.explicit_refs
            if ref.binding == binding.binding_id
        }
        if wanted_keys:  # explicit refs outside the matching set widen what was considered
            inside = {d.key for d in descriptors if d.key in wanted_keys}
            scan.explicit_outside = len(wanted_keys - inside - core)
        scan.considered = found.considered
        if CoverageReason.STREAMING_SCAN_UNMEASURED in found.reasons:
            scan.considered = None  # the source says it examined more than it counted
        if scan.considered is not None:
            scan.considered += len(core)
        scan.enumeration = found.enumeration
        scan.searchable = found.searchable
        scan.reasons.extend(found.reasons)
        if not found.searchable:
            scan.outcome = CoverageOutcome.NOT_SEARCHED
            scan.reasons.append(CoverageReason.QUERY_NOT_SEARCHABLE)
        return scan, (binding, descriptors, scores)

    async def _read_page(
        self, intent: ContextReadIntent, position: int, page_no: int, allow_repin: bool
    ) -> ContextPackage:
        context = self.context
        bindings = list(context.bindings.values())
        limit = position + search_window(self.budget.max_blocks)
        scans = await asyncio.gather(
            *(self._scan_binding(b, intent, allow_repin, limit) for b in bindings)
        )
        assert self._snapshot is not None
        entries = list(context.entries.values())
        required = [self._readback.direct(e) for e in entries if e.required]
        for scan, segment in scans:
            if segment is not None:
                binding = segment[0]
                required += [candidate_of(binding, d, None, required=True) for d in scan.required]
        required += [self._readback.explicit(ref) for ref in intent.explicit_refs]
        optional_direct = [
            self._readback.direct(e)
            for e in entries
            if not e.required
            and (not intent.roles or e.role in intent.roles)
            and passes_filters(
                SourceDescriptor(
                    path=e.entry_id, content_version=e.digest, media_type=e.media_type
                ),
                intent.filters,
            )
        ]
        segments = [segment for _, segment in scans if segment is not None]
        ranked = _RankedCandidates(optional_direct, segments)
        assembler = PageAssembler(
            self.budget,
            self.consumer,
            self._alias,
            self._readback.read,
            self._disclosed,
            intent.required_overflow,
        )
        if page_no == 1:
            await assembler.add_required(required)
        else:
            for candidate in required:
                assembler.omit(
                    candidate,
                    OmissionReason.ALREADY_DISCLOSED,
                    "delivered on page 1 of this result",
                )
        diagnostics: list[Diagnostic] = []
        if intent.optional_selection == "none":
            assembler.page.next_position = None
        elif self.selector_name is not None:
            selector = context.host.selector(self.selector_name)
            await select_and_add(
                selector, assembler, ranked, position, intent, self.phase, self.consumer.name
            )
        else:
            await assembler.add_optional(ranked, position)
        page = assembler.page
        if (
            page.next_position is None
            and intent.optional_selection != "none"
            and any(scan.truncated for scan, _ in scans)
        ):
            page.next_position = len(ranked)  # the ranking goes on: ask for more next page
        coverage = {}
        delivered: dict[str, int] = {}
        held = [*(b.ref for b in page.blocks), *(a.ref for a in page.attachments)]
        held += [o.ref for o in page.omissions if o.reason is OmissionReason.COVERED_BY_PARENT]
        for held_ref in held:  # a section inside a delivered parent is held by this package
            delivered[held_ref.binding] = delivered.get(held_ref.binding, 0) + 1
        if entries:
            direct_scan = BindingScan(
                DIRECT_BINDING,
                "direct",
                revision=context.revision,
                considered=sum(1 for e in entries if e.required) + len(optional_direct),
            )
            coverage[DIRECT_BINDING] = coverage_for(direct_scan, delivered.get(DIRECT_BINDING, 0))
        for scan, _ in scans:
            if intent.optional_selection == "none":
                scan.reasons.append(CoverageReason.SELECTION_DISABLED)
            if scan.considered is not None:
                scan.considered += scan.explicit_outside
            coverage[scan.binding_id] = coverage_for(scan, delivered.get(scan.binding_id, 0))
            diagnostics.extend(
                Diagnostic(
                    code=DiagnosticCode.INDEX_DEGRADED, message=warning, binding_id=scan.binding_id
                )
                for warning in scan.warnings
            )
            if scan.outcome is CoverageOutcome.UNAVAILABLE:
                diagnostics.append(
                    Diagnostic(
                        code=DiagnosticCode.SOURCE_UNAVAILABLE,
                        severity=Severity.ERROR,
                        binding_id=scan.binding_id,
                        message=f"source {scan.binding_id!r} ({scan.source_kind}) is "
                        f"unavailable: {scan.detail or 'no detail'}",
                    )
                )
        for block in page.blocks:
            if block.completeness.value == "complete":
                self._disclosed.add(str(block.ref))
        has_more = page.next_position is not None
        cursor = None
        if has_more:
            cursor = self._signer().issue(
                {
                    "task": context.task_id,
                    "consumer": self.consumer.name,
                    "snapshot": self._snapshot.model_dump(mode="json"),
                    "intent": intent.model_dump(mode="json"),
                    "position": page.next_position,
                    "page": page_no + 1,
                },
                self.cursor_ttl,
            )
        self._packages_issued += 1
        used = {b.alias for b in page.blocks} | {a.alias for a in page.attachments}
        used |= {o.alias for o in page.omissions}
        for block in page.blocks:
            used.update(self._alias_by_ref[str(r)] for r in block.section_refs)
            if block.full_ref is not None:
                used.add(self._alias_by_ref[str(block.full_ref)])
        return ContextPackage(
            package_id=f"pkg_{uuid.uuid4().hex[:16]}",
            task_id=context.task_id,
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
            has_more=has_more,
            cursor=cursor,
            used_chars=page.used_chars,
            budget_excess=page.budget_excess,
            aliases={alias: self._aliases[alias] for alias in sorted(used, key=_alias_order)},
        )


def _alias_order(alias: str) -> int:
    return int(alias.rsplit("_", 1)[1])
