"""WorkingState in embedded mode: notes, tasks, limits, durability, changes, concurrency."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from taskctx_memory import (
    InvalidKeyError,
    NoteIndex,
    Task,
    TaskExistsError,
    TaskStatus,
    WorkingState,
    WorkingStateConfiguration,
    WorkingStateLimitError,
)
from taskctx_records import RecordStore

from taskctx.errors import NotFoundError, PolicyError, TaskCtxError

# -- notes ------------------------------------------------------------------------------


def test_note_write_reports_created_then_updated(state: WorkingState) -> None:
    """The first write of a key creates it; the next one updates it."""
    assert state.note_write("plan", "read the logs") == "created"
    assert state.note_write("plan", "read the logs, then the code") == "updated"
    assert state.note_get("plan") == "read the logs, then the code"


def test_note_delete_is_idempotent(state: WorkingState) -> None:
    """Deleting a note says deleted once, then already_absent; the note is gone."""
    state.note_write("a", "1")
    assert state.note_delete("a") == "deleted"
    assert state.note_delete("a") == "already_absent"
    assert state.note_delete("never-written") == "already_absent"
    with pytest.raises(NotFoundError, match="'a'"):
        state.note_get("a")


def test_note_can_be_written_again_after_delete(state: WorkingState) -> None:
    """A deleted key written again is created again with the new value."""
    state.note_write("a", "old")
    state.note_delete("a")
    assert state.note_write("a", "new") == "created"
    assert state.note_get("a") == "new"


def test_note_get_without_key_is_a_sorted_index(state: WorkingState) -> None:
    """note_get() returns the sorted keys and their count, not values."""
    for key in ("zeta", "alpha", "Mid", "beta"):
        state.note_write(key, f"value of {key}")
    index = state.note_get()
    assert index == NoteIndex(keys=("Mid", "alpha", "beta", "zeta"), count=4)
    with pytest.raises(ValueError, match="frozen"):
        index.count = 0  # type: ignore[misc]


def test_empty_index(state: WorkingState) -> None:
    """A state without notes has an empty index."""
    assert state.note_get() == NoteIndex(keys=(), count=0)


def test_note_values_are_whole(state: WorkingState) -> None:
    """A long, multi-line, non-ASCII value reads back byte for byte."""
    value = "línea 1\n\tlínea 2 — ünïcödé 漢字\n" * 500
    state.note_write("long", value)
    assert state.note_get("long") == value


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "empty"),
        ("   ", "whitespace"),
        ("k" * 129, "129 characters"),
        ("a\nb", "U+000A"),
        ("a\x00b", "U+0000"),
        ("tab\there", "U+0009"),
        ("line\u2028sep", "U+2028"),
    ],
)
def test_invalid_keys_are_refused_naming_the_key(
    state: WorkingState, key: str, problem: str
) -> None:
    """Empty, whitespace-only, over-long and control-character keys are refused by name."""
    with pytest.raises(InvalidKeyError, match=re.escape(problem)) as error:
        state.note_write(key, "v")
    assert repr(key)[:40] in str(error.value)
    assert isinstance(error.value, ValueError)
    assert isinstance(error.value, TaskCtxError)
    assert state.note_get().count == 0


def test_longest_key_and_odd_characters_are_accepted(state: WorkingState) -> None:
    """128 characters, slashes, quotes and markup characters are a valid key."""
    for key in ("k" * 128, "a/b/c", 'say "hi" & <go>', " padded "):
        assert state.note_write(key, "v") == "created"
        assert state.note_get(key) == "v"


def test_values_must_be_text(state: WorkingState) -> None:
    """A note value is a str; anything else is a TypeError and nothing is written."""
    with pytest.raises(TypeError, match="note value is a str"):
        state.note_write("a", 42)  # type: ignore[arg-type]
    assert state.note_get().count == 0


# -- tasks ------------------------------------------------------------------------------


def test_tasks_keep_creation_order_and_filter_by_status(state: WorkingState) -> None:
    """Tasks list in creation order; a status filters them."""
    first = state.task_add("read the failing test")
    second = state.task_add("fix the parser", status="in_progress", notes="see parser.py")
    third = state.task_add("write the changelog", task_id="changelog", status=TaskStatus.BLOCKED)
    assert first == Task(id="t1", title="read the failing test", status="pending", notes="")
    assert (second.id, second.status, second.notes) == (
        "t2",
        TaskStatus.IN_PROGRESS,
        "see parser.py",
    )
    assert [t.id for t in state.tasks()] == ["t1", "t2", "changelog"]
    assert state.tasks(status="in_progress") == (second,)
    assert state.tasks(TaskStatus.BLOCKED) == (third,)
    assert state.tasks("done") == ()


def test_task_update_changes_only_what_is_given(state: WorkingState) -> None:
    """task_update keeps the fields it is not given, and keeps the task's place."""
    state.task_add("a")
    state.task_add("b", notes="keep me")
    updated = state.task_update("t2", status="done")
    assert updated == Task(id="t2", title="b", status="done", notes="keep me")
    state.task_update("t1", title="a, renamed", notes="new notes")
    assert state.task_get("t1") == Task(id="t1", title="a, renamed", notes="new notes")
    assert [t.id for t in state.tasks()] == ["t1", "t2"]


