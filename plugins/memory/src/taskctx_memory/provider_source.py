"""The ``session_memory`` source in provider mode: notes and tasks read from the provider.

:class:`ProviderMemorySource` shows what a :class:`~taskctx_memory.provider.TaskStateProvider`
holds for one session and (``include_global``) for global memory, with the same paths,
titles, texts and descriptors as the record store's
:class:`~taskctx_memory.source.SessionMemorySource` (both build them in
:mod:`taskctx_memory.items`), and exact reads authorised the same way: a path of another
session raises :class:`~taskctx.errors.PolicyError` whether or not it exists, a path of
no item :class:`~taskctx.errors.NotFoundError`.

The provider is authoritative and keeps no history, so this source keeps nothing either:
every revision, page and read asks the provider (through
:class:`~taskctx_memory.provider.ProviderBackend`, in a worker thread like any blocking
source I/O), and there is no cache that could disagree with it.

- **Revision.** Sources normally keep ``async_revision`` cheap (a counter, a stamp)
  rather than rehash their content. A provider offers no revision, journal or stamp to
  use, and a stamp kept here could drift from the provider, so the revision is a digest
  of everything the source can show: the notes (keys and values) and tasks (in order)
  of the session's namespace and of global memory, loaded now. That read is bounded:
  writes through :class:`~taskctx_memory.state.WorkingState` keep each namespace within
  its :class:`~taskctx_memory.config.WorkingStateConfiguration` storage limits
  (``max_notes``, ``max_tasks``, ``max_bytes`` = 16 MiB by default), so one revision is
  two loads per namespace and a hash of at most about that much text each; a provider the
  application fills past those limits by itself is read whole all the same.
- **No pinned revisions** (``serves_pinned_revisions = False``). A page asked for at
  a revision that has passed is served from the current state and names the current
  revision, so the kernel re-pins a first read and a reader's ``read_next`` after a
  change raises :class:`~taskctx.errors.StaleReaderError`: the honest answer for a
  store without history. A ref pinned to an old content version reads the current
  content with its own ``content_version`` (the digest of its text), which the kernel
  compares with the pinned one and fails closed.
- **No identity.** :attr:`TaskStateBinding.name <taskctx_memory.provider.TaskStateBinding>`
  labels a provider in messages (``"provider"`` by default); it does not identify one,
  and two applications' providers may share it. An index persisted under such a name
  could hand one provider's index to another's notes, so :attr:`identity` is None and
  the kernel keeps this source's index in memory, keyed by the object.
- **Failures surface.** A provider that raises, or returns what is not notes and tasks,
  makes the revision, the page or the read raise
  :class:`~taskctx_memory.errors.TaskStateProviderError` (a ``TaskCtxError`` the
  provider raised itself passes through); nothing is swallowed, so a reader reports
  the binding ``source_unavailable`` with the error and goes on with the others.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from taskctx.errors import NotFoundError
from taskctx.model import ContextRef, DescriptorPage, EnumerationRequest, ExactRead
from taskctx.policy import governing_method
from taskctx_memory.errors import TaskStateProviderError
from taskctx_memory.items import (
    MEDIA_TYPE,
    MemoryItem,
    authorise,
    namespaces_of,
    note_item,
    task_item,
)
from taskctx_memory.namespace import Namespace, ParsedPath
from taskctx_memory.provider import ProviderBackend, TaskStateBinding
from taskctx_memory.values import Task

if TYPE_CHECKING:
    from taskctx.policy import RunConfiguration

__all__ = ["ProviderMemorySource"]


@dataclass(frozen=True)
class _Loaded:
    """What the provider held for one namespace when asked: notes by key, tasks in order."""

    namespace: Namespace
    notes: dict[str, str]
    tasks: list[Task]

    def items(self) -> list[MemoryItem]:
        """The namespace's notes (by key), then its tasks (in creation order)."""
        notes = [note_item(self.namespace, key, value) for key, value in self.notes.items()]
        tasks = [task_item(self.namespace, t, n) for n, t in enumerate(self.tasks, start=1)]
        return [*notes, *tasks]


