"""Agently's side of the peer bench: run by the peer virtualenv's interpreter, never imported.

``<venv>/bin/python bench/peer_agently_driver.py SPEC.json OUT.json`` runs the steps a spec
names (the spec shape is ``bench.peer.step_spec``) with Agently's public API and writes the
times, package facts and this process's peak RSS to ``OUT.json``. Standard library and
``agently`` only, and ``bench.common`` (standard library only at run time): taskctx is not
installed in that interpreter.

What each step uses (Agently 4.1.4.10):

- workspace: ``agently.core.TaskWorkspace.TaskWorkspace(root, mode="read_only")`` and its
  ``TaskWorkspaceContextSource``, attached to ``agently.core.context.TaskContext``; a read is
  ``await context.reader(consumer=..., budget=ContextBudget(...)).read(query)``.
- records: ``agently.core.storage.RecordStore(root, mode="read_write", default_scope=scope)``,
  one ``await store.put(content, collection=, kind=, scope=)`` per record, and its
  ``RecordStoreContextSource`` attached the same way.
- index: ``context.configure_index(strategy=...)`` with the spec's ``index``.
- selection: Agently's reader delivers no optional block without a semantic selector
  (``context.semantic_selector_unavailable``; its selector is a model call). The driver passes
  ``InOrderSelector``: no model, it keeps the first ``max_blocks`` candidates in the order the
  index offered them, so the reader reads exactly and packs blocks as taskctx's does.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# run as a script: the repository root is not on the path, bench.common is wanted
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import peak_rss_bytes

BINDING = "peer"


def _facts(package: Any) -> dict[str, Any]:
    """Blocks, characters and the binding's source revision of one package."""
    return {
        "blocks": len(package.blocks),
        "used_chars": sum(len(str(block.content)) for block in package.blocks),
        "revision": dict(package.source_revisions).get(BINDING),
    }


class InOrderSelector:
    """A semantic selector without a model: the first ``limit`` offered keys, index order."""

    def __init__(self, selection_type: Any, limit: int) -> None:
        self.selection_type = selection_type
        self.limit = limit

    async def async_select(self, *, candidates: Any, **_: Any) -> Any:
        """Keep the first ``limit`` candidates."""
        keys = tuple(candidate.block_key for candidate in candidates[: self.limit])
        return self.selection_type(selected_keys=keys)


async def _timed(read: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    gc.collect()
    started = time.perf_counter()
    result = await read()
    return time.perf_counter() - started, result


async def _run(spec: dict[str, Any]) -> dict[str, Any]:
    context_mod = importlib.import_module("agently.core.context")
    data_mod = importlib.import_module("agently.types.data")
    budget = data_mod.ContextBudget(max_chars=spec["max_chars"], max_blocks=spec["max_blocks"])
    query = spec["query"]
    times: dict[str, float] = {}
    packages: dict[str, dict[str, Any]] = {}
    holder: dict[str, Any] = {}
    selector = InOrderSelector(context_mod.ContextSelection, spec["max_blocks"])

    def new_context(source: Any) -> Any:
        context = context_mod.TaskContext(task_id="bench-peer")
        context.configure_index(strategy=spec["index"])
        context.attach(source, binding_id=BINDING)
        holder["context"] = context
        return context

    async def fresh_read() -> Any:
        return (
            await holder["context"]
            .reader(consumer="bench-agent", budget=budget, semantic_selector=selector)
            .read(query)
        )

    if spec["kind"] == "workspace":
        ws_mod = importlib.import_module("agently.core.TaskWorkspace")

        async def first() -> Any:
            workspace = ws_mod.TaskWorkspace(spec["root"], mode="read_only", create=False)
            new_context(ws_mod.TaskWorkspaceContextSource(workspace))
            return await fresh_read()

        change = spec["change"]
        steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("first", first),
            ("warm", fresh_read),
            ("change", fresh_read),
        ]
        for name, read in steps:
            if name == "change":
                (Path(spec["root"]) / change["path"]).write_text(change["text"], encoding="utf-8")
            times[name], package = await _timed(read)
            packages[name] = _facts(package)
    else:
        storage = importlib.import_module("agently.core.storage")
        scope = spec["scope"]
        store = storage.RecordStore(spec["root"], mode="read_write", default_scope=scope)
        items = json.loads(Path(spec["items_file"]).read_text(encoding="utf-8"))

        async def put_all() -> None:
            for item in items:
                await store.put(
                    item["content"], collection=item["collection"], kind=item["kind"], scope=scope
                )

        async def first_records() -> Any:
            new_context(storage.RecordStoreContextSource(store))
            return await fresh_read()

        times["puts"], _ = await _timed(put_all)
        times["first"], package = await _timed(first_records)
        packages["first"] = _facts(package)
        times["warm"], package = await _timed(fresh_read)
        packages["warm"] = _facts(package)
        extra = spec["one_put"]
        await store.put(
            extra["content"], collection=extra["collection"], kind=extra["kind"], scope=scope
        )
        times["change"], package = await _timed(fresh_read)
        packages["change"] = _facts(package)
    return {"times": times, "packages": packages}


def main(argv: list[str]) -> int:
    """Run the spec in ``argv[0]``; write the result JSON to ``argv[1]``."""
    if len(argv) != 2:
        print("usage: peer_agently_driver.py SPEC.json OUT.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    result = asyncio.run(_run(spec))
    version = importlib.import_module("importlib.metadata").version("agently")
    result.update({"side": "agently", "version": version, "peak_rss_bytes": peak_rss_bytes()})
    Path(argv[1]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