def test_task_update_refusals(state: WorkingState) -> None:
    """Unknown tasks, unknown statuses and empty titles are refused."""
    state.task_add("a")
    with pytest.raises(NotFoundError, match="'t9'"):
        state.task_update("t9", status="done")
    with pytest.raises(ValueError, match="'finished' is not a valid TaskStatus"):
        state.task_update("t1", status="finished")
    with pytest.raises(ValueError, match="empty"):
        state.task_update("t1", title="  ")
    with pytest.raises(ValueError, match="U\\+000A"):
        state.task_add("two\nlines")
    assert state.task_get("t1").title == "a"


def test_task_remove_is_idempotent(state: WorkingState) -> None:
    """Removing a task says deleted once, then already_absent."""
    state.task_add("a")
    assert state.task_remove("t1") == "deleted"
    assert state.task_remove("t1") == "already_absent"
    with pytest.raises(NotFoundError):
        state.task_get("t1")
    assert state.tasks() == ()


def test_duplicate_task_id_is_refused(state: WorkingState) -> None:
    """task_add with an existing id raises TaskExistsError and changes nothing."""
    state.task_add("a", task_id="review")
    with pytest.raises(TaskExistsError, match="'review' already exists"):
        state.task_add("b", task_id="review")
    assert [t.title for t in state.tasks()] == ["a"]


def test_generated_task_ids_are_never_reused(state: WorkingState, root: Path) -> None:
    """After t2 is removed the next task is t3, also after a restart."""
    state.task_add("a")
    state.task_add("b")
    state.task_remove("t2")
    assert state.task_add("c").id == "t3"
    state.task_remove("t3")
    again = WorkingState(RecordStore(root), "s1")
    assert again.task_add("d").id == "t4"
    assert [t.id for t in again.tasks()] == ["t1", "t4"]


def test_generated_ids_skip_ids_given_by_hand(state: WorkingState) -> None:
    """A generated id never collides with one given explicitly."""
    state.task_add("mine", task_id="t1")
    assert state.task_add("generated").id == "t2"


# -- limits -----------------------------------------------------------------------------


def test_the_257th_note_is_stored_and_counted_in_the_projection(
    state: WorkingState, store: RecordStore
) -> None:
    """256 notes are what the projection shows: a 257th is stored and in <notes-omitted>."""
    for n in range(257):
        state.note_write(f"n{n:03d}", "v")
    assert state.note_get("n256") == "v"
    assert state.note_get().count == 257
    projection = state.projection("user_input")
    assert projection is not None
    assert len(projection.notes_whole) + len(projection.notes_referenced) == 256
    assert projection.notes_omitted == ("n256",)
    assert '<notes-omitted count="1"/>' in projection.text.splitlines()
    assert 'key="n256"' not in projection.text


def test_the_129th_task_is_stored_and_counted_in_the_projection(state: WorkingState) -> None:
    """128 active tasks are what the projection shows: a 129th is stored and counted."""
    for n in range(129):
        state.task_add(f"task {n}")
    assert len(state.tasks()) == 129
    assert state.task_get("t129").title == "task 128"
    projection = state.projection("tool_result")
    assert projection is not None
    assert len(projection.tasks_shown) == 128
    assert projection.tasks_omitted == ("t129",)
    assert '<tasks-omitted count="1"/>' in projection.text.splitlines()


