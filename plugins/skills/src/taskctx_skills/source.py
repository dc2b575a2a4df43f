"""The ``skill_library`` ContextSource: pinned skills, disclosed progressively.

What a binding offers, per skill:

- ``<skill>/SKILL.md``: role ``instruction``, ``required`` when the skill was bound as
  required, its description as the ``summary`` a selector sees instead of a body
  preview, and its Markdown headings as sections (so a lossy digest is an outline);
- one child per ``##`` section of ``SKILL.md`` (scope ``lines:A-B``, parent: the whole
  file), optional, so a delivered complete ``SKILL.md`` covers them;
- resources, on demand: references (role ``information``) and examples (``example``)
  as text when they are text; scripts (``capability``) and assets (``asset``) as
  reference only, never as text.

The revision is the binding's: a digest of which skill revisions it pins. It never
moves, because every byte is read from the content-addressed store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from taskctx.errors import NotFoundError, PolicyError
from taskctx.media import MediaClass, classify, classify_bytes
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    Representation,
    SectionInfo,
    SourceDescriptor,
)
from taskctx.sections import markdown_sections
from taskctx.statefiles import StateDir
from taskctx_skills.discovery import is_listed
from taskctx_skills.errors import SkillRevisionNotFoundError
from taskctx_skills.store import BindingEntry
from taskctx_skills.values import BoundSkill, ResourceKind, SkillFile

if TYPE_CHECKING:
    from taskctx.policy import RunConfiguration
    from taskctx_skills.library import SkillLibrary

__all__ = ["ROLE_BY_KIND", "SkillSource"]

ROLE_BY_KIND: Mapping[ResourceKind, str] = {
    "skill": "instruction",
    "reference": "information",
    "example": "example",
    "script": "capability",
    "asset": "asset",
}
_REFERENCE_ONLY_KINDS = frozenset({"script", "asset"})
SECTION_LEVEL = 2
"""``##`` headings of SKILL.md become optional child descriptors."""


