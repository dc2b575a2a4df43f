"""Audit and resume across every first-party source kind, on real files, SQLite and git.

A task context with a workspace, a record store, a skill library, session memory and a
pinned repository is read, its consumption recorded in the record store, exported to
JSON and restored in a fresh plugin host: the same read on the same snapshot gives the
same package, the restored reader continues where the old one stopped, and a binding
that cannot be rebuilt fails the restore naming its binding id and kind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from taskctx_memory import WorkingState
from taskctx_records import RecordConsumptionLog, RecordStore
from taskctx_repo import PinnedRepository
from taskctx_skills import SkillLibrary
from taskctx_workspace import TaskWorkspace

from taskctx import (
    ContextBudget,
    ContextPackage,
    ContextReadIntent,
    OmissionReason,
    PluginHost,
    RestoreError,
    TaskContext,
)
from taskctx.testing import MemorySource
from tests.plugins.repo.conftest import git

FIRST_PARTY = [
    "taskctx-workspace",
    "taskctx-records",
    "taskctx-skills",
    "taskctx-memory",
    "taskctx-repo",
    "taskctx-fts",
    "taskctx-documents",
]
KINDS = {
    "project-files": "task_workspace",
    "review-records": "record_store",
    "skills": "skill_library",
    "memory": "session_memory",
    "repo": "pinned_repository",
}
INTENT = ContextReadIntent(query="upload timeout retry")


def fresh_host() -> PluginHost:
    """A new host loading only the first-party plugins, as a new process would."""
    return PluginHost(allow=FIRST_PARTY)


@dataclass
class World:
    """The folders every source lives in."""

    project: Path
    state: Path
    skills: Path
    repo: Path


def build_world(root: Path) -> World:
    """Real files, a record store with records and memory, a skill folder, a git repo."""
    world = World(root / "project", root / "project-state", root / "skills", root / "repo")
    world.project.mkdir()
    for n in range(8):
        (world.project / f"log-{n}.txt").write_text(
            f"attempt {n}: the upload hit the timeout; retry {n} of 8\n" * 20, encoding="utf-8"
        )
    (world.project / "README.md").write_text("# Project\n\nUpload service.\n", encoding="utf-8")
    with RecordStore(world.state) as store:
        store.put(
            {"status": "failed", "reason": "upload times out after 30 s; retry did not help"},
            collection="observations",
            kind="review_result",
            scope={"task_id": "review-42"},
        )
        memory = WorkingState(store, "s1")
        memory.note_write("timeout", "the upload timeout is 30 s; retry twice")
        memory.task_add("raise the upload timeout", notes="retry after the change")
    skill = world.skills / "reviewing"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: reviewing\ndescription: How to review an upload timeout.\n---\n"
        "# Reviewing\n\n## Steps\n\nRead the logs, check the retry and timeout settings.\n",
        encoding="utf-8",
    )
    (world.repo / "src").mkdir(parents=True)
    (world.repo / "src" / "upload.py").write_text(
        "TIMEOUT = 30  # seconds before the upload gives up\nRETRIES = 2\n", encoding="utf-8"
    )
    (world.repo / "notes.txt").write_text("not authorised by the globs\n", encoding="utf-8")
    git(world.repo, "init", "-q")
    git(world.repo, "add", "-A")
    git(world.repo, "commit", "-q", "-m", "upload timeout")
    return world


def build_context(world: World, host: PluginHost) -> tuple[TaskContext, RecordStore]:
    """Every first-party kind attached, built the way an application builds them."""
    records = RecordStore(world.state)
    ctx = TaskContext("review-42", host=host, consumption_log=RecordConsumptionLog(records))
    ctx.put(role="instruction", content="Do not modify source files.", required=True)
    ctx.put(role="information", content="The reviewer asked about the upload timeout.")
    workspace = TaskWorkspace(world.project, mode="read_only", host=host)
    ctx.attach(workspace.source(), binding_id="project-files")
    ctx.attach(records.source(scope={"task_id": "review-42"}), binding_id="review-records")
    library = SkillLibrary(world.skills, trusted=["reviewing"])
    ctx.attach(library.source(required=["reviewing"]), binding_id="skills")
    ctx.attach(WorkingState(records, "s1").source(), binding_id="memory")
    repository = PinnedRepository(world.repo, "HEAD", ("src/**",), host=host)
    ctx.attach(repository.source(), binding_id="repo")
    return ctx, records


def view(package: ContextPackage) -> tuple[object, ...]:
    """What must be equal between two reads of one snapshot (ids and aliases aside)."""
    return (
        package.snapshot,
        [(b.block_id, b.ref, b.content, b.completeness) for b in package.blocks],
        [(o.ref, o.reason) for o in package.omissions],
        dict(package.source_coverage),
        package.has_more,
    )


def test_every_first_party_kind_is_exported_as_rebuildable(tmp_path: Path) -> None:
    """Each first-party binding is exported with the options its factory needs."""
    ctx, _ = build_context(build_world(tmp_path), fresh_host())
    bindings = {b.binding_id: b for b in ctx.export_state().bindings}
    assert {k: b.kind for k, b in bindings.items()} == KINDS
    assert all(b.options is not None for b in bindings.values()), bindings
    workspace = bindings["project-files"].options
    assert workspace is not None
    assert workspace["root"] == str((tmp_path / "project").resolve())
    assert workspace["mode"] == "read_only"
    assert workspace["create"] is False
    records = bindings["review-records"].options
    assert records is not None
    assert records["scope"] == {"task_id": "review-42"}
    skills = bindings["skills"].options
    assert skills is not None
    assert skills["revision"] == ctx.bindings["skills"].source.revision  # type: ignore[attr-defined]
    memory = bindings["memory"].options
    assert memory is not None
    assert (memory["session_id"], memory["include_global"]) == ("s1", True)
    repo = bindings["repo"].options
    assert repo is not None
    assert repo["commit"] == ctx.bindings["repo"].source.repository.commit  # type: ignore[attr-defined]
    assert repo["paths"] == ["src/**"]


def test_export_json_restore_in_a_fresh_host_gives_the_same_package(tmp_path: Path) -> None:
    """export -> JSON -> restore in a new host: same revision, same package, same snapshot."""
    world = build_world(tmp_path)
    ctx, records = build_context(world, fresh_host())
    budget = ContextBudget(max_chars=1500, max_blocks=6)
    reader = ctx.reader(consumer="review-planner", phase="planning", budget=budget)
    first = reader.read(INTENT)
    assert first.has_more
    delivered_kinds = {b.source_kind for b in first.blocks}
    assert "skill_library" in delivered_kinds  # the required SKILL.md
    consumed = ctx.record_consumption(first, request_id="req-1", response_id="resp-1")
    text = ctx.export_state().model_dump_json()
    json.loads(text)  # plain JSON

    restored = TaskContext.restore(
        text,
        host=fresh_host(),
        consumption_log=RecordConsumptionLog(RecordStore(world.state)),
    )
    assert restored.revision == ctx.revision
    assert {b: restored.bindings[b].kind for b in restored.bindings} == KINDS
    assert restored.packages() == (first,)
    assert restored.consumptions() == (consumed,)

    # a new reader on each reads the same package from the same snapshot
    before = ctx.reader(consumer="review-planner", phase="planning", budget=budget).read(INTENT)
    after = restored.reader(consumer="review-planner", phase="planning", budget=budget).read(INTENT)
    assert view(after) == view(before)

    # the restored reader continues: the next page is the old reader's next page
    again = restored.readers()[0]  # the restored one; the reader made above comes after
    assert again.snapshot == reader.snapshot
    assert view(again.read_next(first.cursor)) == view(reader.read_next(first.cursor))

    # and what it disclosed stays disclosed
    repeat = again.read(INTENT)
    optional = {str(b.ref) for b in first.blocks if not b.required}
    marked = {str(o.ref) for o in repeat.omissions if o.reason is OmissionReason.ALREADY_DISCLOSED}
    assert optional
    assert optional <= marked
    records.close()


def test_consumptions_persist_in_the_record_store_across_contexts(tmp_path: Path) -> None:
    """A context built anew over the same store lists what the earlier one recorded."""
    world = build_world(tmp_path)
    ctx, records = build_context(world, fresh_host())
    package = ctx.reader(consumer="review-planner").read(INTENT)
    consumed = ctx.record_consumption(package, request_id="req-1", response_id="resp-1")
    records.close()
    later, store = build_context(world, fresh_host())
    assert later.consumptions() == (consumed,)
    store.close()


def test_a_third_party_binding_fails_the_restore_by_name(tmp_path: Path) -> None:
    """Export succeeds and marks the custom binding; restore raises naming id and kind."""
    world = build_world(tmp_path)
    ctx, records = build_context(world, fresh_host())
    ctx.attach(MemorySource({"ticket.txt": "upload timeout ticket"}), binding_id="tickets")
    state = ctx.export_state()
    (tickets,) = [b for b in state.bindings if b.binding_id == "tickets"]
    assert tickets.options is None
    with pytest.raises(RestoreError, match=r"binding 'tickets' \(kind 'memory'\)") as err:
        TaskContext.restore(state.model_dump_json(), host=fresh_host())
    assert (err.value.binding_id, err.value.kind) == ("tickets", "memory")
    records.close()


def test_a_host_without_a_first_party_plugin_fails_the_restore_by_name(tmp_path: Path) -> None:
    """Restoring into a host that lacks taskctx-repo names the repo binding and its kind."""
    world = build_world(tmp_path)
    ctx, records = build_context(world, fresh_host())
    state = ctx.export_state()
    lacking = PluginHost(allow=[d for d in FIRST_PARTY if d != "taskctx-repo"])
    with pytest.raises(RestoreError, match=r"binding 'repo' \(kind 'pinned_repository'\)"):
        TaskContext.restore(state, host=lacking)
    records.close()


def test_a_vanished_workspace_fails_the_restore_instead_of_reading_nothing(
    tmp_path: Path,
) -> None:
    """A workspace root that is gone is not created empty: the restore names the binding."""
    world = build_world(tmp_path)
    ctx, records = build_context(world, fresh_host())
    state = ctx.export_state()
    world.project.rename(tmp_path / "moved")
    with pytest.raises(RestoreError, match=r"binding 'project-files' \(kind 'task_workspace'\)"):
        TaskContext.restore(state, host=fresh_host())
    assert not world.project.exists()
    records.close()


def test_relative_roots_restore_from_another_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sources opened by relative paths are exported absolute and restore from elsewhere."""
    world = build_world(tmp_path)
    monkeypatch.chdir(tmp_path)
    host = fresh_host()
    records = RecordStore("project-state")
    ctx = TaskContext("review-42", host=host)
    ctx.attach(TaskWorkspace("project", host=host).source(), binding_id="project-files")
    ctx.attach(records.source(scope={"task_id": "review-42"}), binding_id="review-records")
    ctx.attach(WorkingState(records, "s1").source(), binding_id="memory")
    ctx.attach(PinnedRepository("repo", "HEAD", ("src/**",), host=host).source(), binding_id="repo")
    before = ctx.reader(consumer="planner").read(INTENT)
    state = ctx.export_state().model_dump_json()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    restored = TaskContext.restore(state, host=fresh_host())
    assert restored.revision == ctx.revision
    assert view(restored.reader(consumer="planner").read(INTENT)) == view(before)
    assert world.state.exists()
    records.close()


def test_a_skill_library_with_its_store_elsewhere_is_marked_not_rebuildable(
    tmp_path: Path,
) -> None:
    """The factory cannot name a store outside the library: export marks it, restore names it."""
    world = build_world(tmp_path)
    library = SkillLibrary(world.skills, trusted=["reviewing"], store=tmp_path / "skill-store")
    ctx = TaskContext("review-42", host=fresh_host())
    ctx.attach(library.source(required=["reviewing"]), binding_id="skills")
    (binding,) = ctx.export_state().bindings
    assert binding.options is None
    assert binding.not_rebuildable is not None
    with pytest.raises(RestoreError, match=r"binding 'skills' \(kind 'skill_library'\)"):
        TaskContext.restore(ctx.export_state(), host=fresh_host())
    restored = TaskContext.restore(
        ctx.export_state(), host=fresh_host(), sources={"skills": library.source(["reviewing"])}
    )
    assert restored.revision == ctx.revision