def test_a_note_larger_than_the_projection_is_stored_and_shown_by_ref(
    state: WorkingState,
) -> None:
    """A note over the 64 KiB projection is stored whole and projected as key and size only."""
    big = "BEGIN " + "x" * 70_000 + " END"
    assert state.note_write("big", big) == "created"
    assert state.note_get("big") == big
    projection = state.projection("user_input")
    assert projection is not None
    assert projection.notes_referenced == ("big",)
    assert f'<note-ref key="big" chars="{len(big)}"/>' in projection.text.splitlines()
    assert "BEGIN" not in projection.text
    assert len(projection.text) <= 65_536


def test_projection_defaults_are_256_notes_128_tasks_64_kib() -> None:
    """The projection shows 256 notes, 128 tasks, 65,536 characters by default; storage
    limits are separate and generous."""
    config = WorkingStateConfiguration()
    assert (config.projection_max_notes, config.projection_max_tasks) == (256, 128)
    assert config.projection_max_chars == 65_536
    assert (config.max_notes, config.max_tasks) == (10_000, 10_000)
    assert config.max_bytes == 16 * 1024 * 1024


def test_projection_settings_shape_what_is_shown(store: RecordStore) -> None:
    """projection_max_notes / _tasks / _chars set how many notes, tasks and characters show."""
    config = WorkingStateConfiguration(
        projection_max_notes=2, projection_max_tasks=1, projection_max_chars=300
    )
    state = WorkingState(store, "s1", configuration=config)
    for key in ("a", "b", "c"):
        state.note_write(key, "value")
    state.task_add("first")
    state.task_add("second")
    projection = state.projection("user_input")
    assert projection is not None
    assert projection.notes_whole == ("a", "b")
    assert projection.notes_omitted == ("c",)
    assert (projection.tasks_shown, projection.tasks_omitted) == (("t1",), ("t2",))
    assert len(projection.text) <= 300


@pytest.mark.parametrize(
    "field",
    [
        "max_notes",
        "max_tasks",
        "max_bytes",
        "projection_max_notes",
        "projection_max_tasks",
        "projection_max_chars",
        "max_changes",
    ],
)
@pytest.mark.parametrize("bad", [-1, "many", 2.5, None, [1]], ids=repr)
def test_bad_configuration_values_raise_naming_the_field(field: str, bad: object) -> None:
    """A negative, non-numeric, fractional, None or list setting raises naming its field."""
    with pytest.raises(ValidationError, match=field):
        WorkingStateConfiguration(**{field: bad})


def test_projection_chars_below_the_minimum_is_refused() -> None:
    """projection_max_chars under 256 cannot hold the frame and is refused by name."""
    with pytest.raises(ValidationError, match="projection_max_chars"):
        WorkingStateConfiguration(projection_max_chars=255)


def test_storage_note_count_limit_refuses_past_max_notes(store: RecordStore) -> None:
    """A storage limit, when set, refuses the write past it by name; nothing is written."""
    state = WorkingState(store, "s1", configuration=WorkingStateConfiguration(max_notes=4))
    for n in range(4):
        state.note_write(f"n{n}", "v")
    revision, logged = store.revision, len(state.changes())
    with pytest.raises(WorkingStateLimitError, match="max_notes=4") as error:
        state.note_write("one-too-many", "v")
    assert (error.value.limit, error.value.allowed, error.value.attempted) == ("max_notes", 4, 5)
    assert "nothing was written" in str(error.value)
    assert state.note_get().count == 4
    assert (store.revision, len(state.changes())) == (revision, logged)
    assert state.note_write("n0", "updating an existing note still works") == "updated"


def test_storage_task_count_limit_refuses_past_max_tasks(store: RecordStore) -> None:
    """max_tasks refuses the task past it; nothing is written."""
    state = WorkingState(store, "s1", configuration=WorkingStateConfiguration(max_tasks=3))
    for n in range(3):
        state.task_add(f"task {n}")
    revision = store.revision
    with pytest.raises(WorkingStateLimitError, match="max_tasks=3") as error:
        state.task_add("one too many")
    assert error.value.limit == "max_tasks"
    assert len(state.tasks()) == 3
    assert store.revision == revision


