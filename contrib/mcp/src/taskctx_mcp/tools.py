"""The tools: each an input model, an output model and a call into the service.

``read_context``, ``read_next`` and ``read_ref`` always; the working-state tools
(``note_*``, ``task_*``) when session memory is bound, with its semantics as they are
(created/updated, deleted/already_absent, sorted keys and their count).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import mcp_types as types
from pydantic import BaseModel

from taskctx import ContextPackage
from taskctx_mcp.errors import check_delivered
from taskctx_mcp.outputs import (
    NoteDeleteInput,
    NoteDeleteOutput,
    NoteGetInput,
    NoteGetOutput,
    NoteWriteInput,
    NoteWriteOutput,
    PackageOutput,
    ReadContextInput,
    ReadNextInput,
    ReadRefInput,
    TaskAddInput,
    TaskGetInput,
    TaskListInput,
    TaskListOutput,
    TaskOutput,
    TaskRemoveInput,
    TaskRemoveOutput,
    TaskUpdateInput,
)
from taskctx_mcp.service import ContextService

__all__ = ["Tool", "tools_for"]

Answer = tuple[BaseModel, ContextPackage | None]


@attrs.define(slots=True, frozen=True)
class Tool:
    """One MCP tool: its name, what it does, its schemas and its call."""

    name: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    run: Callable[[Any], Awaitable[Answer]]

    def describe(self) -> types.Tool:
        """The ``tools/list`` entry."""
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=self.input_model.model_json_schema(),
            output_schema=self.output_model.model_json_schema(),
        )

    async def call(self, arguments: Mapping[str, Any]) -> Answer:
        """Validate ``arguments`` (ValidationError names what is wrong) and run."""
        return await self.run(self.input_model.model_validate(dict(arguments)))


def tools_for(service: ContextService) -> list[Tool]:
    """The tools ``service`` serves."""

    async def read_context(args: ReadContextInput) -> Answer:
        package = await service.read_context(
            args.query,
            max_chars=args.max_chars,
            max_blocks=args.max_blocks,
            filters=args.filters,
            refs=args.refs,
            required_overflow=args.required_overflow,
        )
        return PackageOutput.of(package), package

    async def read_next(args: ReadNextInput) -> Answer:
        package = await service.read_next(args.cursor)
        return PackageOutput.of(package), package

    async def read_ref(args: ReadRefInput) -> Answer:
        package = await service.read_ref(
            args.ref_or_alias,
            scope=args.scope,
            package_id=args.package_id,
            max_chars=args.max_chars,
        )
        check_delivered(package, args.ref_or_alias)
        return PackageOutput.of(package), package

    tools = [
        Tool(
            "read_context",
            "Read a context package for a query: the model's view with [[ref:ref_N]] aliases, "
            "coverage per source, what was left out and why, and a cursor when has_more.",
            ReadContextInput,
            PackageOutput,
            read_context,
        ),
        Tool(
            "read_next",
            "The next page of a read, from the same pinned snapshot (pass its cursor).",
            ReadNextInput,
            PackageOutput,
            read_next,
        ),
        Tool(
            "read_ref",
            "Read one ref whole, or a scope inside it (lines:10-40, page:3, sheet:..., "
            "slide:4, section:...): an alias from the latest read, validated by the host.",
            ReadRefInput,
            PackageOutput,
            read_ref,
        ),
    ]
    if service.working_state is not None:
        tools += _memory_tools(service.working_state)
    return tools


def _memory_tools(state: Any) -> list[Tool]:
    """The working-state tools over a ``taskctx_memory.WorkingState``."""

    async def note_write(args: NoteWriteInput) -> Answer:
        return NoteWriteOutput(key=args.key, result=state.note_write(args.key, args.value)), None

    async def note_delete(args: NoteDeleteInput) -> Answer:
        return NoteDeleteOutput(key=args.key, result=state.note_delete(args.key)), None

    async def note_get(args: NoteGetInput) -> Answer:
        if args.key is None:
            index = state.note_get()
            return NoteGetOutput(keys=tuple(index.keys), count=index.count), None
        return NoteGetOutput(key=args.key, value=state.note_get(args.key)), None

    async def task_add(args: TaskAddInput) -> Answer:
        task = state.task_add(
            args.title, status=args.status, notes=args.notes, task_id=args.task_id
        )
        return TaskOutput.of(task), None

    async def task_update(args: TaskUpdateInput) -> Answer:
        task = state.task_update(
            args.task_id, title=args.title, status=args.status, notes=args.notes
        )
        return TaskOutput.of(task), None

    async def task_get(args: TaskGetInput) -> Answer:
        return TaskOutput.of(state.task_get(args.task_id)), None

    async def task_list(args: TaskListInput) -> Answer:
        tasks = tuple(TaskOutput.of(t) for t in state.tasks(status=args.status))
        return TaskListOutput(tasks=tasks, count=len(tasks)), None

    async def task_remove(args: TaskRemoveInput) -> Answer:
        return TaskRemoveOutput(task_id=args.task_id, result=state.task_remove(args.task_id)), None

    return [
        Tool("note_write", "Write a note (whole value): created or updated.",
             NoteWriteInput, NoteWriteOutput, note_write),
        Tool("note_delete", "Delete a note: deleted, or already_absent.",
             NoteDeleteInput, NoteDeleteOutput, note_delete),
        Tool("note_get", "A note's whole value; without a key, the sorted keys and count.",
             NoteGetInput, NoteGetOutput, note_get),
        Tool("task_add", "Add a task (status pending, in_progress, done or blocked).",
             TaskAddInput, TaskOutput, task_add),
        Tool("task_update", "Update a task's title, status or notes; others are kept.",
             TaskUpdateInput, TaskOutput, task_update),
        Tool("task_get", "One task by id.", TaskGetInput, TaskOutput, task_get),
        Tool("task_list", "Tasks in creation order, optionally of one status.",
             TaskListInput, TaskListOutput, task_list),
        Tool("task_remove", "Remove a task: deleted, or already_absent.",
             TaskRemoveInput, TaskRemoveOutput, task_remove),
    ]  # fmt: skip
