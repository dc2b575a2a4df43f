"""Window thresholds (65 % / 90 %, overrides, validation) and compaction keeping the state."""

from __future__ import annotations

import pydantic
import pytest
from taskctx_memory.request import CapabilityLimitError
from taskctx_memory.state_context import ProjectionLimits
from taskctx_memory.window import Turn, TurnKind, WindowAction, WindowPolicy, compact_history

from tests.plugins.memory.helpers import TinyState

# -- thresholds -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "action"),
    [
        (0, WindowAction.OK),
        (649, WindowAction.OK),
        (650, WindowAction.HANDOFF_REMINDER),
        (899, WindowAction.HANDOFF_REMINDER),
        (900, WindowAction.COMPACT),
        (1000, WindowAction.COMPACT),
        (5000, WindowAction.COMPACT),
    ],
)
def test_default_thresholds_are_65_and_90_percent(used: int, action: WindowAction) -> None:
    """A handoff reminder from exactly 65 %, compaction from exactly 90 %."""
    policy = WindowPolicy(context_window_tokens=1000)
    assert (policy.handoff_at, policy.compaction_at) == (650, 900)
    assert policy.check(used) is action


def test_ratio_thresholds_round_up_exactly() -> None:
    """A fractional threshold rounds up, with no float drift at exact values."""
    policy = WindowPolicy(context_window_tokens=333)
    assert (policy.handoff_at, policy.compaction_at) == (217, 300)  # 216.45 and 299.7
    assert policy.check(216) is WindowAction.OK
    assert policy.check(217) is WindowAction.HANDOFF_REMINDER
    exact = WindowPolicy(context_window_tokens=200_000, handoff_ratio=0.7, compaction_ratio=0.3 * 3)
    assert (exact.handoff_at, exact.compaction_at) == (140_000, 180_000)
    assert str(exact.check(180_000)) == "compact"


def test_explicit_tokens_override_the_ratios() -> None:
    """handoff_tokens and compaction_tokens win over the ratios."""
    policy = WindowPolicy(
        context_window_tokens=1000,
        handoff_ratio=0.1,
        compaction_ratio=0.2,
        handoff_tokens=500,
        compaction_tokens=800,
    )
    assert (policy.handoff_at, policy.compaction_at) == (500, 800)
    assert policy.check(499) is WindowAction.OK
    assert policy.check(500) is WindowAction.HANDOFF_REMINDER
    assert policy.check(800) is WindowAction.COMPACT
    only_compaction = WindowPolicy(context_window_tokens=1000, compaction_tokens=700)
    assert (only_compaction.handoff_at, only_compaction.compaction_at) == (650, 700)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"handoff_ratio": 0}, "greater than 0"),
        ({"compaction_ratio": 1.5}, "less than or equal to 1"),
        ({"handoff_ratio": 0.95}, "above the compaction threshold"),
        ({"handoff_tokens": 950}, "above the compaction threshold"),
        ({"compaction_tokens": 1001}, "exceeds context_window_tokens=1000"),
        ({"handoff_tokens": 0}, "greater than or equal to 1"),
    ],
)
def test_policy_validation(settings: dict[str, float], message: str) -> None:
    """Ratios in (0, 1], tokens within the window, handoff not above compaction."""
    with pytest.raises(pydantic.ValidationError, match=message):
        WindowPolicy(context_window_tokens=1000, **settings)


def test_equal_thresholds_and_bad_counts() -> None:
    """Handoff may equal compaction (compaction wins); a negative count is refused."""
    policy = WindowPolicy(context_window_tokens=10, handoff_ratio=1, compaction_ratio=1)
    assert policy.check(10) is WindowAction.COMPACT
    assert policy.check(9) is WindowAction.OK
    with pytest.raises(ValueError, match="used_tokens"):
        policy.check(-1)
    with pytest.raises(pydantic.ValidationError):
        WindowPolicy(context_window_tokens=0)


# -- compaction -------------------------------------------------------------------------


def history() -> list[Turn]:
    """A system prompt, messages and an earlier projection turn."""
    return [
        Turn(role="system", content="You are a reviewer."),
        Turn(role="user", content="Review the upload module."),
        Turn(role="user", content="Working state:\nnote: old", kind=TurnKind.PROJECTION),
        Turn(role="assistant", content="Reading upload.py."),
        Turn(role="tool", content="def upload(): ..."),
        Turn(role="user", content="Working state:\nnote: kept", kind=TurnKind.PROJECTION),
        Turn(role="assistant", content="The timeout is 30 s."),
    ]


def test_compaction_re_projects_notes_and_tasks_after_the_summary() -> None:
    """Summary, then a fresh user-input projection (notes included), then the kept tail."""
    state = TinyState(notes=("upload fails at 30 s",), tasks=("raise the timeout",))
    before = history()
    after = compact_history(before, "We found the timeout.", state, keep_first=1, keep_last=2)
    assert [t.kind for t in after] == [
        TurnKind.MESSAGE,
        TurnKind.SUMMARY,
        TurnKind.PROJECTION,
        TurnKind.PROJECTION,
        TurnKind.MESSAGE,
    ]
    assert after[1] == Turn(role="user", content="We found the timeout.", kind=TurnKind.SUMMARY)
    assert after[2].content == (
        "Working state:\nnote: upload fails at 30 s\ntask: raise the timeout"
    )
    assert state.boundaries == ["user_input"]
    assert "note: old" not in "\n".join(t.content for t in after)


def test_compaction_keeps_earlier_turns_untouched() -> None:
    """Kept turns are the same frozen objects; the input history is not modified."""
    before = history()
    snapshot = list(before)
    after = compact_history(before, "summary", TinyState(tasks=("t",)), keep_first=1, keep_last=2)
    assert after is not before
    assert before == snapshot
    assert all(a is b for a, b in zip(before, snapshot, strict=True))
    assert after[0] is before[0]
    assert after[-2] is before[-2]  # the earlier projection turn, not rewritten
    assert after[-1] is before[-1]
    assert after[-2].content == "Working state:\nnote: kept"
    with pytest.raises(pydantic.ValidationError):
        after[-2].content = "rewritten"  # type: ignore[misc]


def test_compaction_without_working_state_adds_no_projection() -> None:
    """An empty working state projects nothing, so only the summary replaces the turns."""
    after = compact_history(history(), "summary", TinyState())
    assert [t.kind for t in after] == [TurnKind.SUMMARY]


def test_compaction_checks_its_arguments_and_bounds_the_projection() -> None:
    """Bad keep counts, an empty summary and an over-long projection are refused."""
    state = TinyState(tasks=("t" * 50,))
    with pytest.raises(ValueError, match="cannot keep"):
        compact_history(history(), "s", state, keep_first=4, keep_last=4)
    with pytest.raises(ValueError, match=">= 0"):
        compact_history(history(), "s", state, keep_last=-1)
    with pytest.raises(ValueError, match="summary is empty"):
        compact_history(history(), "  ", state)
    with pytest.raises(CapabilityLimitError, match="max_chars=20"):
        compact_history(history(), "s", state, limits=ProjectionLimits(max_chars=20))