def test_notes_and_tasks_share_max_bytes(store: RecordStore) -> None:
    """Keys, values, titles and task notes share max_bytes of UTF-8; one byte more is refused."""
    config = WorkingStateConfiguration(max_bytes=65_536)
    state = WorkingState(store, "s1", configuration=config)
    state.task_add("title", notes="é" * 100)  # 5 + 200 bytes
    state.note_write("k", "x" * (65_536 - 205 - 1))  # exactly full
    assert state.usage().bytes == 65_536
    revision = store.revision
    with pytest.raises(WorkingStateLimitError, match="max_bytes=65,536") as error:
        state.note_write("z", "")
    assert error.value.attempted == 65_537
    with pytest.raises(WorkingStateLimitError, match="max_bytes"):
        state.task_update("t1", notes="é" * 101)
    with pytest.raises(WorkingStateLimitError, match="max_bytes"):
        state.task_add("more")
    assert store.revision == revision
    assert state.task_update("t1", notes="").notes == ""  # shrinking is always allowed
    assert state.note_write("z", "fits now") == "created"


def test_a_single_value_over_the_byte_limit_is_refused(state: WorkingState) -> None:
    """One note larger than the (default, 16 MiB) storage limit is refused whole, never cut."""
    with pytest.raises(WorkingStateLimitError, match="max_bytes=16,777,216"):
        state.note_write("huge", "x" * (16 * 1024 * 1024))
    with pytest.raises(NotFoundError):
        state.note_get("huge")


def test_a_state_over_a_lowered_limit_can_shrink(store: RecordStore) -> None:
    """Reopened with lower limits, existing notes update and delete; new ones are refused."""
    first = WorkingState(store, "s1")
    for n in range(6):
        first.note_write(f"n{n}", "v")
    small = WorkingState(store, "s1", configuration=WorkingStateConfiguration(max_notes=3))
    assert small.note_write("n0", "changed") == "updated"
    with pytest.raises(WorkingStateLimitError, match="max_notes=3"):
        small.note_write("new", "v")
    assert small.note_delete("n5") == "deleted"


# -- durability -------------------------------------------------------------------------


def test_a_new_state_over_the_same_root_resumes_exactly(root: Path) -> None:
    """A new RecordStore object and WorkingState resume the same notes and tasks."""
    with RecordStore(root) as store:
        state = WorkingState(store, "s1")
        state.note_write("plan", "step 1")
        state.note_write("gone", "soon deleted")
        state.note_delete("gone")
        state.task_add("a", status="in_progress")
        state.task_add("b", notes="n")
        state.task_update("t1", status="done")
        before = (state.notes(), state.tasks(), state.project("user_input"))
    with WorkingState(root, "s1") as resumed:
        assert (resumed.notes(), resumed.tasks(), resumed.project("user_input")) == before
        assert resumed.changes() == ()  # the change log is per object; events are durable


def test_sessions_and_global_memory_are_separate(store: RecordStore) -> None:
    """Each session and global memory see only their own notes and tasks."""
    one, two = WorkingState(store, "s1"), WorkingState(store, "s2")
    shared = WorkingState.global_memory(store)
    one.note_write("k", "of s1")
    two.note_write("k", "of s2")
    shared.note_write("k", "global")
    one.task_add("only s1")
    assert (one.note_get("k"), two.note_get("k"), shared.note_get("k")) == (
        "of s1",
        "of s2",
        "global",
    )
    assert two.tasks() == ()
    assert shared.tasks() == ()
    assert shared.session_id is None
    assert "global memory" in repr(shared)


def test_session_id_is_required_and_checked(store: RecordStore) -> None:
    """No session id is a TypeError pointing at global_memory; a bad one is refused."""
    with pytest.raises(TypeError, match="global_memory"):
        WorkingState(store)
    with pytest.raises(InvalidKeyError, match="session id"):
        WorkingState(store, " ")
    with pytest.raises(TypeError, match="record store"):
        WorkingState(session_id="s1")


def test_read_only_store_refuses_writes(root: Path) -> None:
    """A WorkingState over a read_only store reads but refuses writes with PolicyError."""
    WorkingState(root, "s1").note_write("a", "1")
    reader = WorkingState(RecordStore(root, mode="read_only"), "s1")
    assert reader.note_get("a") == "1"
    with pytest.raises(PolicyError, match="read_only"):
        reader.note_write("b", "2")


