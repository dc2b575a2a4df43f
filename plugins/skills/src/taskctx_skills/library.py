"""``SkillLibrary``: a folder of Agent Skills, an allowlist, and pinned bindings.

Discovery reads only each skill's front matter (the metadata layer), under the same
limits and no-follow rule as binding (:mod:`taskctx_skills.discovery`). Binding takes a
whole skill folder as one consistent, validated set of bytes, keeps it in the
content-addressed store and pins it at its ``revision_ref``; from then on the binding
reads the store, never the folder. The store lives outside the library, in the folder's
part of the per-user state folder (``<state_dir>/folders/<name>-<digest>/skills``,
:func:`taskctx.statefiles.folder_state_dir`), so a library that cannot be written (a
read-only checkout) binds fine; a library that already holds ``<root>/.taskctx/skills``
from an earlier version keeps using it, so its stored bindings stay restorable.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from taskctx.errors import NotFoundError, PolicyError
from taskctx.statefiles import folder_state_dir
from taskctx_skills import discovery
from taskctx_skills.errors import SkillValidationError
from taskctx_skills.limits import SkillLimits
from taskctx_skills.snapshot import take_snapshot
from taskctx_skills.source import SkillSource
from taskctx_skills.store import BindingEntry, SkillStore
from taskctx_skills.values import BoundSkill, SkillEntry

__all__ = ["INSIDE_STORE", "SkillLibrary"]

INSIDE_STORE = Path(".taskctx") / "skills"
"""Where versions before 0.2 kept a library's store, inside it (still used when there)."""


