"""TaskContext's audit and resume methods: consumptions, export_state and restore.

A mixin of :class:`~taskctx.context.TaskContext`, kept apart so ``context.py`` stays the
owner of structure, index and readers. The values live in :mod:`taskctx.consumption`
and :mod:`taskctx.state`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from taskctx.consumption import (
    ConsumptionLog,
    ContextConsumption,
    PendingConsumption,
    make_consumption,
)
from taskctx.errors import TaskCtxError
from taskctx.model import ContextPackage
from taskctx.policy import RunConfiguration
from taskctx.protocols import ContextSource, IndexProvider

if TYPE_CHECKING:
    from taskctx.context import TaskContext
    from taskctx.plugins import PluginHost
    from taskctx.state import ContextState

__all__ = ["ContextAudit"]


class ContextAudit:
    """Consumptions, packages issued, ``export_state`` and ``restore`` of a TaskContext."""

    __slots__ = ()
    task_id: str
    consumption_log: ConsumptionLog
    _packages: list[ContextPackage]

    def _keep_package(self, package: ContextPackage) -> ContextPackage:
        """Called by this context's readers for every package they issue."""
        self._packages.append(package)
        return package

    def packages(self) -> tuple[ContextPackage, ...]:
        """Every package this context's readers issued, whole, in the order issued."""
        return tuple(self._packages)

    def record_consumption(
        self,
        package: ContextPackage,
        *,
        request_id: str,
        response_id: str,
        block_ids: Sequence[str] | None = None,
        phase: str | None = None,
    ) -> ContextConsumption:
        """Record that the response ``response_id`` to the model request ``request_id``
        consumed ``block_ids`` of ``package`` (None: all its blocks) in ``phase`` (None:
        the package's). Call it only after the response succeeded.

        Recording the same package, request and response again with the same content
        returns the first record; with other content it raises
        ``ConsumptionConflictError``. Block ids outside the package raise ``ValueError``.
        """
        consumption = make_consumption(
            package,
            self.task_id,
            request_id=request_id,
            response_id=response_id,
            block_ids=block_ids,
            phase=phase,
        )
        return self.consumption_log.append(consumption)

    @contextmanager
    def consuming(
        self,
        package: ContextPackage,
        *,
        request_id: str,
        block_ids: Sequence[str] | None = None,
        phase: str | None = None,
    ) -> Iterator[PendingConsumption]:
        """Wrap one model call: set ``pending.response_id`` inside the ``with`` block; the
        consumption is recorded when the block exits without an exception, never when
        it raises. Bad package, request or block ids fail before the block runs."""
        make_consumption(  # checked now, before the request is sent
            package,
            self.task_id,
            request_id=request_id,
            response_id="pending",
            block_ids=block_ids,
            phase=phase,
        )
        pending = PendingConsumption(package, request_id, None, block_ids, phase)
        yield pending  # an exception in the block propagates from here: nothing recorded
        if pending.response_id is None:
            raise TaskCtxError(
                "the consuming() block ended without setting response_id; nothing recorded"
            )
        pending.consumption = self.record_consumption(
            pending.package,
            request_id=pending.request_id,
            response_id=pending.response_id,
            block_ids=pending.block_ids,
            phase=pending.phase,
        )

    def consumptions(
        self, package_id: str | None = None, request_id: str | None = None
    ) -> tuple[ContextConsumption, ...]:
        """The consumptions of this task in recording order, optionally of one package
        and/or one request. They are read from the consumption log, so a persistent log
        lists what earlier contexts over the same store recorded."""
        return tuple(
            c
            for c in self.consumption_log.consumptions(self.task_id)
            if (package_id is None or c.package_id == package_id)
            and (request_id is None or c.request_id == request_id)
        )

    def export_state(self) -> ContextState:
        """JSON-safe state of this context (``.model_dump_json()``) for audit and resume.

        Holds the direct entries, every binding (one that cannot be rebuilt is kept and
        marked, so :meth:`restore` fails naming it), the index choice, the configuration,
        the state of every reader that pinned a snapshot, every package issued and the
        consumptions. Readers that never pinned have disclosed nothing and are left out.
        """
        from taskctx.state import export_context

        return export_context(cast("TaskContext", self))

    @classmethod
    def restore(
        cls,
        state: ContextState | Mapping[str, Any] | str,
        *,
        host: PluginHost | None = None,
        state_dir: str | Path | None = None,
        configuration: RunConfiguration | None = None,
        consumption_log: ConsumptionLog | None = None,
        sources: Mapping[str, ContextSource] | None = None,
        index_provider: IndexProvider | None = None,
    ) -> TaskContext:
        """Rebuild a context from :meth:`export_state` output (model, dict or JSON text).

        Bindings are made again by ``host.source(kind, **options)``; ``sources`` hands
        back, by binding id, sources that cannot be rebuilt from options. A binding that
        is neither rebuildable nor given, whose kind ``host`` lacks, or that rebuilds to
        another identity raises ``RestoreError`` naming its binding id and kind. Readers
        (:meth:`readers`), packages and consumptions come back too; consumptions are
        appended to ``consumption_log`` when one is given (one already there is kept).
        ``configuration`` defaults to the exported one.
        """
        from taskctx.state import restore_context

        return restore_context(
            cast("type[TaskContext]", cls),
            state,
            host=host,
            state_dir=state_dir,
            configuration=configuration,
            consumption_log=consumption_log,
            sources=sources,
            index_provider=index_provider,
        )