WRITER = textwrap.dedent(
    """
    import sys
    from taskctx_memory import WorkingState
    root, session, prefix, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    state = WorkingState(root, session)
    for n in range(count):
        state.note_write(f"{prefix}-{n:03d}", f"value {prefix} {n}")
    state.task_add(f"task of {prefix}", task_id=f"task-{prefix}")
    """
)

READER = textwrap.dedent(
    """
    import json, sys
    from taskctx_memory import WorkingState
    state = WorkingState(sys.argv[1], sys.argv[2])
    print(json.dumps({"notes": state.notes(), "tasks": [t.id for t in state.tasks()]}))
    """
)


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", *args], capture_output=True, text=True, timeout=120, check=True
    )


def test_a_process_writes_and_a_new_process_reads(root: Path) -> None:
    """What one process wrote, a later process reads whole."""
    _python(WRITER, str(root), "s1", "w", "5")
    seen = json.loads(_python(READER, str(root), "s1").stdout)
    assert seen["notes"] == {f"w-{n:03d}": f"value w {n}" for n in range(5)}
    assert seen["tasks"] == ["task-w"]


def test_two_processes_writing_different_keys_lose_nothing(root: Path) -> None:
    """Two processes write 60 notes each at once: all 120 notes, 2 tasks and 122 events."""
    RecordStore(root).close()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(root), "s1", prefix, "60"])
        for prefix in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    state = WorkingState(root, "s1")
    notes = state.notes()
    assert len(notes) == 120
    assert notes["a-059"] == "value a 59"
    assert notes["b-000"] == "value b 0"
    assert {t.id for t in state.tasks()} == {"task-a", "task-b"}
    assert state.store is not None
    assert state.store.events(stream="working_state:s1").coverage.considered == 122


LIMITED = textwrap.dedent(
    """
    import os, sys, time
    from taskctx_memory import WorkingState, WorkingStateConfiguration, WorkingStateLimitError
    state = WorkingState(sys.argv[1], "s1", configuration=WorkingStateConfiguration(max_notes=50))
    while not os.path.exists(sys.argv[3]):  # start together
        time.sleep(0.001)
    refused = 0
    for n in range(40):
        try:
            state.note_write(f"{sys.argv[2]}-{n}", "v")
        except WorkingStateLimitError:
            refused += 1
    print(refused)
    """
)


def test_limits_hold_across_concurrent_processes(root: Path) -> None:
    """Two processes racing to write 40 new notes each under max_notes=50 make exactly 50."""
    RecordStore(root).close()
    go = root / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LIMITED, str(root), prefix, str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for prefix in ("a", "b")
    ]
    time.sleep(0.5)
    go.touch()
    refused = [int(p.communicate(timeout=120)[0]) for p in procs]
    assert sum(refused) == 30
    assert WorkingState(root, "s1").note_get().count == 50


