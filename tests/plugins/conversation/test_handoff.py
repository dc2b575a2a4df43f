"""Handoff: skills in use, the re-read reminder, the summarize tool and restoring a run."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from taskctx_conversation.handoff import (
    REMINDER_HEADING,
    SUMMARIZE_TOOL,
    SUMMARY_HEADING,
    HandoffArgumentsError,
    HandoffNote,
    SkillInUse,
    handoff_from_tool_call,
    restore_handoff,
    skills_in_use,
    skills_reminder,
)
from taskctx_conversation.history import MessageHistory, Turn, TurnKind
from taskctx_conversation.parts import ImagePart, TextPart, ToolCallPart, ToolResultPart
from taskctx_memory import WorkingState

from tests.plugins.conversation.helpers import PNG_1X1, at


class Reads:
    """Builds a history of tool calls, each answered by a result (or an error)."""

    def __init__(self) -> None:
        self.turns: list[Turn] = [Turn.text("user", "Review uploads.", kind=TurnKind.INITIAL_INPUT)]

    def call(self, error: bool = False, answered: bool = True, **arguments: Any) -> Reads:
        """One assistant tool call with ``arguments`` and, if ``answered``, its result."""
        call_id = f"c{len(self.turns)}"
        call = ToolCallPart(call_id=call_id, name="read_file", arguments=arguments)
        self.turns.append(Turn(role="assistant", parts=(call,)))
        if answered:
            result = ToolResultPart(call_id=call_id, content="...", is_error=error)
            self.turns.append(Turn(role="tool", parts=(result,)))
        return self

    @property
    def history(self) -> MessageHistory:
        """The history so far."""
        return MessageHistory(turns=tuple(self.turns))


# -- SkillInUse -------------------------------------------------------------------------


def test_skill_in_use_names_a_skill_file_and_defaults_its_purpose() -> None:
    """The path is normalized and must name SKILL.md; purpose defaults to the folder name."""
    skill = SkillInUse(path="./skills/review-upload/../review-upload/SKILL.md")
    assert skill.path == "skills/review-upload/SKILL.md"
    assert skill.purpose == "review-upload"
    assert SkillInUse(path="SKILL.md").purpose == "SKILL.md"
    given = SkillInUse(
        path="/srv/skills/deploy/SKILL.md", purpose="deploying", support_files=("a",)
    )
    assert (given.purpose, given.support_files) == ("deploying", ("a",))
    for bad in ("skills/review/README.md", "skills/review/NOTSKILL.md", "skills/x/SKILL.md\nrm"):
        with pytest.raises(pydantic.ValidationError):
            SkillInUse(path=bad)
    with pytest.raises(pydantic.ValidationError):
        skill.purpose = "other"  # type: ignore[misc]


# -- detection --------------------------------------------------------------------------


def test_a_skill_read_successfully_is_detected_with_its_support_files() -> None:
    """SKILL.md read without error is in use; files of its folder read after it support it."""
    history = (
        Reads()
        .call(path="skills/review/examples.md")  # before the SKILL.md: not a support file
        .call(path="skills/review/SKILL.md")
        .call(path="src/upload.py")  # outside the skill's folder
        .call(path="skills/review/checklist.md")
        .call(path="./skills/review/checklist.md")  # the same file again
        .history
    )
    assert skills_in_use(history) == (
        SkillInUse(
            path="skills/review/SKILL.md",
            purpose="review",
            support_files=("skills/review/checklist.md",),
        ),
    )


def test_error_results_and_unanswered_calls_are_not_counted() -> None:
    """A read that failed, or has no result yet, is not a skill in use (nor a support file)."""
    history = (
        Reads()
        .call(path="skills/broken/SKILL.md", error=True)
        .call(path="skills/pending/SKILL.md", answered=False)
        .call(path="skills/review/SKILL.md")
        .call(path="skills/review/missing.md", error=True)
        .history
    )
    assert skills_in_use(history) == (SkillInUse(path="skills/review/SKILL.md"),)


def test_paths_are_found_at_the_top_level_or_one_level_down_only() -> None:
    """A string value, or one inside a top-level list or object, counts; deeper or prose not."""
    history = (
        Reads()
        .call(paths=["notes.txt", "skills/a/SKILL.md"])
        .call(options={"file": "skills/b/SKILL.md", "limit": 3})
        .call(deep={"files": ["skills/c/SKILL.md"]})
        .call(command="cat skills/d/SKILL.md")
        .call(path=42)
        .history
    )
    assert [s.path for s in skills_in_use(history)] == ["skills/a/SKILL.md", "skills/b/SKILL.md"]


def test_a_support_file_belongs_to_the_innermost_skill() -> None:
    """Nested skill folders: a file goes to the deepest SKILL.md folder holding it."""
    history = (
        Reads()
        .call(path="skills/suite/SKILL.md")
        .call(path="skills/suite/lint/SKILL.md")
        .call(path="skills/suite/lint/rules.md")
        .call(path="skills/suite/overview.md")
        .history
    )
    outer, inner = skills_in_use(history)
    assert outer.support_files == ("skills/suite/overview.md",)
    assert inner.support_files == ("skills/suite/lint/rules.md",)


def test_explicit_skills_win_over_detected_ones() -> None:
    """A skill the caller names replaces the detected one for its path and comes first."""
    history = Reads().call(path="skills/a/SKILL.md").call(path="skills/b/SKILL.md").history
    explicit = SkillInUse(path="./skills/b/SKILL.md", purpose="b, as the caller puts it")
    found = skills_in_use(history, explicit=[explicit])
    assert found[0] is explicit
    assert [s.path for s in found] == ["skills/b/SKILL.md", "skills/a/SKILL.md"]
    assert skills_in_use(MessageHistory()) == ()


# -- the reminder -----------------------------------------------------------------------


def test_the_reminder_names_every_skill_and_asks_to_re_read_them() -> None:
    """A user notice listing paths, purposes and support files, telling the model to re-read."""
    skills = [
        SkillInUse(path="skills/review/SKILL.md", support_files=("skills/review/checklist.md",)),
        SkillInUse(path="skills/deploy/SKILL.md", purpose="deploying\nthe app"),
        SkillInUse(path="skills/review/SKILL.md", purpose="a repeat, left out"),
    ]
    reminder = skills_reminder(skills, at=at(5))
    assert reminder is not None
    assert (reminder.role, reminder.kind, reminder.at) == ("user", TurnKind.NOTICE, at(5))
    assert reminder.parts == (
        TextPart(
            text=f"{REMINDER_HEADING}\n"
            "- skills/review/SKILL.md (purpose: review)\n"
            "  support files needed next: skills/review/checklist.md\n"
            "- skills/deploy/SKILL.md (purpose: deploying the app)"
        ),
    )
    assert "re-read each SKILL.md" in REMINDER_HEADING
    assert "not loaded again automatically" in REMINDER_HEADING
    assert skills_reminder([]) is None


# -- the summarize tool -----------------------------------------------------------------


def test_the_summarize_tool_is_described_for_a_handoff() -> None:
    """One tool named summarize; its schema and the validator agree on every field."""
    schema = SUMMARIZE_TOOL.input_schema
    assert SUMMARIZE_TOOL.name == "summarize"
    assert "Hand this run over" in SUMMARIZE_TOOL.description
    assert (schema["type"], schema["required"], schema["additionalProperties"]) == (
        "object",
        ["summary"],
        False,
    )
    assert schema["properties"]["summary"]["type"] == "string"
    assert schema["properties"]["next_steps"]["items"]["type"] == "string"
    item = schema["properties"]["skills_in_use"]["items"]
    assert set(item["properties"]) == set(SkillInUse.model_fields)
    assert item["required"] == ["path"]


def test_a_summarize_call_round_trips_to_a_handoff_note() -> None:
    """The call's arguments become a HandoffNote (skill paths normalized, purpose defaulted)."""
    call = ToolCallPart(
        call_id="h1",
        name="summarize",
        arguments={
            "summary": "Uploads fail at 30 s; the fix is a longer timeout.",
            "skills_in_use": [
                {"path": "skills/review/SKILL.md", "support_files": ["skills/review/checklist.md"]},
                {"path": "./skills/deploy/SKILL.md", "purpose": "deploying"},
            ],
            "next_steps": ["raise TIMEOUT_S to 120", "run the upload tests"],
        },
    )
    note = handoff_from_tool_call(call)
    assert note == HandoffNote(
        summary="Uploads fail at 30 s; the fix is a longer timeout.",
        skills=(
            SkillInUse(
                path="skills/review/SKILL.md",
                purpose="review",
                support_files=("skills/review/checklist.md",),
            ),
            SkillInUse(path="skills/deploy/SKILL.md", purpose="deploying"),
        ),
        next_steps=("raise TIMEOUT_S to 120", "run the upload tests"),
    )
    minimal = ToolCallPart(call_id="h2", name="summarize", arguments={"summary": "done"})
    assert handoff_from_tool_call(minimal) == HandoffNote(summary="done")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "summary: Field required"),
        ({"summary": "  "}, "summary: Value error, must not be empty"),
        ({"summary": 7}, "summary: Input should be a valid string"),
        (
            {"summary": "s", "skills_in_use": [{"path": "skills/a/SKILL.md"}, {"path": "a.md"}]},
            "skills_in_use[1].path: Value error, a skill path names its SKILL.md",
        ),
        ({"summary": "s", "skills_in_use": [{"purpose": "p"}]}, "skills_in_use[0].path: Field"),
        (
            {"summary": "s", "skills_in_use": [{"path": "s/SKILL.md", "extra": 1}]},
            "skills_in_use[0].extra: Extra inputs are not permitted",
        ),
        ({"summary": "s", "next_steps": "do it"}, "next_steps: Input should be a valid tuple"),
        ({"summary": "s", "next_steps": ["ok", ""]}, "next_steps[1]: Value error"),
        ({"summary": "s", "skills": []}, "skills: Extra inputs are not permitted"),
    ],
)
def test_bad_summarize_arguments_name_the_field(arguments: dict[str, Any], message: str) -> None:
    """Each bad argument is refused with a HandoffArgumentsError naming its field."""
    call = ToolCallPart(call_id="h1", name="summarize", arguments=arguments)
    with pytest.raises(HandoffArgumentsError, match=r"^summarize arguments: .*") as caught:
        handoff_from_tool_call(call)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_only_a_summarize_call_is_a_handoff() -> None:
    """Another tool's call is refused."""
    call = ToolCallPart(call_id="x", name="read_file", arguments={"summary": "s"})
    with pytest.raises(HandoffArgumentsError, match="'read_file' is not a summarize call"):
        handoff_from_tool_call(call)


