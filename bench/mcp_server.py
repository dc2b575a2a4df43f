"""``read_context`` over MCP (stdio) beside the same read through the Python API.

Target (issue 16): on a warm 1,000-file workspace the protocol adds under 10 ms per call
(median of 50 calls over stdio minus the median of 50 reads through the Python API).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio

from bench.common import git_facts, machine_facts, now_iso, summarize, timing_line
from bench.workspace import make_files, write_tree

__all__ = ["DESCRIPTION", "FULL", "NAME", "QUICK", "McpParams", "run", "summary_lines"]

NAME = "mcp"
DESCRIPTION = "read_context over MCP stdio beside the same read through the Python API"
TARGET_OVERHEAD_S = 0.010
PLUGINS = ("taskctx-workspace", "taskctx-fts", "taskctx-mcp")
QUERY = "index revision cache"


@dataclass(frozen=True)
class McpParams:
    """Sizes and read settings of one run."""

    files: int = 1_000
    calls: int = 50
    min_bytes: int = 2048
    max_bytes: int = 4096
    max_chars: int = 6000
    max_blocks: int = 12
    seed: int = 16


FULL = McpParams()
QUICK = McpParams(files=100, calls=5)

NOTES = (
    "stdio: the SDK's Client over StdioServerParameters, a real `taskctx-mcp serve "
    "--workspace DIR` subprocess with TASKCTX_LOAD_PLUGINS=taskctx-workspace,taskctx-fts,"
    "taskctx-mcp; one untimed warm-up call builds the FTS index, then `calls` timed "
    "read_context calls, each a fresh reader on the warm index (what the server does).",
    "api: in this process, the same plugins, state directory and budget: "
    "ctx.reader(...).read(ContextReadIntent(query=...)) and package.render(), the same "
    "fresh reader per call; timed after one untimed warm-up.",
    "overhead = median(stdio) - median(api): JSON-RPC framing, pydantic validation and "
    "serialization of the structured output, the pipe, and the client's output-schema "
    "validation.",
)


def _api_reads(root: Path, state: Path, params: McpParams) -> tuple[list[float], list[str]]:
    from taskctx import ContextBudget, ContextReadIntent, PluginHost, TaskContext

    host = PluginHost(allow=PLUGINS)
    ctx = TaskContext("mcp", host=host, state_dir=state)
    ctx.attach(ctx.source("task_workspace", root=str(root), mode="read_only"), binding_id="files")
    budget = ContextBudget(max_chars=params.max_chars, max_blocks=params.max_blocks)
    samples: list[float] = []
    digests: list[str] = []
    for number in range(params.calls + 1):
        start = time.perf_counter()
        package = ctx.reader("mcp", budget=budget).read(ContextReadIntent(query=QUERY))
        package.render()
        elapsed = time.perf_counter() - start
        if number:  # the first call is the warm-up
            samples.append(elapsed)
        digests = [block.digest for block in package.blocks]
    return samples, digests


def _stdio_reads(root: Path, state: Path, params: McpParams) -> tuple[list[float], list[str]]:
    from mcp import Client, StdioServerParameters

    env = dict(os.environ)
    env.update(TASKCTX_LOAD_PLUGINS=",".join(PLUGINS), TASKCTX_STATE_DIR=str(state))
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "taskctx-mcp"),
        args=["serve", "--workspace", str(root)],
        env=env,
    )
    arguments = {"query": QUERY, "max_chars": params.max_chars, "max_blocks": params.max_blocks}

    async def main() -> tuple[list[float], list[str]]:
        samples: list[float] = []
        digests: list[str] = []
        async with Client(server, mode="legacy") as client:
            await client.list_tools()  # the client learns the output schemas
            for number in range(params.calls + 1):
                start = time.perf_counter()
                result = await client.call_tool("read_context", arguments)
                elapsed = time.perf_counter() - start
                if result.is_error or not isinstance(result.structured_content, dict):
                    raise RuntimeError(f"read_context failed over stdio: {result.content}")
                if number:
                    samples.append(elapsed)
                digests = [b["digest"] for b in result.structured_content["blocks"]]
        return samples, digests

    return anyio.run(main)


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: full sizes, or ``QUICK`` ones for smoke runs."""
    params = QUICK if quick else FULL
    files = make_files(params.files, params.seed, params.min_bytes, params.max_bytes)
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-mcp-") as temp:
        root, state = Path(temp) / "workspace", Path(temp) / "state"
        write_tree(root, files)
        stdio, stdio_digests = _stdio_reads(root, state, params)
        api, api_digests = _api_reads(root, state, params)
    timings = {"stdio": summarize(stdio), "api": summarize(api)}
    overhead = timings["stdio"]["median_s"] - timings["api"]["median_s"]
    return {
        "benchmark": NAME,
        "schema_version": 1,
        "created_utc": now_iso(),
        "quick": quick,
        "params": {**asdict(params), "query": QUERY, "plugins": list(PLUGINS)},
        "machine": machine_facts(),
        "git": git_facts(),
        "notes": list(NOTES),
        "timings": timings,
        "overhead_s": overhead,
        "targets": {
            "max_overhead_s": TARGET_OVERHEAD_S,
            "applies": not quick,
            "met": None if quick else overhead < TARGET_OVERHEAD_S,
        },
        "checks": {
            "same_blocks_over_stdio_and_api": stdio_digests == api_digests,
            "blocks_delivered": bool(api_digests),
        },
    }


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Medians with min-max for both paths, and the overhead against the target."""
    params, timings, targets = result["params"], result["timings"], result["targets"]
    overhead_ms = result["overhead_s"] * 1e3
    limit_ms = targets["max_overhead_s"] * 1e3
    verdict = "met" if overhead_ms < limit_ms else "MISSED"
    if not targets["applies"]:
        verdict = "quick run: not judged"
    lines = [
        f"{params['files']} files, {params['calls']} read_context calls each; median (min-max)",
        timing_line("stdio (MCP)", timings["stdio"], 14),
        timing_line("python API", timings["api"], 14),
        f"protocol overhead {overhead_ms:.2f} ms per call, target < {limit_ms:.0f} ms: {verdict}",
    ]
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines
