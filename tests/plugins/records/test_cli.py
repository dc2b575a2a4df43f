"""`taskctx records put | get | query | events`, registered by the plugin, JSON out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from taskctx.cli import main

ENV = {"TASKCTX_LOAD_PLUGINS": "taskctx-records,taskctx-postgres"}


def invoke(*args: str) -> dict[str, Any]:
    """Run a records command and parse its JSON output."""
    result = CliRunner().invoke(main, ["records", *args], env=ENV)
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.output)
    return parsed


def test_put_get_query_round_trip(store_root: Path | str) -> None:
    """A record put from the CLI is read back by id and found by a scoped query."""
    root = str(store_root)
    ref = invoke(
        "put",
        "--records",
        root,
        "--collection",
        "notes",
        "--scope",
        '{"task_id": "t1"}',
        "--content-json",
        '{"status": "failed"}',
    )
    record = invoke("get", "--records", root, "--json", str(ref["id"]))
    assert record["content"] == {"status": "failed"}
    page = invoke("query", "--records", root, "--scope", '{"task_id": "t1"}', "--json")
    assert [r["id"] for r in page["records"]] == [ref["id"]]


def test_events_page(store_root: Path | str) -> None:
    """Events appended through the store are listed by task id."""
    from taskctx_records import RecordStore

    store = RecordStore(store_root)
    store.append_event("review", "started", {"by": "planner"}, task_id="t1")
    page = invoke("events", "--root", str(store_root), "--task-id", "t1")
    assert len(page["events"]) == 1


def test_bad_json_is_a_clear_error(tmp_path: Path) -> None:
    """Malformed JSON options exit non-zero naming the option."""
    result = CliRunner().invoke(
        main,
        ["records", "put", "--root", str(tmp_path), "--collection", "c", "--scope", "{", "x"],
        env=ENV,
    )
    assert result.exit_code != 0
    assert "--scope" in result.output


def test_the_older_spellings_still_work_and_say_so(tmp_path: Path) -> None:
    """--root names the store as --records does; put --json stores JSON as before, with a
    warning that --content-json is its name now (--json means output everywhere)."""
    result = CliRunner().invoke(
        main,
        ["records", "put", "--root", str(tmp_path), "--collection", "c", "--json", '{"a": 1}'],
        env=ENV,
    )
    assert result.exit_code == 0, result.output
    assert "put --json is deprecated: CONTENT as JSON is --content-json" in result.stderr
    ref = json.loads(result.stdout)
    assert invoke("get", "--root", str(tmp_path), str(ref["id"]))["content"] == {"a": 1}
    text = invoke("put", "--records", str(tmp_path), "--collection", "c", '{"a": 1}')
    assert invoke("get", "--records", str(tmp_path), str(text["id"]))["content"] == '{"a": 1}'
