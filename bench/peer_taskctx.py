"""taskctx's side of the peer bench, in a process of its own (peak RSS is this side's alone).

``python -m bench.peer_taskctx SPEC.json OUT.json`` runs the steps of a spec (the shape is
``bench.peer.step_spec``; Agently's side, ``bench/peer_agently_driver.py``, reads the same
one) and writes the times, package facts and peak RSS to ``OUT.json``.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from taskctx_records import RecordStore

from bench.common import package_facts, peak_rss_bytes
from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext

__all__ = ["HOST_ALLOW", "main", "run_spec"]

BINDING = "peer"
HOST_ALLOW: dict[str, dict[str, tuple[str, ...]]] = {
    "lexical": {
        "workspace": ("taskctx-workspace", "taskctx-fts"),
        "records": ("taskctx-records", "taskctx-fts"),
    },
    "structural": {"workspace": ("taskctx-workspace",), "records": ("taskctx-records",)},
}
"""The PluginHost allowlist per index kind and corpus: FTS ranks, or the kernel's order."""


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Every step of ``spec`` with taskctx's public API: times and package facts."""
    host = PluginHost(allow=list(HOST_ALLOW[spec["index"]][spec["kind"]]))
    budget = ContextBudget(max_chars=spec["max_chars"], max_blocks=spec["max_blocks"])
    query = spec["query"]
    state_dir = spec["state_dir"]
    times: dict[str, float] = {}
    packages: dict[str, dict[str, Any]] = {}
    holder: dict[str, TaskContext] = {}

    def new_context(source: Any) -> None:
        context = TaskContext("bench-peer", host=host, state_dir=state_dir)
        context.attach(source, binding_id=BINDING)
        holder["context"] = context

    def fresh_read() -> ContextPackage:
        return holder["context"].reader("bench-agent", budget=budget).read(query)

    def step(name: str, read: Callable[[], ContextPackage]) -> None:
        times[name], package = _timed(read)
        packages[name] = package_facts(package, BINDING)

    if spec["kind"] == "workspace":

        def first() -> ContextPackage:
            new_context(host.source("task_workspace", root=spec["root"], mode="read_only"))
            return fresh_read()

        step("first", first)
        step("warm", fresh_read)
        change = spec["change"]
        (Path(spec["root"]) / change["path"]).write_text(change["text"], encoding="utf-8")
        step("change", fresh_read)
    else:
        store = RecordStore(Path(spec["root"]))
        scope = spec["scope"]
        items = json.loads(Path(spec["items_file"]).read_text(encoding="utf-8"))

        def put_all() -> None:
            for item in items:
                store.put(
                    item["content"], collection=item["collection"], kind=item["kind"], scope=scope
                )

        def first_records() -> ContextPackage:
            new_context(store.source(scope=scope))
            return fresh_read()

        times["puts"], _ = _timed(put_all)
        step("first", first_records)
        step("warm", fresh_read)
        extra = spec["one_put"]
        store.put(extra["content"], collection=extra["collection"], kind=extra["kind"], scope=scope)
        step("change", fresh_read)
    provider = holder["context"].index_provider.name
    holder["context"].index.close()
    return {"times": times, "packages": packages, "index_provider": provider}


def main(argv: list[str] | None = None) -> int:
    """Run the spec in ``argv[0]``; write the result JSON to ``argv[1]``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m bench.peer_taskctx SPEC.json OUT.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    result = run_spec(spec)
    result.update({"side": "taskctx", "peak_rss_bytes": peak_rss_bytes()})
    Path(args[1]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
