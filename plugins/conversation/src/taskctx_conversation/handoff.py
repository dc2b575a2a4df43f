"""Handing a run over: the skills in use, the reminder to re-read them, the handoff note.

A skill is a folder with a ``SKILL.md``; what the model learned from reading it is in
turns that compaction or a handoff leaves behind. :func:`skills_in_use` finds the
``SKILL.md`` files a history actually read, :func:`skills_reminder` is the turn that
tells the continuation to re-read them (guidance, never an automatic reload), and
:func:`continuation_turns` is what both compaction and :func:`restore_handoff` put after
the replayed input: the summary, that reminder and a fresh working-state projection.

The handoff capability is one tool, :data:`SUMMARIZE_TOOL`: the model calls it to hand
the run over, :func:`handoff_from_tool_call` turns the call into a :class:`HandoffNote`
and :func:`restore_handoff` starts the continuation from it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationError, field_validator, model_validator
from taskctx_memory.state_context import ProjectionLimits, ProjectionSource, bounded_projection

from taskctx.frozen import FrozenModel
from taskctx_conversation.errors import ConversationError
from taskctx_conversation.history import MessageHistory, Turn, TurnKind
from taskctx_conversation.parts import ToolCallPart
from taskctx_conversation.request import ToolDefinition

__all__ = [
    "REMINDER_HEADING",
    "SKILL_FILE",
    "SUMMARIZE_TOOL",
    "SUMMARY_HEADING",
    "HandoffArgumentsError",
    "HandoffNote",
    "SkillInUse",
    "continuation_turns",
    "handoff_from_tool_call",
    "restore_handoff",
    "skills_in_use",
    "skills_reminder",
]

SKILL_FILE = "SKILL.md"
"""The file name that makes a folder a skill."""

SUMMARY_HEADING = "Summary of the run so far (the turns it stands for were compacted):"
"""The first line of every summary turn, so the model knows what the turn is."""

REMINDER_HEADING = (
    "Skills were in use before this point. Their instructions are not loaded again "
    "automatically: re-read each SKILL.md below, and the support files it needs next, "
    "before relying on it."
)
"""The first line of the skills reminder."""


class HandoffArgumentsError(ConversationError, ValueError):
    """A ``summarize`` tool call whose arguments do not fit :data:`SUMMARIZE_TOOL`."""


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _path(value: str) -> str:
    """A path as one printable line, normalized (``./a/../b`` is ``b``)."""
    if not value or not value.isprintable():
        raise ValueError(f"a path is one non-empty printable line, not {value!r}")
    return posixpath.normpath(value)


_Text = Annotated[str, AfterValidator(_not_blank)]
_PathText = Annotated[str, AfterValidator(_path)]


def _skill_folder(path: str) -> str:
    """The folder of a normalized SKILL.md path; empty for one at the top (or ``/``)."""
    folder = posixpath.dirname(path)
    return "" if folder in ("", "/") else folder


class SkillInUse(FrozenModel):
    """A skill the run relied on: its ``SKILL.md``, what it is for, the files it needs next.

    Paths are normalized (``posixpath.normpath``). ``purpose`` defaults to the skill's
    folder name (``SKILL.md`` for one at the top).
    """

    path: _PathText
    purpose: _Text = ""
    """What the skill is for; when not given (or empty), the skill's folder name."""
    support_files: tuple[_PathText, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _default_purpose(cls, data: Any) -> Any:
        if (
            isinstance(data, Mapping)
            and not data.get("purpose")
            and isinstance(data.get("path"), str)
        ):
            folder = _skill_folder(posixpath.normpath(data["path"]))
            return {**data, "purpose": posixpath.basename(folder) or SKILL_FILE}
        return data

    @field_validator("path")
    @classmethod
    def _a_skill_file(cls, value: str) -> str:
        if posixpath.basename(value) != SKILL_FILE:
            raise ValueError(f"a skill path names its {SKILL_FILE}, not {value!r}")
        return value


def _path_values(arguments: Mapping[str, Any]) -> Iterator[str]:
    """The path-like strings of a tool call's arguments: top level or one level down.

    A path-like string is one printable line without whitespace; anything else (a shell
    command, prose) is not taken for a path.
    """
    for value in arguments.values():
        if isinstance(value, Mapping):
            nested: Iterator[Any] = iter(value.values())
        elif isinstance(value, (list, tuple)):
            nested = iter(value)
        else:
            nested = iter((value,))
        for item in nested:
            if isinstance(item, str) and item.isprintable() and item.split() == [item]:
                yield posixpath.normpath(item)


def _successful_reads(history: MessageHistory) -> Iterator[str]:
    """Paths named by tool calls that have a result which is not an error, in call order."""
    results: dict[str, bool] = {}
    for turn in history:
        for result in turn.tool_results():
            results.setdefault(result.call_id, result.is_error)
    for turn in history:
        for call in turn.tool_calls():
            if results.get(call.call_id, True):  # no result, or an error
                continue
            yield from _path_values(call.arguments)


def _detected(history: MessageHistory) -> list[SkillInUse]:
    """Each SKILL.md read, in first-read order, with the files of its folder read after."""
    found: dict[str, list[str]] = {}
    for path in _successful_reads(history):
        if posixpath.basename(path) == SKILL_FILE:
            found.setdefault(path, [])
            continue
        owners = [
            skill
            for skill in found
            if _skill_folder(skill) and path.startswith(_skill_folder(skill) + "/")
        ]
        if owners:
            files = found[max(owners, key=len)]  # the innermost skill folder owns the file
            if path not in files:
                files.append(path)
    return [SkillInUse(path=path, support_files=tuple(files)) for path, files in found.items()]


def _unique(skills: Sequence[SkillInUse]) -> list[SkillInUse]:
    """``skills`` without later repeats of a path."""
    chosen: dict[str, SkillInUse] = {}
    for skill in skills:
        chosen.setdefault(skill.path, skill)
    return list(chosen.values())


def skills_in_use(
    history: MessageHistory, *, explicit: Sequence[SkillInUse] = ()
) -> tuple[SkillInUse, ...]:
    """The skills ``history`` read, after the ``explicit`` ones (which win for their path).

    Conservative detection: a skill is in use when a tool call (any tool) has an argument
    whose value, at the top level or one level down in a list or object, is a path whose
    file name is ``SKILL.md``, and the call has a result that is not an error. Its
    support files are the other paths under its folder that later successful calls name
    (a file belongs to the innermost skill folder holding it). Paths are compared
    normalized, as written: an absolute and a relative path to one file are two paths.
    """
    return tuple(_unique([*explicit, *_detected(history)]))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def skills_reminder(skills: Sequence[SkillInUse], *, at: datetime | None = None) -> Turn | None:
    """A user notice naming each skill's SKILL.md, purpose and support files, asking the
    model to re-read them before relying on them; None when no skill is in use.

    Its kind is ``notice``, so a later compaction does not replay it (it detects the
    skills read again since, or takes them explicitly).
    """
    chosen = _unique(skills)
    if not chosen:
        return None
    lines = [REMINDER_HEADING]
    for skill in chosen:
        lines.append(f"- {skill.path} (purpose: {_one_line(skill.purpose)})")
        if skill.support_files:
            lines.append(f"  support files needed next: {', '.join(skill.support_files)}")
    return Turn.text("user", "\n".join(lines), kind=TurnKind.NOTICE, at=at)


def continuation_turns(
    summary: str,
    *,
    skills: Sequence[SkillInUse] = (),
    next_steps: Sequence[str] = (),
    projection: ProjectionSource | None = None,
    limits: ProjectionLimits | None = None,
    at: datetime | None = None,
) -> tuple[Turn, ...]:
    """What follows the replayed input: the summary, the skills reminder, the projection.

    The summary turn (kind ``summary``) starts with :data:`SUMMARY_HEADING` and ends with
    the next steps, if any; an empty summary is refused (``ValueError``). The reminder
    comes only when skills are in use. The projection is ``projection.project
    ("user_input")`` (notes and tasks), bounded by ``limits.max_chars`` and failing
    closed over it (``CapabilityLimitError``); none when it projects nothing. Every new
    turn is a user turn made ``at`` (default: now).
    """
    if not summary.strip():
        raise ValueError("the summary is empty: compaction needs the model's summary")
    when = at if at is not None else datetime.now(timezone.utc)
    text = f"{SUMMARY_HEADING}\n\n{summary}"
    steps = [_not_blank(step) for step in next_steps]
    if steps:
        text += "\n\nNext steps:\n" + "\n".join(f"- {step}" for step in steps)
    turns = [Turn.text("user", text, kind=TurnKind.SUMMARY, at=when)]
    reminder = skills_reminder(skills, at=when)
    if reminder is not None:
        turns.append(reminder)
    if projection is not None:
        bound = limits if limits is not None else ProjectionLimits()
        state = bounded_projection(projection, "user_input", bound, "compaction projection")
        if state is not None:
            turns.append(Turn.text("user", state, kind=TurnKind.PROJECTION, at=when))
    return tuple(turns)


class HandoffNote(FrozenModel):
    """What a run hands over: the summary, the skills in use and the next steps."""

    summary: _Text
    skills: tuple[SkillInUse, ...] = ()
    next_steps: tuple[_Text, ...] = ()


SUMMARIZE_TOOL = ToolDefinition(
    name="summarize",
    description=(
        "Hand this run over to a fresh context. Call it when you are told the context "
        "window is filling up, or when the work should continue elsewhere: give a summary "
        "a continuation can work from without these turns, the skills (SKILL.md files) "
        "you relied on with the support files needed next, and the next steps. The "
        "continuation gets the run's original input, your summary and a reminder to "
        "re-read those skills."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "summary": {
                "type": "string",
                "minLength": 1,
                "description": "The run so far: the task, decisions, findings, what is "
                "done and what remains.",
            },
            "skills_in_use": {
                "type": "array",
                "description": "The skills relied on, to be re-read by the continuation.",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "pattern": "SKILL\\.md$"},
                        "purpose": {"type": "string"},
                        "support_files": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["path"],
                    "additionalProperties": False,
                },
            },
            "next_steps": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "What the continuation should do next, in order.",
            },
        },
        "required": ["summary"],
        "additionalProperties": False,
    },
)
"""The handoff tool: ``summary`` (required), ``skills_in_use`` and ``next_steps``."""