def _text_of(file: SkillFile, data: bytes) -> str | None:
    """The text of a file that enters packages as text, else None."""
    if file.kind in _REFERENCE_ONLY_KINDS:
        return None
    decision = classify_bytes(file.path, data)
    if decision.media_class is not MediaClass.TEXT:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class SkillSource:
    """The skills one binding pins, read from the library's content-addressed store."""

    kind = "skill_library"
    serves_pinned_revisions = True

    def __init__(
        self,
        library: SkillLibrary,
        revision: str,
        entries: tuple[BindingEntry, ...],
        skills: Mapping[str, BoundSkill],
    ) -> None:
        self.library = library
        self.revision = revision
        self.entries = entries
        self.skills = dict(skills)
        self.identity = f"skill_library:{library.root}:{revision}"
        state = library.store.root.parent  # the folder's derived state (or its .taskctx)
        self.index_directory = StateDir(state.parent, (state.name, "index"))
        self._texts: dict[str, str | None] = {}

    def with_configuration(self, configuration: RunConfiguration) -> SkillSource:
        """Itself, under any configuration: a library reads under its root; it contacts no host."""
        return self

    def describe(self) -> dict[str, Any]:
        """The metadata layer: each bound skill's name, description and revision, no body."""
        return {
            "root": str(self.library.root),
            "revision": self.revision,
            "skills": [
                {
                    **self.skills[e.name].metadata_layer(),
                    "required": e.required,
                    "resources": len(self.skills[e.name].files) - 1,
                }
                for e in self.entries
            ],
        }

    def rebuild_options(self) -> dict[str, Any] | None:
        """``host.source("skill_library", **options)`` makes this binding again from the
        store: the library root, the bound skills' names as trusted, and the binding
        ``revision`` (which pins each skill's ``revision_ref``), and the state folder when
        one was given. None for a library whose store was given explicitly (the factory
        cannot say where)."""
        library = self.library
        if not library.store_is_default:
            return None
        options: dict[str, Any] = {
            "root": str(library.root),
            "trusted": sorted(entry.name for entry in self.entries),
            "revision": self.revision,
        }
        if library.state_dir is not None:
            options["state_dir"] = str(library.state_dir)
        return options

    async def async_revision(self) -> str:
        """The binding's revision; fails loudly if the store lost the binding."""
        if not await asyncio.to_thread(self.library.store.has_binding, self.revision):
            raise SkillRevisionNotFoundError(
                f"skill binding {self.revision} is gone from {self.library.store.root}"
            )
        return self.revision

    # -- descriptors ------------------------------------------------------------------

    def _text(self, file: SkillFile) -> str | None:
        if file.sha256 not in self._texts:
            self._texts[file.sha256] = _text_of(file, self.library.store.blob(file.sha256))
        return self._texts[file.sha256]

    def _descriptors(self) -> list[SourceDescriptor]:
        found: list[SourceDescriptor] = []
        for entry in self.entries:
            skill = self.skills[entry.name]
            for file in skill.files:
                found.extend(self._describe(skill, file, entry.required))
        return found

    def _describe(
        self, skill: BoundSkill, file: SkillFile, required: bool
    ) -> list[SourceDescriptor]:
        text = self._text(file)
        media_type = classify(file.path, None).media_type
        path = f"{skill.name}/{file.path}"
        metadata = {
            "skill": skill.name,
            "revision_ref": skill.revision_ref,
            "resource_kind": file.kind,
        }
        base: dict[str, Any] = {
            "path": path,
            "media_type": media_type,
            "size": file.size,
            "content_version": file.sha256,
            "role": ROLE_BY_KIND[file.kind],
            "metadata": metadata,
        }
        if text is None:
            return [
                SourceDescriptor(
                    **base,
                    title=f"{skill.name}: {file.path}",
                    representation=Representation.REFERENCE_ONLY,
                )
            ]
        sections = markdown_sections(text) if media_type == "text/markdown" else ()
        if file.kind != "skill":
            return [
                SourceDescriptor(
                    **base, title=f"{skill.name}: {file.path}", chars=len(text), sections=sections
                )
            ]
        whole = SourceDescriptor(
            **base,
            title=f"skill {skill.name} ({skill.revision_ref})",
            chars=len(text),
            sections=sections,
            required=required,
            summary=skill.description,
        )
        children = [
            SourceDescriptor(
                **base,
                title=f"skill {skill.name}: {section.title}",
                chars=section.chars,
                scope=section.scope,
                position=position,
            )
            for position, section in enumerate(s for s in sections if s.level == SECTION_LEVEL)
        ]
        return [whole, *children]

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """Every file of every bound skill (and SKILL.md's sections), skill by skill."""
        descriptors = await asyncio.to_thread(self._descriptors)
        if request.path_prefix:
            descriptors = [d for d in descriptors if d.path.startswith(request.path_prefix)]
        start = int(request.cursor) if request.cursor and request.cursor.isdigit() else 0
        end = start + request.page_size
        return DescriptorPage(
            descriptors=tuple(descriptors[start:end]),
            revision=self.revision,
            next_cursor=str(end) if end < len(descriptors) else None,
            total=len(descriptors),
        )

    # -- reads ------------------------------------------------------------------------

    def _locate(self, ref: ContextRef) -> tuple[BoundSkill, SkillFile]:
        name, _, inner = ref.path.partition("/")
        skill = self.skills.get(name)
        if skill is None:
            if is_listed(self.library.root, name):
                raise PolicyError(
                    f"skill {name!r} is not bound to this source (bound: "
                    f"{', '.join(sorted(self.skills)) or 'none'}); bind it through a trusted "
                    "SkillLibrary first"
                )
            raise NotFoundError(f"no skill {name!r} in this binding or library")
        file = skill.file(inner)
        if file is None:
            raise NotFoundError(f"skill {name!r} at {skill.revision_ref} has no file {inner!r}")
        return skill, file

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The pinned bytes of one skill file: text bounded by ``limit``, else reference only."""

        def read() -> ExactRead:
            _, file = self._locate(ref)
            data = self.library.store.blob(file.sha256)
            text = _text_of(file, data)
            media_type = classify(file.path, None).media_type
            if text is None:
                return ExactRead.from_bytes(
                    ref.path, data, media_type=media_type, content_version=file.sha256
                )
            sections: tuple[SectionInfo, ...] = (
                markdown_sections(text) if media_type == "text/markdown" else ()
            )
            return ExactRead.from_text(
                ref.path,
                text,
                limit,
                media_type=media_type,
                content_version=file.sha256,
                sections=sections,
            )

        return await asyncio.to_thread(read)