CRASHER = textwrap.dedent(
    """
    import sys
    from taskctx_memory import WorkingState
    state = WorkingState(sys.argv[1], "s1")
    n, last = 0, None
    while True:
        n += 1
        state.note_write(f"k{n % 7}", f"{n}:" + "x" * 5000)
        if n % 3 == 0:
            task = state.task_add(f"task {n}")
            if last is not None:
                state.task_remove(last)
            last = task.id
        if n % 5 == 0:
            state.note_delete(f"k{(n + 3) % 7}")
        if n == 25:
            print("running", flush=True)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_writer_leaves_old_or_new_values_never_partial(root: Path) -> None:
    """A writer killed at an arbitrary moment leaves only whole notes and a working counter."""
    RecordStore(root).close()
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHER, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "running"
    time.sleep(0.2)
    assert proc.poll() is None, "the writer stopped before it was killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    state = WorkingState(root, "s1")
    notes = state.notes()
    assert notes
    for value in notes.values():
        head, _, tail = value.partition(":")
        assert head.isdigit()
        assert tail == "x" * 5000
    tasks = state.tasks()
    ids = [t.id for t in tasks]
    assert len(set(ids)) == len(ids)
    assert state.task_add("after the crash").id not in ids


# -- changes ----------------------------------------------------------------------------


def test_changes_name_what_changed_never_the_value(state: WorkingState) -> None:
    """Each committed change is logged with target, key, action and chars, and no value."""
    state.note_write("plan", "secret plan text")
    state.note_write("plan", "other")
    state.note_delete("plan")
    state.note_delete("plan")  # already absent: nothing changed, nothing logged
    state.task_add("t", notes="nn")
    state.task_update("t1", status="done")
    state.task_remove("t1")
    rows = [c.model_dump() for c in state.changes()]
    assert rows == [
        {"sequence": 1, "target": "note", "key": "plan", "action": "created", "chars": 16},
        {"sequence": 2, "target": "note", "key": "plan", "action": "updated", "chars": 5},
        {"sequence": 3, "target": "note", "key": "plan", "action": "deleted", "chars": 0},
        {"sequence": 4, "target": "task", "key": "t1", "action": "created", "chars": 3},
        {"sequence": 5, "target": "task", "key": "t1", "action": "updated", "chars": 3},
        {"sequence": 6, "target": "task", "key": "t1", "action": "deleted", "chars": 0},
    ]
    assert [c.sequence for c in state.changes(since=4)] == [5, 6]


def test_change_log_is_bounded(store: RecordStore) -> None:
    """With max_changes=5, eight writes keep the last five, numbered 4..8."""
    state = WorkingState(store, "s1", configuration=WorkingStateConfiguration(max_changes=5))
    for n in range(8):
        state.note_write(f"k{n}", "v")
    assert [c.sequence for c in state.changes()] == [4, 5, 6, 7, 8]
    assert state.changes(since=8) == ()


def test_refused_writes_log_nothing(store: RecordStore) -> None:
    """A write refused by a limit or a bad key leaves the change log and events alone."""
    state = WorkingState(store, "s1", configuration=WorkingStateConfiguration(max_notes=1))
    state.note_write("a", "1")
    with pytest.raises(WorkingStateLimitError):
        state.note_write("b", "2")
    with pytest.raises(InvalidKeyError):
        state.note_write("", "2")
    assert len(state.changes()) == 1
    assert store.events(stream="working_state:s1").coverage.considered == 1


def test_changes_are_events_of_the_session_stream(state: WorkingState, store: RecordStore) -> None:
    """Every change is an event of working_state:<session> with the bounded payload."""
    state.note_write("plan", "the value never appears in events")
    state.task_add("x")
    shared = WorkingState.global_memory(store)
    shared.note_write("g", "v")
    events = store.events(stream="working_state:s1").events
    assert [e.type for e in events] == ["note_created", "task_created"]
    assert events[0].payload == {"target": "note", "key": "plan", "action": "created", "chars": 33}
    assert "never appears" not in json.dumps([e.payload for e in events])
    assert [e.type for e in store.events(stream="working_state@global").events] == ["note_created"]


# -- projection through the state -------------------------------------------------------


def test_project_reads_the_current_state(state: WorkingState) -> None:
    """project() shows notes and active tasks at user input; tasks only after a tool."""
    state.note_write("plan", "p")
    state.task_add("open")
    state.task_add("finished", status="done")
    user = state.project("user_input")
    tool = state.project("tool_result")
    assert user is not None
    assert tool is not None
    assert '<note key="plan">p</note>' in user
    assert "<notes>" not in tool
    assert '<task id="t1" status="pending">open</task>' in tool
    assert "finished" not in user
    assert state.project("assistant_output") is None


def test_projecting_writes_nothing(state: WorkingState, store: RecordStore) -> None:
    """Projection is a read: no store revision, no change, no event."""
    state.note_write("a", "1")
    revision, changes = store.revision, state.changes()
    for boundary in ("user_input", "tool_result", "other"):
        state.project(boundary)
    assert (store.revision, state.changes()) == (revision, changes)


def test_projection_depends_only_on_the_state(state: WorkingState) -> None:
    """An earlier projection is reproduced exactly once the state is back to what it was."""
    state.note_write("a", "1")
    state.task_add("t")
    earlier = state.project("user_input")
    copy = str(earlier)
    state.note_write("b", "2")
    state.task_update("t1", status="in_progress")
    later = state.project("user_input")
    assert later != earlier
    assert earlier == copy
    state.note_delete("b")
    state.task_update("t1", status="pending")
    assert state.project("user_input") == earlier