class _SummarizeArguments(FrozenModel):
    """The arguments of a ``summarize`` call, named as :data:`SUMMARIZE_TOOL` names them."""

    summary: _Text
    skills_in_use: tuple[SkillInUse, ...] = Field(default=())
    next_steps: tuple[_Text, ...] = ()


def _field(location: tuple[int | str, ...]) -> str:
    """``skills_in_use[0].path`` for pydantic's ``('skills_in_use', 0, 'path')``."""
    text = ""
    for step in location:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text or "arguments"


def handoff_from_tool_call(call: ToolCallPart) -> HandoffNote:
    """The :class:`HandoffNote` a ``summarize`` tool call carries.

    Raises :class:`HandoffArgumentsError` naming each bad field (``summary``,
    ``skills_in_use[0].path``, an unknown argument) so the agent loop can return it to
    the model as the tool's error result.
    """
    if call.name != SUMMARIZE_TOOL.name:
        raise HandoffArgumentsError(f"tool call {call.name!r} is not a {SUMMARIZE_TOOL.name} call")
    try:
        arguments = _SummarizeArguments.model_validate(dict(call.arguments))
    except ValidationError as exc:
        problems = "; ".join(
            f"{_field(error['loc'])}: {error['msg']}" for error in exc.errors(include_url=False)
        )
        raise HandoffArgumentsError(f"{SUMMARIZE_TOOL.name} arguments: {problems}") from None
    return HandoffNote(
        summary=arguments.summary,
        skills=arguments.skills_in_use,
        next_steps=arguments.next_steps,
    )


def restore_handoff(
    note: HandoffNote,
    *,
    initial_input: Sequence[Turn] = (),
    projection: ProjectionSource | None = None,
    limits: ProjectionLimits | None = None,
    at: datetime | None = None,
) -> MessageHistory:
    """The history a continuation starts from: ``initial_input`` (the very same turns), the
    summary with the next steps, the reminder to re-read the skills, and a fresh
    projection (see :func:`continuation_turns`).

    ``initial_input`` holds what compaction would replay: turns of kind
    ``initial_input`` or delivered ``steering``; any other turn is refused.
    """
    for turn in initial_input:
        replayable = turn.kind == TurnKind.INITIAL_INPUT or (
            turn.kind == TurnKind.STEERING and turn.delivered
        )
        if not replayable:
            raise ValueError(
                f"initial_input holds a {turn.kind} turn; give turns of kind initial_input "
                "or delivered steering"
            )
    tail = continuation_turns(
        note.summary,
        skills=note.skills,
        next_steps=note.next_steps,
        projection=projection,
        limits=limits,
        at=at,
    )
    return MessageHistory(turns=(*initial_input, *tail))