def _real_folder(path: Path) -> bool:
    """Whether ``path`` is a folder and not a link."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


SkillSpec = str | BoundSkill
"""A skill to bind: its name (pinned at its current content, or ``name@sha256:...`` for
a stored revision), or a :class:`BoundSkill` already pinned."""


def _trust_table(trusted: Iterable[str] | Mapping[str, str | None]) -> dict[str, str | None]:
    if isinstance(trusted, str):
        raise TypeError("trusted= takes a collection of skill names, not one string")
    if isinstance(trusted, Mapping):
        return {str(name): (str(rev) if rev else None) for name, rev in trusted.items()}
    return {str(name): None for name in trusted}


@attrs.define(slots=True, init=False)
class SkillLibrary:
    """Skills in ``root/<name>/SKILL.md`` folders; only the ``trusted`` ones can be bound.

    ``trusted`` is the application's explicit allowlist: skill names, or a mapping of
    names to the one ``revision_ref`` trusted for each (None: any content). Skills found
    on disk and not named are listed by :meth:`discover` but binding one raises
    :class:`~taskctx.errors.PolicyError`. ``state_dir`` is the state folder whose part for
    this library holds its store (default ``$TASKCTX_STATE_DIR``, else the user cache).
    """

    root: Path
    trusted: dict[str, str | None]
    store: SkillStore
    limits: SkillLimits
    state_dir: Path | None
    store_is_default: bool

    def __init__(
        self,
        root: str | Path,
        trusted: Iterable[str] | Mapping[str, str | None] = (),
        *,
        store: str | Path | None = None,
        limits: SkillLimits | None = None,
        state_dir: str | Path | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotFoundError(f"skill library {self.root} is not a folder")
        self.trusted = _trust_table(trusted)
        self.limits = limits or SkillLimits()
        # the state folder given (None: $TASKCTX_STATE_DIR or the user cache), and whether
        # the store is where the factory finds it again from root and state_dir
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.store_is_default = not store
        if store:
            self.store = SkillStore(Path(store), self.limits)
        elif _real_folder(self.root / ".taskctx") and _real_folder(self.root / INSIDE_STORE):
            # an earlier version's store inside the library: its bindings stay restorable
            self.store = SkillStore(self.root / INSIDE_STORE, self.limits, self.root)
        else:  # the folder's derived state, its levels made without following links
            derived = folder_state_dir(self.root, state_dir)
            self.store = SkillStore(derived.path / "skills", self.limits, derived.base)

    # -- discovery (metadata layer only) ------------------------------------------------

    def discover(self) -> tuple[SkillEntry, ...]:
        """Every skill folder under the root, by folder name: metadata, trust, validity.

        Reads each ``SKILL.md`` without following links and within ``limits``; a skill
        refused by either is listed as invalid, with a message naming the rule or limit.
        """
        return discovery.discover(self.root, self.trusted, self.limits)

    def validate(self, name: str) -> list[str]:
        """The validator's messages for skill ``name`` (empty: valid)."""
        try:
            take_snapshot(self._folder(name), self.limits)
        except SkillValidationError as exc:
            return list(exc.messages)
        return []

    # -- binding ---------------------------------------------------------------------------

    def _folder(self, name: str) -> Path:
        if not name or "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
            raise PolicyError(f"{name!r} is not a skill name (a folder directly under the library)")
        path = self.root / name
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            mode = 0
        if not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):  # a symlink is refused by reading
            raise NotFoundError(f"no skill folder {name!r} in the skill library {self.root}")
        return path

    def _check_trusted(self, name: str, revision_ref: str | None) -> None:
        if name not in self.trusted:
            raise PolicyError(
                f"skill {name!r} is not trusted: the application must name it in "
                f"SkillLibrary(trusted=...) before it can be bound"
            )
        pinned = self.trusted[name]
        if pinned is not None and revision_ref is not None and pinned != revision_ref:
            raise PolicyError(
                f"skill {name!r} is trusted only at revision {pinned}; its content is now "
                f"{revision_ref}"
            )

    def bind(self, skill: SkillSpec) -> BoundSkill:
        """Pin a trusted skill: its current content, or the stored revision it names.

        Raises PolicyError for an untrusted skill, SkillValidationError (with the
        validator's messages) for an invalid one, and SkillRevisionNotFoundError for a
        revision the store no longer holds. Nothing is stored for a refused skill.
        """
        if isinstance(skill, BoundSkill):
            self._check_trusted(skill.name, skill.revision_ref)
            stored = self.store.skill(skill.revision_ref)
            if stored != skill:
                raise PolicyError(f"skill {skill.name!r} differs from its stored revision")
            return stored
        name, _, revision = skill.partition("@")
        if revision:
            self._check_trusted(name, revision)
            stored = self.store.skill(revision)
            if stored.name != name:
                raise PolicyError(f"revision {revision} is skill {stored.name!r}, not {name!r}")
            return stored
        self._check_trusted(name, None)
        snapshot = take_snapshot(self._folder(name), self.limits)
        self._check_trusted(snapshot.skill.name, snapshot.skill.revision_ref)
        self.store.put_skill(snapshot.skill, dict(snapshot.blobs))
        return snapshot.skill

    def source(
        self, required: Iterable[SkillSpec] = (), optional: Iterable[SkillSpec] | None = None
    ) -> SkillSource:
        """A ``skill_library`` source binding these skills, each pinned now.

        ``required`` skills have their ``SKILL.md`` in every package; ``optional`` ones
        are offered to the query and the selector. ``optional=None`` with no required
        skills binds every trusted skill as optional.
        """
        required = list(required)
        if optional is None:
            optional = [] if required else sorted(self.trusted)
        entries: dict[str, BindingEntry] = {}
        skills: dict[str, BoundSkill] = {}
        for spec, is_required in [*((s, True) for s in required), *((s, False) for s in optional)]:
            bound = self.bind(spec)
            if bound.name in entries:
                if entries[bound.name].revision_ref != bound.revision_ref:
                    raise PolicyError(f"skill {bound.name!r} is bound twice at different revisions")
                if entries[bound.name].required or not is_required:
                    continue
            entries[bound.name] = BindingEntry(bound.name, bound.revision_ref, is_required)
            skills[bound.name] = bound
        ordered = tuple(sorted(entries.values(), key=lambda e: e.name))  # as restore_source
        revision = self.store.put_binding(ordered)
        return SkillSource(self, revision, ordered, skills)

    def restore_source(self, revision: str) -> SkillSource:
        """The source of a binding stored at ``revision`` (a reader snapshot's revision).

        Every blob is checked now, so a binding whose bytes are gone fails here, loudly,
        instead of vanishing from a later read. Trust is checked again.
        """
        entries = self.store.binding(revision)
        skills = {}
        for entry in entries:
            self._check_trusted(entry.name, entry.revision_ref)
            skill = self.store.skill(entry.revision_ref)
            for file in skill.files:
                self.store.blob(file.sha256)
            skills[entry.name] = skill
        return SkillSource(self, revision, entries, skills)
