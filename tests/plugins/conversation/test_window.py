"""Window thresholds (65 % / 90 %, overrides, validation), moved from taskctx-memory."""

from __future__ import annotations

import pydantic
import pytest
import taskctx_memory
from taskctx_conversation.window import WindowAction, WindowPolicy


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
    """Handoff may equal compaction (compaction wins); a negative or non-int count is refused."""
    policy = WindowPolicy(context_window_tokens=10, handoff_ratio=1, compaction_ratio=1)
    assert policy.check(10) is WindowAction.COMPACT
    assert policy.check(9) is WindowAction.OK
    for bad in (-1, True, 3.0):
        with pytest.raises(ValueError, match="used_tokens"):
            policy.check(bad)  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        WindowPolicy(context_window_tokens=0)


def test_policy_is_frozen() -> None:
    """A policy is a frozen value."""
    policy = WindowPolicy(context_window_tokens=1000)
    with pytest.raises(pydantic.ValidationError):
        policy.handoff_ratio = 0.5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("WindowPolicy", "taskctx_conversation.window.WindowPolicy"),
        ("WindowAction", "taskctx_conversation.window.WindowAction"),
        ("Turn", "taskctx_conversation.history.Turn"),
        ("TurnKind", "taskctx_conversation.history.TurnKind"),
        ("compact_history", "taskctx_conversation.compaction.compact"),
    ],
)
def test_taskctx_memory_says_where_the_window_names_went(name: str, where: str) -> None:
    """taskctx_memory no longer exports the window names; asking says where they moved."""
    assert name not in taskctx_memory.__all__
    with pytest.raises(AttributeError, match=f"moved to taskctx_conversation: use {where}"):
        getattr(taskctx_memory, name)
    with pytest.raises(ModuleNotFoundError):
        __import__("taskctx_memory.window")