class ProviderMemorySource:
    """The ``session_memory`` source of one session over an authoritative provider.

    ``ProviderMemorySource(TaskStateBinding(provider), session_id, include_global=True)``;
    ``session_id=None`` shows global memory only. ``WorkingState.source()`` returns one
    in provider mode.
    """

    kind = "session_memory"
    serves_pinned_revisions = False

    def __init__(
        self, binding: TaskStateBinding, session_id: str | None, *, include_global: bool = True
    ) -> None:
        if not isinstance(binding, TaskStateBinding):
            raise TypeError("ProviderMemorySource takes a TaskStateBinding(provider)")
        self.namespaces: tuple[Namespace, ...] = namespaces_of(session_id, include_global)
        self.binding = binding
        self.session_id = session_id
        self.include_global = include_global
        self.identity: str | None = None
        self._backends = {ns: ProviderBackend(binding, ns) for ns in self.namespaces}

    def with_configuration(self, configuration: RunConfiguration) -> ProviderMemorySource:
        """This source over the provider governed by ``configuration``.

        The provider is the application's and may contact hosts: its own
        ``with_configuration(configuration)`` (returning the provider to use) decides.
        A provider without one is kept when every host is allowed and refused with
        PolicyError when ``allowed_hosts`` restricts them.
        """
        provider = self.binding.provider
        method = governing_method(
            provider,
            configuration,
            f"task state provider {self.binding.name!r} ({type(provider).__qualname__}) "
            "has no with_configuration(), so allowed_hosts cannot govern it",
        )
        if method is None:
            return self
        governed = method(configuration)
        if governed is provider:
            return self
        binding = TaskStateBinding(governed, self.binding.name)
        return ProviderMemorySource(binding, self.session_id, include_global=self.include_global)

    def describe(self) -> dict[str, Any]:
        """Catalog facts: the provider's name, the session and whether global is included."""
        return {
            "provider": self.binding.name,
            "session_id": self.session_id,
            "include_global": self.include_global,
        }

    def __repr__(self) -> str:
        shown = " + global memory" if self.include_global and self.session_id else ""
        whose = self.namespaces[0].label
        return f"<ProviderMemorySource {whose}{shown} via {self.binding.name!r}>"

    # -- what the provider holds now ---------------------------------------------------

    def _load(self) -> list[_Loaded]:
        loaded = []
        for namespace, backend in self._backends.items():
            notes, tasks = backend.load()
            ids = [task.id for task in tasks]
            twice = sorted({i for i in ids if ids.count(i) > 1})
            if twice:
                raise TaskStateProviderError(
                    f"task state provider {self.binding.name!r} returned task ids more than "
                    f"once ({namespace.label}): {', '.join(map(repr, twice))}"
                )
            loaded.append(_Loaded(namespace, notes, tasks))
        return loaded

    @staticmethod
    def _revision_of(loaded: list[_Loaded]) -> str:
        """``state:<digest>`` of every note and task shown, in order."""
        state = [
            [
                part.namespace.session_id,
                list(part.notes.items()),
                [task.model_dump(mode="json") for task in part.tasks],
            ]
            for part in loaded
        ]
        raw = json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return "state:" + hashlib.sha256(raw).hexdigest()[:32]

    # -- the protocol ------------------------------------------------------------------

    async def async_revision(self) -> str:
        """A digest of the notes and tasks of these namespaces, as the provider has them now."""
        return await asyncio.to_thread(lambda: self._revision_of(self._load()))

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """One page of the current items: the session's notes then tasks, then global's.

        The page names the revision it was taken at, which is the current one whatever
        ``request.revision`` asked for (no history is kept). The cursor is the offset of
        the next item in the listing of that revision.
        """
        return await asyncio.to_thread(self._page, request)

    def _page(self, request: EnumerationRequest) -> DescriptorPage:
        loaded = self._load()
        prefix = request.path_prefix or ""
        items = [i for part in loaded for i in part.items() if i.path.startswith(prefix)]
        start = int(request.cursor) if request.cursor and request.cursor.isdigit() else 0
        chunk = items[start : start + request.page_size]
        end = start + len(chunk)
        return DescriptorPage(
            descriptors=tuple(item.descriptor() for item in chunk),
            revision=self._revision_of(loaded),
            next_cursor=str(end) if end < len(items) else None,
            total=len(items),
        )

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The note or task as the provider has it now, cut at ``limit`` characters."""

        def read() -> ExactRead:
            parsed = authorise(ref.path, self.namespaces)
            item = self._find(parsed)
            if item is None:
                raise NotFoundError(f"no {parsed.kind} at {ref.path!r}")
            return ExactRead.from_text(
                item.path,
                item.text,
                limit,
                media_type=MEDIA_TYPE,
                content_version=item.content_version,
            )

        return await asyncio.to_thread(read)

    def _find(self, parsed: ParsedPath) -> MemoryItem | None:
        """The item at an authorised path, loading only its namespace's notes or tasks."""
        backend = self._backends[parsed.namespace]
        if parsed.kind == "note":
            value = backend.note(parsed.key)
            return None if value is None else note_item(parsed.namespace, parsed.key, value)
        for position, task in enumerate(backend.tasks(), start=1):
            if task.id == parsed.key:
                return task_item(parsed.namespace, task, position)
        return None
