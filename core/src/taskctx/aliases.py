"""The alias table: the one owner of a reader's request-local aliases (``ref_N``).

The reader makes one table and hands it down; the assembler and the lossy outline ask
the table for aliases, never the reader. A package lists only the aliases it shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from taskctx.errors import TaskCtxError
from taskctx.model import Attachment, ContextBlock, ContextRef, Omission

__all__ = ["AliasTable"]


@attrs.define(slots=True)
class AliasTable:
    """Issues one stable alias per canonical ref, in order: ``ref_1``, ``ref_2``, ..."""

    _refs: dict[str, ContextRef] = attrs.field(factory=dict, alias="refs")
    _by_ref: dict[str, str] = attrs.field(init=False, factory=dict)
    _next: int = attrs.field(init=False, default=1)

    def __attrs_post_init__(self) -> None:
        unexpected = sorted((a for a in self._refs if _sort_key(a)[1]), key=_sort_key)
        if unexpected:
            raise TaskCtxError(
                f"aliases must be ref_<n> as a reader issues them; "
                f"not {', '.join(map(repr, unexpected[:5]))}"
            )
        # numbering goes on past the highest alias known, so a gap never issues a twin
        self._next = max((_sort_key(a)[0] for a in self._refs), default=0) + 1
        for alias, ref in self._refs.items():
            if not isinstance(ref, ContextRef):
                raise TaskCtxError(
                    f"alias {alias!r} maps to {type(ref).__name__}, not a ContextRef"
                )
            twin = self._by_ref.setdefault(str(ref), alias)
            if twin != alias:
                raise TaskCtxError(f"aliases {twin!r} and {alias!r} both name {ref}")

    @classmethod
    def restore(cls, issued: Mapping[str, ContextRef]) -> AliasTable:
        """A table that goes on from aliases issued before (exported reader state, or the
        aliases one package shows): those keep their refs, new refs number on after the
        highest of them."""
        return cls(refs=dict(issued))

    @property
    def issued(self) -> Mapping[str, ContextRef]:
        """Every alias issued so far, with its canonical ref."""
        return dict(self._refs)

    def alias(self, ref: ContextRef) -> str:
        """The alias of ``ref``, issued now if it has none yet."""
        key = str(ref)
        found = self._by_ref.get(key)
        if found is None:
            found = f"ref_{self._next}"
            self._next += 1
            self._refs[found] = ref
            self._by_ref[key] = found
        return found

    def shown_by(
        self,
        blocks: Iterable[ContextBlock],
        attachments: Iterable[Attachment],
        omissions: Iterable[Omission],
    ) -> dict[str, ContextRef]:
        """The aliases a package shows (its blocks, their section and full refs, its
        attachments and omissions), in issue order: nothing issued for another page."""
        used = {a.alias for a in attachments} | {o.alias for o in omissions}
        for block in blocks:
            used.add(block.alias)
            used.update(self._by_ref[str(ref)] for ref in block.section_refs)
            if block.full_ref is not None:
                used.add(self._by_ref[str(block.full_ref)])
        return {alias: self._refs[alias] for alias in sorted(used, key=_sort_key)}


def _sort_key(alias: object) -> tuple[int, str]:
    """Issue order for well-formed aliases; anything else sorts after them, by text."""
    text = str(alias)
    number = text.removeprefix("ref_")
    if text.startswith("ref_") and number.isdigit() and not number.startswith("0"):
        return (int(number), "")
    return (1 << 62, text)