# -- restoring --------------------------------------------------------------------------


def test_restore_replays_the_input_then_summary_reminder_and_projection(
    state: WorkingState,
) -> None:
    """The restored history: the same input turns, the summary with next steps, the reminder
    to re-read the skills and the working state's user-input projection."""
    image = ImagePart(data=PNG_1X1, media_type="image/png", label="screenshot")
    first = Turn(
        role="user",
        parts=(TextPart(text="Why do uploads fail?"), image),
        kind=TurnKind.INITIAL_INPUT,
    )
    steer = Turn.text("user", "Only look at src/.", kind=TurnKind.STEERING)
    note = HandoffNote(
        summary="The timeout is 30 s.",
        skills=(SkillInUse(path="skills/review/SKILL.md"),),
        next_steps=("raise it",),
    )
    restored = restore_handoff(note, initial_input=[first, steer], projection=state, at=at(9))
    assert restored[0] is first
    assert restored[1] is steer
    assert restored[0].parts[1] is image
    assert [t.kind for t in restored] == [
        TurnKind.INITIAL_INPUT,
        TurnKind.STEERING,
        TurnKind.SUMMARY,
        TurnKind.NOTICE,
        TurnKind.PROJECTION,
    ]
    summary = restored[2].parts[0]
    assert isinstance(summary, TextPart)
    assert summary.text == f"{SUMMARY_HEADING}\n\nThe timeout is 30 s.\n\nNext steps:\n- raise it"
    assert restored[3] == skills_reminder(note.skills, at=at(9))
    assert restored[4].parts == (TextPart(text=state.project("user_input") or ""),)
    assert "uploads over 30 s fail" in (state.project("user_input") or "")
    assert all(t.at == at(9) for t in restored.turns[2:])


def test_restore_without_skills_or_state_holds_input_and_summary() -> None:
    """No skills, no projection: just the input and the summary."""
    restored = restore_handoff(HandoffNote(summary="s"))
    assert [t.kind for t in restored] == [TurnKind.SUMMARY]


def test_restore_refuses_what_compaction_would_not_replay() -> None:
    """Only initial input and delivered steering can be given as the input to replay."""
    for turn in (
        Turn.text("assistant", "an answer"),
        Turn.text("user", "queued", kind=TurnKind.STEERING, delivered=False),
        Turn.text("user", "a notice", kind=TurnKind.NOTICE),
    ):
        with pytest.raises(ValueError, match="give turns of kind initial_input"):
            restore_handoff(HandoffNote(summary="s"), initial_input=[turn])
    with pytest.raises(pydantic.ValidationError, match="must not be empty"):
        HandoffNote(summary=" ")
